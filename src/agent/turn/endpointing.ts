// The end-of-turn rule on a VAD's speech probabilities, window by window. Hangover-free: the
// probabilities are used as they come (no smoothing that holds "speech" after the voice stops), with
// Silero's own hysteresis — a turn starts on windows at or above `threshold` and its silence is
// counted from the first window under `threshold − 0.15`; windows in between neither start nor break
// the silence — so the silence wait can be short without cutting a caller off on a soft syllable.
import { SILENT_DB } from '../../media/audio/level.js';
import type { EndpointingOptions } from './types.js';

export interface EndpointingPolicyOptions extends EndpointingOptions {
  /** A turn longer than this ends anyway (the caller's speech then starts a new turn). */
  maxTurnMs: number;
}

/** Speech this long (consecutive windows at or above the threshold) makes an onset: a click does not. */
export const ONSET_MS = 60;
/** How far under `threshold` a window must fall to count as silence (Silero's default hysteresis). */
const HYSTERESIS = 0.15;
/** A window within this many dB of the room's level (or under it) is the room, not the caller. */
const ROOM_MARGIN_DB = 3;
/** The room's level: this quantile of its recent windows' levels (its louder moments: babble rises and falls). */
const ROOM_QUANTILE = 0.95;
/** Windows of the room remembered for its level (≈ 2 s of Silero’s 32 ms windows). */
const ROOM_WINDOWS = 62;
/** Inside a turn, speech this far under the turn's loudest window is not the caller's voice. */
const VOICE_RANGE_DB = 12;
/** The room matters when the caller's voice is at most this far above it (a quiet room changes nothing). */
const NOISY_ROOM_DB = 30;
/** How long a turn in a noisy room lasts without the caller's voice (longer than a pause between words). */
export const ROOM_SILENCE_MS = 800;
/** Inside a turn, windows this long after the caller's voice are the room (it learns what the VAD calls speech). */
const ROOM_AFTER_VOICE_MS = 300;

export type EndpointEvent =
  | { type: 'start'; /** Start of the turn's first speech window, ms of audio. */ onsetMs: number }
  /** The caller has been silent for `pauseMs` inside the turn: its end may be near. */
  | { type: 'pause'; /** Start of the silence, ms of audio. */ silenceStartMs: number }
  /** The caller spoke again after a pause; the turn goes on. */
  | { type: 'resume' }
  | {
      type: 'stop';
      /** End of the window that completed the silence (or reached the length limit). */
      endMs: number;
      /** Where the caller's speech ended: the start of that silence (endMs at the length limit). */
      speechEndMs: number;
      reason: 'silence' | 'max_length';
    };

export class EndpointingPolicy {
  private options: EndpointingPolicyOptions;
  /** Start of the current run of speech windows while no turn is open; undefined when none. */
  private runStartMs: number | undefined;
  private turnStartMs: number | undefined;
  /** Start of the silence that may end the open turn; undefined while the caller speaks. */
  private silenceStartMs: number | undefined;
  /** A pause was reported for the current silence. */
  private paused = false;
  /** Levels (dBFS) of the room's latest windows, oldest first. */
  private readonly roomLevels: number[] = [];
  /** The room's level when the open turn began (dBFS); undefined when unknown. */
  private roomDb: number | undefined;
  /** The open turn's loudest speech window (dBFS). */
  private voicePeakDb = SILENT_DB;
  /** End of the open turn's last window of the caller's voice. */
  private voiceEndMs = 0;

  constructor(options: EndpointingPolicyOptions) {
    this.options = { ...options };
  }

  get inTurn(): boolean {
    return this.turnStartMs !== undefined;
  }

  configure(options: Partial<EndpointingPolicyOptions>): void {
    this.options = { ...this.options, ...definedOnly(options) };
  }

  get settings(): Readonly<EndpointingPolicyOptions> {
    return this.options;
  }

  /**
   * Judges one window of audio [startMs, startMs + durationMs) with speech probability `p` and,
   * when known, its level `levelDb` (dBFS).
   */
  step(p: number, startMs: number, durationMs: number, levelDb?: number): EndpointEvent | undefined {
    const endMs = startMs + durationMs;
    const { threshold, silenceMs, maxTurnMs } = this.options;
    if (this.turnStartMs === undefined) {
      // The room's level is looked up only for a window the VAD calls speech (a sort: not for every window).
      const room = p >= threshold ? quantile(this.roomLevels, ROOM_QUANTILE) : undefined;
      if (levelDb !== undefined && room !== undefined && levelDb <= room + ROOM_MARGIN_DB) p = 0;
      if (p < threshold) {
        this.runStartMs = undefined;
        if (levelDb !== undefined) this.hearRoom(levelDb);
        return undefined;
      }
      this.runStartMs ??= startMs;
      if (endMs - this.runStartMs < ONSET_MS) return undefined;
      this.turnStartMs = this.runStartMs;
      this.runStartMs = undefined;
      this.silenceStartMs = undefined;
      this.roomDb = room;
      this.voicePeakDb = levelDb ?? SILENT_DB;
      this.voiceEndMs = endMs;
      return { type: 'start', onsetMs: this.turnStartMs };
    }
    if (p >= threshold && levelDb !== undefined) this.voicePeakDb = Math.max(this.voicePeakDb, levelDb);
    const noisyRoom = this.roomDb !== undefined && this.voicePeakDb - this.roomDb <= NOISY_ROOM_DB;
    if (p >= threshold && (!noisyRoom || levelDb === undefined || (levelDb > this.roomDb! + ROOM_MARGIN_DB && levelDb > this.voicePeakDb - VOICE_RANGE_DB))) {
      this.voiceEndMs = endMs;
    } else if (noisyRoom && levelDb !== undefined && endMs - this.voiceEndMs >= ROOM_AFTER_VOICE_MS) this.hearRoom(levelDb);
    if (noisyRoom && endMs - this.voiceEndMs >= Math.max(silenceMs, ROOM_SILENCE_MS)) {
      const speechEndMs = this.voiceEndMs;
      this.reset();
      return { type: 'stop', endMs, speechEndMs, reason: 'silence' };
    }
    if (p >= threshold) {
      this.silenceStartMs = undefined;
      if (this.paused) {
        this.paused = false;
        return { type: 'resume' };
      }
    } else if (p < Math.max(threshold - HYSTERESIS, 0.01)) this.silenceStartMs ??= startMs;
    if (this.silenceStartMs !== undefined && endMs - this.silenceStartMs >= silenceMs) {
      const speechEndMs = this.silenceStartMs;
      this.reset();
      return { type: 'stop', endMs, speechEndMs, reason: 'silence' };
    }
    if (endMs - this.turnStartMs >= maxTurnMs) {
      this.reset();
      return { type: 'stop', endMs, speechEndMs: endMs, reason: 'max_length' };
    }
    const { pauseMs } = this.options;
    if (pauseMs !== undefined && !this.paused && this.silenceStartMs !== undefined && endMs - this.silenceStartMs >= pauseMs) {
      this.paused = true;
      return { type: 'pause', silenceStartMs: this.silenceStartMs };
    }
    return undefined;
  }

  private hearRoom(levelDb: number): void {
    this.roomLevels.push(levelDb);
    if (this.roomLevels.length > ROOM_WINDOWS) this.roomLevels.shift();
  }

  /** Forgets the turn in progress, or the speech run that might become one (the room's level stays). */
  reset(): void {
    this.turnStartMs = undefined;
    this.runStartMs = undefined;
    this.silenceStartMs = undefined;
    this.paused = false;
  }
}

function quantile(values: number[], q: number): number | undefined {
  if (!values.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function definedOnly<T extends object>(o: Partial<T>): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
