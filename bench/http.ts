// HTTP throughput and latency of client-secrets and ice-config at 50 connections (autocannon), side
// by side with a bare node:http server answering a constant JSON body: the ceiling on this machine.
// Everything runs on 127.0.0.1: a real Parley process (production-like settings, its own temporary
// data directory), the ceiling in a second process, a reference (node:http minting a token with
// fast-jwt and nothing else) in a third, autocannon in this one.
//
//   node --import tsx bench/http.ts                      # 10 s per endpoint after a 2 s warm-up
//   node --import tsx bench/http.ts --rounds 3           # repeat, then the median of each column
//   flags: --seconds 10  --warmup 2  --connections 50  --rounds 1
//
// Target (issue 3): each endpoint >= 50 % of the ceiling's requests/s on one process, zero non-2xx.
// Besides requests/s and latency it reports CPU per request of the server under test and of the
// load generator, and how busy the rest of the machine was: on 2 cores the load generator shares
// the CPU with the server, and other work on the machine moves every figure.
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { http, startServer, type RunningServer, NO_RATE_LIMITS } from '../test/helpers/server.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '1' },
  },
});
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
for (const [name, v] of Object.entries({ seconds, warmup, connections, rounds })) {
  if (!Number.isInteger(v) || v < (name === 'warmup' ? 0 : 1)) throw new Error(`--${name} must be a whole number (got ${v})`);
}

const TARGET_PCT = 50;
const REFERENCE = 'reference: node:http + fast-jwt mint only';
const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ: the unit of /proc CPU times

// The ceiling: node:http answering a constant JSON body shaped like a token response.
const CEILING_SOURCE = `
const body = JSON.stringify({ ephemeral_token: 'x'.repeat(300), token_type: 'bearer', expires_at: new Date().toISOString() });
require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(body); }); })
  .listen(0, '127.0.0.1', function () { console.log('ceiling ready at http://127.0.0.1:' + this.address().port); });`;

// A reference, not a target: node:http minting a token per request with the same library and claims
// as client-secrets, and nothing else (no routing, authentication, validation or schemas). It shows
// what minting alone costs against the ceiling on this machine.
const MINT_ONLY_SOURCE = `
const { createSigner } = require('fast-jwt');
const { randomBytes, randomUUID } = require('node:crypto');
const sign = createSigner({ key: randomBytes(32), algorithm: 'HS256', kid: 'sk-reference' });
require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => {
  const iat = Math.floor(Date.now() / 1000);
  const token = sign({ iss: 'parley', aud: 'parley-realtime', sub: 'key_reference0000', iat, nbf: iat, exp: iat + 120, jti: randomUUID() });
  const body = JSON.stringify({ ephemeral_token: token, token_type: 'bearer', expires_at: new Date((iat + 120) * 1000).toISOString(), ephemeralToken: token, ttl: 120 });
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }); res.end(body); }); })
  .listen(0, '127.0.0.1', function () { console.log('reference ready at http://127.0.0.1:' + this.address().port); });`;

async function startNodeServer(source: string): Promise<{ url: string; proc: ChildProcess }> {
  // cwd: the project, so the reference server's require('fast-jwt') finds our dependency.
  const proc = spawn(process.execPath, ['-e', source], { cwd: new URL('..', import.meta.url), stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      const m = /(http:\/\/\S+)/.exec(String(d));
      if (m) resolve(m[1]!);
    });
    proc.on('exit', (code) => reject(new Error(`node:http server exited with ${code}`)));
  });
  return { url, proc };
}

/** CPU seconds (user + system, all threads) a process has used so far. */
function processCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** CPU seconds the whole machine has been busy so far (all cores). */
function machineBusyCpu(): number {
  const t = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const idle = (t[3] ?? 0) + (t[4] ?? 0);
  return (t.reduce((a, b) => a + b, 0) - idle) / CLOCK_TICKS_PER_SECOND;
}

const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** CPU per request, µs: the server under test, and autocannon. */
  serverUs: number;
  clientUs: number;
  /** Cores the rest of the machine kept busy meanwhile (0 = a quiet machine). */
  otherCores: number;
}

interface Target {
  name: string;
  pid: number;
  /** Fresh options per phase (a token minted just before it). */
  options: () => Promise<autocannon.Options>;
}

async function measure(target: Target, serverPids: number[]): Promise<Row> {
  if (warmup > 0) await autocannon({ ...(await target.options()), connections, duration: warmup });
  const options = await target.options();
  const before = { server: processCpu(target.pid), self: selfCpu(), ours: ourCpu(serverPids), machine: machineBusyCpu() };
  const r = await autocannon({ ...options, connections, duration: seconds });
  const server = processCpu(target.pid) - before.server;
  const self = selfCpu() - before.self;
  const others = machineBusyCpu() - before.machine - (ourCpu(serverPids) - before.ours);
  return {
    name: target.name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    serverUs: (server * 1e6) / Math.max(1, r.requests.total),
    clientUs: (self * 1e6) / Math.max(1, r.requests.total),
    otherCores: Math.max(0, others / seconds),
  };
}

/** CPU of this process and the servers it started. */
function ourCpu(serverPids: number[]): number {
  return selfCpu() + serverPids.reduce((sum, pid) => sum + processCpu(pid), 0);
}

/** A token response's fields; tokens are minted per phase because one lives TOKEN_TTL_SECONDS (120 s by default). */
async function freshToken(server: RunningServer): Promise<string> {
  const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey });
  if (r.status !== 200) throw new Error(`client-secrets answered ${r.status}: ${JSON.stringify(r.body)}`);
  if (r.body.ttl < Math.max(warmup, seconds) + 10) {
    throw new Error(`a token lives ${r.body.ttl} s: keep --seconds and --warmup below ${r.body.ttl - 10}`);
  }
  return r.body.ephemeral_token as string;
}

function printTable(title: string, rows: Row[]): void {
  const ceiling = rows[0]!.rps;
  console.log(`\n${title}\n`);
  console.log('| endpoint | req/s | % of ceiling | p50 ms | p99 ms | non-2xx | errors | server CPU µs/req | autocannon CPU µs/req | other load (cores) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${Math.round(r.rps)} | ${Math.round((100 * r.rps) / ceiling)} % | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ` +
        `${Math.round(r.serverUs)} | ${Math.round(r.clientUs)} | ${r.otherCores.toFixed(2)} |`,
    );
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const ceiling = await startNodeServer(CEILING_SOURCE);
const mintOnly = await startNodeServer(MINT_ONLY_SOURCE);
const server = await startServer({ LOG_LEVEL: 'warn', ...NO_RATE_LIMITS });
const pids = [server.proc.pid!, ceiling.proc.pid!, mintOnly.proc.pid!];
try {
  const targets: Target[] = [
    { name: 'node:http constant JSON (ceiling)', pid: ceiling.proc.pid!, options: async () => ({ url: ceiling.url, method: 'POST' }) },
    {
      name: REFERENCE,
      pid: mintOnly.proc.pid!,
      options: async () => ({ url: mintOnly.url, method: 'POST', headers: { 'content-type': 'application/json' } }),
    },
    {
      name: 'POST /v1/realtime/client-secrets',
      pid: server.proc.pid!,
      options: async () => ({
        url: `${server.baseUrl}/v1/realtime/client-secrets`,
        method: 'POST',
        headers: { authorization: `Bearer ${server.devKey}`, 'content-type': 'application/json' },
      }),
    },
    {
      name: 'GET /v1/realtime/ice-config',
      pid: server.proc.pid!,
      options: async () => ({ url: `${server.baseUrl}/v1/realtime/ice-config`, headers: { authorization: `Bearer ${await freshToken(server)}` } }),
    },
  ];
  const all: Row[][] = [];
  for (let round = 1; round <= rounds; round++) {
    const rows: Row[] = [];
    for (const t of targets) rows.push(await measure(t, pids));
    all.push(rows);
    const header = `${connections} connections, ${seconds} s each after ${warmup} s of warm-up, one Parley process, ${cpus().length} cores`;
    printTable(`${rounds > 1 ? `round ${round}/${rounds}: ` : ''}${header} (${new Date().toISOString()})`, rows);
  }
  const summary: Row[] = targets.map((t, i) => {
    const col = (f: (r: Row) => number) => median(all.map((rows) => f(rows[i]!)));
    return {
      name: t.name,
      rps: col((r) => r.rps),
      p50: col((r) => r.p50),
      p99: col((r) => r.p99),
      non2xx: all.reduce((s, rows) => s + rows[i]!.non2xx, 0),
      errors: all.reduce((s, rows) => s + rows[i]!.errors, 0),
      serverUs: col((r) => r.serverUs),
      clientUs: col((r) => r.clientUs),
      otherCores: col((r) => r.otherCores),
    };
  });
  if (rounds > 1) printTable(`median of ${rounds} rounds (non-2xx and errors: totals)`, summary);
  const misses = summary.slice(1).filter((r) => r.name !== REFERENCE).filter((r) => (100 * r.rps) / summary[0]!.rps < TARGET_PCT || r.non2xx > 0 || r.errors > 0);
  console.log(
    `\ntarget (each endpoint >= ${TARGET_PCT} % of the ceiling, zero non-2xx): ${misses.length ? `missed by ${misses.map((r) => r.name).join(', ')}` : 'met'}`,
  );
} finally {
  ceiling.proc.kill();
  mintOnly.proc.kill();
  await server.stop();
}
