// Bad input on the data channel, in both protocols: every message is answered with an error event
// in that protocol's shape and the call goes on; a client that breaks the channel ends its call
// cleanly, recorded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openCall } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

describe('data-channel input', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.stop();
  });

  test('Orga protocol: nested, mistyped and oversized messages get error events; the call goes on', async () => {
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    try {
      await client.waitConnected();
      await client.nextEvent('session.created');
      const nested = `{"event":"session.update","data":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
      client.send(nested);
      client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: 'str' } });
      client.send({ event: 'session.update', data: { voice: { nested: [[[]]] } } });
      client.send('x'.repeat(100 * 1024));
      const errors = await until('four errors', () => client.events.filter((e) => e.type === 'error').map((e) => e.error.code), (codes) => codes.length >= 4);
      assert.deepEqual([...errors].sort(), ['invalid_event', 'invalid_item', 'invalid_session_update', 'message_too_large']);
      assert.ok(client.events.every((e) => e.type !== 'error' || e.error.code !== 'server_error'));
      client.send({ event: 'session.update', data: { voice: 'Emma' } });
      assert.equal((await client.nextEvent('session.updated')).session.voice, 'Emma');
      assert.equal(client.pc.connectionState, 'connected');
    } finally {
      client.close();
    }
  });

  test('a client that closes its event channel and keeps its peer: the call ends as data_channel_closed', async () => {
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    try {
      await client.waitConnected();
      // The server has taken the channel (its greeting came) before the client closes it.
      await client.nextEvent('session.created');
      client.channel.close();
      const record = await until(
        'the call to end',
        async () => (await http(server.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey })).body,
        (r) => r.state !== 'active',
      );
      assert.equal(record.state, 'ended');
      assert.equal(record.end_reason, 'data_channel_closed');
    } finally {
      client.close();
    }
  });
});
