// Noise and echo through real calls: noise suppression chosen by the session's noise_reduction through
// both OpenAI front doors (the data channel of a WebRTC call, the WebSocket, its beta dialect too),
// seen in the session and the metrics; a caller in a noisy room (pink noise, then babble the VAD hears as
// speech) whose noise starts no turn while the question is still answered; a caller whose microphone
// hears the agent back (no echo cancellation):
// the agent finishes its reply, and a spoken "stop" still interrupts it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { openAiStylePeer } from './helpers/openaiPeer.ts';
import { attachRoomMicrophone } from './helpers/room.ts';
import { inboundAudio, openCall, type RtcClient } from './helpers/rtcClient.ts';
import { mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { noiseFor, noiseOf } from './helpers/noise.ts';
import { speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

async function call(server: RunningServer, params: Record<string, unknown>): Promise<RtcClient> {
  const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params });
  await client.waitConnected();
  await client.nextEvent('session.created');
  return client;
}

/** The first event of a type after index `from`. */
function nextAfter(client: RtcClient, type: string, from: number, timeoutMs = 20_000) {
  return until(`${type} after event #${from}`, () => client.events.slice(from).find((x) => x.type === type), (e) => e !== undefined, timeoutMs);
}

const typesAfter = (client: RtcClient, from: number) => client.events.slice(from).map((e) => e.type as string);

/** A labelled series of GET /metrics (0 when absent). */
async function series(server: RunningServer, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return 0;
}

/** Waits until the calls counted under each noise suppression type are as given. */
function suppressionCounts(server: RunningServer, want: Record<'near_field' | 'far_field' | 'off', number>) {
  const read = async () => ({
    near_field: await series(server, 'parley_noise_reduction_calls', { type: 'near_field' }),
    far_field: await series(server, 'parley_noise_reduction_calls', { type: 'far_field' }),
    off: await series(server, 'parley_noise_reduction_calls', { type: 'off' }),
  });
  return until(`calls by noise suppression ${JSON.stringify(want)}`, read, (got) => JSON.stringify(got) === JSON.stringify(want));
}

describe('noise_reduction through the front doors', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.stop();
  });

  test('WebRTC (oai-events): off by default; session.update turns near_field on, far_field, then null off', async () => {
    const peer = await openAiStylePeer();
    try {
      const res = await fetch(`${server.baseUrl}/v1/realtime/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await mintToken(server.baseUrl, server.devKey)}`, 'content-type': 'application/sdp' },
        body: peer.offerSdp,
      });
      assert.equal(res.status, 201);
      await peer.pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
      const created = await peer.next('session.created', 0, 15_000);
      assert.equal(created.session.audio.input.noise_reduction, null, 'NOISE_REDUCTION defaults to off');
      await suppressionCounts(server, { near_field: 0, far_field: 0, off: 1 });

      for (const [wire, type] of [[{ type: 'near_field' }, 'near_field'], [{ type: 'far_field' }, 'far_field'], [null, 'off']] as const) {
        const from = peer.events.length;
        peer.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { noise_reduction: wire } } } });
        const updated = await peer.next('session.updated', from);
        assert.deepEqual(updated.session.audio.input.noise_reduction, wire);
        await suppressionCounts(server, { near_field: 0, far_field: 0, off: 0, [type]: 1 });
      }

      const from = peer.events.length;
      peer.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { noise_reduction: { type: 'studio' } } } } });
      const error = await peer.next('error', from);
      assert.equal(error.error.param, 'session.audio.input.noise_reduction.type');
    } finally {
      peer.pc.close();
    }
    await suppressionCounts(server, { near_field: 0, far_field: 0, off: 0 });
  });

  test('WebSocket: GA audio.input.noise_reduction and the beta dialect\'s input_audio_noise_reduction', async () => {
    for (const beta of [false, true]) {
      const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, {
        headers: { authorization: `Bearer ${server.devKey}`, ...(beta ? { 'openai-beta': 'realtime=v1' } : {}) },
      });
      const events: any[] = [];
      ws.on('message', (data) => events.push(JSON.parse(data.toString())));
      const next = (type: string, from = 0) => until(type, () => events.slice(from).find((e) => e.type === type), (e) => e !== undefined);
      const field = (session: any) => (beta ? session.input_audio_noise_reduction : session.audio.input.noise_reduction);
      const update = (value: object | null) =>
        ws.send(JSON.stringify({ type: 'session.update', session: beta ? { input_audio_noise_reduction: value } : { type: 'realtime', audio: { input: { noise_reduction: value } } } }));
      try {
        assert.equal(field((await next('session.created')).session), null);
        await suppressionCounts(server, { near_field: 0, far_field: 0, off: 1 });
        let from = events.length;
        update({ type: beta ? 'near_field' : 'far_field' });
        assert.deepEqual(field((await next('session.updated', from)).session), { type: beta ? 'near_field' : 'far_field' });
        await suppressionCounts(server, { near_field: beta ? 1 : 0, far_field: beta ? 0 : 1, off: 0 });
        from = events.length;
        update(null);
        assert.equal(field((await next('session.updated', from)).session), null);
        await suppressionCounts(server, { near_field: 0, far_field: 0, off: 1 });
      } finally {
        ws.close();
      }
      await suppressionCounts(server, { near_field: 0, far_field: 0, off: 0 });
    }
  });
});

describe('echo: a caller without echo cancellation', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.stop();
  });

  test('the agent heard back 10 dB down, 60 ms late: it finishes its reply; a spoken "stop" still interrupts the next', async () => {
    const client = await call(server, { model: 'echo' });
    const mic = await attachRoomMicrophone(client, { echo: { gain: 0.316, delayMs: 60 } });
    try {
      await mic.elapse(500);
      const answer = 'The next train to the city leaves at seven thirty from platform two. It takes about forty minutes, so you will be there well before nine. ';
      let from = client.events.length;
      client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: answer }] } });
      await nextAfter(client, 'response.audio.started', from);
      await nextAfter(client, 'response.audio.done', from, 40_000);
      // The echo's tail has reached the server's VAD too.
      await mic.elapse(1000);
      const during = typesAfter(client, from);
      assert.ok(!during.includes('input_audio_buffer.speech_started'), `no turn from the echo: ${during.join(', ')}`);
      assert.ok(!during.includes('response.interrupted'), 'the agent did not interrupt itself');

      from = client.events.length;
      client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: answer }] } });
      await nextAfter(client, 'response.audio.started', from);
      // The caller hears a second of the reply (and the microphone hears it back) before speaking over it.
      const before = (await inboundAudio(client)).packetsReceived;
      await until('a second of the reply to arrive', async () => (await inboundAudio(client)).packetsReceived, (n) => n >= before + 50);
      await mic.say(speak('stop please'));
      const interrupted = await nextAfter(client, 'response.interrupted', from, 10_000);
      assert.ok(interrupted.dropped_audio_ms > 1000, 'the rest of the reply was dropped');
      assert.equal(typesAfter(client, from).filter((t) => t === 'input_audio_buffer.speech_started').length, 1, 'one turn: the caller\'s');
    } finally {
      mic.stop();
      client.close();
    }
  });
});

describe('noise: a caller in a noisy room (NOISE_REDUCTION=near_field)', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ NOISE_REDUCTION: 'near_field' });
  });
  after(async () => {
    await server.stop();
  });

  test('pink noise 25 dB under the questions, between them and under the replies: no turn and no barge-in from it; each question answered', async () => {
    const question = speak('what time is it');
    const client = await call(server, { model: 'echo', return_transcription: true });
    assert.equal(client.events.find((e) => e.type === 'session.created')?.session.noise_reduction, undefined, "Orga's session object is unchanged");
    const mic = await attachRoomMicrophone(client, { noise: noiseFor(question, noiseOf('pink', 10_000), 25) });
    try {
      for (let round = 0; round < 2; round++) {
        const from = client.events.length;
        // The noise alone for two seconds, then the question over it; the noise goes on under the reply.
        await mic.elapse(2000);
        assert.deepEqual(typesAfter(client, from).filter((t) => t.startsWith('input_audio_buffer.') || t.startsWith('response.')), [], 'nothing happens in the noise alone');
        await mic.say(question);
        const heard = await nextAfter(client, 'conversation.item.input_audio_transcription.completed', from);
        assert.match(heard.transcript, /\btime\b/);
        await nextAfter(client, 'response.audio.started', from);
        await nextAfter(client, 'response.audio.done', from);
        await mic.elapse(1000);
        const types = typesAfter(client, from);
        assert.equal(types.filter((t) => t === 'input_audio_buffer.speech_started').length, 1, `one turn, the question's: ${types.join(', ')}`);
        assert.ok(!types.includes('response.interrupted'), 'no barge-in from the noise');
      }
    } finally {
      mic.stop();
      client.close();
    }
  });

  test('babble 10 dB under the question and after it (the VAD hears speech in it): the turn ends, the question is answered while the room talks on, and the room does not interrupt the reply', async () => {
    const question = speak('what time is it');
    const client = await call(server, { model: 'echo', return_transcription: true });
    const mic = await attachRoomMicrophone(client, { noise: noiseFor(question, noiseOf('babble', 12_000), 10) });
    try {
      const from = client.events.length;
      await mic.elapse(2000);
      await mic.say(question);
      // Before the turn detector knew the room's level, the babble held this turn open as long as it lasted.
      await nextAfter(client, 'conversation.item.input_audio_transcription.completed', from);
      await nextAfter(client, 'response.audio.done', from);
      const types = typesAfter(client, from);
      assert.equal(types.filter((t) => t === 'input_audio_buffer.speech_started').length, 1, `one turn, the question's: ${types.join(', ')}`);
      assert.ok(!types.includes('response.interrupted'), 'no barge-in from the babble');
    } finally {
      mic.stop();
      client.close();
    }
  });
});
