// One caller flooding its data channel must not take the node down: its events past its rate are
// dropped, its replies are refused past theirs, speech synthesis runs through the node's bounded
// pool, and another caller's channel, audio and the node's HTTP stay quick meanwhile. Both
// protocols: 5,000 Orga item-creates, and 1,000 OpenAI response.cancel / response.create pairs.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { floodingCaller, underAttack, type Observed } from './helpers/flooding.ts';
import { attachTone, inboundAudio, openCall, type RtcClient } from './helpers/rtcClient.ts';
import { mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/** The node's speech pool (TTS_PROCESSES), set here so the bound is the test's own. */
const POOL = 3;

function assertUnharmed(o: Observed): void {
  assert.ok(o.maxSpeechProcesses <= POOL, `at most the pool's ${POOL} speech processes at once (saw ${o.maxSpeechProcesses})`);
  assert.ok(o.maxRoundTripMs < 250, `the bystander's round trip stays under 250 ms (worst ${Math.round(o.maxRoundTripMs)} ms)`);
  assert.ok(o.maxHealthzMs < 250, `/healthz stays under 250 ms (worst ${Math.round(o.maxHealthzMs)} ms)`);
  // 50 a second is the whole echo; a starved call gets almost none (0.1–0.2 a second before the limits).
  // 40 leaves room for this machine's own load (the flooder, the server and both peers share two cores).
  assert.ok(o.audioPacketsPerSecond >= 40, `the bystander's audio keeps flowing (${o.audioPacketsPerSecond.toFixed(1)} packets/s)`);
}

describe('a flooding caller', () => {
  let server: RunningServer;
  let bystander: RtcClient;
  let stopTone: () => void;

  before(async () => {
    server = await startServer({ TTS_PROCESSES: String(POOL) });
    bystander = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    await bystander.waitConnected();
    await bystander.nextEvent('session.created');
    stopTone = await attachTone(bystander);
    await until('the bystander’s echo to flow', async () => (await inboundAudio(bystander)).packetsReceived, (n) => n >= 50);
  });
  after(async () => {
    stopTone?.();
    bystander?.close();
    await server?.stop();
  });

  for (const [form, count, what] of [
    ['orga', 5000, '5,000 item-creates'],
    ['openai', 1000, '1,000 response.cancel / response.create pairs'],
  ] as const) {
    test(`${form}: ${what}`, async () => {
      const token = await mintToken(server.baseUrl, server.devKey);
      const attacker = await floodingCaller(server, token, form, count);
      const observed = await underAttack(server, bystander, attacker.go);
      assertUnharmed(observed);
      assert.equal(observed.attack.sent, count);
      assert.ok(observed.attack.errorCodes.includes('rate_limit_exceeded'), `the attacker is told it is over its rate (${observed.attack.errorCodes})`);
      assert.equal(observed.attack.alive, true, "the attacker's call goes on");
    });
  }
});
