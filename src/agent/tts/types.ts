// Text to speech as a stream: engines turn a text into 48 kHz mono PCM chunks as they become ready;
// the Speaker turns a reply's text deltas into clauses and clauses into audio, in order.
import type { SpanParent } from '../../observability/tracing.js';
import type { EngineHealth } from '../health.js';

/** A speech engine shared by every call of the process, chosen by TTS_PROVIDER. */
export interface SpeechEngine {
  readonly name: string;
  /**
   * `text` spoken by the catalogue voice `voice`, 48 kHz mono PCM, chunk by chunk as it is produced;
   * `trace`: where the span of a request to a speech service goes.
   */
  synthesize(text: string, voice: string, signal: AbortSignal, trace?: SpanParent): AsyncIterable<Int16Array>;
  health(): EngineHealth;
  close?(): Promise<void>;
}

/** A piece of a reply's audio and the text it speaks (for the part of an interrupted reply that was heard). */
export interface SpokenChunk {
  /** The text this audio speaks; set on the first chunk of each clause, '' on the clause's further chunks. */
  text: string;
  pcm: Int16Array;
}
