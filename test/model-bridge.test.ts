// A realtime model upstream (issue 46): node A's default model is `kind: realtime`, pointed at node B —
// a second real Parley with its offline agent, serving OpenAI's Realtime WebSocket — through a tap
// that passes every message on and keeps a copy, so the test reads what B said and what A asked of
// it. Through A: the published Orga React SDK in Chromium asks the time and, with the fake camera on,
// the colour (the picture went up as input_image); @openai/agents-realtime over WebRTC with a function
// tool (the tool runs in the client, its output reaches B, B's answer uses it); a baresip call to A's
// SIP door answered by B; barge-in (B's item truncated where A's playout stopped, against the audio
// the caller received); B refusing A's key (401: one clear error, no key anywhere, the fallback
// answers); and B killed mid-call (one error, A's fallback answers within 2 s with the conversation
// carried over). Not in PARALLEL_FILES: it measures audio.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { readWav } from '../src/media/audio/wav.ts';
import { freePort, startBaresip, type Baresip } from './helpers/baresip.ts';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { startOpenAiApp } from './helpers/openaiApp.ts';
import { openOrgaPage, startOrgaApp, waitForOrga } from './helpers/orgaSdk.ts';
import { rms, silence, concat } from './helpers/pcm.ts';
import { inboundAudio, openCall, type RtcClient } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak, speechWav } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

type Json = Record<string, any>;

/** One upstream session as the tap saw it: what B sent A, and what A sent B (audio left out, its size kept). */
interface TapSession {
  path: string;
  fromB: Json[];
  toB: Json[];
  closed: boolean;
}

interface Tap {
  url: string;
  sessions: TapSession[];
  close(): Promise<void>;
}

const brief = (e: Json): Json => (typeof e.audio === 'string' ? { ...e, audio: e.audio.length } : typeof e.delta === 'string' && e.type.endsWith('audio.delta') ? { ...e, delta: e.delta.length } : e);

/** A WebSocket relay to `target` (B's origin, ws://) that keeps a copy of each message; either side closing closes the other. */
async function startTap(target: string): Promise<Tap> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * 1024 * 1024 });
  const sessions: TapSession[] = [];
  server.on('connection', (a, req) => {
    const session: TapSession = { path: req.url ?? '', fromB: [], toB: [], closed: false };
    sessions.push(session);
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'openai-beta']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name] as string;
    const b = new WebSocket(target + session.path, { headers, maxPayload: 64 * 1024 * 1024 });
    const early: string[] = [];
    const end = () => {
      session.closed = true;
      a.terminate();
      b.terminate();
    };
    a.on('message', (data) => {
      const text = data.toString();
      session.toB.push(brief(JSON.parse(text)));
      if (b.readyState === WebSocket.OPEN) b.send(text);
      else early.push(text);
    });
    b.on('open', () => {
      for (const text of early.splice(0)) b.send(text);
    });
    b.on('message', (data) => {
      const text = data.toString();
      session.fromB.push(brief(JSON.parse(text)));
      if (a.readyState === WebSocket.OPEN) a.send(text);
    });
    for (const ws of [a, b]) {
      ws.on('close', end);
      ws.on('error', end);
    }
  });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sessions,
    close: () => {
      for (const client of server.clients) client.terminate();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const USER = 'alice';
const PASSWORD = 'correct-horse-battery';
/** A key B does not know, shaped like one it might. */
const WRONG_KEY = 'sk_parley_ai_WrongWrongWrongWrongWrongWrongWrong0000';

let dir: string;
let a: RunningServer;
let b: RunningServer;
let tap: Tap;
let sipPort: number;
const cleanups: (() => Promise<void> | void)[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-bridge-'));
  b = await startServer();
  tap = await startTap(b.baseUrl.replace('http', 'ws'));
  // The upstream's key is in A's environment; the file names the variable, not the key.
  writeFileSync(
    join(dir, 'models.yaml'),
    `default: upstream
models:
  - id: upstream
    kind: realtime
    description: Node B's model, through the tap.
    url: ${tap.url}/v1/realtime
    api_key_env: UPSTREAM_KEY
    model: parley-offline
    aliases: [gpt-realtime]
    fallback: [parley-offline]
  - id: wrong-key
    kind: realtime
    description: Node B, offered a key it does not know.
    url: ${b.baseUrl.replace('http', 'ws')}/v1/realtime
    api_key_env: WRONG_UPSTREAM_KEY
    model: parley-offline
    fallback: [parley-offline]
`,
  );
  sipPort = await freePort();
  a = await startServer({
    MODELS_FILE: join(dir, 'models.yaml'),
    UPSTREAM_KEY: b.devKey,
    WRONG_UPSTREAM_KEY: WRONG_KEY,
    SIP_PORT: String(sipPort),
    SIP_USERS: `${USER}:${PASSWORD}`,
    // What the bridge logs, up to info, is searched for keys.
    LOG_LEVEL: 'info',
  });
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await a?.stop();
  await tap?.close();
  await b?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Waits until `fn` finds something. */
async function found<T>(what: string, fn: () => T | undefined, timeoutMs: number): Promise<T> {
  return (await until(what, fn, (v) => v !== undefined, timeoutMs))!;
}

/** The upstream session A opened after the first `from` the tap had seen. */
const sessionAfter = (from: number) => found('A to open a session on B', () => tap.sessions[from], 30_000);
const fromB = (s: TapSession, type: string) => s.fromB.filter((e) => e.type === type);
const toB = (s: TapSession, type: string) => s.toB.filter((e) => e.type === type);
const assistantItems = (sender: 'user' | 'assistant') => `(o.state.conversationItems ?? []).filter((i) => i.sender === '${sender}')`;

async function record(id: string): Promise<Json> {
  return (await http(a.baseUrl, `/v1/realtime/conversations/${id}`, { token: a.devKey })).body;
}

describe('node A bridges its calls to a realtime model on node B', () => {
  test('the Orga React SDK asks the time and, with the camera on, the colour: B answers both, the picture went up as input_image', async () => {
    // A red camera, and a microphone asking twice, the second question after the first answer has played.
    const clip = join(dir, 'red.y4m');
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=red:s=320x240:r=15:d=20', '-pix_fmt', 'yuv420p', clip]);
    const mic = speechWav(join(dir, 'orga.wav'), [{ silenceMs: 1500 }, 'what time is it', { silenceMs: 8000 }, 'what color do you see', { silenceMs: 4000 }]);
    const browser: LaunchedBrowser = await launchBrowser({ fakeMicrophoneWav: mic, fakeCameraY4m: clip });
    cleanups.push(() => browser.close());
    const app = await startOrgaApp(a);
    cleanups.push(() => app.close());
    const from = tap.sessions.length;
    const page = await openOrgaPage(browser, app, a.baseUrl, '?video=low');
    try {
      await page.click('#start');
      await waitForOrga(page, 'connected', `o.state.connectionState === 'connected'`);
      await page.click('#toggle-camera');
      await waitForOrga(page, 'the camera on', 'o.state.isCameraOn');
      await page.click('#enable-mic');
      const answered = (pattern: string) => `${assistantItems('assistant')}.some((i) => ${pattern}.test(i.content.message))`;
      await waitForOrga(page, 'the time, answered', answered('/^It is \\d{1,2}:\\d\\d/'), 90_000);
      const o = await waitForOrga(page, 'the colour, answered', answered('/\\bred\\b/'), 90_000);
      const answers = o.state.conversationItems!.filter((i) => i.sender === 'assistant').map((i) => i.content.message);
      const session = await sessionAfter(from);
      // Both answers are B's: what B said is what the SDK shows.
      const said = fromB(session, 'response.output_audio_transcript.done').map((e) => e.transcript);
      for (const answer of answers.filter((x) => /^It is \d|\bred\b/.test(x))) assert.ok(said.includes(answer), `"${answer}" is among B's answers: ${JSON.stringify(said)}`);
      assert.match(answers.find((x) => /\bred\b/.test(x))!, /not a vision model, but the picture is/);
      // The camera's picture went up as an input_image before the reply was asked for.
      const pictures = toB(session, 'conversation.item.create').filter((e) => e.item?.content?.some((c: Json) => c.type === 'input_image'));
      assert.ok(pictures.length >= 1, 'a picture went up');
      assert.match(pictures[0]!.item.content[0].image_url, /^data:image\/jpeg;base64,\/9j\//);
      assert.ok(toB(session, 'response.create').length >= 1, 'A asked for the replies (after each picture)');
      assert.equal(toB(session, 'session.update')[0]?.session.audio.input.turn_detection.create_response, false);

      await page.click('#end');
      // The record: the turns (the user's with the camera's thumbnail), and B's usage summed.
      const ended = await until('the record of the ended call', () => record(o.state.conversationId!), (r) => r.state === 'ended' && r.usage !== null, 30_000);
      assert.ok(ended.items.some((i: Json) => i.role === 'user' && i.image), `a user turn with its picture: ${JSON.stringify(ended.items.map((i: Json) => [i.role, i.text, !!i.image]))}`);
      assert.ok(ended.items.some((i: Json) => i.role === 'assistant' && /^It is \d/.test(i.text)));
      const usage = fromB(session, 'response.done').reduce((n, e) => n + (e.response.usage?.output_tokens ?? 0), 0);
      assert.ok(usage > 0);
      assert.equal(ended.usage.output_tokens, usage, "the call's output tokens are B's, summed");
      const metrics = await (await fetch(`${a.baseUrl}/metrics`)).text();
      assert.ok(Number(/^parley_model_tokens_total\{model="upstream",kind="output"\} (\S+)/m.exec(metrics)?.[1]) >= usage, 'parley_model_tokens_total');
      assert.ok(Number(/^parley_model_connect_seconds_count\{model="upstream"\} (\S+)/m.exec(metrics)?.[1]) >= 1, 'parley_model_connect_seconds');
    } finally {
      await page.close();
    }
  });

  test('@openai/agents-realtime over WebRTC with a function tool: the tool runs in the client, its output reaches B, and B answers with it', async () => {
    const mic = speechWav(join(dir, 'agents.wav'), [{ silenceMs: 2500 }, 'what time is it', { silenceMs: 10_000 }]);
    const browser = await launchBrowser({ fakeMicrophoneWav: mic });
    cleanups.push(() => browser.close());
    const app = await startOpenAiApp(a);
    cleanups.push(() => app.close());
    const from = tap.sessions.length;
    const page = await (await browser.browser.newContext()).newPage();
    try {
      await page.goto(app.url);
      await page.waitForFunction('window.app !== undefined');
      await page.evaluate(`window.app.start(${JSON.stringify({ parley: a.baseUrl, withTool: true })})`);
      const state = () => page.evaluate('JSON.parse(JSON.stringify(window.app))') as Promise<Json>;
      const text = (item: Json) => item?.content?.map((c: Json) => c.transcript ?? c.text ?? '').join(' ') ?? '';
      const done = await until(
        'the spoken answer after the tool',
        state,
        (st) => st.history.some((i: Json) => i.role === 'assistant' && /tool says/i.test(text(i))) && st.peakLevel > 0.01,
        90_000,
      );
      assert.equal(done.toolCalls, 1, 'the SDK ran the tool once');
      const call = done.history.find((i: Json) => i.type === 'function_call');
      assert.equal(call.name, 'get_time');
      assert.equal(call.output, 'It is exactly noon.');
      const session = await sessionAfter(from);
      const tools = toB(session, 'session.update').map((e) => e.session.tools?.map((t: Json) => t.name)).filter(Boolean);
      assert.deepEqual(tools.at(-1), ['get_time'], "the client's tool went up");
      const calls = fromB(session, 'response.function_call_arguments.done');
      assert.deepEqual(calls.map((e) => e.name), ['get_time'], 'B called the tool');
      const output = toB(session, 'conversation.item.create').find((e) => e.item.type === 'function_call_output');
      assert.deepEqual([output?.item.call_id, output?.item.output], [calls[0]!.call_id, 'It is exactly noon.'], "the tool's output (of B's call) reached B");
      const answer = fromB(session, 'response.output_audio_transcript.done').map((e) => e.transcript).find((t) => /tool says/i.test(t));
      assert.equal(answer, 'The tool says: It is exactly noon.');
      assert.equal(text(done.history.find((i: Json) => i.role === 'assistant' && /tool says/i.test(text(i)))).trim(), answer);
    } finally {
      await page.evaluate('window.app.close()').catch(() => {});
      await page.close();
    }
  });

  test("a baresip call to A's SIP door is answered by B's model", async () => {
    const wav = join(dir, 'question.wav');
    execFileSync(process.execPath, ['examples/baresip/question.mjs', wav, 'what time is it', '20']);
    const from = tap.sessions.length;
    const caller: Baresip = await startBaresip(join(dir, 'baresip'), { user: USER, password: PASSWORD, wav });
    cleanups.push(() => caller.stop());
    await caller.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    const answeredBy = /SIP\/2\.0 200 OK\r\n(?:[^\r]*\r\n)*?X-Parley-Call-Id: (conv_\S+)/;
    const out = await until('the call answered', caller.out, (o) => answeredBy.test(o), 60_000);
    const id = answeredBy.exec(out)![1]!;
    // baresip hangs up when its file ends, the answer long played by then.
    const ended = await until('the call ended by its BYE', () => record(id), (r) => r.state === 'ended', 120_000);
    const session = await sessionAfter(from);
    const reply = ended.items.find((i: Json) => i.role === 'assistant');
    assert.ok(reply?.text, `an answer in the record: ${JSON.stringify(ended.items)}`);
    assert.ok(
      fromB(session, 'response.output_audio_transcript.done').some((e) => e.transcript === reply.text),
      `the answer is B's: ${JSON.stringify(fromB(session, 'response.output_audio_transcript.done'))}`,
    );
    assert.ok(toB(session, 'input_audio_buffer.append').length > 100, "the caller's audio went up as it came");
    await caller.stop();
    const heard = caller.heard();
    assert.equal(heard.length, 1);
    const { samples } = readWav(readFileSync(heard[0]!));
    assert.ok(rms(samples) > 300, `B's answer is audible in what baresip heard (rms ${rms(samples)})`);
  });

  test("barge-in: B's item is truncated at what A played, within 100 ms of the audio the caller received", async (t) => {
    const from = tap.sessions.length;
    const client: RtcClient = await openCall(a.baseUrl, await mintToken(a.baseUrl, a.devKey));
    cleanups.push(() => client.close());
    await client.waitConnected(30_000);
    await client.waitChannelOpen(30_000);
    const mic = await attachMicrophone(client);
    cleanups.push(() => mic.stop());
    const session = await sessionAfter(from);
    await until('the upstream session confirmed', () => fromB(session, 'session.updated').length, (n) => n > 0, 30_000);
    // A's WebRTC sender sends packets only while the agent speaks (its reply's audio comes without
    // gaps, B sending it ahead): the packets until the first quiet after the reply started are the
    // reply's, as far as the caller heard it. Sampled throughout (B answers the barge-in too, later).
    const samples: { at: number; packets: number }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push({ at: performance.now(), packets: (await inboundAudio(client)).packetsReceived });
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    })();
    cleanups.push(() => {
      sampling = false;
      return sampler;
    });
    await until('the sampler started', () => samples.length, (n) => n > 0, 10_000);
    const start = samples[0]!.packets;
    // A typed question, so that the answer is B's long one whatever a recogniser makes of speech.
    client.send({ type: 'conversation.item.create', item: { content: [{ type: 'input_text', text: 'who are you' }] } });
    await until('a second of the reply at the caller', () => samples.at(-1)!.packets - start, (n) => n >= 50, 60_000);
    await mic.say(concat(speak('stop please, stop'), silence(500)));
    const truncate = await found("A's truncation of B's item", () => toB(session, 'conversation.item.truncate')[0], 30_000);
    const truncated = await found(
      "B's item truncated where A said",
      () => fromB(session, 'conversation.item.truncated').find((e) => e.item_id === truncate.item_id && e.audio_end_ms === truncate.audio_end_ms),
      30_000,
    );
    await client.nextEvent('response.interrupted', 30_000);
    /** The packet count at the first 300 ms without packets once the reply was under way. */
    const quiet = () => {
      const begun = samples.findIndex((s) => s.packets > start);
      for (let i = Math.max(0, begun); i < samples.length; i++) {
        const still = samples.slice(i).filter((s) => s.packets === samples[i]!.packets);
        if (still.length > 1 && still.at(-1)!.at - samples[i]!.at >= 300) return samples[i]!.packets;
      }
      return undefined;
    };
    const heard = await found('the cut reply to stop reaching the caller', quiet, 30_000);
    const receivedMs = (heard - start) * 20 - 40;
    t.diagnostic(`B's item truncated at ${truncated.audio_end_ms} ms; the caller received ${receivedMs} ms of it; B's own guesses: ${JSON.stringify(fromB(session, 'conversation.item.truncated').map((e) => e.audio_end_ms))}`);
    assert.ok(Math.abs(truncated.audio_end_ms - receivedMs) <= 100, `truncated at ${truncated.audio_end_ms} ms, received ${receivedMs} ms`);
  });

  test('an upstream refusing the key (401): one clear error, no key in what the client or the log got, and the fallback answers', async () => {
    const socket = new WebSocket(`${a.baseUrl.replace('http', 'ws')}/v1/realtime?model=wrong-key`, { headers: { authorization: `Bearer ${a.devKey}` } });
    cleanups.push(() => socket.terminate());
    const raw: string[] = [];
    const events: Json[] = [];
    socket.on('message', (data) => {
      raw.push(data.toString());
      events.push(JSON.parse(data.toString()));
    });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const error = await found('the error', () => events.find((e) => e.type === 'error'), 30_000);
    assert.equal(error.error.code, 'model_unavailable');
    assert.equal(error.error.message, "The model wrong-key refused Parley's credentials (HTTP 401). The call goes on with parley-offline.");
    socket.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'what time is it' }] } }));
    socket.send(JSON.stringify({ type: 'response.create' }));
    const done = await found('the fallback’s answer', () => events.find((e) => e.type === 'response.done'), 60_000);
    assert.equal(done.response.status, 'completed');
    assert.match(done.response.output[0].content[0].transcript, /^It is \d/);
    assert.equal(events.filter((e) => e.type === 'error').length, 1, 'one error event');
    socket.close();
    const log = a.stdout() + a.stderr();
    assert.match(log, /refused Parley's credentials \(HTTP 401\)/, 'the log says what happened');
    for (const key of [WRONG_KEY, b.devKey]) {
      assert.ok(!raw.some((m) => m.includes(key)), 'no upstream key in what the client got');
      assert.ok(!log.includes(key), "no upstream key in A's log");
    }
  });

  test("B killed mid-call: one error event, A's fallback answers within 2 s, the conversation carried over", async (t) => {
    const from = tap.sessions.length;
    const client: RtcClient = await openCall(a.baseUrl, await mintToken(a.baseUrl, a.devKey));
    cleanups.push(() => client.close());
    await client.waitConnected(30_000);
    await client.waitChannelOpen(30_000);
    const session = await sessionAfter(from);
    client.send({ type: 'conversation.item.create', item: { content: [{ type: 'input_text', text: 'what time is it' }] } });
    const first = await client.nextEvent('response.output_item.done', 60_000);
    assert.match(first.text, /^It is \d/);
    assert.ok(fromB(session, 'response.output_audio_transcript.done').some((e) => e.transcript === first.text), 'answered by B');
    const exited = new Promise<number>((resolve) => b.proc.once('exit', () => resolve(performance.now())));
    b.proc.kill('SIGKILL');
    const killedAt = await exited;
    const error = await client.nextEvent('error', 30_000);
    const toldAfterMs = performance.now() - killedAt;
    t.diagnostic(`the client was told ${Math.round(toldAfterMs)} ms after B exited: ${error.error.message}`);
    assert.equal(error.error.code, 'model_failed');
    assert.match(error.error.message, /^The model upstream closed its connection mid-call .* The call goes on with parley-offline\.$/);
    assert.ok(toldAfterMs < 2000, `the fallback took over ${Math.round(toldAfterMs)} ms after B exited`);
    // A's offline model answers, from the conversation the bridge kept.
    const before = client.events.length;
    client.send({ type: 'conversation.item.create', item: { content: [{ type: 'input_text', text: 'what did I say' }] } });
    const next = await client.nextEvent('response.output_item.done', 60_000, before);
    assert.equal(next.text, 'Earlier you said: "what time is it".');
    assert.equal(client.events.filter((e) => e.type === 'error').length, 1, 'one error event');
  });
});
