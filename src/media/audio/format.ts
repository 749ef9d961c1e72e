// The audio format inside Parley: 48 kHz mono signed 16-bit PCM in 20 ms frames (960 samples), both
// from the caller (decoded Opus) and to the caller (the agent's speech, encoded by the sender).
export const SAMPLE_RATE = 48_000;
export const FRAME_SAMPLES = 960;

/** How a stretch of the agent's speech ended for the caller (as livekit agents' PlaybackFinishedEvent). */
export interface PlaybackFinished {
  /** Milliseconds of it the caller heard, from its playbackStarted. */
  playbackPositionMs: number;
  /** Cut short by clear() (barge-in, cancel) rather than played to its end. */
  interrupted: boolean;
}

/** What an audio out tells of its playback; each member is optional. */
export interface PlaybackListener {
  /** The caller starts hearing the agent (the first audio after silence). */
  playbackStarted?(): void;
  /** The caller stopped hearing it: all of it played, or the rest was cleared. */
  playbackFinished?(finished: PlaybackFinished): void;
}

/** Where an agent's speech goes: a queue played out to the caller at real-time rate. */
export interface AudioOut {
  /** Queues PCM (any length; split into 20 ms frames). */
  write(pcm: Int16Array): void;
  /** Drops everything queued and not yet sent (barge-in). Returns the milliseconds dropped. */
  clear(): number;
  /** Milliseconds of audio written that the caller has not heard yet. */
  readonly queuedMs: number;
  /**
   * Resolves once everything written has been handed to the caller (an out that paces its sending;
   * one that sends as it is written leaves it out): a reply is in progress until then.
   */
  sent?(): Promise<void>;
  /** Tells `listener` of each playback from now on; returns the unsubscribe. */
  onPlayback(listener: PlaybackListener): () => void;
  /**
   * The client plays what it is sent and truncates the item itself to what it heard (OpenAI's
   * WebSocket): what was sent is the client's, and dropping what was not sent cuts nothing it has.
   */
  readonly clientTruncates?: boolean;
}
