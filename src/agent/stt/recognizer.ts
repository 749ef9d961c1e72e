// The recogniser interface the current voice agent uses, until it moves to the stages of
// src/agent/stt/types.ts; the engine itself is src/agent/stt/pocketsphinx.ts.
import { PocketSphinxRecognizer as PocketSphinx } from './pocketsphinx.js';

export interface Utterance {
  write(pcm16k: Int16Array): void;
  /** The final transcript. */
  finish(): Promise<string>;
  abort(): void;
}

export interface SpeechRecognizer {
  start(): Utterance;
  close(): Promise<void>;
}

export class PocketSphinxRecognizer extends PocketSphinx implements SpeechRecognizer {
  constructor(workers: number, modelDir?: string) {
    super({ workers, ...(modelDir ? { modelDir } : {}) });
  }
}
