// Turn detection: a voice-activity detector (speech probability per window of audio) and an
// endpointing policy that turns those probabilities into the caller's turns. Settings follow
// OpenAI's `server_vad` turn detection, so a client's `session.update` can tune them live.

/** A voice-activity detector over 16 kHz mono PCM. One instance per call (models keep state). */
export interface Vad {
  /** Samples (16 kHz) per window it judges: Silero v5 512 (32 ms), WebRTC VAD 320 (20 ms). */
  readonly windowSamples: number;
  /** Speech probability 0–1 of one window of exactly `windowSamples`. */
  probability(window: Int16Array): number | Promise<number>;
  close(): void;
}

/** A VAD engine, chosen by name in configuration (VAD=silero|webrtc). */
export interface VadProvider {
  readonly name: string;
  create(): Promise<Vad>;
}

export interface EndpointingOptions {
  /** Probability at or above which a window is speech (OpenAI `threshold`, 0–1). */
  threshold: number;
  /** Audio kept from before the onset and handed over with it (OpenAI `prefix_padding_ms`). */
  prefixPaddingMs: number;
  /** Silence after speech that ends the turn (OpenAI `silence_duration_ms`). */
  silenceMs: number;
  /** Silence after which a pause is reported (speechPaused), shorter than silenceMs; unset: never. */
  pauseMs?: number;
}

/** What the turn detector tells the voice agent; times are ms of the caller's audio since the call began. */
export interface TurnListener {
  /**
   * The caller started speaking; `preroll` is the 16 kHz audio of the prefix padding before the onset.
   * `audioStartMs` is where the audio handed over begins — the onset less the prefix padding — as
   * OpenAI's `audio_start_ms` ("includes the prefix_padding_ms").
   */
  speechStarted(audioStartMs: number, preroll: Int16Array): void;
  /** The caller's audio (16 kHz) from the onset on, in order, while the turn lasts. */
  speech(pcm16k: Int16Array): void;
  /** The caller has been silent for `pauseMs`: the turn may be about to end (a reply can be prepared). */
  speechPaused?(silenceStartMs: number): void;
  /** The caller spoke again after a reported pause: the turn goes on. */
  speechResumed?(): void;
  /**
   * The turn ended (silence, or the turn's length limit); `audioEndMs` includes the silence, as
   * OpenAI's `audio_end_ms`; `speechEndMs` is where the caller's speech ended (the silence's start).
   */
  speechStopped(audioEndMs: number, speechEndMs: number): void;
  /**
   * Turn detection failed: the VAD could not judge a window (it then counts as silence, so an open
   * turn ends rather than hanging), once per streak of failures; or a listener call made while an
   * asynchronous VAD answered threw.
   */
  error(err: Error): void;
}

export interface TurnDetector {
  /** The caller's audio as the call delivers it: 16 kHz mono, any length. */
  push(pcm16k: Int16Array): void;
  /** Live changes (session.update). */
  configure(options: Partial<EndpointingOptions>): void;
  /** Forgets a turn in progress (e.g. the input buffer was cleared) without signalling its end. */
  reset(): void;
  close(): void;
}
