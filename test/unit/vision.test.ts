// The camera's picture for the model: the key frame request and its wait, the ffmpeg decoder on VP8
// and H.264 key frames (H.264 through the RTP depacketiser), scaling, images, bad input, and the
// colour reading the offline model answers from. Clips are made by ffmpeg at test time.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { toChatMessages } from '../../src/agent/llm/messages.ts';
import { offlineReply } from '../../src/agent/llm/offline.ts';
import { requestBody } from '../../src/agent/llm/openaiCompatible.ts';
import type { ChatMessage } from '../../src/agent/llm/types.ts';
import { Camera, DECODE_WAIT_MS } from '../../src/agent/vision/camera.ts';
import type { Item } from '../../src/session/conversation.ts';
import { readColours } from '../../src/agent/vision/colours.ts';
import { openAiProtocol } from '../../src/calls/protocol/openai.ts';
import type { CallControl } from '../../src/calls/protocol/types.ts';
import { SWATCH_SIDE, StillDecoder, StillImageError, jpegSize, type StillImage } from '../../src/media/stillImage.ts';
import type { SessionDefaults } from '../../src/session/session.ts';
import { until } from '../helpers/wait.ts';
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

describe('colour readings', () => {
  const solid = (r: number, g: number, b: number) => new Uint8Array(Array.from({ length: 256 }, () => [r, g, b]).flat());
  test('plain words for colours and brightness', () => {
    assert.equal(readColours(solid(200, 20, 20)).words, 'all red, bright');
    assert.equal(readColours(solid(10, 10, 10)).words, 'all black, dark');
    assert.equal(readColours(solid(250, 250, 250)).words, 'all white, very bright');
    const half = new Uint8Array([...solid(0, 0, 220).subarray(0, 384), ...solid(240, 200, 0).subarray(0, 384)]);
    assert.match(readColours(half).words, /^(blue and yellow|yellow and blue), /);
  });
});

describe('the camera', () => {
  const key = (n: number): VideoFrameInfo => ({ codec: 'VP8', payload: Buffer.from([n]), timestamp: n, keyframe: true });
  const delta: VideoFrameInfo = { codec: 'VP8', payload: Buffer.from([0]), timestamp: 0, keyframe: false };
  function camera(answer: boolean) {
    const decoded: Buffer[] = [];
    const failures: string[] = [];
    let requests = 0;
    const cam = new Camera({
      decoder: { decode: async (s: { frame: Buffer }) => (decoded.push(s.frame), { jpeg: s.frame, width: 1, height: 1, swatch: new Uint8Array(3) }) } as unknown as StillDecoder,
      requestKeyframe: () => (requests++, answer),
      keyframeWaitMs: 50,
      failed: (code) => failures.push(code),
    });
    return { cam, decoded, failures, requests: () => requests };
  }

  test('decodes nothing between turns; a capture requests a key frame and decodes the one that answers', async () => {
    const c = camera(true);
    for (let i = 0; i < 30; i++) c.cam.onFrame(i === 0 ? key(1) : delta);
    assert.equal(c.decoded.length, 0, 'frames only kept, not decoded');
    assert.equal(c.requests(), 0, 'no key frame asked for between turns');
    const picture = c.cam.capture();
    assert.equal(c.requests(), 1);
    assert.equal(c.cam.capture(), picture, 'the pause and the end of one turn share a capture');
    c.cam.onFrame(delta);
    c.cam.onFrame(key(2));
    assert.deepEqual((await picture)!.jpeg, Buffer.from([2]), 'the key frame after the request, not the old one');
    c.cam.turnDone();
    void c.cam.capture();
    assert.equal(c.requests(), 2, 'the next turn asks again');
  });

  test('a browser ignoring the request: the last key frame after the wait; none at all: a visible failure', async () => {
    const c = camera(true);
    c.cam.onFrame(key(7));
    assert.deepEqual((await c.cam.capture())!.jpeg, Buffer.from([7]));
    const none = camera(true);
    none.cam.onFrame(delta);
    assert.equal(await none.cam.capture(), undefined);
    assert.deepEqual(none.failures, ['no_keyframe']);
    const noCamera = camera(true);
    assert.equal(await noCamera.cam.capture(), undefined, 'no camera: no picture, no request');
    assert.equal(noCamera.requests(), 0);
  });

  test('a decode slower than DECODE_WAIT_MS: the turn goes on without the picture, told as picture_late', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const failures: string[] = [];
    const cam = new Camera({
      decoder: { decode: () => new Promise(() => {}) } as unknown as StillDecoder,
      requestKeyframe: () => false,
      keyframeWaitMs: 50,
      failed: (code) => failures.push(code),
    });
    cam.onFrame(key(3));
    const picture = cam.capture();
    // The decode starts once the capture has its key frame (a microtask later).
    await Promise.resolve();
    await Promise.resolve();
    t.mock.timers.tick(DECODE_WAIT_MS);
    assert.equal(await picture, undefined);
    assert.deepEqual(failures, ['picture_late']);
  });
});

describe('pictures in model requests', () => {
  const image = { jpeg: Buffer.from([0xff, 0xd8, 0xff]), thumbnail: Buffer.alloc(0), width: 1, height: 1, swatch: new Uint8Array(Array.from({ length: 256 }, () => [220, 30, 30]).flat()) };
  const request = (messages: ChatMessage[]) => ({ messages, instructions: null, temperature: 0.5, tools: [], toolChoice: 'auto' as const, signal: new AbortController().signal });
  const asked: ChatMessage = { role: 'user', content: 'what color do you see', images: [{ image, detail: 'low' }] };

  test('the OpenAI-compatible backend sends image_url parts; LLM_IMAGES=false leaves them out and says one was shown', () => {
    const withImages = requestBody('m', request([asked])) as { messages: { content: unknown }[] };
    assert.deepEqual(withImages.messages[0]!.content, [
      { type: 'text', text: 'what color do you see' },
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/', detail: 'low' } },
    ]);
    const without = requestBody('m', request([asked]), false) as { messages: { content: unknown }[] };
    assert.equal(without.messages[0]!.content, 'what color do you see\n[The user showed an image, which this model cannot see.]');
  });

  test('the offline model: the colours when shown a picture, and plainly that it cannot see without one', () => {
    assert.equal(offlineReply(request([asked])), "I'm not a vision model, but the picture is all red, bright.");
    const blind = offlineReply(request([{ role: 'user', content: 'what color do you see' }]));
    assert.match(blind, /can't see/);
    assert.doesNotMatch(blind, /\b(red|green|blue|bright|dark)\b/);
  });

  test('conversation items: the picture rides on the user message; assistant messages carry none', () => {
    const items: Item[] = [
      { id: 'a', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: 'look' }, { type: 'input_image', image, detail: 'auto', source: 'camera' }] },
      { id: 'b', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'ok' }] },
    ];
    const messages = toChatMessages(items);
    assert.equal(messages[0]!.role === 'user' && messages[0]!.images?.length, 1);
    assert.equal(messages[0]!.content, 'look');
    assert.deepEqual(messages[1], { role: 'assistant', content: 'ok' });
    const later: Item = { id: 'c', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: 'and now' }, { type: 'input_image', image, detail: 'auto', source: 'camera' }] };
    const again = toChatMessages([...items, later]);
    assert.deepEqual(again.map((m) => (m.role === 'user' ? (m.images?.length ?? 0) : '-')), [0, '-', 1], "only the camera's latest picture goes to the model");
  });
});

describe("input_image on OpenAI's protocol", () => {
  test('the events after an image wait for its decode and keep their order; a busy decoder or a decode timed out is server_busy, a picture that is none invalid_image', async () => {
    const calls: string[] = [];
    let release: (image: StillImage) => void = () => {};
    let failure: StillImageError | undefined;
    const control = {
      audioInEvents: false,
      conversation: { get: () => undefined },
      decodeImage: () => (failure ? Promise.reject(failure) : new Promise<StillImage>((resolve) => (release = resolve))),
      addItem: (item: Item) => (calls.push(`add ${item.type === 'message' ? item.content.map((c) => c.type).join('+') : item.type}`), { ok: true, previousItemId: null }),
      createResponse: () => (calls.push('respond'), { ok: true }),
      logFailure: (err: Error) => calls.push(`failure ${err.message}`),
    } as unknown as CallControl;
    const sent: any[] = [];
    const protocol = openAiProtocol({ turnDetection: null } as unknown as SessionDefaults)(control, (m) => sent.push(m));
    const image = (url = 'data:image/png;base64,iVBORw0KGgo=') => JSON.stringify({ type: 'conversation.item.create', event_id: 'img', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'what is this' }, { type: 'input_image', image_url: url }] } });
    protocol.receive(image());
    protocol.receive(JSON.stringify({ type: 'response.create' }));
    assert.deepEqual(calls, [], 'the response waits for the image');
    release({ jpeg: Buffer.from([0xff, 0xd8]), thumbnail: Buffer.alloc(0), width: 1, height: 1, swatch: new Uint8Array(3) });
    await until('both handled', () => calls.length, (n) => n >= 2);
    assert.deepEqual(calls, ['add input_text+input_image', 'respond']);
    for (const [i, code] of (['decoder_busy', 'decode_timeout', 'decode_failed', 'too_large'] as const).entries()) {
      failure = new StillImageError(code, code);
      protocol.receive(image());
      await until(`the refusal for ${code}`, () => sent.filter((m) => m.type === 'error').length, (n) => n > i);
    }
    assert.deepEqual(
      sent.filter((m) => m.type === 'error').map((m) => [m.error.type, m.error.code, m.error.event_id]),
      [
        ['server_error', 'server_busy', 'img'],
        ['server_error', 'server_busy', 'img'],
        ['invalid_request_error', 'invalid_image', 'img'],
        ['invalid_request_error', 'invalid_image', 'img'],
      ],
    );
  });
});
