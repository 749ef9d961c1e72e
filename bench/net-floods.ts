// The floods of issue 44 items 2, 3, 10 and 11 against one node, each as figures: the node's RSS
// (/proc, sampled every 50 ms) and its /healthz latency (polled back to back) while it lasts, and
// what the client sees. (1) An MCP server built on the SDK's own server whose tool list is 150 tools
// of 1 MB descriptions; (2) one answering 500 with a 40 MB body; (3) `localhost` checked as
// 192.0.2.1 by WEBHOOK_DNS_SERVERS while an MCP server listens on 127.0.0.1 (DNS rebinding);
// (4) Parley's own HTTP port and node-to-node listener as MCP servers; (5) 700 made-up keys on the
// node-to-node listener claiming to come from a node; (6) 400 made-up keys each on
// POST /v1/realtime/sip/calls and a ringing call's accept. Default settings, but that Parley listens
// on 127.0.0.2, WEBHOOK_ALLOWED_CIDRS allows 127.0.0.2/32 (where the MCP servers are) and
// MCP_TIMEOUT_MS is 60 s. The MCP servers run in this process, and building their floods takes its
// CPU: /healthz is polled from a process of its own, but on a 2-core machine they share the cores.
// `--parley` runs another checkout's sources (the "before" column: `git archive <commit> | tar -x -C
// /tmp/before`, with node_modules linked in).
//
//   node --import tsx bench/net-floods.ts [--parley /tmp/before/src/cli/main.ts] [--list-tools 150]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { freePort } from '../test/helpers/baresip.ts';
import { DnsServer } from '../test/helpers/dnsServer.ts';
import { startFloodingMcp } from '../test/helpers/floodingMcp.ts';
import { realtimeSession, type RealtimeSession } from '../test/helpers/realtimeSession.ts';
import { http, killWithThisProcess, LOOPBACK_SERVER_ENV } from '../test/helpers/server.ts';
import { until } from '../test/helpers/wait.ts';

const { values } = parseArgs({
  options: {
    parley: { type: 'string', default: resolve(import.meta.dirname, '../src/cli/main.ts') },
    'list-tools': { type: 'string', default: '150' },
  },
});

const MB = 1024 * 1024;
const dns = await new DnsServer().start();
const floods = await startFloodingMcp('127.0.0.2', { listTools: Number(values['list-tools']), descriptionBytes: MB, errorBodyBytes: 40 * MB, callAnswerBytes: 20 * MB });
const victim = await startFloodingMcp('127.0.0.1');
const internalPort = await freePort();
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-net-floods-'));
const proc = spawn(process.execPath, ['--import', 'tsx', values.parley!, 'serve'], {
  env: {
    ...process.env,
    ...LOOPBACK_SERVER_ENV,
    HOST: '127.0.0.2',
    INTERNAL_HOST: '127.0.0.2',
    INTERNAL_PORT: String(internalPort),
    DATA_DIR: dataDir,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.2/32',
    WEBHOOK_DNS_SERVERS: dns.address,
    TURN_ENABLED: 'false',
    // The SDK's server takes a while to build 150 MB on a busy machine: the bound, not the time, ends it.
    MCP_TIMEOUT_MS: '60000',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
killWithThisProcess(proc);
const server = await new Promise<{ baseUrl: string; devKey: string }>((ready) => {
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
    const m = /parley ready at (\S+)/.exec(out);
    if (m) ready({ baseUrl: m[1]!, devKey: /(sk_parley_ai_\w+)/.exec(out)![1]! });
  });
});
const internalUrl = `http://127.0.0.2:${internalPort}`;

const rssMb = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))![1]) / 1024;

/**
 * Polls /healthz back to back from a process of its own (this one builds the floods, which would
 * hold its own event loop) until its stdin ends; prints the longest answer time.
 */
const HEALTHZ_POLLER = `
let max = 0, done = false;
process.stdin.on('end', () => (done = true)).resume();
while (!done) {
  const t = performance.now();
  await fetch(process.argv[1]).then((r) => r.arrayBuffer());
  max = Math.max(max, performance.now() - t);
}
console.log(max);`;

/** Runs `attack` while sampling the node's RSS and /healthz, until it is over and 1 s more. */
async function watched<T>(attack: () => Promise<T>): Promise<{ result: T; rssBefore: number; rssPeak: number; healthzMaxMs: number }> {
  const rssBefore = rssMb();
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb())), 50);
  const poller = spawn(process.execPath, ['--input-type=module', '-e', HEALTHZ_POLLER, `${server.baseUrl}/healthz`], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  poller.stdout.on('data', (d) => (out += d));
  const result = await attack();
  await new Promise((r) => setTimeout(r, 1000));
  poller.stdin.end();
  await new Promise((r) => poller.once('exit', r));
  clearInterval(sampler);
  return { result, rssBefore, rssPeak, healthzMaxMs: Number(out) };
}

const mcp = (label: string, url: string) => ({ type: 'mcp', server_label: label, server_url: url, require_approval: 'never' });

/** The listing's outcome as the client sees it, and whether the session then still answers. */
async function listing(s: RealtimeSession): Promise<string> {
  const done = await until('the listing', () => s.events.find((e) => e.type === 'conversation.item.done' && e.item.type === 'mcp_list_tools'), (x) => !!x || !!s.closed(), 120_000).catch(() => undefined);
  if (!done) return s.closed() ? `session closed ${s.closed()!.code} ${s.closed()!.reason}` : 'no listing within 120 s';
  const failed = s.events.find((e) => e.type === 'mcp_list_tools.failed');
  const outcome = failed ? `failed, message ${Buffer.byteLength(failed.error.message)} bytes: ${JSON.stringify(failed.error.message.slice(0, 110))}` : `completed: ${done.item.tools.map((t: any) => t.name).join(', ')}`;
  const replies = s.replies().length;
  s.ask('Hello!');
  const reply = await until('a reply', () => s.replies()[replies] ?? s.closed(), (x) => !!x, 30_000).catch(() => undefined);
  const after = s.closed() ? `; then the session was closed: ${s.closed()!.code} ${s.closed()!.reason}` : reply ? '; then a reply completed' : '; then no reply within 30 s';
  return outcome + after;
}

const line = (what: string, w: { rssBefore: number; rssPeak: number; healthzMaxMs: number; result: unknown }) =>
  console.log(`${what}\n  RSS ${w.rssBefore.toFixed(0)} → ${w.rssPeak.toFixed(0)} MB (+${(w.rssPeak - w.rssBefore).toFixed(0)}), /healthz max ${w.healthzMaxMs.toFixed(0)} ms\n  client: ${String(w.result)}`);

try {
  line(
    `(1) MCP tool list: ${values['list-tools']} tools × 1 MB descriptions (event stream)`,
    await watched(async () => {
      const s = await realtimeSession(server, [mcp('big', `${floods.origin}/list-flood`)]);
      try {
        return await listing(s);
      } finally {
        s.close();
      }
    }),
  );
  line(
    '(2) MCP error answer: 500 with a 40 MB body',
    await watched(async () => {
      const s = await realtimeSession(server, [mcp('loud', `${floods.origin}/error-flood`)]);
      try {
        return `${await listing(s)}; the node took ${(floods.errorBytesWritten() / MB).toFixed(1)} MB of it into its socket`;
      } finally {
        s.close();
      }
    }),
  );
  dns.records.set('localhost', '192.0.2.1');
  const port = new URL(victim.origin).port;
  {
    const s = await realtimeSession(server, [mcp('rebound', `http://localhost:${port}/plain`)]);
    console.log(`(3) DNS rebinding (localhost checked as 192.0.2.1, the MCP server on 127.0.0.1): ${await listing(s)}; requests reaching 127.0.0.1: ${[...victim.requests.values()].reduce((a, b) => a + b, 0)}`);
    s.close();
  }
  {
    const s = await realtimeSession(server, [mcp('internal', `${internalUrl}/mcp`)]);
    console.log(`(4) the node-to-node listener as an MCP server: ${await listing(s)}`);
    s.close();
  }
  const counted = (answers: { status: number; body: any }[]) => {
    const counts = new Map<string, number>();
    for (const a of answers) counts.set(`${a.status} ${a.body?.error?.code ?? ''}`.trim(), (counts.get(`${a.status} ${a.body?.error?.code ?? ''}`.trim()) ?? 0) + 1);
    return [...counts].map(([k, n]) => `${n} × ${k}`).join(', ');
  };
  const madeUp = () => 'sk_parley_ai_' + randomBytes(24).toString('hex');
  const inBatches = async (n: number, one: () => Promise<{ status: number; body: any }>) => {
    const answers = [];
    for (let i = 0; i < n; i += 50) answers.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, one))));
    return answers;
  };
  line(
    '(5) 700 made-up keys on the node-to-node listener, claiming x-parley-forwarded-by',
    await watched(async () => counted(await inBatches(700, () => http(internalUrl, '/v1/realtime/models', { token: madeUp(), headers: { 'x-parley-forwarded-by': 'node-x' } })))),
  );
  for (const [path, body] of [
    ['/v1/realtime/sip/calls', { to: '+4930123456' }],
    ['/v1/realtime/calls/conv_nothing/accept', {}],
  ] as const) {
    line(`(6) 400 made-up keys on POST ${path}`, await watched(async () => counted(await inBatches(400, () => http(server.baseUrl, path, { token: madeUp(), body })))));
  }
} finally {
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
  await floods.close();
  await victim.close();
  await dns.stop();
}
