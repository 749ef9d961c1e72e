// Offer → answer and answer → connected over sequential calls from a Node libwebrtc client
// (@roamhq/wrtc, the browser's stack) against a real Parley process on 127.0.0.1.
//   offer → answer:     the POST /v1/realtime/calls round trip (the server builds its peer, gathers
//                       its candidates and answers);
//   answer → connected: from the answer's arrival to the client's connectionState "connected"
//                       (setRemoteDescription, ICE checks, DTLS handshake).
// Each call is closed once it has connected (and heard the server's first data-channel event).
//
//   node --import tsx bench/offer-answer.ts            # 20 calls
//   node --import tsx bench/offer-answer.ts --calls 50 [--stack werift] [--video]
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { http, mintToken, startServer, type RunningServer, NO_RATE_LIMITS, NO_CALL_LIMITS } from '../test/helpers/server.ts';
import { placeCall } from './lib/placeCall.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20' },
    stack: { type: 'string', default: 'libdatachannel' },
    video: { type: 'boolean', default: false },
  },
});
const count = Number(values.calls);
if (!Number.isInteger(count) || count < 1 || count > 500) throw new Error('--calls must be a whole number from 1 to 500');

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;
const ms = (x: number) => x.toFixed(1);

/** The server notices a closed call within a moment; wait so the next call starts on an idle node. */
async function waitForNoCalls(server: RunningServer): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const health = await http(server.baseUrl, '/healthz');
    if (health.body?.calls === 0) return;
    await sleep(50);
  }
}

const server = await startServer({ WEBRTC_STACK: values.stack!, ...NO_RATE_LIMITS, ...NO_CALL_LIMITS });
const offerToAnswer: number[] = [];
const answerToConnected: number[] = [];
let failed = 0;
try {
  // One unmeasured call first: the server's first answer pays one-off costs (DTLS certificate, JIT).
  for (let i = -1; i < count; i++) {
    const token = await mintToken(server.baseUrl, server.devKey);
    try {
      const call = await placeCall(server.baseUrl, token, { video: values.video });
      call.pc.close();
      if (i >= 0) {
        offerToAnswer.push(call.marks.answer - call.marks.post);
        answerToConnected.push(call.marks.connected - call.marks.answer);
      }
    } catch (err) {
      if (i >= 0) failed++;
      process.stderr.write(`call ${i + 1} failed: ${(err as Error).message}\n`);
    }
    await waitForNoCalls(server);
  }
} finally {
  await server.stop();
}

console.log(
  `\n${offerToAnswer.length} calls (${failed} failed), WEBRTC_STACK=${values.stack}, audio${values.video ? ' + video' : ''} offer, ` +
    `${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)}, ${new Date().toISOString()}\n`,
);
console.log('| measure | p50 ms | p95 ms | min ms | max ms |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, xs] of [
  ['offer → answer (POST /calls round trip)', offerToAnswer],
  ['answer → connected (ICE + DTLS)', answerToConnected],
] as const) {
  if (xs.length) console.log(`| ${name} | ${ms(percentile(xs, 50))} | ${ms(percentile(xs, 95))} | ${ms(Math.min(...xs))} | ${ms(Math.max(...xs))} |`);
}
// libwebrtc's native finalizers can crash during Node's teardown: leave at once, results are out.
process.exit(failed ? 1 : 0);
