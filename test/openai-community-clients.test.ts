// Published community realtime clients, pinned as dev dependencies and driven as their docs show,
// pointed at Parley instead of OpenAI: `openai-realtime-api` (transitive-bullshit's typed fork of
// OpenAI's beta console client, which Mastra's voice-openai-realtime wraps) with its `url` option,
// and Azure's `rt-client` (LowLevelRTClient) with an Azure endpoint URL and key. Both speak the
// beta dialect. LiveKit's `@livekit/agents-plugin-openai` (RealtimeModel without a room) is driven by
// the messages it sends (its package cannot be installed beside this project's OpenTelemetry
// packages: their peer ranges conflict), on OpenAI's GA WebSocket. Each: push-to-talk (one append of a several-second recording, commit and
// response.create at once → the reply answers the words), server VAD on the same one append, audio
// inside conversation.item.create, a function tool call answered by the client, and the user's
// transcript as the client's users see it (its deltas add up to the completed transcript).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RealtimeClient } from 'openai-realtime-api';
import { LowLevelRTClient } from 'rt-client';
import WebSocket from 'ws';
import { concat } from './helpers/pcm.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
/** "What time is it now" at 24 kHz with silence around it: about three seconds, sent in one append (> 64 KiB of base64). */
let question: Int16Array;
before(async () => {
  server = await startServer();
  question = concat(new Int16Array(12_000), speak('what time is it now', 24_000), new Int16Array(36_000));
});
after(async () => {
  await server?.stop();
});

const base64 = (pcm: Int16Array) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');
/** The offline model's answer to "what time is it now" ("It is 3:45 PM."): it heard the words. */
const ANSWERS_THE_TIME = /^It is \d/;

/** Each item's input transcription deltas joined, and its completed transcript. */
function transcripts(events: any[]): { deltas: string; completed: string }[] {
  return events
    .filter((e) => e.type === 'conversation.item.input_audio_transcription.completed')
    .map((c) => ({
      deltas: events.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta' && e.item_id === c.item_id).map((e) => e.delta).join(''),
      completed: c.transcript,
    }));
}

describe('openai-realtime-api (RealtimeClient, url pointed at Parley)', () => {
  /** A client as its readme shows, connected, with every server event kept. */
  async function connect(session: Record<string, unknown>) {
    const client = new RealtimeClient({ url: `${server.baseUrl.replace('http', 'ws')}/v1/realtime`, apiKey: server.devKey, sessionConfig: { voice: 'alloy', ...session } });
    const events: any[] = [];
    client.realtime.on('server.*', (e: any) => events.push(e));
    await client.connect();
    await until('session.updated', () => events.map((e) => e.type), (t) => t.includes('session.updated'));
    const replies = () => events.filter((e) => e.type === 'response.done');
    /** The assistant's spoken words in the response.done at `index`. */
    const said = (index: number) => (replies()[index]?.response.output ?? []).flatMap((i: any) => i.content ?? []).map((c: any) => c.transcript ?? c.text ?? '').join(' ').trim();
    return { client, events, replies, said };
  }

  test('push-to-talk: one append of a recorded question, then createResponse (commit + response.create) → the reply answers the words', async () => {
    const c = await connect({ turn_detection: null, input_audio_transcription: { model: 'whisper-1' } });
    try {
      c.client.appendInputAudio(question);
      c.client.createResponse();
      await until('the reply', () => c.replies().length, (n) => n >= 1, 30_000);
      assert.equal(c.replies()[0].response.status, 'completed');
      assert.match(c.said(0), ANSWERS_THE_TIME);
      assert.ok(!c.events.some((e) => e.type === 'input_audio_buffer.speech_stopped'), 'no speech_stopped without turn detection');
      assert.ok(!c.events.some((e) => e.type === 'error'), JSON.stringify(c.events.filter((e) => e.type === 'error')));
      // What the client's users see: the user item's transcript, and deltas that add up to it.
      const [heard] = transcripts(c.events);
      assert.match(heard!.completed, /time/i);
      assert.equal(heard!.deltas, heard!.completed);
      const user = c.client.conversation.getItems().find((i: any) => i.role === 'user');
      assert.equal((user as any).formatted.transcript, heard!.completed);
    } finally {
      c.client.disconnect();
    }
  });

  test('server VAD: the same recording in one append is heard as a turn and answered', async () => {
    const c = await connect({ turn_detection: { type: 'server_vad' }, input_audio_transcription: { model: 'whisper-1' } });
    try {
      c.client.appendInputAudio(question);
      await until('the reply', () => c.replies().length, (n) => n >= 1, 30_000);
      assert.match(c.said(0), ANSWERS_THE_TIME);
      const types = c.events.map((e) => e.type);
      assert.ok(types.indexOf('input_audio_buffer.speech_started') < types.indexOf('input_audio_buffer.speech_stopped'));
    } finally {
      c.client.disconnect();
    }
  });

  test('audio inside conversation.item.create (sendUserMessageContent) is transcribed and answered', async () => {
    const c = await connect({ turn_detection: null, input_audio_transcription: { model: 'whisper-1' } });
    try {
      c.client.sendUserMessageContent([{ type: 'input_audio', audio: base64(question) }]);
      await until('the reply', () => c.replies().length, (n) => n >= 1, 30_000);
      assert.match(c.said(0), ANSWERS_THE_TIME);
      assert.match(transcripts(c.events)[0]!.completed, /time/i);
    } finally {
      c.client.disconnect();
    }
  });

  // As OpenAI's realtime console does: on conversation.interrupted (the server heard the caller
  // start), the client stops its player and cancelResponse(itemId, samples it played) — a
  // response.cancel, then conversation.item.truncate to what was heard.
  test('server VAD, the caller talks over a reply in real-time 40 ms appends; on conversation.interrupted cancelResponse(itemId, sampleCount) → the spoken question is answered', async () => {
    const c = await connect({ turn_detection: { type: 'server_vad' }, input_audio_transcription: { model: 'whisper-1' } });
    /** The client's player: the reply's audio as it arrives, played in real time from its first delta. */
    let player: { itemId: string; startedAt: number; samples: number } | undefined;
    c.client.realtime.on('server.response.audio.delta', (e: any) => {
      if (player?.itemId !== e.item_id) player = { itemId: e.item_id, startedAt: performance.now(), samples: 0 };
      player!.samples += Buffer.from(e.delta, 'base64').length / 2;
    });
    const cancelled: { itemId: string; sampleCount: number }[] = [];
    c.client.on('conversation.interrupted', () => {
      if (!player) return;
      const sampleCount = Math.min(player.samples, Math.floor(((performance.now() - player.startedAt) * 24_000) / 1000));
      cancelled.push({ itemId: player.itemId, sampleCount });
      c.client.cancelResponse(player.itemId, sampleCount);
      player = undefined;
    });
    // The microphone: 40 ms an append at a microphone's pace, silence until the caller speaks.
    let talking = true;
    let toSay: Int16Array = new Int16Array(0);
    const microphone = (async () => {
      const started = performance.now();
      for (let sent = 0; talking; sent++) {
        // A copy: the client sends an Int16Array's whole buffer.
        const piece = new Int16Array(960);
        piece.set(toSay.subarray(0, 960));
        toSay = toSay.subarray(Math.min(960, toSay.length));
        c.client.appendInputAudio(piece);
        await new Promise((r) => setTimeout(r, Math.max(0, started + (sent + 1) * 40 - performance.now())));
      }
    })();
    try {
      c.client.sendUserMessageContent([{ type: 'input_text', text: 'Tell me something about the weather on the moon.' }]);
      await until('the reply’s first audio', () => player, (p) => p !== undefined, 30_000);
      // The caller speaks over it while it plays.
      await new Promise((r) => setTimeout(r, 500));
      toSay = speak('hello, what time is it right now', 24_000);
      const answered = await until(
        'a reply to the spoken question',
        () => c.replies().map((_, i) => c.said(i)),
        (said) => said.some((s) => ANSWERS_THE_TIME.test(s)),
        30_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; events: ${c.events.map((e) => e.type).join(' ')}`);
      });
      assert.ok(answered.some((s) => ANSWERS_THE_TIME.test(s)));
      const types = c.events.map((e) => e.type);
      assert.ok(types.includes('input_audio_buffer.speech_started'), 'the caller was heard over the reply');
      assert.equal(cancelled.length >= 1, true, 'the client cancelled on conversation.interrupted');
      assert.ok(c.events.some((e) => e.type === 'conversation.item.truncated' && e.item_id === cancelled[0]!.itemId), 'its truncate was answered');
      assert.ok(transcripts(c.events).some((t) => /time/i.test(t.completed)), 'the question was transcribed');
    } finally {
      talking = false;
      await microphone;
      c.client.disconnect();
    }
  });

  test('a function tool: the model calls it, the client runs it (addTool) and the answer uses its output', async () => {
    const c = await connect({ turn_detection: null });
    const calls: unknown[] = [];
    c.client.addTool({ name: 'get_weather', description: 'The weather where the user is.', parameters: { type: 'object', properties: {} } }, async (args: unknown) => {
      calls.push(args);
      return { forecast: 'sunny and warm' };
    });
    try {
      c.client.sendUserMessageContent([{ type: 'input_text', text: "What's the weather like today?" }]);
      await until('the answer after the tool', () => c.replies().length, (n) => n >= 2, 30_000);
      assert.equal(calls.length, 1);
      assert.ok(c.replies()[0].response.output.some((i: any) => i.type === 'function_call' && i.name === 'get_weather'));
      assert.match(c.said(1), /sunny and warm/);
    } finally {
      c.client.disconnect();
    }
  });
});

describe("rt-client (Azure's LowLevelRTClient, an Azure endpoint pointed at Parley)", () => {
  /** A client as its readme shows for Azure OpenAI (endpoint, key, deployment), reading every message. */
  async function connect(session: Record<string, unknown>) {
    const client = new LowLevelRTClient(new URL(server.baseUrl.replace('http', 'ws')), { key: server.devKey }, { deployment: 'gpt-realtime' });
    const events: any[] = [];
    const reading = (async () => {
      for await (const message of client.messages()) events.push(message);
    })().catch(() => {});
    await until('session.created', () => events.map((e) => e.type), (t) => t.includes('session.created'));
    await client.send({ type: 'session.update', session: session as never });
    await until('session.updated', () => events.map((e) => e.type), (t) => t.includes('session.updated'));
    const replies = () => events.filter((e) => e.type === 'response.done');
    const said = (index: number) => (replies()[index]?.response.output ?? []).flatMap((i: any) => i.content ?? []).map((c: any) => c.transcript ?? c.text ?? '').join(' ').trim();
    const close = async () => {
      await client.close();
      await reading;
    };
    return { client, events, replies, said, close };
  }

  test('push-to-talk: one append, commit and response.create at once → the reply answers the words, transcribed', async () => {
    const c = await connect({ turn_detection: null, input_audio_transcription: { model: 'whisper-1' } });
    try {
      await c.client.send({ type: 'input_audio_buffer.append', audio: base64(question) });
      await c.client.send({ type: 'input_audio_buffer.commit' });
      await c.client.send({ type: 'response.create' });
      await until('the reply', () => c.replies().length, (n) => n >= 1, 30_000);
      assert.match(c.said(0), ANSWERS_THE_TIME);
      // Azure's preview has no transcription deltas: its users see the completed transcript.
      const heard = c.events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed');
      assert.match(heard.transcript, /time/i);
      assert.ok(c.events.some((e) => e.type === 'response.audio.delta'), 'beta audio deltas');
      assert.ok(!c.events.some((e) => e.type === 'input_audio_buffer.speech_stopped'), 'no speech_stopped without turn detection');
    } finally {
      await c.close();
    }
  });

  test('server VAD on one append; audio inside conversation.item.create; a function tool call', async () => {
    const c = await connect({ turn_detection: { type: 'server_vad' }, input_audio_transcription: { model: 'whisper-1' }, tools: [{ type: 'function', name: 'get_weather', description: 'The weather.', parameters: { type: 'object', properties: {} } }] });
    try {
      await c.client.send({ type: 'input_audio_buffer.append', audio: base64(question) });
      await until('the VAD turn answered', () => c.replies().length, (n) => n >= 1, 30_000);
      assert.match(c.said(0), ANSWERS_THE_TIME);

      await c.client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: base64(question) }] } });
      await c.client.send({ type: 'response.create' });
      await until('the audio item answered', () => c.replies().length, (n) => n >= 2, 30_000);
      assert.match(c.said(1), ANSWERS_THE_TIME);

      await c.client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'How is the weather?' }] } });
      await c.client.send({ type: 'response.create' });
      const call = await until('the tool call', () => c.events.find((e) => e.type === 'response.function_call_arguments.done'), (e) => e !== undefined, 30_000);
      assert.equal(call.name, 'get_weather');
      await until('its response done', () => c.replies().length, (n) => n >= 3, 30_000);
      await c.client.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: call.call_id, output: 'Rain until noon.' } });
      await c.client.send({ type: 'response.create' });
      await until('the answer using the output', () => c.replies().length, (n) => n >= 4, 30_000);
      assert.match(c.said(3), /Rain until noon/);
    } finally {
      await c.close();
    }
  });
});

// @livekit/agents-plugin-openai 1.9.0, RealtimeSession (dist/realtime/realtime_model.js): generateReply()
// sends response.create; interrupt() sends response.cancel (a response is in flight); truncate({
// messageId, audioEndMs }) sends conversation.item.truncate { item_id, content_index: 0, audio_end_ms }.
// An agent calls both as soon as the reply's first audio arrives (a caller interrupting at once).
describe('@livekit/agents-plugin-openai RealtimeSession (its messages, without a room)', () => {
  test('interrupt() then truncate({messageId, audioEndMs: 200}) at the reply’s first audio → the response ends cancelled and conversation.item.truncated says 200', async () => {
    const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` } });
    const events: any[] = [];
    ws.on('message', (data) => events.push(JSON.parse(String(data))));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const send = (event: Record<string, unknown>) => ws.send(JSON.stringify(event));
    try {
      send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['audio'], audio: { output: { voice: 'marin' } } } });
      send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me something about the weather on the moon.' }] } });
      send({ type: 'response.create', response: {} });
      const first = await until('the reply’s first audio', () => events.find((e) => e.type === 'response.output_audio.delta'), (e) => e !== undefined, 30_000);
      send({ type: 'response.cancel' });
      send({ type: 'conversation.item.truncate', content_index: 0, item_id: first.item_id, audio_end_ms: 200 });
      await until('the truncation', () => events.filter((e) => e.type === 'conversation.item.truncated'), (t) => t.length > 0, 15_000);
      const done = await until('response.done', () => events.find((e) => e.type === 'response.done'), (e) => e !== undefined, 15_000);
      assert.equal(done.response.status, 'cancelled');
      // Where the client said it stopped playing, and only that: no cut of the server's own before it.
      const truncated = events.filter((e) => e.type === 'conversation.item.truncated');
      assert.deepEqual(
        truncated.map((e) => ({ item_id: e.item_id, content_index: e.content_index, audio_end_ms: e.audio_end_ms })),
        [{ item_id: first.item_id, content_index: 0, audio_end_ms: 200 }],
      );
      assert.ok(!events.some((e) => e.type === 'error'), JSON.stringify(events.filter((e) => e.type === 'error')));
    } finally {
      ws.close();
    }
  });
});
