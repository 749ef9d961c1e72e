// One still picture for a model: a camera's key frame (VP8 or H.264, as received) or an image a client
// sent (PNG, JPEG, WebP, GIF), decoded by an ffmpeg child process (Debian's libavcodec), scaled to at
// most `longSide` pixels on its long side and encoded as JPEG, with a 16×16 RGB swatch of it for what
// can be computed without a vision model (its colours and brightness). A child process per picture
// keeps the decode off the event loop and out of this process's memory; a node decodes at most
// `concurrency` at once, a few more wait, and the rest are refused at once (bounded like the speech
// engines). Every failure — not a picture, a corrupt or truncated frame, a picture too large, a decode
// that takes too long — is a StillImageError, never a crash.
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
}

export interface StillDecoderOptions {
  /** Decodes running at once on the node. */
  concurrency: number;
  /** Long side of the JPEG, in pixels. */
  longSide: number;
  /** A decode taking longer is killed. */
  timeoutMs?: number;
  /** The ffmpeg binary. */
  ffmpeg?: string;
}

/** Input larger than this is not decoded (a 20 MB data URL holds ≈ 15 MB). */
export const MAX_STILL_INPUT_BYTES = 20 * 1024 * 1024;
/** A picture larger than this (width × height) is refused by ffmpeg's own limit. */
const MAX_PIXELS = 8192 * 8192;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
const JPEG_QUALITY = 5; // ffmpeg's -q:v, 2 (best) … 31

/** How many decodes waiting per one running before new ones are refused. */
const QUEUE_PER_SLOT = 4;

export interface DecodeFigures {
  decoded: number;
  failed: number;
  running: number;
  waiting: number;
}

export class StillDecoder {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  decoded = 0;
  failed = 0;

  constructor(private readonly opts: StillDecoderOptions) {}

  figures(): DecodeFigures {
    return { decoded: this.decoded, failed: this.failed, running: this.running, waiting: this.waiting.length };
  }

  /** Decodes one picture; rejects with a StillImageError. */
  async decode(source: StillSource): Promise<StillImage> {
    const input = source.kind === 'image' ? source.bytes : source.frame;
    if (input.length === 0) throw this.fail(new StillImageError('decode_failed', 'The picture is empty.'));
    if (input.length > MAX_STILL_INPUT_BYTES) throw this.fail(new StillImageError('too_large', `The picture is ${input.length} bytes; at most ${MAX_STILL_INPUT_BYTES} are decoded.`));
    if (this.running >= this.opts.concurrency) {
      if (this.waiting.length >= this.opts.concurrency * QUEUE_PER_SLOT) throw this.fail(new StillImageError('decoder_busy', 'Too many pictures are being decoded on this server; try again.'));
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running++;
    try {
      const image = await runFfmpeg(this.opts, source);
      this.decoded++;
      return image;
    } catch (err) {
      throw this.fail(err instanceof StillImageError ? err : new StillImageError('decode_failed', (err as Error).message));
    } finally {
      this.running--;
      this.waiting.shift()?.();
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
        child.kill('SIGKILL');
        reject(err);
      } else resolve(image!);
    };
    const timer = setTimeout(() => finish(new StillImageError('decode_timeout', 'Decoding the picture took too long.')), opts.timeoutMs ?? 5000);
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
