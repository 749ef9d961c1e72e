// PostgreSQL restarted (fast shutdown: every connection is terminated with 57P01) again and again
// under a running node, while token requests, WebSocket sessions and a WebRTC call go on and a CPU
// burner runs on every core: the process must live through every restart, answer /healthz all the
// while, and serve what needs the database again once it is back. A pg client checked out of the
// pool with no query running used to have no 'error' listener, and the node died of it.
// PostgreSQL is the test's own cluster (the machine's is never stopped). Runs alone: it loads the
// machine on purpose (not in scripts/test.mjs's PARALLEL_FILES).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { startTestPostgres, type TestPostgres } from './helpers/postgres.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const RESTARTS = 10;

describe('PostgreSQL restarted ten times under traffic on a busy machine', () => {
  let pg: TestPostgres;
  let server: RunningServer;
  let burners: ChildProcess[] = [];
  let stopping = false;
  const loops: Promise<void>[] = [];
  /** Every HTTP status the traffic got, by count; '0' for a request the server never answered. */
  const statuses = new Map<string, number>();
  let sessionsOpened = 0;

  const count = (status: string) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const alive = () => server.proc.exitCode === null && server.proc.signalCode === null;

  /** A client secret carrying a session: written to the database, so 200 only when it answers (status 0: no answer). */
  const secretWithSession = () =>
    http(server.baseUrl, '/v1/realtime/client_secrets', { token: server.devKey, body: { session: { type: 'realtime', instructions: 'Be brief.' } } }).catch(() => ({ status: 0 }));

  /** Token requests without pause: the key is looked up in the database each time (KEY_CACHE_TTL_MS=0). */
  async function tokenTraffic(): Promise<void> {
    while (!stopping && alive()) {
      count(String((await secretWithSession()).status));
      const plain = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey }).catch(() => ({ status: 0 }));
      count(String(plain.status));
    }
  }

  /** WebSocket sessions opened and closed one after another: each records its call in the database. */
  async function sessionTraffic(): Promise<void> {
    while (!stopping && alive()) {
      await new Promise<void>((resolve) => {
        const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` } });
        const done = () => {
          ws.terminate();
          resolve();
        };
        ws.on('message', (data) => {
          if (JSON.parse(data.toString()).type === 'session.created') sessionsOpened += 1;
          ws.close();
        });
        // Refused (503 while the database is down) or cut: either way the next one is tried.
        ws.on('error', done);
        ws.on('close', done);
        ws.on('unexpected-response', done);
      });
    }
  }

  before(async () => {
    pg = await startTestPostgres();
    server = await startServer({ DATABASE_URL: pg.url, KEY_CACHE_TTL_MS: '0', NODE_HEARTBEAT_MS: '500', NODE_LOST_AFTER_MS: '3000', ...NO_RATE_LIMITS, ...NO_CALL_LIMITS });
  });
  after(async () => {
    stopping = true;
    for (const b of burners) b.kill('SIGKILL');
    await Promise.allSettled(loops);
    await server?.stop();
    await pg?.destroy();
  });

  test('the node lives through every restart, answers /healthz, serves tokens again each time, and its live call goes on', async (t) => {
    let call: RtcClient | undefined;
    try {
      call = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
      await call.waitConnected();
      await call.nextEvent('session.created');
      burners = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
      for (let i = 0; i < 6; i++) loops.push(tokenTraffic());
      loops.push(sessionTraffic());
      for (let restart = 1; restart <= RESTARTS; restart++) {
        // Traffic reaches the database before each stop (the previous restart is over).
        await until(`a token request answered from the database before stop ${restart}`, secretWithSession, (r) => r.status === 200 || !alive(), 120_000);
        assert.ok(alive(), `the node died before stop ${restart}: ${server.stderr().slice(-2000)}`);

        await pg.stop();
        await until(`/readyz to see the database gone (stop ${restart})`, () => http(server.baseUrl, '/readyz').catch(() => ({ status: 0 })), (r) => r.status === 503 || !alive(), 120_000);
        assert.ok(alive(), `the node died at stop ${restart}: ${server.stderr().slice(-2000)}`);
        assert.equal((await http(server.baseUrl, '/healthz')).status, 200, `/healthz during outage ${restart}`);

        await pg.start();
        const back = await until(`a token request answered once the database is back (restart ${restart})`, secretWithSession, (r) => r.status === 200 || !alive(), 120_000);
        assert.ok(alive(), `the node died at restart ${restart}: ${server.stderr().slice(-2000)}`);
        assert.equal(back.status, 200);
        assert.equal((await http(server.baseUrl, '/healthz')).status, 200, `/healthz after restart ${restart}`);
      }
      assert.equal((await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey })).status, 200);
      // The call placed before the first restart still answers on its data channel.
      call.send({ type: 'session.update', session: { voice: 'Juan' } });
      assert.equal((await call.nextEvent('session.updated', 60_000)).session.voice, 'Juan');
    } finally {
      stopping = true;
      for (const b of burners) b.kill('SIGKILL');
      await Promise.allSettled(loops);
      call?.close();
    }
    assert.ok(alive(), 'the same process throughout');
    const seen = Object.fromEntries(statuses);
    t.diagnostic(`statuses ${JSON.stringify(seen)}, WebSocket sessions opened ${sessionsOpened}`);
    // Answered every time: served, or 503 while the database was down; never a 500, never a dropped connection.
    assert.deepEqual(Object.keys(seen).filter((s) => s !== '200' && s !== '503'), [], JSON.stringify(seen));
    assert.ok((seen['200'] ?? 0) > RESTARTS, JSON.stringify(seen));
    assert.ok(sessionsOpened > 0, 'WebSocket sessions were opened');
    assert.doesNotMatch(server.stderr(), /unhandled error|Unhandled 'error' event/i);
  });
});
