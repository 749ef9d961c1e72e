// A call's sideband connections are capped (MAX_SIDEBANDS_PER_CALL): 100 opened at once on one
// call, at most the cap stay, every other one is told why (an OpenAI error event,
// too_many_sidebands) and closed, and the call and the sidebands that stayed go on. This file only
// waits for events; it measures no time. (Across nodes, the relayed sideband meets the same cap on
// the carrying node: test/nodes.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const CAP = 4;

interface Socket {
  ws: WebSocket;
  events: any[];
  closed: { code: number } | undefined;
}

function connect(url: string, key: string): Promise<Socket> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
  const socket: Socket = { ws, events: [], closed: undefined };
  ws.on('message', (data) => socket.events.push(JSON.parse(String(data))));
  ws.on('close', (code) => (socket.closed = { code }));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(socket));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
  });
}

describe('sideband connections per call', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ TURN_ENABLED: 'false', STT_WORKERS: '1', MAX_SIDEBANDS_PER_CALL: String(CAP) });
  });
  after(async () => {
    await server?.stop();
  });

  test(`100 on one call: ${CAP} stay, the others are told too_many_sidebands and closed; the call goes on`, async () => {
    const base = server.baseUrl.replace('http', 'ws');
    const session = await connect(`${base}/v1/realtime?model=gpt-realtime`, server.devKey);
    const created: any = await until('conversation.created', () => session.events.find((e) => e.type === 'conversation.created'), Boolean);
    const callId = created.conversation.id;

    const sidebands = await Promise.all(Array.from({ length: 100 }, () => connect(`${base}/v1/realtime?call_id=${callId}`, server.devKey)));
    await until('every sideband greeted or refused', () => sidebands.filter((s) => s.events.length > 0 && (s.events[0].type === 'session.created' || s.closed)).length, (n) => n === 100);
    const kept = sidebands.filter((s) => s.events[0].type === 'session.created');
    const refused = sidebands.filter((s) => s.events[0].type === 'error');
    assert.equal(kept.length, CAP, `${CAP} kept`);
    assert.equal(refused.length, 100 - CAP, 'the others refused');
    for (const s of refused) {
      assert.equal(s.events[0].error.code, 'too_many_sidebands');
      assert.equal(s.events[0].error.type, 'invalid_request_error');
      assert.match(s.events[0].error.message, /already has 4 sideband connections/);
      assert.deepEqual(s.closed, { code: 1000 });
      assert.equal(s.events.length, 1, 'told nothing else of the call');
    }
    assert.ok(kept.every((s) => s.closed === undefined), 'the kept ones stay open');

    // The call goes on: its client is answered, and the sidebands that stayed hear its events.
    const from = session.events.length;
    session.ws.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Still on.' }] } }));
    await until('the item added on the call', () => session.events.slice(from).some((e) => e.type === 'conversation.item.added'), Boolean);
    await until('the kept sidebands hear it', () => kept.every((s) => s.events.some((e) => e.type === 'conversation.item.added')), Boolean);

    // One leaving makes room for another.
    kept[0]!.ws.close();
    await until('the sideband closed', () => kept[0]!.closed, Boolean);
    const another = await until(
      'room for another (once the server saw the close)',
      async () => {
        const s = await connect(`${base}/v1/realtime?call_id=${callId}`, server.devKey);
        await until('its greeting or refusal', () => s.events[0], Boolean);
        return s;
      },
      (s) => s.events[0].type === 'session.created',
    );
    for (const s of [...kept, another, session]) s.ws.close();
  });
});
