// OpenAI's Realtime WebSocket interface, driven by the published `openai` library's OpenAIRealtimeWS
// (pinned dev dependency), unchanged, against Parley serving TLS with a certificate made here: the
// API key and an ek_ client secret; a spoken question streamed at real-time pace (server VAD) →
// transcription and audible output deltas; text in with response.create; G.711 μ-law both ways with
// client-driven turns (commit + response.create); refusals before the upgrade; a bad event answered
// with an error while the session goes on.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';
import OpenAI from 'openai';
import OpenAIv4 from 'openai-v4';
import { OpenAIRealtimeWS as OpenAIRealtimeWSBeta } from 'openai-v4/beta/realtime/ws';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { decodeWireAudio, encodeWireAudio, type AudioEncoding } from '../src/media/audio/wireAudio.ts';
import { launchBrowser } from './helpers/browser.ts';
import { startOpenAiApp } from './helpers/openaiApp.ts';
import { concat } from './helpers/pcm.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { speak, speechWav } from './helpers/speech.ts';
import { makeCertificate } from './helpers/tls.ts';
import { until } from './helpers/wait.ts';

/** A Parley server serving TLS with a certificate made for it; `dir` holds the files (and a test's own). */
async function startTlsServer(env: Record<string, string> = {}): Promise<{ server: RunningServer; ca: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-tls-'));
  const { cert, key } = makeCertificate(dir);
  const server = await startServer({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key, ...env });
  return { server, ca: readFileSync(cert, 'utf8'), dir };
}

interface Session {
  rt: OpenAIRealtimeWS;
  events: any[];
  close: () => void;
}

/** An OpenAIRealtimeWS session as the library's docs show, trusting the test's certificate. */
async function open(baseUrl: string, apiKey: string, ca: string): Promise<Session> {
  const client = new OpenAI({ apiKey, baseURL: `${baseUrl}/v1` });
  const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca } }, client);
  const events: any[] = [];
  rt.on('event', (e: any) => events.push(e));
  rt.on('error', (e: any) => events.push({ type: 'sdk.error', message: String(e?.message ?? e) }));
  await new Promise<void>((resolve, reject) => {
    rt.socket.once('open', () => resolve());
    rt.socket.once('error', reject);
  });
  await until('session.created', () => events.map((e) => e.type), (t) => t.includes('session.created'));
  return { rt, events, close: () => rt.close() };
}

/** The HTTP status a WebSocket upgrade is refused with (rejects if it is accepted). */
function refusedWith(url: string, headers: Record<string, string>, ca: string, protocols: string[] = []): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers, ca });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      ws.close();
      reject(new Error('upgraded'));
    });
    ws.on('error', () => {});
  });
}

const typesOf = (s: Session) => s.events.map((e) => e.type);
const waitFor = (s: Session, type: string, from = 0, timeoutMs = 20_000) =>
  until(type, () => s.events.slice(from).find((e) => e.type === type), (e) => e !== undefined, timeoutMs);

/** Mono PCM at `rate`: silence, then each sentence spoken, joined. */
function speech(rate: number, ...parts: (string | { silenceMs: number })[]): Int16Array {
  return concat(...parts.map((p) => (typeof p === 'string' ? speak(p, rate) : new Int16Array(Math.round((rate * p.silenceMs) / 1000)))));
}

/** `pcm`, already at `encoding`'s wire rate, appended in 20 ms pieces at real-time pace. */
async function stream(s: Session, pcm: Int16Array, encoding: AudioEncoding): Promise<void> {
  const piece = (encoding === 'pcm16' ? 24_000 : 8_000) / 50;
  for (let at = 0; at < pcm.length; at += piece) {
    s.rt.send({ type: 'input_audio_buffer.append', audio: encodeWireAudio(pcm.subarray(at, at + piece), encoding).toString('base64') });
    // Real-time pace, as a microphone delivers it.
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The loudest sample of the output deltas from `from` on. */
function outputPeak(s: Session, encoding: AudioEncoding, from = 0): number {
  let peak = 0;
  for (const e of s.events.slice(from)) {
    if (e.type !== 'response.output_audio.delta') continue;
    for (const v of decodeWireAudio(Buffer.from(e.delta, 'base64'), encoding)) peak = Math.max(peak, Math.abs(v));
  }
  return peak;
}

/** A server on default settings (TLS aside), shared by the tests that need nothing else. */
let defaults: Awaited<ReturnType<typeof startTlsServer>>;
before(async () => {
  defaults = await startTlsServer();
});
after(async () => {
  await defaults?.server.stop();
  if (defaults) rmSync(defaults.dir, { recursive: true, force: true });
});

describe('OpenAI Realtime over WebSocket (openai OpenAIRealtimeWS, TLS)', () => {
  let server: RunningServer;
  let dir: string;
  let ca: string;
  before(() => {
    ({ server, ca, dir } = defaults);
    assert.match(server.baseUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
  });

  test('with the API key: text in with response.create, audible output deltas, response.done', async () => {
    const s = await open(server.baseUrl, server.devKey, ca);
    try {
      s.rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] } });
      s.rt.send({ type: 'response.create' });
      const done = await waitFor(s, 'response.done');
      assert.equal(done.response.status, 'completed');
      const types = typesOf(s);
      for (const t of ['response.created', 'response.output_audio_transcript.delta', 'response.output_audio.delta', 'response.output_audio.done']) assert.ok(types.includes(t), `${t} among ${[...new Set(types)]}`);
      assert.ok(!types.some((t) => t.startsWith('output_audio_buffer.')), 'no server playback buffer over a WebSocket');
      assert.ok(outputPeak(s, 'pcm16') > 1000, 'the reply is audible');
      const delta = s.events.find((e) => e.type === 'response.output_audio.delta');
      assert.equal(delta.response_id, done.response.id);
    } finally {
      s.close();
    }
  });

  test('input_image: a PNG with a question → the reply names its colour (offline: not a vision model); retrieve returns the JPEG kept; not an image → an error, the session goes on', async () => {
    const png = execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=green:s=96x64', '-frames:v', '1', '-c:v', 'png', '-f', 'image2pipe', 'pipe:1']);
    const s = await open(server.baseUrl, server.devKey, ca);
    try {
      s.rt.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What color is this?' }, { type: 'input_image', image_url: `data:image/png;base64,${png.toString('base64')}`, detail: 'low' }] },
      });
      s.rt.send({ type: 'response.create' });
      const done = await waitFor(s, 'response.output_audio_transcript.done');
      assert.match(done.transcript, /\bgreen\b/);
      assert.match(done.transcript, /not a vision model/);
      const added = s.events.find((e) => e.type === 'conversation.item.added' && e.item.role === 'user');
      const image = added.item.content.find((c: any) => c.type === 'input_image');
      assert.equal(image.detail, 'low');
      assert.match(image.image_url, /^data:image\/jpeg;base64,\/9j\//, 'the item keeps a JPEG of the picture');
      s.rt.send({ type: 'conversation.item.retrieve', item_id: added.item.id });
      const retrieved = await waitFor(s, 'conversation.item.retrieved');
      assert.equal(retrieved.item.content[1].image_url, image.image_url);

      const from = s.events.length;
      s.rt.send({ type: 'conversation.item.create', event_id: 'bad-image', item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${Buffer.from('not a picture').toString('base64')}` }] } });
      s.rt.send({ type: 'conversation.item.create', event_id: 'not-data', item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/cat.png' }] } });
      // A 20 MB data URL: past the 15 MiB an event may have.
      s.rt.send({ type: 'conversation.item.create', event_id: 'huge', item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${'A'.repeat(20 * 1024 * 1024)}` }] } });
      s.rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'and now?' }] } });
      const later = await until('three errors and the next item', () => s.events.slice(from), (es) => es.filter((e) => e.type === 'error').length >= 3 && es.some((e) => e.type === 'conversation.item.added'));
      const errors = later.filter((e) => e.type === 'error').map((e) => [e.error.event_id, e.error.code]);
      assert.deepEqual(errors, [['bad-image', 'invalid_image'], ['not-data', 'invalid_image_url'], [null, 'message_too_large']], 'in the order sent (the one too large to read names no event)');
    } finally {
      s.close();
    }
  });

  test('the cancel window: response.cancel at the first audio delta stops the reply (response.done cancelled), the audio paced in pieces', async () => {
    const s = await open(server.baseUrl, server.devKey, ca);
    try {
      let cancelled = false;
      s.rt.on('response.output_audio.delta', () => {
        if (cancelled) return;
        cancelled = true;
        s.rt.send({ type: 'response.cancel' });
      });
      s.rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Who are you?' }] } });
      s.rt.send({ type: 'response.create' });
      const done = await waitFor(s, 'response.done');
      assert.equal(done.response.status, 'cancelled', JSON.stringify(done.response.status_details));
      assert.ok(!s.events.some((e) => e.type === 'error'), 'the cancel was not refused');
      const deltas = s.events.filter((e) => e.type === 'response.output_audio.delta');
      assert.ok(deltas.every((e) => Buffer.from(e.delta, 'base64').length <= 4800), 'deltas of 100 ms (24 kHz PCM16) at most');
    } finally {
      s.close();
    }
  });

  test('with an ek_ client secret: a spoken question at real-time pace is transcribed and answered aloud', async () => {
    const openai = new OpenAI({ apiKey: server.devKey, baseURL: `${server.baseUrl}/v1`, fetchOptions: { dispatcher: new Agent({ connect: { ca } }) } as never });
    const secret = await openai.realtime.clientSecrets.create({
      session: { type: 'realtime', model: 'gpt-realtime', audio: { input: { transcription: { model: 'parley' } } } },
    });
    assert.match(secret.value, /^ek_/);
    const s = await open(server.baseUrl, secret.value, ca);
    try {
      await stream(s, speech(24_000, { silenceMs: 500 }, 'what time is it', { silenceMs: 1500 }), 'pcm16');
      const transcript = await waitFor(s, 'conversation.item.input_audio_transcription.completed');
      assert.match(transcript.transcript, /time/i);
      const done = await waitFor(s, 'response.done');
      assert.equal(done.response.status, 'completed');
      assert.ok(outputPeak(s, 'pcm16') > 1000, 'the answer is audible');
    } finally {
      s.close();
    }
  });

  test('G.711 μ-law both ways, client-driven turns: append, commit, response.create', async () => {
    const s = await open(server.baseUrl, server.devKey, ca);
    try {
      s.rt.send({
        type: 'session.update',
        session: { type: 'realtime', audio: { input: { format: { type: 'audio/pcmu' }, turn_detection: null, transcription: { model: 'parley' } }, output: { format: { type: 'audio/pcmu' } } } },
      });
      const updated = await waitFor(s, 'session.updated');
      assert.deepEqual(updated.session.audio.input.format, { type: 'audio/pcmu' });
      assert.deepEqual(updated.session.audio.output.format, { type: 'audio/pcmu' });
      assert.equal(updated.session.audio.input.turn_detection, null);
      const from = s.events.length;
      await stream(s, speech(8_000, 'what time is it', { silenceMs: 300 }), 'pcmu');
      assert.ok(!typesOf(s).slice(from).includes('response.created'), 'no reply before the client asks (turn_detection null)');
      s.rt.send({ type: 'input_audio_buffer.commit' });
      await waitFor(s, 'input_audio_buffer.committed', from);
      s.rt.send({ type: 'response.create' });
      const done = await waitFor(s, 'response.done', from);
      assert.equal(done.response.status, 'completed');
      // Transcribed (which words the offline recogniser makes of 8 kHz audio varies; see the beta test).
      const transcript = await waitFor(s, 'conversation.item.input_audio_transcription.completed', from);
      assert.ok(transcript.transcript.trim().length > 0);
      const bytes = s.events.slice(from).filter((e) => e.type === 'response.output_audio.delta').reduce((n, e) => n + Buffer.from(e.delta, 'base64').length, 0);
      assert.ok(bytes > 8000, `a second or more of 8 kHz μ-law (${bytes} bytes)`);
      assert.ok(outputPeak(s, 'pcmu', from) > 1000, 'the μ-law reply is audible');
    } finally {
      s.close();
    }
  });

  test('an unknown event gets an invalid_request_error and the session goes on', async () => {
    const s = await open(server.baseUrl, server.devKey, ca);
    try {
      s.rt.send({ type: 'no.such.event' } as never);
      const error = await waitFor(s, 'error');
      assert.equal(error.error.type, 'invalid_request_error');
      const from = s.events.length;
      s.rt.send({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } });
      assert.equal((await waitFor(s, 'session.updated', from)).session.instructions, 'Be brief.');
    } finally {
      s.close();
    }
  });

  test('refused before the upgrade: a wrong key 401, an API key as a subprotocol 401', async () => {
    const url = `${server.baseUrl.replace('https', 'wss')}/v1/realtime?model=gpt-realtime`;
    const statusOf = (headers: Record<string, string>, protocols: string[] = []) => refusedWith(url, headers, ca, protocols);
    assert.equal(await statusOf({ authorization: 'Bearer sk_parley_ai_wrongwrongwrongwrongwrongwrongwrong12' }), 401);
    assert.equal(await statusOf({}), 401);
    assert.equal(await statusOf({}, ['realtime', `openai-insecure-api-key.${server.devKey}`]), 401);
    // A plain GET (no upgrade) is told what the route is, and opens nothing.
    const plain = await request(`${server.baseUrl}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` }, dispatcher: new Agent({ connect: { ca } }) });
    assert.equal(plain.statusCode, 426);
    assert.equal(((await plain.body.json()) as any).error.code, 'upgrade_required');
  });
});

describe('a client that stops reading; a token past its calls', () => {
  let server: RunningServer;
  let dir: string;
  let ca: string;
  before(async () => {
    // A small backlog bound, and replies as fast as the client asks (it asks for many on purpose),
    // their audio sent as it is synthesised (paced, the backlog would grow at real-time rate only).
    ({ server, ca, dir } = await startTlsServer({ WEBSOCKET_MAX_UNSENT_BYTES: String(64 * 1024), CALL_REPLIES_PER_SECOND: '100', RATE_LIMIT_CALLS_PER_TOKEN: '1', WEBSOCKET_AUDIO_LEAD_MS: '0' }));
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a WebSocket session counts as a call of its token: past RATE_LIMIT_CALLS_PER_TOKEN, 429 before the upgrade', async () => {
    const token = await mintTokenTls(server.baseUrl, server.devKey, ca);
    const url = `${server.baseUrl.replace('https', 'wss')}/v1/realtime?model=gpt-realtime`;
    const first = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, ca });
    try {
      await new Promise<void>((resolve, reject) => {
        first.once('open', () => resolve());
        first.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
      });
      const status = await refusedWith(url, { authorization: `Bearer ${token}` }, ca);
      assert.equal(status, 429);
    } finally {
      first.terminate();
    }
  });

  test('is cut off once its unsent backlog passes the bound; the session is recorded client_too_slow', async () => {
    const ws = new WebSocket(`${server.baseUrl.replace('https', 'wss')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` }, ca });
    try {
      const created = await new Promise<any>((resolve, reject) => {
        ws.once('message', (data) => resolve(JSON.parse(data.toString())));
        ws.once('error', reject);
      });
      assert.equal(created.type, 'session.created');
      const id = created.session.id as string;
      // From now on nothing is read; the client keeps asking for spoken replies.
      ws.pause();
      const ask = () => {
        ws.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the sea.' }] } }));
        ws.send(JSON.stringify({ type: 'response.create' }));
      };
      const asking = setInterval(ask, 100);
      try {
        const record = await until(
          'the session to be cut off',
          async () => (await requestJson(`${server.baseUrl}/v1/realtime/conversations/${id}`, server.devKey, ca)) as any,
          (r) => r.state === 'ended' || r.state === 'failed',
          60_000,
        );
        assert.equal(record.end_reason, 'client_too_slow');
        const metrics = await (await request(`${server.baseUrl}/metrics`, { dispatcher: new Agent({ connect: { ca } }) })).body.text();
        assert.match(metrics, /parley_calls_ended_total\{state="ended",reason="client_too_slow",transport="websocket"\} 1/);
      } finally {
        clearInterval(asking);
      }
    } finally {
      ws.terminate();
    }
  });
});

describe('a node shutting down', () => {
  test('a WebSocket session is told the end (parley.session.ended) and closed with 1001 (going away); new sessions get 503', async () => {
    const { server, ca, dir } = await startTlsServer({ SHUTDOWN_GRACE_MS: '2000' });
    try {
      const s = await open(server.baseUrl, server.devKey, ca);
      const closed = new Promise<number>((resolve) => s.rt.socket.once('close', (code: number) => resolve(code)));
      server.proc.kill('SIGTERM');
      const ended = await waitFor(s, 'parley.session.ended');
      assert.equal(ended.reason, 'server_shutdown');
      assert.equal(await closed, 1001);
      // During the grace period the port still answers, and refuses new sessions.
      const status = await refusedWith(`${server.baseUrl.replace('https', 'wss')}/v1/realtime?model=gpt-realtime`, { authorization: `Bearer ${server.devKey}` }, ca);
      assert.equal(status, 503);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the beta dialect (openai 4.x, installed as openai-v4: its openai/beta/realtime/ws)', () => {
  let server: RunningServer;
  let dir: string;
  let ca: string;
  before(() => ({ server, ca, dir } = defaults));

  test('beta names and shapes: a flat session with g711_ulaw, conversation.item.created, response.audio.delta in μ-law', async () => {
    const rt = new OpenAIRealtimeWSBeta({ model: 'gpt-4o-realtime-preview', options: { ca } }, new OpenAIv4({ apiKey: server.devKey, baseURL: `${server.baseUrl}/v1` }));
    const events: any[] = [];
    rt.on('event', (e: any) => events.push(e));
    const s: Session = { rt: rt as never, events, close: () => rt.close() };
    try {
      const created = await waitFor(s, 'session.created');
      assert.equal(created.session.type, undefined, 'a beta session has no type');
      assert.equal(created.session.input_audio_format, 'pcm16');
      rt.send({
        type: 'session.update',
        session: { modalities: ['text', 'audio'], input_audio_format: 'g711_ulaw', output_audio_format: 'g711_ulaw', input_audio_transcription: { model: 'whisper-1' }, turn_detection: { type: 'server_vad' } },
      });
      const updated = await waitFor(s, 'session.updated');
      assert.equal(updated.session.input_audio_format, 'g711_ulaw');
      assert.equal(updated.session.output_audio_format, 'g711_ulaw');
      assert.deepEqual(updated.session.modalities, ['text', 'audio']);
      const from = events.length;
      await stream(s, speech(8_000, { silenceMs: 300 }, 'what time is it', { silenceMs: 1500 }), 'pcmu');
      // Heard and transcribed (the offline recogniser's 16 kHz model reads 8 kHz telephone audio poorly:
      // which words it makes of it is not what this test is about).
      const transcript = await waitFor(s, 'conversation.item.input_audio_transcription.completed', from, 30_000);
      assert.ok(transcript.transcript.trim().length > 0);
      const done = await waitFor(s, 'response.done', from, 30_000);
      assert.equal(done.response.status, 'completed');
      assert.deepEqual(done.response.modalities, ['text', 'audio']);
      assert.equal(done.response.output[0].content[0].type, 'audio');
      const types = events.slice(from).map((e) => e.type);
      for (const t of ['conversation.item.created', 'response.audio.delta', 'response.audio_transcript.delta', 'response.audio.done']) assert.ok(types.includes(t), `${t} among ${[...new Set(types)]}`);
      for (const t of types) assert.doesNotMatch(t, /output_audio|conversation\.item\.(added|done)/, 'only beta names');
      let peak = 0;
      for (const e of events.slice(from).filter((e) => e.type === 'response.audio.delta')) for (const v of decodeWireAudio(Buffer.from(e.delta, 'base64'), 'pcmu')) peak = Math.max(peak, Math.abs(v));
      assert.ok(peak > 1000, 'the μ-law reply is audible');
    } finally {
      rt.close();
    }
  });
});

describe('@openai/agents-realtime RealtimeSession over its WebSocket transport in Node', () => {
  let server: RunningServer;
  let dir: string;
  let ca: string;
  before(() => ({ server, ca, dir } = defaults));

  /** A session as the SDK's docs show, its socket made by createWebSocket only to trust the test's certificate. */
  async function agentSession() {
    const transport = new OpenAIRealtimeWebSocket({
      createWebSocket: async ({ url, apiKey }) =>
        new WebSocket(url, { headers: { Authorization: `Bearer ${apiKey}` }, ca }),
    });
    const session = new RealtimeSession(new RealtimeAgent({ name: 'Assistant', instructions: 'You are a helpful assistant.' }), { transport, model: 'gpt-realtime' });
    const seen: any[] = [];
    transport.on('*', (e: any) => seen.push(e));
    await session.connect({ apiKey: server.devKey, url: `${server.baseUrl.replace('https', 'wss')}/v1/realtime?model=gpt-realtime` });
    return { session, seen };
  }

  const transcriptOf = (item: any) => (item.content ?? []).map((c: any) => c.transcript ?? c.text ?? '').join(' ');
  const bytesOf = (pcm: Int16Array) => pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength) as ArrayBuffer;

  test('the spoken question and the answer are in the history; an interruption truncates the reply', async () => {
    const { session, seen } = await agentSession();
    try {
      const question = bytesOf(speech(24_000, { silenceMs: 300 }, 'what time is it', { silenceMs: 1500 }));
      for (let at = 0; at < question.byteLength; at += 960) {
        session.sendAudio(question.slice(at, at + 960));
        await new Promise((r) => setTimeout(r, 20)); // a microphone's pace
      }
      await until(
        'the user turn and the reply in the history',
        () => session.history.map((i: any) => ({ role: i.role, text: transcriptOf(i) })),
        (h) => h.some((i) => i.role === 'user' && /time/i.test(i.text)) && h.some((i) => i.role === 'assistant' && i.text.trim().length > 0),
        30_000,
      );

      // A long reply (the offline model's answer to what it does not understand), and the caller speaks over it.
      let audioBytes = 0;
      session.on('audio', (e: any) => (audioBytes += e.data.byteLength));
      session.sendMessage('Tell me something about the weather on the moon.');
      await until('the reply’s first audio', () => audioBytes, (n) => n > 0);
      const interruption = bytesOf(speech(24_000, 'stop please', { silenceMs: 800 }));
      for (let at = 0; at < interruption.byteLength; at += 960) {
        session.sendAudio(interruption.slice(at, at + 960));
        await new Promise((r) => setTimeout(r, 20));
      }
      const truncated = await until('the truncation', () => seen.find((e) => e.type === 'conversation.item.truncated'), (e) => e !== undefined, 15_000);
      assert.ok(truncated.audio_end_ms > 0);
      const cut = session.history.find((i: any) => i.itemId === truncated.item_id);
      assert.ok(cut, 'the interrupted reply is in the history');
      assert.ok(!/listening/.test(transcriptOf(cut)), `the reply's transcript ends where the listener stopped hearing it: ${transcriptOf(cut)}`);
    } finally {
      session.close();
    }
  });
});

describe("sideband: OpenAIRealtimeWS({ callID }) beside the Agents SDK's WebRTC call in Chromium", () => {
  let server: RunningServer;
  let llm: Server;
  let dir: string;
  let ca: string;
  before(async () => {
    // The operator's model, stood in for: a tool call when offered a tool and the caller spoke, the tool's answer once its output is in.
    llm = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      const request = JSON.parse(body);
      const last = request.messages.at(-1);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (delta: object) => res.write(`data: ${JSON.stringify({ choices: [{ delta }] })}\n\n`);
      if (last.role === 'tool') send({ content: `The tool says: ${last.content}` });
      else if (request.tools?.length && last.role === 'user') {
        // Whatever PocketSphinx heard (Chromium's fake microphone under load varies): the subject is the sideband.
        send({ tool_calls: [{ index: 0, id: 'call_side1', type: 'function', function: { name: 'get_time', arguments: '' } }] });
        send({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] });
      } else send({ content: 'Okay.' });
      res.end('data: [DONE]\n\n');
    });
    await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
    ({ server, ca, dir } = await startTlsServer({ LLM_BASE_URL: `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`, LLM_MODEL: 'stand-in' }));
  });
  after(async () => {
    await server?.stop();
    llm?.closeAllConnections();
    llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the server sees the call’s transcript and answers a tool call the browser never sees', async () => {
    const app = await startOpenAiApp(server, ca);
    // The question comes once the server's sideband has declared its tool.
    const browser = await launchBrowser({ fakeMicrophoneWav: speechWav(join(dir, 'mic.wav'), [{ silenceMs: 8000 }, 'what time is it', { silenceMs: 10_000 }]) });
    let sideband: OpenAIRealtimeWS | undefined;
    try {
      const page = await (await browser.browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      await page.goto(app.url);
      await page.waitForFunction('window.app !== undefined');
      await page.evaluate(`window.app.start(${JSON.stringify({ parley: server.baseUrl, withTool: false, rawMicrophone: false })})`);
      const callID = (await until('the call id', () => page.evaluate('window.app.callId') as Promise<string | undefined>, (id) => typeof id === 'string')) as string;
      assert.match(callID, /^conv_/);

      sideband = new OpenAIRealtimeWS({ callID, options: { ca } }, new OpenAI({ apiKey: server.devKey, baseURL: `${server.baseUrl}/v1` }));
      const events: any[] = [];
      const side = sideband;
      side.on('event', (e: any) => events.push(e));
      side.on('response.function_call_arguments.done', (e: any) => {
        side.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: e.call_id, output: 'It is exactly noon.' } });
        side.send({ type: 'response.create' });
      });
      await until('the sideband’s session.created', () => events.map((e) => e.type), (t) => t.includes('session.created'));
      side.send({
        type: 'session.update',
        session: { type: 'realtime', tools: [{ type: 'function', name: 'get_time', description: "The current time at the user's place.", parameters: { type: 'object', properties: {} } }] },
      });
      await until('session.updated', () => events.map((e) => e.type), (t) => t.includes('session.updated'));

      const heard = await until('the caller’s transcript on the sideband', () => events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed'), (e) => e !== undefined, 30_000);
      assert.notEqual(heard.transcript.trim(), '', 'the sideband hears what the caller said');
      await until('the tool call on the sideband', () => events.map((e) => e.type), (t) => t.includes('response.function_call_arguments.done'), 15_000);
      const state = (await until(
        'the spoken answer that used the tool, in the browser',
        () => page.evaluate('JSON.parse(JSON.stringify(window.app))') as Promise<any>,
        (st) => st.history.some((i: any) => i.role === 'assistant' && /noon/.test((i.content ?? []).map((c: any) => c.transcript ?? c.text ?? '').join(' '))),
        30_000,
      )) as any;
      assert.equal(state.toolCalls, 0);
      assert.ok(!state.events.some((e: any) => e.type === 'response.function_call_arguments.done' || e.item?.type === 'function_call' || e.item?.type === 'function_call_output'), 'the browser never saw the tool call');
      assert.ok(!state.history.some((i: any) => i.type === 'function_call'), "nor does the browser's history hold it");
    } finally {
      sideband?.close();
      await browser.close();
      await app.close();
    }
  });

  test('refused: another key’s or an unknown call 404, a client secret 401', async () => {
    const statusOf = (headers: Record<string, string>, callId: string) => refusedWith(`${server.baseUrl.replace('https', 'wss')}/v1/realtime?call_id=${callId}`, headers, ca);
    assert.equal(await statusOf({ authorization: `Bearer ${server.devKey}` }, 'conv_nosuchcall'), 404);
    const token = (await mintTokenTls(server.baseUrl, server.devKey, ca)) as string;
    assert.equal(await statusOf({ authorization: `Bearer ${token}` }, 'conv_nosuchcall'), 401);
  });
});

/** GET `url` with a bearer credential over the test's TLS, its JSON body. */
async function requestJson(url: string, credential: string, ca: string): Promise<unknown> {
  const res = await request(url, { headers: { authorization: `Bearer ${credential}` }, dispatcher: new Agent({ connect: { ca } }) });
  return res.body.json();
}

/** A token from client-secrets over the test's TLS. */
async function mintTokenTls(baseUrl: string, key: string, ca: string): Promise<string> {
  const res = await request(`${baseUrl}/v1/realtime/client-secrets`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, dispatcher: new Agent({ connect: { ca } }) });
  return ((await res.body.json()) as { ephemeral_token: string }).ephemeral_token;
}
