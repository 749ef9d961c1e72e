// Two mono channels placed on one clock (the recording's, 48 kHz samples since it started) and
// taken out as interleaved stereo 20 ms frames once the clock is past them. Audio arrives in
// pieces, late or early: a piece continues its channel where it left off unless the channel fell
// behind the clock by more than the slack (a pause, a lost stretch), in which case silence fills the
// gap; a channel with nothing for a frame is silent there. A channel's first piece is placed at its
// time. Both stay aligned with wall time. Audio that arrived (the caller's) cannot have started
// after it arrived: a channel found ahead of that holds silence put in for a burst that was only
// late (the event loop stalled), and that silence is taken out again.
import { FRAME_SAMPLES } from '../media/audio/format.js';

export interface TimelineLimits {
  /** How far behind the clock a channel may run before silence fills the gap (samples). */
  slack: number;
  /** How long a frame waits past its end for late audio before it is taken (samples). */
  delay: number;
  /** How far ahead of the clock a channel may hold audio (a client playing ahead); beyond it pieces are dropped (samples). */
  maxAhead: number;
}

/** One channel's audio not taken yet: pieces from sample `taken` up to sample `end`. */
class ChannelQueue {
  private pieces: Int16Array[] = [];
  /** The pieces that are silence filling a gap (they may be shortened again). */
  private readonly gaps = new WeakSet<Int16Array>();
  /** Samples of the first piece already taken. */
  private offset = 0;
  /** The sample after the channel's last one. */
  end = 0;
  /** Whether any audio came yet (the first piece is placed at its time, whatever the slack). */
  heard = false;

  append(samples: Int16Array): void {
    this.pieces.push(samples);
    this.end += samples.length;
  }

  appendGap(samples: number): void {
    const gap = new Int16Array(samples);
    this.gaps.add(gap);
    this.append(gap);
  }

  /** Removes up to `samples` of gap silence not taken yet, the latest first; the audio after it moves earlier. */
  shortenGaps(samples: number): void {
    for (let i = this.pieces.length - 1; i >= 0 && samples > 0; i--) {
      const piece = this.pieces[i]!;
      if (!this.gaps.has(piece)) continue;
      const alreadyTaken = i === 0 ? this.offset : 0;
      const cut = Math.min(samples, piece.length - alreadyTaken);
      const shorter = piece.subarray(0, piece.length - cut);
      this.gaps.add(shorter);
      if (shorter.length === alreadyTaken) {
        this.pieces.splice(i, 1);
        if (i === 0) this.offset = 0;
      } else this.pieces[i] = shorter;
      this.end -= cut;
      samples -= cut;
    }
  }

  /** Copies the next `n` samples (silence where there are none) into channel `ch` of `stereo`. */
  take(n: number, stereo: Int16Array, ch: 0 | 1, from: number): void {
    if (this.end < from) this.end = from;
    let i = 0;
    while (i < n && this.pieces.length) {
      const piece = this.pieces[0]!;
      const count = Math.min(n - i, piece.length - this.offset);
      for (let k = 0; k < count; k++) stereo[2 * (i + k) + ch] = piece[this.offset + k]!;
      i += count;
      this.offset += count;
      if (this.offset === piece.length) {
        this.pieces.shift();
        this.offset = 0;
      }
    }
    if (this.end < from + n) this.end = from + n;
  }
}

export class StereoTimeline {
  private readonly channels = [new ChannelQueue(), new ChannelQueue()] as const;
  /** Samples taken out so far (the frames emitted). */
  private taken = 0;
  droppedSamples = 0;

  constructor(
    private readonly limits: TimelineLimits,
    private readonly emit: (stereo: Int16Array) => void,
  ) {}

  /** Places `samples` (48 kHz) on channel `ch` (0 left, 1 right), due at sample `at` of the clock `now`. */
  place(ch: 0 | 1, samples: Int16Array, at: number, now: number): void {
    this.advance(now);
    const queue = this.channels[ch];
    if (queue.end < this.taken) queue.end = this.taken;
    if (at > queue.end && (!queue.heard || at - queue.end > this.limits.slack)) queue.appendGap(at - queue.end);
    queue.heard = true;
    if (queue.end + samples.length - now > this.limits.maxAhead) {
      this.droppedSamples += samples.length;
      return;
    }
    // A copy: the sender may reuse its buffer.
    queue.append(samples.slice());
  }

  /** Places audio that arrived by `now` (it started at `now - samples.length` at the latest). */
  placeArrived(ch: 0 | 1, samples: Int16Array, now: number): void {
    const at = now - samples.length;
    this.advance(now);
    const queue = this.channels[ch];
    if (queue.end > at) queue.shortenGaps(queue.end - at);
    this.place(ch, samples, at, now);
  }

  /** Emits every frame the clock (`now`, in samples) is past by the delay. */
  advance(now: number): void {
    while (this.taken + FRAME_SAMPLES <= now - this.limits.delay) this.frame();
  }

  /** Emits every frame up to `now`, the last one padded with silence (the recording ends). */
  finish(now: number): void {
    while (this.taken < now) this.frame();
  }

  private frame(): void {
    const stereo = new Int16Array(2 * FRAME_SAMPLES);
    this.channels[0].take(FRAME_SAMPLES, stereo, 0, this.taken);
    this.channels[1].take(FRAME_SAMPLES, stereo, 1, this.taken);
    this.taken += FRAME_SAMPLES;
    this.emit(stereo);
  }
}
