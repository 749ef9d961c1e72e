// SIP load from Debian's SIPp (sip-tester, issue 43): calls at a steady rate over UDP, then over
// TCP, each streaming G.711 μ-law speech for a few seconds with SIPp's RTP streamer, to the default
// voice agent. A relay in the path (test/helpers/sipMediaTap.ts) times each call's answer and counts
// the RTP Parley sends back against the packets due (one per 20 ms from the ACK to the BYE), with the
// longest gap between two of them; /healthz is fetched every 200 ms throughout.
//
//   node --import tsx bench/sipp.ts [--udp 100] [--tcp 30] [--rate 10] [--seconds 6]
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/baresip.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, startServer, type RunningServer } from '../test/helpers/server.ts';
import { startSipMediaTap, type SipMediaTap, type TappedCall } from '../test/helpers/sipMediaTap.ts';
import { runSipp } from '../test/helpers/sipp.ts';
import { loadAverage, percentile } from './lib/proc.ts';

const { values } = parseArgs({
  options: {
    udp: { type: 'string', default: '100' },
    tcp: { type: 'string', default: '30' },
    rate: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '6' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);

/** /healthz round trips (ms) while `running` holds. */
async function probeHealth(server: RunningServer, running: () => boolean): Promise<number[]> {
  const times: number[] = [];
  while (running()) {
    const started = performance.now();
    const res = await fetch(`${server.baseUrl}/healthz`);
    await res.arrayBuffer();
    times.push(performance.now() - started);
    await sleep(200);
  }
  return times;
}

const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '-');

async function step(server: RunningServer, tap: SipMediaTap, transport: 'udp' | 'tcp', calls: number): Promise<void> {
  const known = new Set(tap.calls.keys());
  let running = true;
  const health = probeHealth(server, () => running);
  const load = loadAverage();
  const run = await runSipp({ target: `127.0.0.1:${tap.port}`, transport, calls, rate, seconds });
  running = false;
  const healthz = await health;
  const tapped: TappedCall[] = [...tap.calls.values()].filter((c) => !known.has(c.callId));
  const answered = tapped.filter((c) => c.answeredAt !== undefined);
  const answerMs = answered.map((c) => c.answeredAt! - c.invitedAt);
  // Parley's RTP starts at the ACK and stops at the BYE: one packet per 20 ms between them.
  const rtp = tapped.filter((c) => c.ackedAt !== undefined && c.byeAt !== undefined).map((c) => ({ due: Math.round((c.byeAt! - c.ackedAt!) / 20), back: c.fromParley, gap: c.longestGapMs, sent: c.toParley, first: (c.firstFromParley ?? Number.NaN) - c.ackedAt!, gapAt: (c.longestGapAt ?? Number.NaN) - c.ackedAt! }));
  const share = rtp.map((r) => r.back / r.due);
  console.log(`\n${transport.toUpperCase()}: ${calls} calls at ${rate}/s, ${seconds} s of speech each (load average before: ${load})`);
  console.log(`  SIPp: exit ${run.exitCode}, ${run.successful} successful, ${run.failed} failed${run.errors ? `\n${run.errors.split('\n').slice(0, 6).join('\n')}` : ''}`);
  console.log(`  set up (200 OK through the relay): ${answered.length} of ${tapped.length}; answer time p50 ${ms(percentile(answerMs, 50))} ms, p95 ${ms(percentile(answerMs, 95))} ms, max ${ms(Math.max(...answerMs))} ms`);
  console.log(`  RTP back per call: due (ACK → BYE, 20 ms) median ${percentile(rtp.map((r) => r.due), 50)}; got median ${percentile(rtp.map((r) => r.back), 50)}, min ${Math.min(...rtp.map((r) => r.back))}; got/due min ${Math.min(...share).toFixed(3)}, median ${percentile(share, 50).toFixed(3)}; calls with none back: ${rtp.filter((r) => r.back === 0).length}`);
  console.log(`  longest gap in Parley's RTP per call: p50 ${ms(percentile(rtp.map((r) => r.gap), 50))} ms, p95 ${ms(percentile(rtp.map((r) => r.gap), 95))} ms, max ${ms(Math.max(...rtp.map((r) => r.gap)))} ms; SIPp's packets to Parley per call: median ${percentile(rtp.map((r) => r.sent), 50)}; ACK → Parley's first packet p50 ${ms(percentile(rtp.map((r) => r.first), 50))} ms, max ${ms(Math.max(...rtp.map((r) => r.first)))} ms; the longest gap began (after the ACK) p50 ${ms(percentile(rtp.map((r) => r.gapAt), 50))} ms`);
  console.log(`  /healthz during the run (${healthz.length} fetches): p50 ${ms(percentile(healthz, 50))} ms, p95 ${ms(percentile(healthz, 95))} ms, max ${ms(Math.max(...healthz))} ms`);
  console.log(`  | ${transport.toUpperCase()} | ${calls} | ${answered.length} | ${run.successful} / ${run.failed} | ${ms(percentile(answerMs, 50))} / ${ms(percentile(answerMs, 95))} | ${percentile(rtp.map((r) => r.due), 50)} | ${percentile(rtp.map((r) => r.back), 50)} / ${Math.min(...rtp.map((r) => r.back))} | ${Math.min(...share).toFixed(3)} | ${ms(percentile(rtp.map((r) => r.gap), 95))} / ${ms(Math.max(...rtp.map((r) => r.gap)))} | ${ms(percentile(healthz, 50))} / ${ms(percentile(healthz, 95))} / ${ms(Math.max(...healthz))} |`);
}

const sipPort = await freePort();
// SIPp as a trunk (SIP_TRUSTED_CIDRS: no INVITE limit per address); the node's and keys' call limits off.
const server = await startServer({ SIP_PORT: String(sipPort), SIP_TRUSTED_CIDRS: '127.0.0.0/8', MAX_CONCURRENT_CALLS: '500', ...NO_CALL_LIMITS, ...NO_RATE_LIMITS });
const tap = await startSipMediaTap(sipPort);
try {
  if (Number(values.udp)) await step(server, tap, 'udp', Number(values.udp));
  if (Number(values.tcp)) await step(server, tap, 'tcp', Number(values.tcp));
} finally {
  await tap.close();
  await server.stop();
}
