// One still picture for a model: a camera's key frame (VP8 or H.264, as received) or an image a client
// sent (PNG, JPEG, WebP, GIF), decoded by an ffmpeg child process (Debian's libavcodec), scaled to at
// most `longSide` pixels on its long side and encoded as JPEG, with a 16×16 RGB swatch of it for what
// can be computed without a vision model (its colours and brightness). A child process per picture
// keeps the decode off the event loop and out of this process's memory. A node decodes at most
// `concurrency` at once, shared fairly among API keys: no key holds every slot while another waits
// (one is kept for the others), a freed slot goes to the waiting key with the fewest running (in
// turn among equals), and each key may have only a few pictures waiting, so that one tenant's
// flood of heavy pictures is refused to that tenant, not to the others. Every failure — not a
// picture, a corrupt or truncated frame, a picture too large, a decode that takes too long, a
// decoder too busy — is a StillImageError, never a crash.
import { spawn } from 'node:child_process';

export type StillSource =
  | { kind: 'vp8'; frame: Buffer }
  /** An H.264 access unit in Annex-B form (start codes), with its SPS and PPS. */
  | { kind: 'h264'; frame: Buffer }
  /** An encoded image file (what a data URL carries). */
  | { kind: 'image'; bytes: Buffer };

export interface StillImage {
  /** The picture as JPEG, at most longSide pixels on its long side. */
  jpeg: Buffer;
  width: number;
  height: number;
  /** The picture as a JPEG at most THUMBNAIL_SIDE on its long side (what the console shows). */
  thumbnail: Buffer;
  /** The picture shrunk to SWATCH_SIDE × SWATCH_SIDE pixels, RGB, row by row. */
  swatch: Uint8Array;
}

export const SWATCH_SIDE = 16;
export const THUMBNAIL_SIDE = 160;

export class StillImageError extends Error {
  constructor(
    readonly code: 'decoder_busy' | 'decode_failed' | 'decode_timeout' | 'too_large',
    message: string,
  ) {
    super(message);
  }

  /** The server's state, not the picture, is why it failed: the client may try again (server_busy). */
  get serverBusy(): boolean {
    return this.code === 'decoder_busy' || this.code === 'decode_timeout';
  }
}

export interface StillDecoderOptions {
  /** Decodes running at once on the node. */
  concurrency: number;
  /** Long side of the JPEG, in pixels. */
  longSide: number;
  /** A decode taking longer is killed (decode_timeout). */
  timeoutMs?: number;
  /** Pictures one key may have waiting for a slot; more are refused to that key (decoder_busy). */
  waitingPerKey?: number;
  /** The ffmpeg binary. */
  ffmpeg?: string;
}

/** The key of a decode asked for without one (every such decode shares it). */
export const NO_KEY = '';

/** Input larger than this is not decoded (a 20 MB data URL holds ≈ 15 MB). */
export const MAX_STILL_INPUT_BYTES = 20 * 1024 * 1024;
/** A picture larger than this (width × height) is refused by ffmpeg's own limit. */
const MAX_PIXELS = 8192 * 8192;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
const JPEG_QUALITY = 5; // ffmpeg's -q:v, 2 (best) … 31

/** Pictures one key may have waiting by default. */
export const WAITING_PER_KEY = 4;
/** Pictures the node has waiting, all keys together, per decode slot (a bound on what waits in memory). */
const WAITING_PER_SLOT = 16;
export const DEFAULT_DECODE_TIMEOUT_MS = 5000;

export interface DecodeFigures {
  decoded: number;
  failed: number;
  running: number;
  waiting: number;
}

export class StillDecoder {
  private running = 0;
  private readonly runningByKey = new Map<string, number>();
  /** Each key's waiting decodes (what starts each), in order of arrival. */
  private readonly waiting = new Map<string, (() => void)[]>();
  private waitingCount = 0;
  /** When each key with decodes running or waiting last got a slot (a count of slots given). */
  private readonly servedAt = new Map<string, number>();
  private served = 0;
  decoded = 0;
  failed = 0;

  constructor(private readonly opts: StillDecoderOptions) {}

  figures(): DecodeFigures {
    return { decoded: this.decoded, failed: this.failed, running: this.running, waiting: this.waitingCount };
  }

  /** Decodes one picture for API key `key`; rejects with a StillImageError. */
  async decode(source: StillSource, key: string = NO_KEY): Promise<StillImage> {
    const input = source.kind === 'image' ? source.bytes : source.frame;
    if (input.length === 0) throw this.fail(new StillImageError('decode_failed', 'The picture is empty.'));
    if (input.length > MAX_STILL_INPUT_BYTES) throw this.fail(new StillImageError('too_large', `The picture is ${input.length} bytes; at most ${MAX_STILL_INPUT_BYTES} are decoded.`));
    // A slot is taken now, or handed over by startNext() once this key's turn comes.
    if (this.mayStart(key)) this.take(key);
    else await this.wait(key);
    try {
      const image = await runFfmpeg(this.opts, source);
      this.decoded++;
      return image;
    } catch (err) {
      throw this.fail(err instanceof StillImageError ? err : new StillImageError('decode_failed', (err as Error).message));
    } finally {
      this.running--;
      const left = this.runningByKey.get(key)! - 1;
      if (left) this.runningByKey.set(key, left);
      else this.runningByKey.delete(key);
      if (!left && !this.waiting.has(key)) this.servedAt.delete(key);
      this.startNext();
    }
  }

  /** The most slots one key holds: all but one, so that another key's picture never waits for a free one. */
  private get perKeyRunning(): number {
    return Math.max(1, this.opts.concurrency - 1);
  }

  /**
   * Whether `key` may start a decode now: a slot is free and it holds fewer than its share. (A free
   * slot with keys waiting is one they may not take: each holds its share already.)
   */
  private mayStart(key: string): boolean {
    return this.running < this.opts.concurrency && (this.runningByKey.get(key) ?? 0) < this.perKeyRunning;
  }

  private take(key: string): void {
    this.running++;
    this.runningByKey.set(key, (this.runningByKey.get(key) ?? 0) + 1);
    this.servedAt.set(key, ++this.served);
  }

  private wait(key: string): Promise<void> {
    const queue = this.waiting.get(key) ?? [];
    const perKey = this.opts.waitingPerKey ?? WAITING_PER_KEY;
    if (queue.length >= perKey) {
      throw this.fail(new StillImageError('decoder_busy', `This API key has ${perKey} pictures waiting to be decoded on this server already; try again once they are done.`));
    }
    if (this.waitingCount >= this.opts.concurrency * WAITING_PER_SLOT) {
      throw this.fail(new StillImageError('decoder_busy', 'Too many pictures are waiting to be decoded on this server; try again.'));
    }
    return new Promise<void>((start) => {
      queue.push(start);
      this.waiting.set(key, queue);
      this.waitingCount++;
    });
  }

  /**
   * Starts waiting decodes while slots are free: each time, of the keys waiting, the one with the
   * fewest running, and among those the one served longest ago (round robin).
   */
  private startNext(): void {
    while (this.running < this.opts.concurrency && this.waitingCount > 0) {
      let chosen: string | undefined;
      const rank = (key: string) => [this.runningByKey.get(key) ?? 0, this.servedAt.get(key) ?? 0] as const;
      for (const key of this.waiting.keys()) {
        const [running, servedAt] = rank(key);
        if (running >= this.perKeyRunning) continue;
        if (chosen === undefined) chosen = key;
        else {
          const [best, bestServedAt] = rank(chosen);
          if (running < best || (running === best && servedAt < bestServedAt)) chosen = key;
        }
      }
      if (chosen === undefined) return; // every waiting key holds its share: the free slot waits for another key
      const queue = this.waiting.get(chosen)!;
      const start = queue.shift()!;
      this.waitingCount--;
      if (!queue.length) this.waiting.delete(chosen);
      this.take(chosen);
      start();
    }
  }

  private fail(err: StillImageError): StillImageError {
    this.failed++;
    return err;
  }
}

/** The ffmpeg arguments reading `source` on stdin and writing the JPEG on stdout, the swatch on fd 3, the thumbnail on fd 4. */
export function ffmpegArgs(source: StillSource, longSide: number): string[] {
  const format = source.kind === 'vp8' ? 'ivf' : source.kind === 'h264' ? 'h264' : 'image2pipe';
  // max_pixels: the decoder refuses a picture larger than that before allocating it.
  const input = ['-f', format, '-max_pixels', String(MAX_PIXELS)];
  const L = longSide;
  const fitTo = (side: number) => `scale='if(gt(iw,ih),min(${side},iw),-2)':'if(gt(iw,ih),-2,min(${side},ih))'`;
  const fit = fitTo(L);
  return [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-threads', '1',
    ...input, '-i', 'pipe:0',
    '-filter_complex', `[0:v]${fit},split=3[big][s][t];[s]scale=${SWATCH_SIDE}:${SWATCH_SIDE}:flags=area,format=rgb24[tiny];[t]${fitTo(THUMBNAIL_SIDE)}[thumb]`,
    '-map', '[big]', '-frames:v', '1', '-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', String(JPEG_QUALITY), '-f', 'image2pipe', 'pipe:1',
    '-map', '[tiny]', '-frames:v', '1', '-f', 'rawvideo', 'pipe:3',
    '-map', '[thumb]', '-frames:v', '1', '-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', '8', '-f', 'image2pipe', 'pipe:4',
  ];
}

/** A VP8 key frame in an IVF file of one frame (what ffmpeg reads VP8 from). */
export function ivfOf(frame: Buffer): Buffer {
  const size = vp8KeyframeSize(frame);
  if (!size) throw new StillImageError('decode_failed', 'The VP8 frame is not a key frame.');
  const header = Buffer.alloc(32 + 12);
  header.write('DKIF', 0, 'latin1');
  header.writeUInt16LE(0, 4);
  header.writeUInt16LE(32, 6);
  header.write('VP80', 8, 'latin1');
  header.writeUInt16LE(size.width, 12);
  header.writeUInt16LE(size.height, 14);
  header.writeUInt32LE(30, 16);
  header.writeUInt32LE(1, 20);
  header.writeUInt32LE(1, 24);
  header.writeUInt32LE(frame.length, 32);
  // pts 0 (8 bytes) already zero
  return Buffer.concat([header, frame]);
}

/** A VP8 key frame's picture size (RFC 6386 9.1), undefined when it is not one. */
export function vp8KeyframeSize(frame: Buffer): { width: number; height: number } | undefined {
  if (frame.length < 10 || (frame[0]! & 1) !== 0) return undefined;
  if (frame[3] !== 0x9d || frame[4] !== 0x01 || frame[5] !== 0x2a) return undefined;
  const width = frame.readUInt16LE(6) & 0x3fff;
  const height = frame.readUInt16LE(8) & 0x3fff;
  return width && height ? { width, height } : undefined;
}

/** A JPEG's size from its start-of-frame marker. */
export function jpegSize(jpeg: Buffer): { width: number; height: number } | undefined {
  let at = 2;
  while (at + 9 < jpeg.length) {
    if (jpeg[at] !== 0xff) return undefined;
    const marker = jpeg[at + 1]!;
    const length = jpeg.readUInt16BE(at + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: jpeg.readUInt16BE(at + 5), width: jpeg.readUInt16BE(at + 7) };
    }
    at += 2 + length;
  }
  return undefined;
}

function runFfmpeg(opts: StillDecoderOptions, source: StillSource): Promise<StillImage> {
  const input = source.kind === 'vp8' ? ivfOf(source.frame) : source.kind === 'h264' ? source.frame : source.bytes;
  return new Promise((resolve, reject) => {
    const child = spawn(opts.ffmpeg ?? 'ffmpeg', ffmpegArgs(source, opts.longSide), {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const jpeg: Buffer[] = [];
    const swatch: Buffer[] = [];
    const thumbnail: Buffer[] = [];
    let stderr = '';
    let size = 0;
    let settled = false;
    const finish = (err: StillImageError | undefined, image?: StillImage) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        // Settled once the process is gone, so that a decoder's slot is free only then (a bomb's
        // ffmpeg holds hundreds of MB until it is).
        if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return reject(err);
        child.once('close', () => reject(err));
        child.kill('SIGKILL');
      } else resolve(image!);
    };
    const timeoutMs = opts.timeoutMs ?? DEFAULT_DECODE_TIMEOUT_MS;
    const timer = setTimeout(
      () => finish(new StillImageError('decode_timeout', `Decoding the picture took longer than ${timeoutMs} ms on this server (it is busy, or the picture very large); try again, or send a smaller picture.`)),
      timeoutMs,
    );
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT_BYTES) return finish(new StillImageError('too_large', 'The decoded picture is too large.'));
      into.push(chunk);
    };
    child.stdout!.on('data', collect(jpeg));
    (child.stdio[3] as NodeJS.ReadableStream).on('data', collect(swatch));
    (child.stdio[4] as NodeJS.ReadableStream).on('data', collect(thumbnail));
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString('utf8');
    });
    child.on('error', (err) => finish(new StillImageError('decode_failed', `ffmpeg could not run: ${err.message}`)));
    child.stdin!.on('error', () => {}); // ffmpeg may stop reading a picture it rejects
    child.on('close', (code) => {
      const out = Buffer.concat(jpeg);
      const rgb = Buffer.concat(swatch);
      const dims = jpegSize(out);
      const thumb = Buffer.concat(thumbnail);
      if (code !== 0 || !dims || rgb.length !== SWATCH_SIDE * SWATCH_SIDE * 3 || !jpegSize(thumb)) {
        const why = stderr.trim().split('\n').at(-1) || `ffmpeg exited with ${code}`;
        return finish(new StillImageError('decode_failed', `The picture could not be decoded (${why.slice(0, 200)}).`));
      }
      finish(undefined, { jpeg: out, width: dims.width, height: dims.height, thumbnail: thumb, swatch: new Uint8Array(rgb) });
    });
    child.stdin!.end(input);
  });
}
