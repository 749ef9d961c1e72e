// Speech-to-text through an OpenAI-compatible `/v1/audio/transcriptions` endpoint (STT_URL): the
// turn's audio is collected and sent as one WAV file when the turn ends.
import { encodeWav } from '../../media/audio/wav.js';
import type { SpeechRecognizer, Utterance } from './recognizer.js';

export interface HttpRecognizerOptions {
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export class HttpRecognizer implements SpeechRecognizer {
  constructor(private readonly opts: HttpRecognizerOptions) {}

  start(): Utterance {
    const chunks: Int16Array[] = [];
    const abort = new AbortController();
    return {
      write: (pcm) => chunks.push(pcm),
      finish: async () => {
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(encodeWav(chunks, 16_000))], { type: 'audio/wav' }), 'turn.wav');
        form.append('model', this.opts.model);
        form.append('response_format', 'json');
        const res = await fetch(`${this.opts.baseUrl.replace(/\/$/, '')}/audio/transcriptions`, {
          method: 'POST',
          headers: this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {},
          body: form,
          signal: AbortSignal.any([abort.signal, AbortSignal.timeout(this.opts.timeoutMs)]),
        });
        if (!res.ok) throw new Error(`transcription service answered HTTP ${res.status}`);
        const body = (await res.json()) as { text?: unknown };
        return typeof body.text === 'string' ? body.text : '';
      },
      abort: () => abort.abort(),
    };
  }

  async close(): Promise<void> {}
}
