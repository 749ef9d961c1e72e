// AudioReceiver: Opus RTP packets of any duration in, 20 ms frames out, every decoded sample kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Encoder } from '@evan/opus';
import { AudioReceiver } from '../../src/media/audioReceiver.ts';
import { writeRtp } from '../../src/media/rtp.ts';

const PT = 111;

/** A 300 Hz tone, `ms` long, as Opus packets of `ptimeMs` each. */
function tonePackets(ms: number, ptimeMs: number): Buffer[] {
  const encoder = new Encoder({ channels: 1, sample_rate: 48_000, application: 'voip' });
  const frame = ptimeMs * 48;
  const packets: Buffer[] = [];
  for (let start = 0; start < ms * 48; start += frame) {
    const pcm = Int16Array.from({ length: frame }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * (start + i)) / 48_000)));
    packets.push(Buffer.from(encoder.encode(pcm)));
  }
  return packets;
}

function receive(packets: Buffer[], ptimeMs: number, drop: (i: number) => boolean = () => false) {
  const frames: Int16Array[] = [];
  const receiver = new AudioReceiver(PT, (f) => frames.push(f));
  packets.forEach((payload, i) => {
    if (drop(i)) return;
    receiver.handle(writeRtp({ payloadType: PT, sequenceNumber: 1000 + i, timestamp: i * ptimeMs * 48, ssrc: 7, marker: i === 0 }, payload));
  });
  return { frames, receiver };
}

const energy = (f: Int16Array) => f.reduce((a, s) => a + Math.abs(s), 0) / f.length;

for (const ptimeMs of [10, 20, 40, 60]) {
  test(`${ptimeMs} ms packets: every decoded sample reaches the agent as 20 ms frames`, () => {
    const { frames, receiver } = receive(tonePackets(1200, ptimeMs), ptimeMs);
    assert.equal(frames.length, 60, '1.2 s of audio is 60 frames of 20 ms');
    assert.ok(frames.every((f) => f.length === 960));
    // Past the codec's start-up, the tone is there (not silence standing in for it).
    assert.ok(frames.slice(5).every((f) => energy(f) > 1000), 'the caller is heard');
    assert.equal(receiver.stats.received, 1200 / ptimeMs);
    assert.equal(receiver.stats.lost, 0);
  });
}

test('a lost 10 ms packet becomes 10 ms of silence: the frames stay in step with the caller', () => {
  // Packet 20 never arrives; the jitter buffer gives up on it once 4 later packets wait.
  const { frames, receiver } = receive(tonePackets(1200, 10), 10, (i) => i === 20);
  assert.equal(receiver.stats.lost, 1);
  assert.equal(frames.length, 60, 'the loss is filled, not skipped');
  const samples = new Int16Array(frames.length * 960);
  frames.forEach((f, i) => samples.set(f, i * 960));
  const gap = samples.subarray(20 * 480, 21 * 480);
  assert.ok(gap.every((s) => s === 0), 'the missing 10 ms are silence');
  assert.ok(energy(samples.subarray(21 * 480, 22 * 480)) > 1000, 'the audio after it is intact');
});

test('packets of another payload type and non-RTP bytes are ignored', () => {
  const frames: Int16Array[] = [];
  const receiver = new AudioReceiver(PT, (f) => frames.push(f));
  const [opus] = tonePackets(20, 20);
  receiver.handle(writeRtp({ payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 7, marker: false }, opus!));
  receiver.handle(Buffer.from('not rtp at all'));
  assert.equal(frames.length, 0);
  assert.equal(receiver.stats.received, 0);
});

test("reception figures: packets the sequence numbers say were sent, those lost, the payload's bytes and the audio they carried", () => {
  const packets = tonePackets(1200, 20);
  const { receiver } = receive(packets, 20, (i) => i === 20 || i === 40);
  const stats = receiver.stats;
  assert.equal(stats.expected, 60);
  assert.equal(stats.received, 58);
  assert.equal(stats.lost, 2);
  const bytes = packets.filter((_, i) => i !== 20 && i !== 40).reduce((n, p) => n + p.length, 0);
  assert.equal(stats.payloadBytes, bytes);
  assert.ok(Math.abs(stats.audioSeconds - 58 * 0.02) < 1e-9, `${stats.audioSeconds} s`);
});
