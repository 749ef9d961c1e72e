// Floods at the SIP door that must not lock anyone else out (issue 33): one address holding 1,100
// idle TCP connections, and a connection trickling bytes that never make a message; 30 INVITEs
// answered and never ACKed; a password guessed wrong again and again from one address (issue 44:
// that address waits, not the user's phone). Raw SIP on loopback (every
// 127.x address reaches it). The OPTIONS answer of another address is asserted within 2 s, and the
// trickling connection is not closed before its idle timeout; the rest only waits for answers.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { freePort } from './helpers/baresip.ts';
import { G711_OFFER, G729_ONLY_OFFER, sipRequest, sipSocket, sipStatus, type SipRequestOptions } from './helpers/rawSip.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const USERS = { alice: 'correct-horse-battery', bob: 'tr0ub4dor-and-3' };
const FLOOD = 1100;
const PER_ADDRESS = 32;
const IDLE_MS = 3000;

let server: RunningServer;
let sipPort: number;

before(async () => {
  sipPort = await freePort();
  server = await startServer({
    SIP_PORT: String(sipPort),
    SIP_USERS: Object.entries(USERS).map(([u, p]) => `${u}:${p}`).join(','),
    SIP_TCP_MAX_CONNECTIONS_PER_IP: String(PER_ADDRESS),
    SIP_TCP_IDLE_TIMEOUT_MS: String(IDLE_MS),
    SIP_AUTH_MAX_FAILURES: '5',
  });
});

after(() => server?.stop());

const statusOf = sipStatus;

const request = (method: string, via: string, opts: Omit<SipRequestOptions, 'via'> = {}) => sipRequest(sipPort, method, { ...opts, via });

describe('TCP connections', () => {
  test(`one address holding ${FLOOD} idle TCP connections: another address's OPTIONS is still answered within 2 s`, async () => {
    const flood: Socket[] = [];
    let closed = 0;
    await Promise.all(
      Array.from({ length: FLOOD }, () => {
        const socket = connect({ port: sipPort, host: '127.0.0.1', localAddress: '127.0.0.1' });
        flood.push(socket);
        socket.on('close', () => closed++);
        return new Promise<void>((resolve) => socket.once('connect', resolve).once('error', () => resolve()));
      }),
    );
    try {
      // The address's share stays open; the rest are closed as they open.
      await until('the connections past the share closed', () => closed, (n) => n >= FLOOD - PER_ADDRESS, 30_000);
      const started = performance.now();
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect({ port: sipPort, host: '127.0.0.1', localAddress: '127.0.0.2' }, () => socket.write(request('OPTIONS', 'TCP 127.0.0.2:5999')));
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error('no answer within 2 s'));
        }, 2000);
        let got = '';
        socket.on('data', (d) => {
          got += d;
          if (!got.includes('\r\n\r\n')) return;
          clearTimeout(timer);
          socket.destroy();
          resolve(got);
        });
        socket.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
      });
      assert.equal(statusOf(answer), 200);
      assert.ok(performance.now() - started < 2000);
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      const refused = Number(/^parley_rate_limited_total\{limit="sip-tcp-ip"\} (\d+)$/m.exec(metrics)?.[1]);
      assert.ok(refused >= FLOOD - PER_ADDRESS, `connections refused in the metrics: ${refused}`);
    } finally {
      for (const s of flood) s.destroy();
    }
  });

  test('a connection trickling bytes that never make a message is closed after SIP_TCP_IDLE_TIMEOUT_MS', { timeout: 20_000 }, async () => {
    // From an address of its own: the flood's sockets from 127.0.0.1 may still be counted against
    // that address's share while the server sees them close.
    const socket = connect({ port: sipPort, host: '127.0.0.1', localAddress: '127.0.0.3' });
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    const opened = performance.now();
    const text = 'OPTIONS sip:agent@127';
    let at = 0;
    // A byte every 200 ms: activity, but never a complete message.
    const trickle = setInterval(() => socket.write(text[at++ % text.length]!), 200);
    try {
      await new Promise((resolve) => socket.once('close', resolve));
      // Not before the timeout: the bytes did not make it close, their lack of a message did.
      assert.ok(performance.now() - opened >= IDLE_MS - 100, `closed after ${Math.round(performance.now() - opened)} ms`);
    } finally {
      clearInterval(trickle);
    }
  });
});

describe('INVITEs never ACKed', () => {
  test("30 answered INVITEs never ACKed: SIP's own budget is spent, the key's WebSocket session still opens", async () => {
    const caller = await sipSocket(sipPort);
    try {
      // Each challenged and answered (a nonce admits one request).
      const answers = await Promise.all(Array.from({ length: 30 }, () => caller.authenticated((opts) => request('INVITE', caller.via, { body: G711_OFFER, ...opts }), 'alice', USERS.alice)));
      assert.ok(answers.every((a) => sipStatus(a.challenge) === 401), 'each challenged');
      const statuses = answers.map((a) => statusOf(a.answer));
      // Answered up to SIP_MAX_HALF_OPEN_CALLS (10), then told to come back.
      assert.equal(statuses.filter((s) => s === 200).length, 10, `statuses: ${statuses}`);
      assert.equal(statuses.filter((s) => s === 503).length, 20, `statuses: ${statuses}`);
      assert.ok(answers.filter((a) => statusOf(a.answer) === 503).every((a) => /\r\nRetry-After: \d+\r\n/.test(a.answer!)));

      // The key owning SIP calls (the development key) opens a WebSocket session all the same.
      const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` } });
      const opened = await new Promise<string>((resolve) => {
        ws.once('open', () => resolve('open'));
        ws.once('unexpected-response', (_req, res) => resolve(`refused ${res.statusCode}`));
        ws.once('error', (err) => resolve(`error ${err.message}`));
      });
      assert.equal(opened, 'open');
      ws.close();
    } finally {
      caller.close();
    }
  });
});

describe('wrong passwords', () => {
  test("each wrong password is refused (403); after 5 the address is refused even with the right one, for any user; the user's phone elsewhere is not", async () => {
    const guesser = await sipSocket(sipPort, '127.0.0.4');
    const phone = await sipSocket(sipPort, '127.0.0.5');
    const invite = (s: typeof guesser, user: string, password: string) => s.authenticated((opts) => request('INVITE', s.via, { user, body: G729_ONLY_OFFER, ...opts }), user, password);
    try {
      for (let i = 0; i < 5; i++) {
        const { answer } = await invite(guesser, 'bob', `guess-${i}`);
        assert.equal(statusOf(answer), 403, `guess ${i + 1}: refused, not challenged again`);
        assert.match(answer!, /\r\nWarning: 399 parley "wrong password"/);
      }
      for (const user of ['bob', 'alice'] as const) {
        const { answer } = await invite(guesser, user, USERS[user]);
        assert.equal(statusOf(answer), 403);
        assert.match(answer!, /\r\nWarning: 399 parley "too many wrong passwords from this address/);
      }
      assert.match(await (await fetch(`${server.baseUrl}/metrics`)).text(), /^parley_rate_limited_total\{limit="sip-auth-ip"\} 2$/m);
      // Bob from his own address is admitted (and told we speak no G.729).
      assert.equal(statusOf((await invite(phone, 'bob', USERS.bob)).answer), 488);
    } finally {
      guesser.close();
      phone.close();
    }
  });
});
