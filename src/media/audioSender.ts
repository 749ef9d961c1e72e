// The agent's voice out: PCM queued by the agent, sent as one Opus RTP packet per 20 ms tick with
// monotonic timestamps that follow the wall clock (silences included) and the marker bit on the
// first packet of each talk spurt.
import { randomInt } from 'node:crypto';
import { RtpHeader, RtpPacket } from 'werift-rtp';
import { FRAME_SAMPLES, type AudioOut } from './audio/format.js';
import { mediaClock, type MediaClock } from './mediaClock.js';
import { OpusFrameEncoder } from './opusCodec.js';

const MAX_QUEUED_FRAMES = (120 * 1000) / 20;

export class AudioSender implements AudioOut {
  private readonly encoder = new OpusFrameEncoder();
  private readonly queue: Int16Array[] = [];
  private partial: Int16Array | undefined;
  private partialLength = 0;
  private seq = randomInt(0, 0x10000);
  private readonly tsBase = randomInt(0, 0x7fffffff);
  private ticks = 0;
  private talking = false;
  private readonly drainedCallbacks = new Set<() => void>();
  private unsubscribe: (() => void) | undefined;
  packets = 0;
  octets = 0;

  constructor(
    private readonly send: (packet: Buffer) => boolean,
    readonly ssrc: number,
    private readonly payloadType: number,
    private readonly clock: MediaClock = mediaClock,
  ) {}

  /** Starts the 20 ms cadence (once the peer is connected). */
  start(): void {
    this.unsubscribe ??= this.clock.subscribe(() => this.tick());
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** RTP timestamp of "now", for sender reports. */
  get rtpTimestamp(): number {
    return (this.tsBase + this.ticks * FRAME_SAMPLES) >>> 0;
  }

  get queuedMs(): number {
    return (this.queue.length * FRAME_SAMPLES + this.partialLength) / 48;
  }

  write(pcm: Int16Array): void {
    let offset = 0;
    while (offset < pcm.length) {
      this.partial ??= new Int16Array(FRAME_SAMPLES);
      const n = Math.min(FRAME_SAMPLES - this.partialLength, pcm.length - offset);
      this.partial.set(pcm.subarray(offset, offset + n), this.partialLength);
      this.partialLength += n;
      offset += n;
      if (this.partialLength === FRAME_SAMPLES) {
        // Bounded: past two minutes queued, the oldest audio goes (a writer outpacing real time).
        if (this.queue.length >= MAX_QUEUED_FRAMES) this.queue.shift();
        this.queue.push(this.partial);
        this.partial = undefined;
        this.partialLength = 0;
      }
    }
  }

  clear(): number {
    const dropped = this.queuedMs;
    this.queue.length = 0;
    this.partial = undefined;
    this.partialLength = 0;
    // Cut mid-word, the far end's decoder would conceal the missing packets with sound for a while;
    // two frames of silence end the utterance cleanly.
    if (this.talking) this.queue.push(new Int16Array(FRAME_SAMPLES), new Int16Array(FRAME_SAMPLES));
    return dropped;
  }

  onDrained(cb: () => void): () => void {
    this.drainedCallbacks.add(cb);
    return () => this.drainedCallbacks.delete(cb);
  }

  private tick(): void {
    this.ticks++;
    let frame = this.queue.shift();
    if (!frame && this.partial && this.partialLength) {
      // The tail of an utterance: pad the last partial frame with silence.
      frame = this.partial;
      this.partial = undefined;
      this.partialLength = 0;
    }
    if (!frame) {
      if (this.talking) {
        this.talking = false;
        for (const cb of this.drainedCallbacks) cb();
      }
      return;
    }
    const payload = this.encoder.encode(frame);
    const header = new RtpHeader({
      payloadType: this.payloadType,
      sequenceNumber: this.seq,
      timestamp: this.rtpTimestamp,
      ssrc: this.ssrc,
      marker: !this.talking,
    });
    this.seq = (this.seq + 1) & 0xffff;
    this.talking = true;
    if (this.send(new RtpPacket(header, payload).serialize())) {
      this.packets++;
      this.octets += payload.length;
    }
  }
}
