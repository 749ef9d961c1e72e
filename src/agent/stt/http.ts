// Speech to text through an OpenAI-compatible `/audio/transcriptions` endpoint (STT_URL): the turn's
// audio is collected and sent as one WAV file when the turn ends (no partial transcripts).
import { encodeWav } from '../../media/audio/wav.js';
import { upstreamFailed, upstreamSpan, type SpanParent, type TraceSpan } from '../../observability/tracing.js';
import type { EngineHealth } from '../health.js';
import type { RecognitionStream, Recognizer } from './types.js';

export interface HttpRecognizerOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export class HttpRecognizer implements Recognizer {
  readonly name = 'http';
  /** Why the last transcription failed; cleared by the next that succeeds. */
  private lastFailure: string | undefined;

  constructor(private readonly opts: HttpRecognizerOptions) {}

  start(): RecognitionStream {
    const chunks: Int16Array[] = [];
    const abort = new AbortController();
    return {
      write: (pcm) => chunks.push(pcm),
      onPartial: () => {},
      finish: async (trace) => {
        try {
          const text = await this.transcribe(chunks, abort.signal, trace);
          this.lastFailure = undefined;
          return text;
        } catch (err) {
          if (abort.signal.aborted) throw err;
          this.lastFailure = (err as Error).message;
          throw err;
        }
      },
      abort: () => abort.abort(),
    };
  }

  private async transcribe(chunks: Int16Array[], signal: AbortSignal, trace: SpanParent | undefined): Promise<string> {
    const url = `${this.opts.baseUrl.replace(/\/$/, '')}/audio/transcriptions`;
    const span = upstreamSpan(trace, 'stt', url, this.opts.model);
    try {
      return await this.request(url, chunks, signal, span);
    } catch (err) {
      upstreamFailed(span, err, signal);
      throw err;
    } finally {
      span.end();
    }
  }

  private async request(url: string, chunks: Int16Array[], signal: AbortSignal, span: TraceSpan): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(encodeWav(chunks, 16_000))], { type: 'audio/wav' }), 'turn.wav');
    form.append('model', this.opts.model);
    form.append('response_format', 'json');
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {},
        body: form,
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.opts.timeoutMs)]),
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`transcription service unreachable: ${(err as Error).name === 'TimeoutError' ? `no answer within ${this.opts.timeoutMs} ms` : (err as Error).message}`);
    }
    span.set({ 'http.response.status_code': res.status });
    if (!res.ok) throw new Error(`transcription service answered HTTP ${res.status}`);
    const body = (await res.json().catch(() => ({}))) as { text?: unknown };
    if (typeof body.text !== 'string') throw new Error('transcription service answered without a text');
    return body.text;
  }

  health(): EngineHealth {
    return this.lastFailure ? { state: 'degraded', detail: `the last transcription failed: ${this.lastFailure}` } : { state: 'ready' };
  }

  async close(): Promise<void> {}
}
