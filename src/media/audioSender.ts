// The agent's voice out: PCM queued by the agent, sent as one RTP packet (Opus, or G.711 for phone
// calls) per 20 ms tick with monotonic timestamps that follow the wall clock (silences included) and the marker bit on the
// first packet of each talk spurt.
import { randomInt } from 'node:crypto';
import { FRAME_SAMPLES, SAMPLE_RATE, type AudioOut, type PlaybackListener } from './audio/format.js';
import { PlaybackListeners } from './audio/playback.js';
import { Reframer } from './audio/reframer.js';
import { mediaClock, type MediaClock } from './mediaClock.js';
import { OpusFrameEncoder, type OpusEncoderOptions } from './opusCodec.js';
import { writeRtp } from './rtp.js';

const MAX_QUEUED_FRAMES = (120 * 1000) / 20;

/** A codec turning one 20 ms frame at 48 kHz into an RTP payload, and its RTP clock rate. */
export interface FrameEncoder {
  readonly clockRate: number;
  encode(frame: Int16Array): Uint8Array;
}

export interface AudioSenderOptions {
  encoder?: OpusEncoderOptions;
  /** Another codec than Opus (G.711 for phone calls); `encoder` is then unused. */
  codec?: FrameEncoder;
  clock?: MediaClock;
  /** A tick that failed (encoding, sending): the call's owner decides what follows. */
  onError?: (err: Error) => void;
  /** Each frame as it leaves (a recording listens). */
  onFrame?: (frame: Int16Array) => void;
  /**
   * Keep-alive media while there is nothing to say (phone calls: NATs, SBCs and PBXes drop a call
   * that carries no RTP): `silence` sends the codec's silence each tick, `comfortNoise` an RFC 3389
   * comfort-noise packet of that payload type. Unset: nothing leaves between talk spurts.
   */
  keepAlive?: { kind: 'silence' } | { kind: 'comfortNoise'; payloadType: number };
}

/** RFC 3389's payload: the noise level in −dBov (a quiet line), no spectral information. */
const COMFORT_NOISE_LEVEL = 80;

function opusFrameEncoder(options: OpusEncoderOptions | undefined): FrameEncoder {
  const opus = new OpusFrameEncoder(options);
  return { clockRate: SAMPLE_RATE, encode: (frame) => opus.encode(frame) };
}

export class AudioSender implements AudioOut {
  private readonly encoder: FrameEncoder;
  private readonly clock: MediaClock;
  private readonly queue: Int16Array[] = [];
  private readonly frames = new Reframer(FRAME_SAMPLES, (frame) => {
    // Bounded: past two minutes queued, the oldest audio goes (a writer outpacing real time).
    if (this.queue.length >= MAX_QUEUED_FRAMES) this.queue.shift();
    this.queue.push(frame);
  });
  private seq = randomInt(0, 0x10000);
  private readonly tsBase = randomInt(0, 0x7fffffff);
  private ticks = 0;
  /** RTP timestamp units per 20 ms frame. */
  private readonly timestampStep: number;
  /** Packets are going out (the RTP talk spurt, the silence that ends a cleared one included). */
  private talking = false;
  /** The caller is hearing the agent's speech: since playbackStarted, the milliseconds sent. */
  private playedMs: number | undefined;
  /** Frames of silence queued by clear() ahead of anything written after it. */
  private padding = 0;
  private readonly playback = new PlaybackListeners();
  private unsubscribe: (() => void) | undefined;
  packets = 0;
  octets = 0;

  constructor(
    private readonly send: (packet: Buffer) => boolean,
    readonly ssrc: number,
    private readonly payloadType: number,
    private readonly options: AudioSenderOptions = {},
  ) {
    this.encoder = options.codec ?? opusFrameEncoder(options.encoder);
    this.timestampStep = (FRAME_SAMPLES * this.encoder.clockRate) / SAMPLE_RATE;
    this.clock = options.clock ?? mediaClock;
  }

  /** Starts the 20 ms cadence (once the peer is connected). */
  start(): void {
    this.unsubscribe ??= this.clock.subscribe(() => this.tick(), this.options.onError ?? (() => {}));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** RTP timestamp of "now", for sender reports. */
  get rtpTimestamp(): number {
    return (this.tsBase + this.ticks * this.timestampStep) >>> 0;
  }

  get queuedMs(): number {
    return (this.queue.length * FRAME_SAMPLES + this.frames.pending) / 48;
  }

  write(pcm: Int16Array): void {
    // A copy: the writer may reuse its buffer once write returns.
    this.frames.push(pcm.slice());
  }

  clear(): number {
    const dropped = this.queuedMs;
    this.queue.length = 0;
    this.frames.clear();
    // Cut mid-word, the far end's decoder would conceal the missing packets with sound for a while;
    // two frames of silence end the utterance cleanly.
    if (this.talking) {
      this.queue.push(new Int16Array(FRAME_SAMPLES), new Int16Array(FRAME_SAMPLES));
      this.padding = 2;
    }
    this.playbackEnded(true);
    return dropped;
  }

  onPlayback(listener: PlaybackListener): () => void {
    return this.playback.add(listener);
  }

  private tick(): void {
    this.ticks++;
    // The tail of an utterance: its last partial frame, padded with silence.
    const frame = this.queue.shift() ?? this.frames.flush();
    if (!frame) {
      this.talking = false;
      this.playbackEnded(false);
      this.keepAlive();
      return;
    }
    const payload = this.encoder.encode(frame);
    const packet = writeRtp(
      { payloadType: this.payloadType, sequenceNumber: this.seq, timestamp: this.rtpTimestamp, ssrc: this.ssrc, marker: !this.talking },
      payload,
    );
    this.seq = (this.seq + 1) & 0xffff;
    this.talking = true;
    if (this.padding > 0) this.padding--;
    else this.played();
    this.options.onFrame?.(frame);
    if (this.send(packet)) {
      this.packets++;
      this.octets += payload.length;
    }
  }

  /** Nothing to say this tick: keep-alive media, when asked for (not recorded: nobody spoke). */
  private keepAlive(): void {
    const keepAlive = this.options.keepAlive;
    if (!keepAlive) return;
    const comfortNoise = keepAlive.kind === 'comfortNoise';
    const payload = comfortNoise ? Uint8Array.of(COMFORT_NOISE_LEVEL) : this.encoder.encode(new Int16Array(FRAME_SAMPLES));
    const payloadType = comfortNoise ? keepAlive.payloadType : this.payloadType;
    const packet = writeRtp({ payloadType, sequenceNumber: this.seq, timestamp: this.rtpTimestamp, ssrc: this.ssrc, marker: false }, payload);
    this.seq = (this.seq + 1) & 0xffff;
    if (this.send(packet)) {
      this.packets++;
      this.octets += payload.length;
    }
  }

  /** A frame of speech went out. */
  private played(): void {
    if (this.playedMs === undefined) {
      this.playedMs = 0;
      this.playback.started();
    }
    this.playedMs += 20;
  }

  private playbackEnded(interrupted: boolean): void {
    if (this.playedMs === undefined) return;
    const finished = { playbackPositionMs: this.playedMs, interrupted };
    this.playedMs = undefined;
    this.playback.finished(finished);
  }
}
