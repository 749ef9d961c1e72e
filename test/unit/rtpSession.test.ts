// The RTP session both wires share (WebRTC over its peer, SIP over UDP): the codec each way at its
// clock rate (G.711 at 8 kHz, Opus at 48 kHz), our reports on the owner's interval (none while they
// have nowhere to go), the caller's reports read for round trips, and what throws reported.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import alawmulaw from 'alawmulaw';
import { RtcpReceiverInfo } from 'werift-rtp';
import { buildReport, ntpMiddle, readRtcp } from '../../src/media/rtcp.ts';
import { readRtp, writeRtp } from '../../src/media/rtp.ts';
import { RtpSession, type RtpSessionOptions } from '../../src/media/rtpSession.ts';
import { tone } from '../helpers/pcm.ts';
import { until } from '../helpers/wait.ts';

function session(opts: Partial<RtpSessionOptions> = {}) {
  const rtp: Buffer[] = [];
  const rtcp: Buffer[] = [];
  const heard: Int16Array[] = [];
  const failures: Error[] = [];
  const s = new RtpSession({
    payloadType: 0,
    g711: 'pcmu',
    reportIntervalMs: 50,
    sendRtp: (p) => {
      rtp.push(p);
      return true;
    },
    sendRtcp: (p) => {
      rtcp.push(p);
      return true;
    },
    audio: (frame) => heard.push(frame),
    agentAudio: () => {},
    failure: (err) => failures.push(err),
    ...opts,
  });
  return { s, rtp, rtcp, heard, failures };
}

test('G.711: 20 ms packets of 160 bytes, timestamps 160 apart; the caller heard as 48 kHz frames', async (t) => {
  const { s, rtp, heard } = session();
  t.after(() => s.stop());
  s.start();
  s.audioOut.write(tone(100));
  await until('our packets', () => rtp.length, (n) => n >= 3);
  const [a, b] = rtp.map((p) => readRtp(p)!);
  assert.equal(a!.payloadType, 0);
  assert.equal(a!.payload.length, 160);
  assert.equal((b!.timestamp - a!.timestamp) >>> 0, 160);
  assert.equal(a!.ssrc, s.ssrc);
  const payload = alawmulaw.mulaw.encode(new Int16Array(160));
  for (let seq = 1; seq <= 6; seq++) s.receiveRtp(writeRtp({ payloadType: 0, sequenceNumber: seq, timestamp: seq * 160, ssrc: 7, marker: false }, payload));
  await until("the caller's frames", () => heard.length, (n) => n >= 2);
  assert.equal(heard[0]!.length, 960);
  assert.equal(s.reception.received, 6);
});

test('Opus: timestamps 960 apart (48 kHz)', async (t) => {
  const { s, rtp } = session({ payloadType: 111, g711: undefined, opus: { complexity: 5 } });
  t.after(() => s.stop());
  s.start();
  s.audioOut.write(tone(100));
  await until('our packets', () => rtp.length, (n) => n >= 2);
  const [a, b] = rtp.map((p) => readRtp(p)!);
  assert.equal(a!.payloadType, 111);
  assert.equal((b!.timestamp - a!.timestamp) >>> 0, 960);
});

test("our sender report echoed in the caller's report is a round trip; no report while there is nowhere to send it", async (t) => {
  let reachable = false;
  const { s, rtcp } = session({ canReport: () => reachable });
  t.after(() => s.stop());
  s.start();
  s.audioOut.write(tone(2000));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(rtcp.length, 0, 'no report while canReport says no');
  reachable = true;
  await until('a sender report', () => rtcp.map((p) => readRtcp(p).senderReports.length).find((n) => n > 0), (n) => n !== undefined);
  const ntp = readRtcp(rtcp.find((p) => readRtcp(p).senderReports.length)!).senderReports[0]!;
  const echo = buildReport('caller', { ssrc: 7, rtpTimestamp: 0, packets: 0, octets: 0 }, new RtcpReceiverInfo({ ssrc: s.ssrc, fractionLost: 0, packetsLost: 0, highestSequence: 0, jitter: 0, lsr: ntpMiddle(ntp), dlsr: 0 }), false);
  assert.equal(s.receiveRtcp(echo), true);
  assert.equal(s.roundTrips.samples.count, 1);
  const sdesOnly = buildReport('caller', { ssrc: 7, rtpTimestamp: 0, packets: 0, octets: 0 }, undefined, false).subarray(8);
  assert.equal(s.receiveRtcp(sdesOnly), false, 'no report in it');
});

test('what throws in a guarded callback is reported as a failure', () => {
  const { s, failures } = session();
  assert.doesNotThrow(() =>
    s.guarded(() => {
      throw new Error('broken packet');
    })(),
  );
  assert.deepEqual(failures.map((e) => e.message), ['broken packet']);
});
