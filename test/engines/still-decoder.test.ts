// The still decoder (an ffmpeg process per picture) on VP8 and H.264 key frames (H.264 through the
// RTP depacketiser), scaling, images, bad input and its bound on concurrent decodes. Clips are made
// by ffmpeg at test time.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { readColours } from '../../src/agent/vision/colours.ts';
import { SWATCH_SIDE, StillDecoder, StillImageError, jpegSize } from '../../src/media/stillImage.ts';
import { VideoReceiver, type VideoFrameInfo } from '../../src/media/videoReceiver.ts';

const ffmpeg = (args: string[]) => execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', ...args, 'pipe:1'], { maxBuffer: 1 << 24 });
const vp8Keyframe = (colour: string, size: string) => ffmpeg(['-f', 'lavfi', '-i', `color=${colour}:s=${size}`, '-frames:v', '1', '-c:v', 'libvpx', '-f', 'ivf']).subarray(32 + 12);
const h264Keyframe = (colour: string, size: string) => ffmpeg(['-f', 'lavfi', '-i', `color=${colour}:s=${size}`, '-frames:v', '1', '-c:v', 'libx264', '-f', 'h264']);
const png = (colour: string, size: string) => ffmpeg(['-f', 'lavfi', '-i', `color=${colour}:s=${size}`, '-frames:v', '1', '-f', 'image2pipe', '-c:v', 'png']);

const decoder = () => new StillDecoder({ concurrency: 2, longSide: 768 });

/** Annex-B NAL units as RTP packets: small ones single, large ones as FU-A fragments of `mtu`. */
function h264Packets(annexB: Buffer, payloadType: number, mtu = 300): Buffer[] {
  const nals: Buffer[] = [];
  let start = -1;
  for (let i = 0; i + 3 <= annexB.length; i++) {
    if (annexB[i] === 0 && annexB[i + 1] === 0 && annexB[i + 2] === 1) {
      if (start >= 0) nals.push(annexB.subarray(start, i - (annexB[i - 1] === 0 ? 1 : 0)));
      start = i + 3;
      i += 2;
    }
  }
  if (start >= 0) nals.push(annexB.subarray(start));
  const payloads: Buffer[] = [];
  for (const nal of nals) {
    if (nal.length <= mtu) payloads.push(nal);
    else {
      const header = nal[0]!;
      const body = nal.subarray(1);
      for (let at = 0; at < body.length; at += mtu) {
        const fu = (at === 0 ? 0x80 : 0) | (at + mtu >= body.length ? 0x40 : 0) | (header & 0x1f);
        payloads.push(Buffer.concat([Buffer.from([(header & 0xe0) | 28, fu]), body.subarray(at, at + mtu)]));
      }
    }
  }
  return payloads.map((p, i) => {
    const h = Buffer.alloc(12);
    h[0] = 0x80;
    h[1] = (i === payloads.length - 1 ? 0x80 : 0) | payloadType;
    h.writeUInt16BE(i, 2);
    h.writeUInt32BE(90_000, 4);
    h.writeUInt32BE(1234, 8);
    return Buffer.concat([h, p]);
  });
}

describe('the still decoder (ffmpeg)', () => {
  test('a VP8 key frame: decoded at its size, its colour read', async () => {
    const image = await decoder().decode({ kind: 'vp8', frame: vp8Keyframe('red', '320x240') });
    assert.deepEqual([image.width, image.height], [320, 240]);
    assert.deepEqual(jpegSize(image.jpeg), { width: 320, height: 240 });
    assert.equal(image.swatch.length, SWATCH_SIDE * SWATCH_SIDE * 3);
    assert.equal(readColours(image.swatch).words, 'all red, bright');
  });

  test('an H.264 key frame through the RTP depacketiser (FU-A, single NAL units): scaled to the long side', async () => {
    const frames: VideoFrameInfo[] = [];
    const receiver = new VideoReceiver([{ payloadType: 102, name: 'H264' }], (f) => frames.push(f));
    for (const p of h264Packets(h264Keyframe('blue', '1280x720'), 102)) receiver.handle(p);
    assert.equal(frames.length, 1);
    assert.ok(frames[0]!.keyframe);
    const image = await decoder().decode({ kind: 'h264', frame: frames[0]!.payload });
    assert.deepEqual([image.width, image.height], [768, 432]);
    assert.deepEqual(readColours(image.swatch).colours, ['blue']);
  });

  test('VP8 through the RTP receiver: a key frame kept whole (descriptor with a picture id removed), delta frames told without their bytes', async () => {
    const key = vp8Keyframe('red', '320x240');
    const frames: VideoFrameInfo[] = [];
    const receiver = new VideoReceiver([{ payloadType: 96, name: 'VP8' }], (f) => frames.push(f));
    const send = (frame: Buffer, timestamp: number) => {
      for (let at = 0, i = 0; at < frame.length; at += 100, i++) {
        const h = Buffer.alloc(12);
        h[0] = 0x80;
        h[1] = (at + 100 >= frame.length ? 0x80 : 0) | 96;
        h.writeUInt32BE(timestamp, 4);
        // X=1, S on the first packet, I=1 with a 15-bit picture id.
        const descriptor = Buffer.from([0x80 | (i === 0 ? 0x10 : 0), 0x80, 0x80 | 0x12, 0x34]);
        receiver.handle(Buffer.concat([h, descriptor, frame.subarray(at, at + 100)]));
      }
    };
    send(key, 3000);
    send(Buffer.concat([Buffer.from([key[0]! | 1]), key.subarray(1)]), 6000);
    assert.equal(frames.length, 2);
    assert.deepEqual([frames[0]!.keyframe, frames[0]!.payload.equals(key)], [true, true]);
    assert.deepEqual([frames[1]!.keyframe, frames[1]!.payload.length], [false, 0]);
    const image = await decoder().decode({ kind: 'vp8', frame: frames[0]!.payload });
    assert.deepEqual(readColours(image.swatch).colours, ['red']);
  });

  test('a portrait PNG: scaled by its long side; a small one kept at its size', async () => {
    const tall = await decoder().decode({ kind: 'image', bytes: png('green', '600x1600') });
    assert.deepEqual([tall.width, tall.height], [288, 768]);
    assert.deepEqual(readColours(tall.swatch).colours, ['green']);
    const small = await decoder().decode({ kind: 'image', bytes: png('yellow', '64x48') });
    assert.deepEqual([small.width, small.height], [64, 48]);
  });

  test('bad input is a StillImageError: not an image, a truncated key frame, a delta frame, empty', async () => {
    const d = decoder();
    const key = vp8Keyframe('red', '320x240');
    const rejects = (p: Promise<unknown>, code: string) => assert.rejects(p, (err) => err instanceof StillImageError && err.code === code);
    await rejects(d.decode({ kind: 'image', bytes: Buffer.from('this is not a picture at all, only words') }), 'decode_failed');
    await rejects(d.decode({ kind: 'h264', frame: h264Keyframe('red', '320x240').subarray(0, 40) }), 'decode_failed');
    await rejects(d.decode({ kind: 'vp8', frame: Buffer.concat([Buffer.from([key[0]! | 1]), key.subarray(1)]) }), 'decode_failed');
    await rejects(d.decode({ kind: 'image', bytes: Buffer.alloc(0) }), 'decode_failed');
    assert.equal(d.figures().failed, 4);
  });

  test('shared fairly per key: a key holds all slots but one and may have 4 waiting, refused past that; another key starts at once', async () => {
    const d = new StillDecoder({ concurrency: 2, longSide: 64 });
    const frame = vp8Keyframe('white', '160x120');
    const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (err: StillImageError) => err.code);
    const flood = Array.from({ length: 7 }, () => outcome(d.decode({ kind: 'vp8', frame }, 'key_a')));
    assert.deepEqual(d.figures(), { decoded: 0, failed: 2, running: 1, waiting: 4 }, 'A: one running (the other slot kept for other keys), four waiting, two refused');
    const other = outcome(d.decode({ kind: 'vp8', frame }, 'key_b'));
    assert.equal(d.figures().running, 2, "B's picture starts at once");
    assert.deepEqual(await Promise.all(flood), ['ok', 'ok', 'ok', 'ok', 'ok', 'decoder_busy', 'decoder_busy']);
    assert.equal(await other, 'ok');
  });

  test('a freed slot goes to the waiting key with the fewest running, the one served longest ago among equals', async () => {
    const d = new StillDecoder({ concurrency: 1, longSide: 64 });
    const frame = vp8Keyframe('white', '160x120');
    const order: string[] = [];
    const decode = (key: string, n: number) => d.decode({ kind: 'vp8', frame }, key).then(() => order.push(`${key}${n}`));
    const all = [decode('a', 1), decode('a', 2), decode('a', 3), decode('b', 1), decode('c', 1), decode('b', 2)];
    await Promise.all(all);
    assert.deepEqual(order, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3'], 'in turn, not in order of arrival');
  });

  test('a decode past its timeout is decode_timeout, which is the server being busy', async () => {
    const d = new StillDecoder({ concurrency: 1, longSide: 64, timeoutMs: 1 });
    await assert.rejects(d.decode({ kind: 'vp8', frame: vp8Keyframe('white', '160x120') }), (err) => err instanceof StillImageError && err.code === 'decode_timeout' && err.serverBusy);
    await assert.rejects(decoder().decode({ kind: 'image', bytes: Buffer.from('not a picture') }, 'k'), (err) => err instanceof StillImageError && err.code === 'decode_failed' && !err.serverBusy);
  });

  test('concurrency is bounded: a few wait, the rest are refused at once', async () => {
    const d = new StillDecoder({ concurrency: 1, longSide: 64 });
    const frame = vp8Keyframe('white', '160x120');
    const all = Array.from({ length: 8 }, () => d.decode({ kind: 'vp8', frame }).then(() => 'ok', (err: StillImageError) => err.code));
    assert.equal(d.figures().running, 1);
    const results = await Promise.all(all);
    assert.equal(results.filter((r) => r === 'ok').length, 5, 'one running and four waiting');
    assert.equal(results.filter((r) => r === 'decoder_busy').length, 3);
  });
});
