// The audio format inside Parley: 48 kHz mono signed 16-bit PCM in 20 ms frames (960 samples), both
// from the caller (decoded Opus) and to the caller (the agent's speech, encoded by the sender).
export const SAMPLE_RATE = 48_000;
export const FRAME_SAMPLES = 960;

/** Where an agent's speech goes: a queue the call drains at 20 ms per frame onto the RTP stream. */
export interface AudioOut {
  /** Queues PCM (any length; split into 20 ms frames). */
  write(pcm: Int16Array): void;
  /** Drops everything queued and not yet sent (barge-in). Returns the milliseconds dropped. */
  clear(): number;
  /** Milliseconds of audio queued and not yet sent. */
  readonly queuedMs: number;
  /** Called once each time the queue runs dry after audio was written; returns the unsubscribe. */
  onDrained(cb: () => void): () => void;
}
