// One call's recording: the caller's audio on the left and the agent's on the right, placed on the
// recording's clock (started when the call connects), encoded as stereo Opus 20 ms frames and
// appended to an Ogg Opus file page by page while the call runs. Whatever goes wrong here (a codec
// error, a full or slow disk) stops the recording, is logged once, and never reaches the call. A
// recording also stops at its size cap (RECORDING_MAX_BYTES) or when the disk runs low
// (diskGuard.ts): then its last page closes a valid file. Either way the call is told (`stopped`).
import { Encoder } from '@evan/opus';
import type { FastifyBaseLogger } from 'fastify';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../media/audio/format.js';
import type { RecordingStopReason } from '../session/events.js';
import { frameConverter } from '../media/audio/resample.js';
import { BoundedFileWriter } from './boundedFileWriter.js';
import { OggOpusStream } from './oggOpus.js';
import { StereoTimeline } from './stereoTimeline.js';

const SAMPLES_PER_MS = SAMPLE_RATE / 1000;
/** Pages waiting for the disk, at most (≈ 80 s of audio at the encoder's bitrate). */
const MAX_QUEUED_BYTES = 512 * 1024;
/** The timeline's limits: 150 ms of drift before a gap is filled, 300 ms for late frames, a minute of audio played ahead. */
const LIMITS = { slack: 150 * SAMPLES_PER_MS, delay: 300 * SAMPLES_PER_MS, maxAhead: 60_000 * SAMPLES_PER_MS };
/** Frames due are emitted at least this often, even when no audio comes (both sides silent). */
const ADVANCE_EVERY_MS = 1000;

/** `truncated`: stopped early on purpose (size cap, low disk), a valid file; `failed`: stopped by an error. */
export type RecordingOutcome = 'complete' | 'truncated' | 'failed';

export interface RecorderOptions {
  /** The file's size at most (RECORDING_MAX_BYTES). */
  maxBytes: number;
  /** The recording stopped before the call ended (told once). */
  stopped: (reason: RecordingStopReason) => void;
}

export class CallRecorder {
  private readonly encoder = new Encoder({ channels: 2, sample_rate: SAMPLE_RATE, application: 'voip' });
  private readonly ogg = new OggOpusStream(FRAME_SAMPLES);
  private readonly file: BoundedFileWriter;
  private readonly timeline: StereoTimeline;
  private startedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private callerRate = SAMPLE_RATE;
  private toRecordingRate = frameConverter(SAMPLE_RATE, SAMPLE_RATE);
  /** No more audio is taken: the call ended or the recording stopped early. */
  private stopped = false;
  /** Why it stopped early, if it did. */
  private stopReason: RecordingStopReason | undefined;
  private finishing = false;
  /** Bytes handed to the file. */
  private written = 0;

  constructor(
    path: string,
    private readonly log: FastifyBaseLogger,
    private readonly conversationId: string,
    private readonly opts: RecorderOptions,
  ) {
    this.file = new BoundedFileWriter(path, MAX_QUEUED_BYTES, (err) => this.fail(err));
    this.encoder.bitrate = 48_000;
    this.encoder.complexity = 5;
    this.timeline = new StereoTimeline(LIMITS, (stereo) => this.encode(stereo));
    for (const page of this.ogg.headers(2, encoderDelay(this.encoder), 'Parley', [`CONVERSATION=${conversationId}`])) this.write(page);
  }

  /** The call connected: the recording's clock starts. */
  start(): void {
    if (this.startedAt !== undefined || this.stopped) return;
    this.startedAt = performance.now();
    this.timer = setInterval(() => this.guarded(() => this.timeline.advance(this.now())), ADVANCE_EVERY_MS);
    this.timer.unref();
  }

  /** 20 ms of the caller's audio at `rate`, as it arrived (it ends now). */
  callerAudio(frame: Int16Array, rate: number): void {
    this.guarded(() => {
      if (rate !== this.callerRate) {
        this.callerRate = rate;
        this.toRecordingRate = frameConverter(rate, SAMPLE_RATE);
      }
      this.timeline.placeArrived(0, this.toRecordingRate(frame), this.now());
    });
  }

  /** The agent's audio (48 kHz) as it leaves for the caller (it starts playing now). */
  agentAudio(pcm: Int16Array): void {
    this.guarded(() => {
      const now = this.now();
      this.timeline.place(1, pcm, now, now);
    });
  }

  /** Whether the recording takes no more audio (stopped early, or finished). */
  get done(): boolean {
    return this.stopped;
  }

  /** The call ended: the frames up to now, the last page, the file closed. */
  async finish(): Promise<RecordingOutcome> {
    this.finishing = true;
    clearInterval(this.timer);
    if (!this.stopped) {
      try {
        if (this.startedAt !== undefined) this.timeline.finish(this.now());
        if (!this.stopped) this.write(this.ogg.end());
      } catch (err) {
        this.fail(err as Error);
      }
    }
    this.stopped = true;
    await this.file.close();
    if (this.timeline.droppedSamples) this.log.warn({ conversation: this.conversationId, droppedMs: this.timeline.droppedSamples / SAMPLES_PER_MS }, 'recording dropped agent audio played too far ahead');
    if (this.stopReason === undefined) return 'complete';
    return this.stopReason === 'failed' ? 'failed' : 'truncated';
  }

  /** Stops the recording before the call ends (its cap, a low disk): the last page closes a valid file. */
  stop(reason: Exclude<RecordingStopReason, 'failed'>): void {
    if (this.stopped) return;
    try {
      this.write(this.ogg.end());
    } catch (err) {
      return this.fail(err as Error);
    }
    this.stoppedEarly(reason);
    this.log.warn({ conversation: this.conversationId, reason, bytes: this.written }, 'recording stopped; the call goes on');
  }

  private now(): number {
    return Math.round((performance.now() - this.startedAt!) * SAMPLES_PER_MS);
  }

  private encode(stereo: Int16Array): void {
    // Frames still due when the recording stopped early (the same advance) have no place in it.
    if (this.stopped) return;
    // A copy: the page holds the packet until it is written.
    const packet = Buffer.from(this.encoder.encode(stereo));
    // Stopped before the packet that could take the file past its cap (the last page still fits).
    if (this.written + this.ogg.pendingBytes + OggOpusStream.bytesAtMost(packet) > this.opts.maxBytes) return this.stop('max_size');
    const page = this.ogg.packet(packet);
    if (page) this.write(page);
  }

  private write(page: Buffer): void {
    this.written += page.length;
    this.file.write(page);
  }

  /** Runs `fn` unless the recording stopped; what it throws stops the recording. */
  private guarded(fn: () => void): void {
    if (this.stopped || this.startedAt === undefined) return;
    try {
      fn();
    } catch (err) {
      this.fail(err as Error);
    }
  }

  private fail(err: Error): void {
    if (this.stopReason === 'failed') return;
    this.stoppedEarly('failed');
    this.log.error({ err, conversation: this.conversationId }, 'recording stopped; the call goes on');
  }

  private stoppedEarly(reason: RecordingStopReason): void {
    // An error closing a recording already stopped early (or complete) still marks it failed.
    const told = this.stopReason !== undefined || this.finishing;
    this.stopReason = reason;
    this.stopped = true;
    clearInterval(this.timer);
    if (!told) this.opts.stopped(reason);
  }
}

/** The encoder's lookahead in samples: the decoder's pre-skip. (@evan/opus's getter is `lookahead`; its typings misspell it.) */
function encoderDelay(encoder: Encoder): number {
  return (encoder as unknown as { lookahead: number }).lookahead;
}
