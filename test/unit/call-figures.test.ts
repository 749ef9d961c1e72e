// The arithmetic behind each call's figures: percentiles, round trips from RTCP, usage.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RtcpReceiverInfo, RtcpRrPacket } from 'werift-rtp';
import { CallMeter, kbps } from '../../src/calls/callFigures.ts';
import type { AudioOut } from '../../src/media/audio/format.ts';
import { RoundTripMeter } from '../../src/media/roundTrip.ts';
import { buildReport, ntpMiddle, ntpNow, readRtcp } from '../../src/media/rtcp.ts';
import { SampleSet } from '../../src/system/sampleSet.ts';

test('percentiles are nearest-rank: p95 of 1..100 is 95, of 1..10 is 10; none of nothing', () => {
  const hundred = new SampleSet();
  for (let v = 100; v >= 1; v--) hundred.add(v);
  assert.equal(hundred.percentile(95), 95);
  assert.equal(hundred.percentile(50), 50);
  assert.equal(hundred.percentile(100), 100);
  assert.equal(hundred.percentile(0), 1);
  const ten = new SampleSet();
  for (let v = 1; v <= 10; v++) ten.add(v);
  assert.equal(ten.percentile(95), 10, 'ceil(9.5) = the 10th of 10');
  assert.equal(ten.percentile(50), 5);
  assert.equal(new SampleSet().percentile(95), undefined);
});

test('past its capacity a sample set keeps a uniform sample: its percentiles stay those of all values', () => {
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const set = new SampleSet(1000, random);
  for (let v = 1; v <= 100_000; v++) set.add(v);
  assert.equal(set.count, 100_000);
  assert.ok(Math.abs(set.percentile(95)! - 95_000) < 2_500, `p95 ${set.percentile(95)}`);
  assert.ok(Math.abs(set.percentile(50)! - 50_000) < 4_000, `p50 ${set.percentile(50)}`);
});

test('a round trip is the time since the SR it echoes less the delay the far end held it (DLSR)', () => {
  const meter = new RoundTripMeter();
  const sentAt = Date.UTC(2026, 10, 25, 8, 0, 0);
  const ntp = ntpNow(sentAt);
  meter.senderReportSent(ntp, 1_000);
  // Received 250 ms after the SR; the far end held it 200 ms (DLSR in 1/65536 s). Our own SR: timed
  // on the monotonic clock, whatever the wall clock says meanwhile.
  assert.equal(meter.reportReceived(ntpMiddle(ntp), 0.2 * 65536, 1_250, ntpNow(sentAt + 90_000)), 50);
  // Again, held 240 ms of the 300: 60 ms.
  assert.ok(Math.abs(meter.reportReceived(ntpMiddle(ntp), 0.24 * 65536, 1_300, ntpNow(sentAt))! - 60) < 1e-9);
  assert.equal(meter.last, meter.samples.percentile(100));
  assert.equal(meter.samples.count, 2);
});

test("an SR the stack sent on its own: NTP time now less LSR less DLSR (RFC 3550's arithmetic)", () => {
  const meter = new RoundTripMeter();
  const sentAt = Date.UTC(2026, 10, 25, 8, 0, 0, 500);
  const lsr = ntpMiddle(ntpNow(sentAt));
  const rtt = meter.reportReceived(lsr, 0.2 * 65536, 0, ntpNow(sentAt + 300));
  assert.ok(Math.abs(rtt! - 100) < 0.05, `${rtt} ms`);
  // The same across a rollover of the middle 32 bits (every 65536 s: at this Unix time, in ms).
  const rollover = (65536 - (2_208_988_800 % 65536)) * 1000;
  const before = rollover - 100;
  assert.ok(ntpMiddle(ntpNow(before + 200)) < ntpMiddle(ntpNow(before)), 'the middle bits roll over');
  const across = meter.reportReceived(ntpMiddle(ntpNow(before)), 0.1 * 65536, 0, ntpNow(before + 200));
  assert.ok(Math.abs(across! - 100) < 0.05, `${across} ms`);
});

test('no round trip from a report that echoes no SR (LSR 0) or something far from any SR of ours', () => {
  const meter = new RoundTripMeter();
  const now = ntpNow(Date.UTC(2026, 10, 25, 8, 0, 0));
  assert.equal(meter.reportReceived(0, 0, 100, now), undefined);
  assert.equal(meter.reportReceived(ntpMiddle(ntpNow(Date.UTC(2026, 10, 25, 7, 0, 0))), 0, 100, now), undefined, 'an hour ago');
  assert.equal(meter.reportReceived(ntpMiddle(ntpNow(Date.UTC(2026, 10, 25, 8, 0, 1))), 0, 100, now), undefined, 'a second ahead');
  assert.equal(meter.samples.count, 0);
  // A DLSR a millisecond longer than the time since our SR (the stamps' rounding): zero, never negative.
  meter.senderReportSent(now, 16_000);
  assert.equal(meter.reportReceived(ntpMiddle(now), 0.501 * 65536, 16_500, now), 0);
});

test("the far end's reports read back: our SR's time in its LSR gives the round trip", () => {
  const ntp = ntpNow();
  const ours = buildReport('parley', { ssrc: 1111, rtpTimestamp: 0, packets: 10, octets: 800 }, undefined, true, ntp);
  const sr = readRtcp(ours);
  assert.deepEqual(sr.senderReports, [ntp]);
  const meter = new RoundTripMeter();
  meter.senderReportSent(ntp, 5_000);
  // The client's RR about our stream (ssrc 1111), echoing that SR after holding it 100 ms.
  const rr = new RtcpRrPacket({ ssrc: 2222, reports: [new RtcpReceiverInfo({ ssrc: 1111, fractionLost: 0, packetsLost: 0, highestSequence: 10, jitter: 0, lsr: ntpMiddle(ntp), dlsr: 6554 })] });
  const [block] = readRtcp(rr.serialize()).receptionReports;
  assert.equal(block!.ssrc, 1111);
  assert.ok(Math.abs(meter.reportReceived(block!.lsr, block!.dlsr, 5_130, ntp)! - 30) < 0.01);
  assert.deepEqual(readRtcp(Buffer.from([0x80, 0xc8, 0xff, 0xff])), { senderReports: [], receptionReports: [] }, 'a malformed packet reads as empty');
});

test('bitrate is payload bits over the seconds of audio carried; none when nothing was', () => {
  assert.equal(kbps(4000, 1), 32);
  assert.equal(kbps(48_000, 1), 384);
  assert.equal(kbps(0, 0), null);
});

test("usage: the caller's frames, the agent's audio less what was dropped or unsent, the tokens of every response.done", () => {
  const meter = new CallMeter();
  let queued = 0;
  const out: AudioOut = {
    write: (pcm) => (queued += pcm.length / 48),
    clear: () => {
      const dropped = queued;
      queued = 0;
      return dropped;
    },
    get queuedMs() {
      return queued;
    },
    onPlayback: () => () => {},
  };
  const metered = meter.metered(out);
  for (let i = 0; i < 150; i++) meter.callerFrame();
  metered.write(new Int16Array(48_000 * 2));
  queued = 500; // 1.5 s of it sent, 0.5 s still queued
  assert.equal(metered.clear(), 500, 'a barge-in drops what was queued');
  metered.write(new Int16Array(48_000));
  queued = 250; // 0.75 s of it sent when the call ends
  const usage = { inputTokens: 10, outputTokens: 3 };
  const response = { id: 'resp_1', status: 'completed' as const, output: [], inConversation: true };
  meter.event({ type: 'response.done', response: { ...response, usage } });
  meter.event({ type: 'response.done', response: { ...response, usage: { inputTokens: 5, outputTokens: 7 } } });
  meter.event({ type: 'response.done', response });
  const figures = meter.figures('webrtc', undefined, out.queuedMs);
  assert.deepEqual(figures.usage, { caller_audio_s: 3, agent_audio_s: 2.25, input_tokens: 15, output_tokens: 10, video_frames_received: 0, video_frames_to_model: 0 });
  assert.equal(figures.quality, null, 'never connected: no quality');
  meter.connected();
  const quality = meter.figures('webrtc', undefined, 0).quality!;
  assert.equal(quality.transport, 'webrtc');
  assert.ok(quality.time_to_connected_ms >= 0);
  assert.equal(quality.inbound.loss_pct, null, 'a transport that measures nothing: nulls');
});
