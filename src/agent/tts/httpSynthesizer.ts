// Text-to-speech through an OpenAI-compatible `/v1/audio/speech` endpoint (TTS_URL), WAV back.
import { resampleTo48k } from '../../media/audio/resample.js';
import { readWav } from '../../media/audio/wav.js';
import { speakableText, type SpeechSynthesizer } from './synthesizer.js';

export interface HttpSynthesizerOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export class HttpSynthesizer implements SpeechSynthesizer {
  constructor(private readonly opts: HttpSynthesizerOptions) {}

  async synthesize(text: string, voice: string, signal?: AbortSignal): Promise<Int16Array> {
    const input = speakableText(text);
    if (!input) return new Int16Array(0);
    const res = await fetch(`${this.opts.baseUrl.replace(/\/$/, '')}/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}) },
      body: JSON.stringify({ model: this.opts.model, input, voice, response_format: 'wav' }),
      signal: AbortSignal.any([...(signal ? [signal] : []), AbortSignal.timeout(this.opts.timeoutMs)]),
    });
    if (!res.ok) throw new Error(`speech service answered HTTP ${res.status}`);
    const pcm = readWav(Buffer.from(await res.arrayBuffer()));
    return resampleTo48k(pcm.samples, pcm.sampleRate);
  }
}
