// The caller's camera as the agent uses it: nothing is decoded while the call goes on; when a turn is
// about to end, the browser is asked for a key frame (RTCP PLI), and that one intra frame is decoded
// (media/stillImage.ts) into the picture the turn's user message carries. A browser that ignores the
// request leaves the last key frame it sent, if any; a decode that fails is told as a recoverable
// stage failure, and the turn goes on without the picture.
import { StillImageError, type StillDecoder, type StillImage } from '../../media/stillImage.js';
import type { VideoFrameInfo } from '../../media/videoReceiver.js';

export interface CameraDeps {
  /** The node's decoder, for this call's key. */
  decoder: Pick<StillDecoder, 'decode'>;
  /** Asks the caller's browser for a key frame (false: the stack could not send the request). */
  requestKeyframe(): boolean;
  /** How long to wait for the requested key frame before using the last one (or none). */
  keyframeWaitMs: number;
  /** A picture was decoded, `ms` after its key frame was asked for (metrics). */
  decoded?(ms: number): void;
  /** A capture failed: the turn goes on without a picture. */
  failed(code: string, message: string, cause?: Error): void;
}

export interface CameraFigures {
  /** Frames of the camera received while video is in the session's modalities. */
  framesReceived: number;
  /** Pictures decoded and handed to the model. */
  framesSent: number;
  /** Milliseconds of each capture, from the request to the JPEG, since the last read (metrics). */
  decodeMs: number[];
}

const ACTIVE_WITHIN_MS = 2000;
/**
 * The longest a turn's reply waits for its picture's decode: past it the reply goes on without the
 * picture (a recoverable stage failure) and the decode's result is dropped, so that a node short of
 * CPU delays no reply by more than this.
 */
export const DECODE_WAIT_MS = 1500;

export class Camera {
  private lastKeyframe: VideoFrameInfo | undefined;
  /** When the camera's last frame arrived (performance.now()). */
  private lastFrameAt = -Infinity;
  private waiters: ((frame: VideoFrameInfo) => void)[] = [];
  private framesReceived = 0;
  private framesSent = 0;
  private decodeMs: number[] = [];
  /** The capture for the turn in progress, shared by the turn's prepared reply and its end. */
  private pending: Promise<StillImage | undefined> | undefined;

  constructor(private readonly deps: CameraDeps) {}

  /** A frame of the camera: only key frames are kept (the reference, not a copy), none decoded. */
  onFrame(frame: VideoFrameInfo): void {
    this.framesReceived++;
    this.lastFrameAt = performance.now();
    if (!frame.keyframe) return;
    this.lastKeyframe = frame;
    const waiters = this.waiters;
    if (waiters.length === 0) return;
    this.waiters = [];
    for (const w of waiters) w(frame);
  }

  /**
   * Whether the camera is sending: a frame in the last ACTIVE_WITHIN_MS (a camera turned off, its
   * track replaced by none, sends nothing, and its last picture is not the scene now).
   */
  get active(): boolean {
    return performance.now() - this.lastFrameAt < ACTIVE_WITHIN_MS;
  }

  /**
   * The camera's picture now: a key frame is requested and decoded. Several asks in one turn (its
   * pause, then its end) share one capture until `turnDone()`. Undefined when there is no camera or
   * the capture failed (told through deps.failed).
   */
  capture(): Promise<StillImage | undefined> {
    if (!this.active) return Promise.resolve(undefined);
    this.pending ??= this.captureNow();
    return this.pending;
  }

  /** The turn is over: the next capture asks for a new key frame. */
  turnDone(): void {
    this.pending = undefined;
  }

  figures(): CameraFigures {
    const decodeMs = this.decodeMs;
    this.decodeMs = [];
    return { framesReceived: this.framesReceived, framesSent: this.framesSent, decodeMs };
  }

  /** A picture was put in a model request. */
  sent(): void {
    this.framesSent++;
  }

  close(): void {
    this.lastKeyframe = undefined;
    this.waiters = [];
  }

  private async captureNow(): Promise<StillImage | undefined> {
    const started = performance.now();
    const frame = await this.nextKeyframe();
    if (!frame) {
      this.deps.failed('no_keyframe', 'The camera sent no key frame when asked; the turn goes on without a picture.');
      return undefined;
    }
    let late: NodeJS.Timeout | undefined;
    try {
      const decoding = this.deps.decoder.decode(frame.codec === 'VP8' ? { kind: 'vp8', frame: frame.payload } : { kind: 'h264', frame: frame.payload });
      const image = await Promise.race([decoding, new Promise<'late'>((resolve) => (late = setTimeout(resolve, DECODE_WAIT_MS, 'late')))]);
      clearTimeout(late);
      if (image === 'late') {
        decoding.catch(() => {});
        this.deps.failed('picture_late', `The camera's picture was not decoded within ${DECODE_WAIT_MS} ms; the turn goes on without it.`);
        return undefined;
      }
      const ms = performance.now() - started;
      this.decodeMs.push(ms);
      if (this.decodeMs.length > 64) this.decodeMs.shift();
      this.deps.decoded?.(ms);
      return image;
    } catch (err) {
      clearTimeout(late);
      // The node too busy is not the camera's fault.
      if (err instanceof StillImageError && err.serverBusy) this.deps.failed('server_busy', `The camera's picture was not decoded: ${err.message}`, err);
      else this.deps.failed('frame_decode_failed', `The camera's picture could not be decoded: ${(err as Error).message}`, err as Error);
      return undefined;
    }
  }

  /** The key frame the request brings, or (the browser ignoring it) the last one received. */
  private nextKeyframe(): Promise<VideoFrameInfo | undefined> {
    const asked = this.deps.requestKeyframe();
    if (!asked) return Promise.resolve(this.lastKeyframe);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== take);
        resolve(this.lastKeyframe);
      }, this.deps.keyframeWaitMs);
      const take = (frame: VideoFrameInfo) => {
        clearTimeout(timer);
        resolve(frame);
      };
      this.waiters.push(take);
    });
  }
}
