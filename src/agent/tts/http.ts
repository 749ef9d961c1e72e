// Text to speech through an OpenAI-compatible `/audio/speech` endpoint (TTS_URL), streamed: the
// request asks for `response_format: "pcm"` (OpenAI: raw 16-bit mono at 24 kHz) and the body is
// resampled to 48 kHz piece by piece as it arrives. A service that answers with a WAV file instead
// (RIFF header) is read at the rate its header gives.
import { StreamResampler } from '../../media/audio/resample.js';
import { upstreamFailed, upstreamSpan, type SpanParent, type TraceSpan } from '../../observability/tracing.js';
import type { EngineHealth } from '../health.js';
import { speakableText } from './clauses.js';
import type { SpeechEngine } from './types.js';

export interface HttpSpeechOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  /** The service's voice for a catalogue voice name (unmapped names are sent as they are). */
  voices?: Record<string, string>;
}

/** OpenAI's `pcm` format. */
const PCM_RATE = 24_000;

export class HttpSpeechEngine implements SpeechEngine {
  readonly name = 'http';
  private lastFailure: string | undefined;

  constructor(private readonly opts: HttpSpeechOptions) {}

  async *synthesize(text: string, voice: string, signal: AbortSignal, trace?: SpanParent): AsyncIterable<Int16Array> {
    const input = speakableText(text);
    if (!input) return;
    const url = `${this.opts.baseUrl.replace(/\/$/, '')}/audio/speech`;
    // The span lasts until the last audio of the clause has come (or the reply stopped reading it).
    const span = upstreamSpan(trace, 'tts', url, this.opts.model);
    try {
      yield* this.stream(url, input, voice, signal, span);
      this.lastFailure = undefined;
    } catch (err) {
      if (!signal.aborted) this.lastFailure = (err as Error).message;
      upstreamFailed(span, err, signal);
      throw err;
    } finally {
      span.end();
    }
  }

  private async *stream(url: string, input: string, voice: string, signal: AbortSignal, span: TraceSpan): AsyncIterable<Int16Array> {
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}) },
        body: JSON.stringify({ model: this.opts.model, input, voice: this.opts.voices?.[voice] ?? voice, response_format: 'pcm' }),
        signal: AbortSignal.any([signal, timeout]),
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`speech service unreachable: ${timeout.aborted ? `no answer within ${this.opts.timeoutMs} ms` : (err as Error).message}`);
    }
    span.set({ 'http.response.status_code': res.status });
    if (!res.ok || !res.body) throw new Error(`speech service answered HTTP ${res.status}`);
    const decoder = new PcmBodyDecoder();
    try {
      for await (const bytes of res.body) {
        const pcm = decoder.push(bytes);
        if (pcm.length) yield pcm;
      }
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`speech service stream broke: ${timeout.aborted ? `not done within ${this.opts.timeoutMs} ms` : (err as Error).message}`);
    }
  }

  health(): EngineHealth {
    return this.lastFailure ? { state: 'degraded', detail: `the last synthesis failed: ${this.lastFailure}` } : { state: 'ready' };
  }
}

/** A response body, raw 24 kHz PCM or a WAV file, to 48 kHz PCM piece by piece (pieces split anywhere). */
export class PcmBodyDecoder {
  private pending = new Uint8Array(0);
  /** Undefined until the first bytes show whether a WAV header comes first. */
  private resampler: StreamResampler | undefined;

  push(bytes: Uint8Array): Int16Array {
    let data = this.pending.length ? concatBytes(this.pending, bytes) : bytes;
    if (!this.resampler) {
      if (data.length < 4) return this.keep(data);
      if (ascii(data, 0, 4) !== 'RIFF') this.resampler = new StreamResampler(PCM_RATE);
      else {
        const header = parseWavHeader(data);
        if (!header) return this.keep(data);
        this.resampler = new StreamResampler(header.sampleRate);
        data = data.subarray(header.dataStart);
      }
    }
    const whole = data.length - (data.length % 2);
    const samples = new Int16Array(whole / 2);
    new Uint8Array(samples.buffer).set(data.subarray(0, whole));
    this.pending = data.slice(whole);
    return this.resampler.push(samples);
  }

  private keep(data: Uint8Array): Int16Array {
    this.pending = data.slice();
    return new Int16Array(0);
  }
}

/** The sample rate and where the samples begin, once the header up to the data chunk is in `b`. */
function parseWavHeader(b: Uint8Array): { sampleRate: number; dataStart: number } | undefined {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let sampleRate: number | undefined;
  for (let at = 12; at + 8 <= b.length; ) {
    const id = ascii(b, at, 4);
    const size = view.getUint32(at + 4, true);
    if (id === 'data') {
      if (!sampleRate) throw new Error('speech service sent a WAV file without a format');
      return { sampleRate, dataStart: at + 8 };
    }
    if (at + 8 + size > b.length) return undefined;
    if (id === 'fmt ') {
      const channels = view.getUint16(at + 10, true);
      const bits = view.getUint16(at + 22, true);
      if (channels !== 1 || bits !== 16) throw new Error(`speech service sent ${channels}-channel ${bits}-bit audio; 16-bit mono is needed`);
      sampleRate = view.getUint32(at + 12, true);
    }
    at += 8 + size + (size % 2);
  }
  return undefined;
}

function ascii(b: Uint8Array, at: number, n: number): string {
  return String.fromCharCode(...b.subarray(at, at + n));
}

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
