// The OpenAI-compatible HTTP stages against a small local server: transcription (one WAV per turn)
// and speech (the response body streamed as it arrives, resampled to 48 kHz piece by piece).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { HttpRecognizer } from '../../src/agent/stt/http.ts';
import { HttpSpeechEngine, PcmBodyDecoder } from '../../src/agent/tts/http.ts';
import { StreamResampler, resampleTo48k } from '../../src/media/audio/resample.ts';
import { encodeWav } from '../../src/media/audio/wav.ts';
import { until } from '../helpers/wait.ts';

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;
let handler: Handler;
const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  handler(req, Buffer.concat(chunks), res);
});
let base = '';
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

/** A 24 kHz ramp-and-sine test signal as little-endian bytes. */
function pcm24k(n: number): { samples: Int16Array; bytes: Buffer } {
  const samples = new Int16Array(n);
  for (let i = 0; i < n; i++) samples[i] = Math.round(9000 * Math.sin(i / 7));
  return { samples, bytes: Buffer.from(samples.buffer) };
}

test('transcription: the turn as a WAV file with the model and key; the text back', async () => {
  let seen: { auth?: string; body: Buffer } | undefined;
  handler = (req, body, res) => {
    seen = { auth: req.headers.authorization, body };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: 'hello there' }));
  };
  const rec = new HttpRecognizer({ baseUrl: base, apiKey: 'k', model: 'whisper-1', timeoutMs: 5000 });
  const stream = rec.start();
  stream.write(new Int16Array(1600));
  stream.write(new Int16Array(1600));
  assert.equal(await stream.finish(), 'hello there');
  assert.equal(seen?.auth, 'Bearer k');
  assert.ok(seen.body.includes('RIFF') && seen.body.includes('whisper-1'));
  assert.ok(seen.body.length > 6400, 'both pieces of audio were sent');
});

test('transcription failures reject with what went wrong, and health says so until one succeeds', async () => {
  const rec = new HttpRecognizer({ baseUrl: base, model: 'm', timeoutMs: 5000 });
  handler = (_req, _body, res) => res.writeHead(503).end();
  await assert.rejects(rec.start().finish(), /transcription service answered HTTP 503/);
  assert.deepEqual(rec.health(), { state: 'degraded', detail: 'the last transcription failed: transcription service answered HTTP 503' });
  handler = (_req, _body, res) => res.writeHead(200).end('{"nope":1}');
  await assert.rejects(rec.start().finish(), /answered without a text/);
  handler = (_req, _body, res) => res.writeHead(200).end('{"text":""}');
  assert.equal(await rec.start().finish(), '');
  assert.deepEqual(rec.health(), { state: 'ready' });
  const nowhere = new HttpRecognizer({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 5000 });
  await assert.rejects(nowhere.start().finish(), /transcription service unreachable/);
});

test('speech: the request asks for raw PCM; audio comes out while the body is still arriving', async () => {
  const { samples, bytes } = pcm24k(4801);
  let request: { auth?: string; body: unknown } | undefined;
  let sendRest: () => void = () => {};
  handler = (req, body, res) => {
    request = { auth: req.headers.authorization, body: JSON.parse(body.toString()) };
    res.writeHead(200, { 'content-type': 'audio/pcm' });
    // An odd number of bytes first: a sample split between two pieces.
    res.write(bytes.subarray(0, 3001));
    sendRest = () => {
      res.write(bytes.subarray(3001, 7000));
      res.end(bytes.subarray(7000));
    };
  };
  const engine = new HttpSpeechEngine({ baseUrl: base, apiKey: 'tts-key', model: 'tts-1', timeoutMs: 5000 });
  const chunks: Int16Array[] = [];
  const stream = engine.synthesize('Hello <emotion value="happy"/> there.', 'Victoria', new AbortController().signal);
  const iterator = stream[Symbol.asyncIterator]();
  const first = await iterator.next();
  assert.equal(first.done, false);
  chunks.push(first.value as Int16Array);
  sendRest();
  for (let r = await iterator.next(); !r.done; r = await iterator.next()) chunks.push(r.value);
  assert.deepEqual(request, { auth: 'Bearer tts-key', body: { model: 'tts-1', input: 'Hello there.', voice: 'Victoria', response_format: 'pcm' } });
  const out = Int16Array.from(chunks.flatMap((c) => [...c]));
  const whole = resampleTo48k(samples, 24_000);
  assert.deepEqual(out, whole.subarray(0, out.length), 'the same audio as resampling the whole at once');
  assert.ok(out.length >= whole.length - 2);
  assert.deepEqual(engine.health(), { state: 'ready' });
});

test('speech: a service answering with a WAV file is read at its own rate', () => {
  const { samples } = pcm24k(1600);
  const wav = encodeWav([samples], 16_000);
  // A streamed WAV's unknown lengths.
  wav.writeUInt32LE(0xffffffff, 4);
  wav.writeUInt32LE(0xffffffff, 40);
  const decoder = new PcmBodyDecoder();
  const out: number[] = [];
  for (let i = 0; i < wav.length; i += 13) out.push(...decoder.push(wav.subarray(i, i + 13)));
  const whole = resampleTo48k(samples, 16_000);
  assert.deepEqual(Int16Array.from(out), whole.subarray(0, out.length));
  assert.ok(out.length >= whole.length - 3);
});

test('speech: cancelling closes the response; failures reject and show in health', async () => {
  let closed = false;
  handler = (req, _body, res) => {
    res.writeHead(200);
    res.write(pcm24k(2400).bytes);
    res.on('close', () => (closed = true));
  };
  const engine = new HttpSpeechEngine({ baseUrl: base, model: 'm', timeoutMs: 5000 });
  const abort = new AbortController();
  const iterator = engine.synthesize('Hello.', 'Victoria', abort.signal)[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).done, false);
  abort.abort();
  await assert.rejects(iterator.next(), { name: 'AbortError' });
  await until('the server sees the request closed', () => closed, (c) => c);
  assert.deepEqual(engine.health(), { state: 'ready' }, 'a cancel is no failure');

  handler = (_req, _body, res) => res.writeHead(500).end();
  await assert.rejects(engine.synthesize('Hello.', 'Victoria', new AbortController().signal)[Symbol.asyncIterator]().next(), /speech service answered HTTP 500/);
  assert.deepEqual(engine.health(), { state: 'degraded', detail: 'the last synthesis failed: speech service answered HTTP 500' });
});

test('the stream resampler gives the same samples whatever the pieces', () => {
  const { samples } = pcm24k(1000);
  for (const rate of [16_000, 22_050, 24_000]) {
    const whole = resampleTo48k(samples, rate);
    for (const size of [1, 7, 160, 999]) {
      const r = new StreamResampler(rate);
      const out: number[] = [];
      for (let i = 0; i < samples.length; i += size) out.push(...r.push(samples.subarray(i, i + size)));
      assert.deepEqual(Int16Array.from(out), whole.subarray(0, out.length), `${rate} Hz in pieces of ${size}`);
      assert.ok(out.length >= whole.length - 3, `${rate} Hz: ${out.length} of ${whole.length}`);
    }
  }
});
