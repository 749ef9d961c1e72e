// The camera's picture for the model: the key frame request and its wait, the colour reading the
// offline model answers from, pictures in model requests and input_image on OpenAI's protocol (the
// ffmpeg decoder itself: test/engines/still-decoder.test.ts).
import assert from 'node:assert/strict';
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
import { StillDecoder, StillImageError, type StillImage } from '../../src/media/stillImage.ts';
import type { SessionDefaults } from '../../src/session/session.ts';
import { until } from '../helpers/wait.ts';
import type { VideoFrameInfo } from '../../src/media/videoReceiver.ts';

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
