// OpenAI's transcription sessions (session.type "transcription") through the published `openai`
// library: a client secret for one, then over the WebSocket a spoken paragraph in
// one append → per-turn input transcription deltas and completions, no response events; over WebRTC
// (oai-events, a libwebrtc peer speaking on its audio track) the same; the beta dialect's
// transcription_session.update. Beside them: the earlier WebRTC route (POST /v1/realtime?model=…
// with the SDP) and rate_limits.updated after each response.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import WebSocket from 'ws';
import { openAiStylePeer } from './helpers/openaiPeer.ts';
import { concat } from './helpers/pcm.ts';
import type { RtcClient } from './helpers/rtcClient.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
let openai: OpenAI;
before(async () => {
  server = await startServer();
  openai = new OpenAI({ apiKey: server.devKey, baseURL: `${server.baseUrl}/v1`, maxRetries: 0 });
});
after(async () => {
  await server?.stop();
});

/** A client secret for a transcription session, as the library's types shape the request. */
async function transcriptionSecret(turnDetection: Record<string, unknown> | null) {
  return openai.realtime.clientSecrets.create({
    session: {
      type: 'transcription',
      audio: { input: { transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: turnDetection as never, noise_reduction: { type: 'near_field' } } },
      include: ['item.input_audio_transcription.logprobs'],
    },
  });
}

/** Per item: its deltas joined, and its completed transcript. */
function turns(events: any[]): { deltas: string; completed: string }[] {
  return events
    .filter((e) => e.type === 'conversation.item.input_audio_transcription.completed')
    .map((c) => ({ deltas: events.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta' && e.item_id === c.item_id).map((e) => e.delta).join(''), completed: c.transcript }));
}

/** Two questions with a pause between them, at `rate`. */
const paragraph = (rate: number) => concat(new Int16Array(rate / 2), speak('what time is it now', rate), new Int16Array(rate * 1.5), speak('tell me the time', rate), new Int16Array(rate * 1.5));

describe('transcription sessions', () => {
  test('WebSocket (a transcription client secret): a paragraph in one append → per-turn deltas and completions, no response', async () => {
    const secret = await transcriptionSecret({ type: 'server_vad', silence_duration_ms: 500 });
    assert.equal(secret.session.type, 'transcription');
    // OpenAIRealtimeWS opens only wss: (tested in openai-websocket.test.ts); the same events over ws here.
    const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime`, { headers: { authorization: `Bearer ${secret.value}` } });
    const rt = { send: (e: object) => socket.send(JSON.stringify(e)), close: () => socket.close() };
    const events: any[] = [];
    socket.on('message', (data) => events.push(JSON.parse(data.toString())));
    try {
      const created = await until('session.created', () => events.find((e) => e.type === 'session.created'), (e) => e !== undefined);
      assert.equal(created.session.type, 'transcription');
      assert.deepEqual(created.session.include, ['item.input_audio_transcription.logprobs']);
      const pcm = paragraph(24_000);
      rt.send({ type: 'input_audio_buffer.append', audio: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64') });
      const heard = await until('two transcribed turns', () => turns(events), (t) => t.length >= 2, 30_000);
      for (const t of heard) {
        assert.match(t.completed, /time/);
        assert.equal(t.deltas, t.completed, 'the deltas add up to the transcript');
      }
      rt.send({ type: 'response.create' });
      await until('the refusal', () => events.filter((e) => e.type === 'error'), (e) => e.length > 0);
      assert.ok(!events.some((e) => e.type.startsWith('response.')), `no response events: ${[...new Set(events.map((e) => e.type))]}`);
    } finally {
      rt.close();
    }
  });

  test('WebRTC (oai-events, a transcription client secret): the caller speaks → transcription deltas and completion, no response and no audio out', async () => {
    const secret = await transcriptionSecret({ type: 'server_vad', silence_duration_ms: 500 });
    const peer = await openAiStylePeer();
    const mic = await attachMicrophone(peer as unknown as RtcClient);
    try {
      const res = await fetch(`${server.baseUrl}/v1/realtime/calls`, { method: 'POST', headers: { authorization: `Bearer ${secret.value}`, 'content-type': 'application/sdp' }, body: peer.offerSdp });
      assert.equal(res.status, 201);
      await peer.pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
      assert.equal((await peer.next('session.created', 0, 15_000)).session.type, 'transcription');
      await mic.say(concat(speak('what time is it now'), new Int16Array(48_000 * 1.5)));
      const heard = await until('a transcribed turn', () => turns(peer.events), (t) => t.length >= 1, 30_000);
      assert.match(heard[0]!.completed, /time/);
      assert.equal(heard[0]!.deltas, heard[0]!.completed);
      assert.ok(!peer.events.some((e) => e.type.startsWith('response.') || e.type.startsWith('output_audio_buffer.')), [...new Set(peer.events.map((e) => e.type))].join(', '));
    } finally {
      mic.stop();
      peer.pc.close();
    }
  });

  test('the beta dialect: transcription_session.update is answered with transcription_session.updated; it cannot become a realtime session again', async () => {
    const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?intent=transcription`, { headers: { authorization: `Bearer ${server.devKey}`, 'openai-beta': 'realtime=v1' } });
    const events: any[] = [];
    ws.on('message', (data) => events.push(JSON.parse(data.toString())));
    try {
      await until('session.created', () => events.find((e) => e.type === 'session.created'), (e) => e !== undefined);
      ws.send(JSON.stringify({ type: 'transcription_session.update', session: { input_audio_format: 'g711_ulaw', input_audio_transcription: { model: 'whisper-1' }, turn_detection: null } }));
      const updated = await until('transcription_session.updated', () => events.find((e) => e.type === 'transcription_session.updated'), (e) => e !== undefined);
      assert.equal(updated.session.object, 'realtime.transcription_session');
      assert.equal(updated.session.input_audio_format, 'g711_ulaw');
      assert.equal(updated.session.turn_detection, null);
      ws.send(JSON.stringify({ type: 'session.update', session: { modalities: ['text', 'audio'] } }));
      ws.send(JSON.stringify({ type: 'response.create' }));
      await until('the refusal', () => events.filter((e) => e.type === 'error'), (e) => e.length > 0);
    } finally {
      ws.close();
    }
  });
});

describe('the earlier WebRTC route; rate limits', () => {
  test('POST /v1/realtime?model=… with the SDP offer: 201 with the answer, the model taken; each response is followed by rate_limits.updated', async () => {
    const { value } = await openai.realtime.clientSecrets.create({ session: { type: 'realtime' } });
    const peer = await openAiStylePeer();
    try {
      const res = await fetch(`${server.baseUrl}/v1/realtime?model=gpt-4o-realtime-preview`, { method: 'POST', headers: { authorization: `Bearer ${value}`, 'content-type': 'application/sdp' }, body: peer.offerSdp });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('content-type')?.split(';')[0], 'application/sdp');
      await peer.pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
      assert.equal((await peer.next('session.created', 0, 15_000)).session.model, 'gpt-4o-realtime-preview');
      peer.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello!' }] } });
      peer.send({ type: 'response.create', response: { output_modalities: ['text'] } });
      const limits = await peer.next('rate_limits.updated', 0, 20_000);
      const types = peer.events.map((e) => e.type);
      assert.ok(types.indexOf('response.done') < types.indexOf('rate_limits.updated'));
      assert.equal(limits.rate_limits[0].name, 'requests');
      assert.ok(limits.rate_limits[0].remaining < limits.rate_limits[0].limit);
    } finally {
      peer.pc.close();
    }
    // Refused without a token, as the calls route refuses.
    const refused = await Promise.all(['/v1/realtime?model=gpt-realtime', '/v1/realtime/calls'].map((path) => fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: 'v=0' })));
    assert.equal(refused[0]!.status, refused[1]!.status);
    assert.ok(refused[0]!.status >= 401 && refused[0]!.status <= 403);
  });
});
