// The floods of issue 33 at the SIP door of one node, each as a figure: (1) one address opens 1,100
// TCP connections and holds them idle: how long another address waits for an OPTIONS answer;
// (2) 30 authenticated INVITEs answered and never ACKed: their answers, and how long the key owning
// SIP calls is refused a WebSocket session; (3) 20 wrong passwords for one user from 20 addresses,
// then the right one: its answer. `--parley` runs another checkout's sources (the "before" column:
// `git archive <commit> | tar -x -C /tmp/before`, with node_modules linked in).
//
//   node --import tsx bench/sip-floods.ts [--parley /tmp/before/src/cli/main.ts] [--env KEY=VALUE …]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { freePort } from '../test/helpers/baresip.ts';
import { G711_OFFER, G729_ONLY_OFFER, sipRequest, sipSocket, sipStatus, type SipRequestOptions } from '../test/helpers/rawSip.ts';
import { LOOPBACK_SERVER_ENV } from '../test/helpers/server.ts';

const { values } = parseArgs({
  options: {
    parley: { type: 'string', default: resolve(import.meta.dirname, '../src/cli/main.ts') },
    env: { type: 'string', multiple: true, default: [] },
  },
});

const USERS = { alice: 'correct-horse-battery', bob: 'tr0ub4dor-and-3' };
const statusOf = (answer: string | undefined) => sipStatus(answer) ?? 'none';

const sipPort = await freePort();
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-sip-floods-'));
const extra = Object.fromEntries(values.env!.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const proc = spawn(process.execPath, ['--import', 'tsx', values.parley!, 'serve'], {
  env: { ...process.env, ...LOOPBACK_SERVER_ENV, DATA_DIR: dataDir, SIP_PORT: String(sipPort), SIP_USERS: Object.entries(USERS).map(([u, p]) => `${u}:${p}`).join(','), ...extra },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const { baseUrl, devKey } = await new Promise<{ baseUrl: string; devKey: string }>((ready) => {
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
    const m = /parley ready at (\S+)/.exec(out);
    if (m) ready({ baseUrl: m[1]!, devKey: /(sk_parley_ai_\w+)/.exec(out)![1]! });
  });
});

const request = (method: string, via: string, opts: Omit<SipRequestOptions, 'via'> = {}) => sipRequest(sipPort, method, { ...opts, via });

/** Milliseconds until an OPTIONS over TCP from `source` is answered, or undefined after `waitMs`. */
function optionsOverTcp(source: string, waitMs: number): Promise<number | undefined> {
  const started = performance.now();
  return new Promise((done) => {
    const socket = connect({ port: sipPort, host: '127.0.0.1', localAddress: source }, () => socket.write(request('OPTIONS', `TCP ${source}:5999`)));
    const timer = setTimeout(() => finish(undefined), waitMs);
    const finish = (ms: number | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      done(ms);
    };
    socket.on('data', () => finish(performance.now() - started));
    socket.on('error', () => {});
  });
}

/** Whether the development key gets a WebSocket session now: 'open' or the refusal's status. */
function webSocketSession(): Promise<string> {
  return new Promise((done) => {
    const ws = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${devKey}` } });
    ws.once('open', () => {
      ws.close();
      done('open');
    });
    ws.once('unexpected-response', (_req, res) => done(String(res.statusCode)));
    ws.once('error', (err) => done(err.message));
  });
}

try {
  // 1. 1,100 idle TCP connections from one address.
  const flood: Socket[] = [];
  let closed = 0;
  await Promise.all(
    Array.from({ length: 1100 }, () => {
      const socket = connect({ port: sipPort, host: '127.0.0.1', localAddress: '127.0.0.1' });
      flood.push(socket);
      socket.on('close', () => closed++);
      socket.on('error', () => {});
      return new Promise<void>((r) => socket.once('connect', () => r()).once('close', () => r()));
    }),
  );
  await sleep(1000);
  const tcpMs = await optionsOverTcp('127.0.0.2', 10_000);
  console.log(`tcp: 1100 connections from 127.0.0.1, ${1100 - closed} held open by the server; OPTIONS from 127.0.0.2: ${tcpMs === undefined ? 'no answer within 10 s' : `${tcpMs.toFixed(1)} ms`}`);
  for (const s of flood) s.destroy();

  // 2. 30 INVITEs answered and never ACKed (each challenged and answered: a nonce admits one request).
  const caller = await sipSocket(sipPort, '127.0.0.1');
  const started = performance.now();
  const answers = (await Promise.all(Array.from({ length: 30 }, () => caller.authenticated((opts) => request('INVITE', caller.via, { body: G711_OFFER, ...opts }), 'alice', USERS.alice)))).map((a) => a.answer);
  caller.close();
  const tally = new Map<string | number, number>();
  for (const a of answers) tally.set(statusOf(a), (tally.get(statusOf(a)) ?? 0) + 1);
  let session = await webSocketSession();
  const refusedFirst = session;
  while (session !== 'open' && performance.now() - started < 60_000) {
    await sleep(250);
    session = await webSocketSession();
  }
  const lockedFor = refusedFirst === 'open' ? 'never refused' : `refused (${refusedFirst}) for ${((performance.now() - started) / 1000).toFixed(1)} s after the flood began`;
  console.log(`invites: 30 not ACKed → ${JSON.stringify(Object.fromEntries(tally))}; the key's WebSocket session: ${lockedFor}`);

  // 3. Wrong passwords for one user from 20 addresses, then the right one (each INVITE challenged
  // first, on its own Call-ID).
  const invite = async (source: string, password: string) => {
    const s = await sipSocket(sipPort, source);
    const { answer } = await s.authenticated((opts) => request('INVITE', s.via, { user: 'bob', body: G729_ONLY_OFFER, ...opts }), 'bob', password);
    s.close();
    return statusOf(answer);
  };
  const wrong = new Map<string | number, number>();
  for (let i = 0; i < 20; i++) {
    const s = await invite(`127.0.0.${10 + i}`, `guess-${i}`);
    wrong.set(s, (wrong.get(s) ?? 0) + 1);
  }
  const right = await invite('127.0.0.40', USERS.bob);
  console.log(`passwords: 20 wrong ones for bob from 20 addresses → ${JSON.stringify(Object.fromEntries(wrong))}; then the right one → ${right} (488: admitted, no G.729)`);
} finally {
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
}
