// The OpenAI front door through the published `openai` library: client_secrets, the multipart form
// of calls (an offer with no candidates, as OpenAI's clients post it), the oai-events channel, hangup,
// and the error shapes of these forms. The Orga form of the same route is tested in contract.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { openAiStylePeer } from './helpers/openaiPeer.ts';
import { waitFor } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

describe('OpenAI front door: HTTP', () => {
  let server: RunningServer;
  let openai: OpenAI;
  before(async () => {
    server = await startServer();
    openai = new OpenAI({ apiKey: server.devKey, baseURL: `${server.baseUrl}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await server.stop();
  });

  test('client_secrets: an ek_ value, its expiry and the effective session', async () => {
    const secret = await openai.realtime.clientSecrets.create({
      expires_after: { anchor: 'created_at', seconds: 300 },
      session: { type: 'realtime', model: 'gpt-realtime', instructions: 'You are terse.', audio: { output: { voice: 'marin' } } },
    });
    assert.match(secret.value, /^ek_/);
    const now = Date.now() / 1000;
    assert.ok(secret.expires_at > now + 290 && secret.expires_at < now + 310, `expires_at ${secret.expires_at}`);
    assert.equal(secret.session.type, 'realtime');
    assert.equal((secret.session as any).instructions, 'You are terse.');
    assert.equal((secret.session as any).audio.output.voice, 'marin', "OpenAI's voice names are voices here");
    assert.equal((secret.session as any).model, 'gpt-realtime');

    // Both token kinds work on every token route: an ek_ secret on Orga's ice-config.
    const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token: secret.value });
    assert.equal(ice.status, 200);
    assert.ok(ice.body.iceServers.length > 0);
  });

  test('client_secrets errors are OpenAI error objects', async () => {
    const wrongKey = new OpenAI({ apiKey: 'sk_parley_ai_0000000000000000000000000000000000000000', baseURL: `${server.baseUrl}/v1`, maxRetries: 0 });
    await assert.rejects(wrongKey.realtime.clientSecrets.create({}), (err: any) => {
      assert.equal(err.status, 401);
      assert.equal(err.error.code, 'invalid_api_key');
      assert.equal(err.error.type, 'invalid_request_error');
      return true;
    });
    await assert.rejects(openai.realtime.clientSecrets.create({ expires_after: { anchor: 'created_at', seconds: 5 } }), (err: any) => {
      assert.equal(err.status, 400);
      assert.equal(err.error.param, 'expires_after.seconds');
      return true;
    });
    // A session is stored with its secret until it expires: it has a size limit.
    // Each field within its own bounds, the whole too large: 20 tools with 8 KB descriptions.
    const tools = Array.from({ length: 20 }, (_, i) => ({ type: 'function' as const, name: `tool_${i}`, description: 'd'.repeat(8000), parameters: { type: 'object', properties: {} } }));
    await assert.rejects(openai.realtime.clientSecrets.create({ session: { type: 'realtime', tools } }), (err: any) => {
      assert.equal(err.status, 400);
      assert.equal(err.error.code, 'session_too_large');
      assert.equal(err.error.param, 'session');
      return true;
    });
    await openai.realtime.clientSecrets.create({ session: { type: 'realtime', tools: tools.slice(0, 4) } });
    await assert.rejects(openai.realtime.clientSecrets.create({ session: { type: 'realtime', audio: { output: { voice: 'Nobody' } } } as any }), (err: any) => {
      assert.equal(err.status, 400);
      assert.equal(err.error.param, 'session.audio.output.voice');
      assert.match(err.error.message, /Nobody/);
      return true;
    });
    const turn = await http(server.baseUrl, '/v1/realtime/client_secrets', {
      token: server.devKey,
      body: { session: { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad', threshold: 3 } } } } },
    });
    assert.equal(turn.status, 400);
    assert.equal(turn.body.error.param, 'session.audio.input.turn_detection.threshold');
  });

  test('calls, multipart form: 201 with the SDP answer and Location; the call connects without client candidates; session.update is acknowledged', async () => {
    const secret = await openai.realtime.clientSecrets.create({ session: { type: 'realtime', instructions: 'Be kind.' } });
    const peer = await openAiStylePeer();
    try {
      const asClient = new OpenAI({ apiKey: secret.value, baseURL: `${server.baseUrl}/v1`, maxRetries: 0 });
      const { data, response } = await asClient.realtime.calls
        .create({ sdp: peer.offerSdp, session: { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 400 } } } } })
        .withResponse();
      assert.equal(response.status, 201);
      assert.match(response.headers.get('content-type') ?? '', /^application\/sdp/);
      const location = response.headers.get('location') ?? '';
      assert.match(location, /^\/v1\/realtime\/calls\/conv_/);
      const answer = await data.text();
      assert.match(answer, /^v=0/);
      assert.doesNotMatch(peer.offerSdp, /a=candidate/);
      await peer.pc.setRemoteDescription({ type: 'answer', sdp: answer });
      await waitFor(() => peer.pc.connectionState === 'connected', (cb) => (peer.pc.onconnectionstatechange = cb), 10_000, 'connected');

      const created = await peer.next('session.created');
      assert.equal(typeof created.event_id, 'string');
      assert.equal(created.session.instructions, 'Be kind.', 'the client secret session is the call initial session');
      assert.equal(created.session.audio.input.turn_detection.silence_duration_ms, 400, 'the request session applies on top');
      await peer.next('conversation.created');

      const from = peer.events.length;
      peer.send({ type: 'session.update', event_id: 'evt_1', session: { type: 'realtime', instructions: 'Be brief.', tools: [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: {} } }] } });
      const updated = await peer.next('session.updated', from);
      assert.equal(updated.session.instructions, 'Be brief.');
      assert.equal(updated.session.tools[0].name, 'get_weather');

      // A bad event: an error naming the client's event and the parameter.
      peer.send({ type: 'session.update', event_id: 'evt_2', session: { audio: { input: { turn_detection: { type: 'server_vad', threshold: 'high' } } } } });
      const error = await peer.next('error', from);
      assert.equal(error.error.event_id, 'evt_2');
      assert.equal(error.error.code, 'invalid_type');
      assert.equal(error.error.param, 'session.audio.input.turn_detection.threshold');
      peer.send({ type: 'no.such.event', event_id: 'evt_3' });
      await until('an error for the unknown event', () => peer.events.filter((e) => e.type === 'error').map((e) => e.error.event_id), (ids) => ids.includes('evt_3'));

      // A typed message, then a reply asked for: items and a response with ids.
      const before2 = peer.events.length;
      peer.send({ type: 'conversation.item.create', event_id: 'evt_4', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } });
      const added = await peer.next('conversation.item.added', before2);
      assert.match(added.item.id, /^item_/);
      peer.send({ type: 'response.create', event_id: 'evt_5' });
      const done = await peer.next('response.done', before2, 20_000);
      assert.match(done.response.id, /^resp_/);
      assert.equal(done.response.status, 'completed');
      assert.ok(done.response.usage.total_tokens > 0);
      const reply = done.response.output.find((i: any) => i.type === 'message');
      assert.equal(reply.role, 'assistant');
      assert.match(reply.content[0].transcript, /Parley|hello/i);
      peer.send({ type: 'conversation.item.retrieve', event_id: 'evt_6', item_id: added.item.id });
      const retrieved = await peer.next('conversation.item.retrieved', before2);
      assert.equal(retrieved.item.content[0].text, 'hello');

      // Hang-up through the API (the key's owner).
      const id = location.split('/').pop()!;
      await openai.realtime.calls.hangup(id);
      const record = await until('the call to be recorded ended', async () => (await http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: server.devKey })).body, (r) => r.state === 'ended');
      assert.equal(record.end_reason, 'hangup_request');
      await assert.rejects(openai.realtime.calls.hangup(id), (err: any) => err.status === 404 && err.error.code === 'call_not_found');
    } finally {
      peer.pc.close();
    }
  });

  test('calls, raw SDP form as the Agents SDK sends it, and its errors', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const peer = await openAiStylePeer();
    try {
      const res = await fetch(`${server.baseUrl}/v1/realtime/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/sdp', 'x-openai-agents-sdk': 'openai-agents-sdk.realtime/test' },
        body: peer.offerSdp,
      });
      assert.equal(res.status, 201, 'an Orga token works on the OpenAI form too');
      assert.match(res.headers.get('location') ?? '', /\/v1\/realtime\/calls\/conv_/);
      await peer.pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
      await waitFor(() => peer.pc.connectionState === 'connected', (cb) => (peer.pc.onconnectionstatechange = cb), 10_000, 'connected');
      await peer.next('session.created');
    } finally {
      peer.pc.close();
    }

    const bad = await fetch(`${server.baseUrl}/v1/realtime/calls`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/sdp' }, body: 'v=0\r\nnot an offer' });
    assert.equal(bad.status, 400);
    const body = (await bad.json()) as any;
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.code, 'invalid_offer');
    assert.equal(body.error.param, 'sdp');

    const unauthenticated = await fetch(`${server.baseUrl}/v1/realtime/calls`, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: 'v=0' });
    assert.equal(unauthenticated.status, 403);
    assert.equal(((await unauthenticated.json()) as any).error.message, 'Not authenticated');

    const preflight = await fetch(`${server.baseUrl}/v1/realtime/calls`, {
      method: 'OPTIONS',
      headers: { origin: 'http://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-openai-agents-sdk' },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-OpenAI-Agents-SDK/i);
    assert.match(preflight.headers.get('access-control-expose-headers') ?? '', /Location/);
  });
});
