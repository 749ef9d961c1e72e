// Calls from Debian's SIPp (sip-tester), a SIP load tool Parley was not written against: a few calls
// over UDP and over TCP, each streaming G.711 speech with SIPp's RTP streamer; every call is set up,
// gets Parley's RTP back while it lasts (counted by a relay in the media path: test/helpers/sipMediaTap.ts)
// and ends. Figures under load are bench/sipp.ts's.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { freePort } from './helpers/baresip.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { startSipMediaTap, type SipMediaTap } from './helpers/sipMediaTap.ts';
import { runSipp } from './helpers/sipp.ts';

let server: RunningServer;
let tap: SipMediaTap;

before(async () => {
  const sipPort = await freePort();
  // Loopback callers are admitted without SIP_USERS.
  server = await startServer({ SIP_PORT: String(sipPort) });
  tap = await startSipMediaTap(sipPort);
});

after(async () => {
  await tap?.close();
  await server?.stop();
});

for (const transport of ['udp', 'tcp'] as const) {
  test(`SIPp over ${transport.toUpperCase()}: 3 calls set up, each with Parley's RTP back, and hung up`, async () => {
    const before = new Set(tap.calls.keys());
    const run = await runSipp({ target: `127.0.0.1:${tap.port}`, transport, calls: 3, rate: 2, seconds: 3 });
    assert.equal(run.exitCode, 0, run.errors);
    assert.deepEqual([run.successful, run.failed], [3, 0]);
    const calls = [...tap.calls.values()].filter((c) => !before.has(c.callId));
    assert.equal(calls.length, 3);
    for (const call of calls) {
      assert.ok(call.answeredAt && call.ackedAt && call.byeAt, `set up and hung up: ${JSON.stringify(call)}`);
      assert.ok(call.toParley > 0, `SIPp's speech reached Parley: ${JSON.stringify(call)}`);
      assert.ok(call.fromParley > 0 && call.firstFromParley! < call.byeAt, `Parley's RTP came back during the call: ${JSON.stringify(call)}`);
    }
  });
}
