// HTTP throughput and latency of client-secrets and ice-config at 50 connections (autocannon), side
// by side with a bare node:http server answering a constant JSON body: the ceiling on this machine.
// Usage: node --import tsx bench/http.ts [--seconds 10] [--connections 50]
import { spawn, type ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { mintToken, startServer } from '../test/helpers/server.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const seconds = arg('seconds', 10);
const connections = arg('connections', 50);

const CEILING_SOURCE = `
const body = JSON.stringify({ ephemeral_token: 'x'.repeat(300), token_type: 'bearer', expires_at: new Date().toISOString() });
require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(body); }); })
  .listen(0, '127.0.0.1', function () { console.log('ceiling ready at http://127.0.0.1:' + this.address().port); });`;

async function startCeiling(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['-e', CEILING_SOURCE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => proc.stdout!.on('data', (d) => resolve(/(http:\/\/\S+)/.exec(String(d))![1]!)));
  return { url, proc };
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function run(name: string, opts: autocannon.Options): Promise<Row> {
  // A short warm-up (JIT, caches), then the measured run.
  await autocannon({ ...opts, connections, duration: 2 });
  const r = await autocannon({ ...opts, connections, duration: seconds });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors };
}

const ceiling = await startCeiling();
const server = await startServer({ LOG_LEVEL: 'warn' });
try {
  const token = await mintToken(server.baseUrl, server.devKey);
  const rows: Row[] = [];
  rows.push(await run('node:http constant JSON (ceiling)', { url: ceiling.url, method: 'POST' }));
  rows.push(
    await run('POST /v1/realtime/client-secrets', {
      url: `${server.baseUrl}/v1/realtime/client-secrets`,
      method: 'POST',
      headers: { authorization: `Bearer ${server.devKey}`, 'content-type': 'application/json' },
    }),
  );
  rows.push(await run('GET /v1/realtime/ice-config', { url: `${server.baseUrl}/v1/realtime/ice-config`, headers: { authorization: `Bearer ${token}` } }));
  const top = rows[0]!.rps;
  console.log(`\n${connections} connections, ${seconds} s each, one Parley process (${new Date().toISOString()})\n`);
  console.log('| endpoint | req/s | % of ceiling | p50 ms | p99 ms | non-2xx | errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(`| ${r.name} | ${Math.round(r.rps)} | ${Math.round((100 * r.rps) / top)} % | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`);
  }
} finally {
  ceiling.proc.kill();
  await server.stop();
}
