// Time to connected with the published Orga browser SDK: the React app of test/orga-sdk.test.ts
// (@orga-ai/react 1.0.5, its backend proxy on @orga-ai/node) in headless Chromium against a fresh
// default Parley process, one call after another, each in a fresh page.
//   startSession → connected:  from the Start button's startSession() to the SDK's onSessionConnected
//                              (the peer connection's "connected"), what a user waits for;
//   its parts:                 session config (the app's proxy route: client-secrets + ice-config),
//                              offer (peer connection, offer, ICE gathering until complete, at most 5 s),
//                              offer → answer (POST /v1/realtime/calls as the page saw it, and as
//                              Parley answered it to the route that forwards the vendor host),
//                              answer → connected (ICE checks, DTLS).
//
//   node --import tsx bench/orga-connect.ts                 # 20 calls
//   node --import tsx bench/orga-connect.ts --calls 5 --env TURN_URLS=turn:127.0.0.1:9?transport=udp --env TURN_CHECK_INTERVAL_MS=0
//                                                           # (a dead TURN server handed out: the issue's 5.4 s)
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { launchBrowser } from '../test/helpers/browser.ts';
import { openOrgaPage, readProbe, startOrgaApp, waitForOrga } from '../test/helpers/orgaSdk.ts';
import { http, startServer, type RunningServer } from '../test/helpers/server.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20' },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const count = Number(values.calls);
if (!Number.isInteger(count) || count < 1 || count > 500) throw new Error('--calls must be a whole number from 1 to 500');
const env = Object.fromEntries(values.env!.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;
const ms = (x: number) => x.toFixed(0);

async function waitForNoCalls(server: RunningServer): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    if ((await http(server.baseUrl, '/healthz')).body?.calls === 0) return;
    await sleep(50);
  }
}

const rows = {
  'startSession → connected (onSessionConnected)': [] as number[],
  'session config (backend proxy: client-secrets + ice-config)': [] as number[],
  'offer built, ICE gathered (until complete)': [] as number[],
  'offer → answer, seen by the page': [] as number[],
  'offer → answer, Parley alone (POST /calls)': [] as number[],
  'answer → connected (ICE + DTLS)': [] as number[],
};
let failed = 0;
const server = await startServer(env);
const app = await startOrgaApp(server);
const browser = await launchBrowser();
try {
  // One unmeasured call first (Chromium's and the server's one-off costs).
  for (let i = -1; i < count; i++) {
    let parleyCallsMs = NaN;
    const page = await openOrgaPage(browser, app, server.baseUrl, '', (method, path, took) => {
      if (method === 'POST' && path === '/v1/realtime/calls') parleyCallsMs = took;
    });
    try {
      await page.click('#start');
      await waitForOrga(page, 'connected', "o.events.some((e) => e.name === 'onSessionConnected')", 20_000);
      const probe = await readProbe(page);
      const timing = (await page.evaluate(`(() => {
        const last = (part) => performance.getEntriesByType('resource').filter((e) => e.name.includes(part)).pop();
        const config = last('/api/orga-session');
        const calls = last('/v1/realtime/calls');
        return { configEnd: config.responseEnd, callsStart: calls.startTime, callsEnd: calls.responseEnd };
      })()`)) as { configEnd: number; callsStart: number; callsEnd: number };
      const connectedAt = probe.events.find((e) => e.name === 'onSessionConnected')!.at;
      if (i >= 0) {
        rows['startSession → connected (onSessionConnected)'].push(connectedAt - probe.startedAt!);
        rows['session config (backend proxy: client-secrets + ice-config)'].push(timing.configEnd - probe.startedAt!);
        rows['offer built, ICE gathered (until complete)'].push(timing.callsStart - timing.configEnd);
        rows['offer → answer, seen by the page'].push(timing.callsEnd - timing.callsStart);
        rows['offer → answer, Parley alone (POST /calls)'].push(parleyCallsMs);
        rows['answer → connected (ICE + DTLS)'].push(connectedAt - timing.callsEnd);
      }
    } catch (err) {
      if (i >= 0) failed++;
      process.stderr.write(`call ${i + 1} failed: ${(err as Error).message.slice(0, 500)}\n`);
    } finally {
      await page.close();
    }
    await waitForNoCalls(server);
  }
} finally {
  await browser.close();
  await app.close();
  await server.stop();
}

const measured = rows['startSession → connected (onSessionConnected)'].length;
console.log(
  `\n${measured} calls (${failed} failed), @orga-ai/react 1.0.5 in Chromium, ${Object.keys(env).length ? `env ${JSON.stringify(env)}` : 'default server'}, ` +
    `${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}, ${new Date().toISOString()}\n`,
);
console.log('| measure | p50 ms | p95 ms | min ms | max ms |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, xs] of Object.entries(rows)) {
  if (xs.length) console.log(`| ${name} | ${ms(percentile(xs, 50))} | ${ms(percentile(xs, 95))} | ${ms(Math.min(...xs))} | ${ms(Math.max(...xs))} |`);
}
process.exit(failed ? 1 : 0);
