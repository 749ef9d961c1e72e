// Speech to text as a stream: a recognition starts at the caller's speech onset, is fed 16 kHz PCM
// while the caller talks (so little work remains at the end of the turn) and is finished at its end.
import type { SpanParent } from '../../observability/tracing.js';
import type { EngineHealth } from '../health.js';

export interface RecognitionStream {
  write(pcm16k: Int16Array): void;
  /** The transcript so far, each time it changes (engines without partials never call it). */
  onPartial(cb: (textSoFar: string) => void): void;
  /**
   * The final transcript; rejects with an Error saying what failed (the call gets an error event).
   * `trace`: where the span of a request to a recognition service goes (the turn's).
   */
  finish(trace?: SpanParent): Promise<string>;
  abort(): void;
}

/** A speech-recognition engine shared by every call of the process, chosen by STT_PROVIDER. */
export interface Recognizer {
  readonly name: string;
  start(): RecognitionStream;
  health(): EngineHealth;
  close(): Promise<void>;
}
