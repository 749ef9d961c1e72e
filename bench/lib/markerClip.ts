// The load generator's recording: a voiced, speech-like signal (a 140 Hz buzz with falling
// harmonics and a slow vibrato) in bursts separated by 240 ms pauses, their onsets spaced by
// different intervals (so the caller talks ≈ 70 % of the time), encoded to Opus once; every call
// sends the same packets. What the `audio-echo` agent plays back
// is Parley's own re-encoding, so it cannot be matched byte for byte — but a loud frame encodes
// to a large packet and silence to a small one, so the bursts' onsets can be found in the echo from
// packet sizes alone (no decoding per call), and the interval before an onset says which one it is.
import { Encoder } from '@evan/opus';

const SAMPLE_RATE = 48_000;
/**
 * Intervals between consecutive burst onsets: all distinct (120 ms apart), so one names its onset;
 * any two in a row add up to more than the longest, so a missed onset cannot pass for another; all
 * multiples of 10, 20, 40 and 60 ms, the packet durations a caller may use.
 */
export const ONSET_INTERVALS_MS = [600, 720, 840, 960, 1080, 1200];
const PAUSE_MS = 240;
/**
 * An echoed packet this much larger than the quiet floor carries a loud frame. Parley's encoder
 * makes 26–40-byte packets of silence (depending on its complexity) and 55–110-byte packets of the
 * bursts; the floor is the smallest recent packet, drifting up by a byte a second.
 */
const LOUD_ABOVE_FLOOR_BYTES = 12;
const FLOOR_DRIFT_PER_PACKET = 1 / 50;
/** Small packets needed before a large one counts as an onset (the end of a burst leaves a short tail). */
const QUIET_PACKETS_BEFORE_ONSET = 5;
/** How far a measured interval may be from the one it is taken for (the intervals are 120 ms apart). */
const INTERVAL_TOLERANCE_MS = 55;

export interface Clip {
  ptimeMs: number;
  /** Opus payloads, one per packet, ptimeMs each. */
  packets: Buffer[];
  /** For each packet: the index of the onset it starts (into ONSET_INTERVALS_MS), or -1. */
  onsetAt: Int8Array;
}

function sample(n: number): number {
  const t = n / SAMPLE_RATE;
  const f0 = 140 * (1 + 0.03 * Math.sin(2 * Math.PI * 5 * t));
  let s = 0;
  for (let k = 1; k <= 12; k++) s += Math.sin(2 * Math.PI * f0 * k * t) / k;
  return 5000 * s;
}

/** The clip at the given packet duration (10, 20, 40 or 60 ms), encoded as a browser would (voip, 32 kb/s). */
export function buildClip(ptimeMs: number): Clip {
  const loopMs = ONSET_INTERVALS_MS.reduce((a, b) => a + b, 0);
  if (![10, 20, 40, 60].includes(ptimeMs)) throw new Error(`unsupported ptime ${ptimeMs} (10, 20, 40 or 60 ms)`);
  const pcm = new Int16Array((loopMs * SAMPLE_RATE) / 1000);
  const onsetSamples: number[] = [];
  let at = 0;
  for (const interval of ONSET_INTERVALS_MS) {
    onsetSamples.push(at);
    const burstEnd = at + ((interval - PAUSE_MS) * SAMPLE_RATE) / 1000;
    for (let n = at; n < burstEnd; n++) pcm[n] = Math.round(sample(n));
    at += (interval * SAMPLE_RATE) / 1000;
  }
  const encoder = new Encoder({ channels: 1, sample_rate: SAMPLE_RATE, application: 'voip' });
  encoder.bitrate = 32_000;
  const frameSamples = (ptimeMs * SAMPLE_RATE) / 1000;
  const packets: Buffer[] = [];
  const onsetAt = new Int8Array(pcm.length / frameSamples).fill(-1);
  for (let i = 0; i < onsetAt.length; i++) {
    const encoded = encoder.encode(pcm.subarray(i * frameSamples, (i + 1) * frameSamples));
    packets.push(Buffer.from(encoded));
  }
  // Onset k is the burst that follows interval k-1 (cyclically): name each by the interval before it.
  onsetSamples.forEach((s, k) => (onsetAt[s / frameSamples] = (k + ONSET_INTERVALS_MS.length - 1) % ONSET_INTERVALS_MS.length));
  return { ptimeMs, packets, onsetAt };
}

/** Plays the clip in a loop for one call, telling its matcher when each onset leaves. */
export class ClipPlayer {
  private index = 0;

  constructor(
    private readonly clip: Clip,
    private readonly onsets: OnsetMatcher,
  ) {}

  get ptimeMs(): number {
    return this.clip.ptimeMs;
  }

  next(now: number): Buffer {
    const i = this.index;
    this.index = (i + 1) % this.clip.packets.length;
    const onset = this.clip.onsetAt[i]!;
    if (onset >= 0) this.onsets.sent(onset, now);
    return this.clip.packets[i]!;
  }
}

/**
 * Finds the clip's onsets in an echoed stream and turns each into an echo delay: its arrival minus
 * when the caller sent that onset (the latest sending of it before the arrival).
 */
export class OnsetMatcher {
  /** The two latest send times of each onset, [latest, previous]. */
  private readonly sentAt = ONSET_INTERVALS_MS.map(() => [Number.NaN, Number.NaN] as [number, number]);
  private quietPackets = 0;
  private floor = Number.POSITIVE_INFINITY;
  private lastOnsetAt = Number.NaN;
  /** Echo delays measured since the last take(), in ms. */
  private delays: number[] = [];
  unmatched = 0;

  /** The caller sent the packet that starts onset k (by its preceding interval) at `now`. */
  sent(k: number, now: number): void {
    const s = this.sentAt[k]!;
    s[1] = s[0];
    s[0] = now;
  }

  /** An echoed packet of `payloadBytes` arrived at `now`. */
  received(payloadBytes: number, now: number): void {
    this.floor = Math.min(this.floor + FLOOR_DRIFT_PER_PACKET, payloadBytes);
    if (payloadBytes < this.floor + LOUD_ABOVE_FLOOR_BYTES) {
      this.quietPackets++;
      return;
    }
    const onset = this.quietPackets >= QUIET_PACKETS_BEFORE_ONSET;
    this.quietPackets = 0;
    if (!onset) return;
    const interval = now - this.lastOnsetAt;
    this.lastOnsetAt = now;
    if (!Number.isFinite(interval)) return;
    const k = ONSET_INTERVALS_MS.findIndex((i) => Math.abs(i - interval) <= INTERVAL_TOLERANCE_MS);
    if (k < 0) {
      this.unmatched++;
      return;
    }
    const [latest, previous] = this.sentAt[k]!;
    const sentAt = latest <= now ? latest : previous;
    if (Number.isFinite(sentAt)) this.delays.push(now - sentAt);
    else this.unmatched++;
  }

  /** The delays measured since the last call, and forget them. */
  take(): number[] {
    const d = this.delays;
    this.delays = [];
    return d;
  }
}
