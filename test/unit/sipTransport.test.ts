// A phone call's media on loopback sockets: symmetric RTP (our audio goes where the caller's comes
// from, not where its SDP said; a third party's packets are dropped once latched), G.711 frames
// for the agent, key presses; silence or comfort noise while the agent says nothing; a caller gone
// silent ended by the media timeout.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { after, test } from 'node:test';
import alawmulaw from 'alawmulaw';
import { SipTransport } from '../../src/calls/sip/sipTransport.ts';
import { readRtp, writeRtp } from '../../src/media/rtp.ts';
import { tone } from '../helpers/pcm.ts';
import { until } from '../helpers/wait.ts';

const sockets: Socket[] = [];

async function udp(): Promise<{ socket: Socket; port: number; received: Buffer[] }> {
  const socket = createSocket('udp4');
  sockets.push(socket);
  const received: Buffer[] = [];
  socket.on('message', (m) => received.push(m));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return { socket, port: socket.address().port, received };
}

after(() => {
  for (const s of sockets) s.close();
});

test('symmetric RTP, a third party dropped, G.711 both ways, key presses', async () => {
  const announced = await udp();
  const caller = await udp();
  const stranger = await udp();
  const transport = await SipTransport.open('127.0.0.1', { inactivityTimeoutMs: 0 }, { protocol: 'RTP/AVP', address: '127.0.0.1', port: announced.port, rtcpPort: announced.port + 1, codec: 'pcmu', payloadType: 0, dtmfPayloadType: 101, direction: 'sendrecv', ptime: 20 });
  const frames: Int16Array[] = [];
  const digits: string[] = [];
  let connected = false;
  transport.attach({
    connected: () => (connected = true),
    interrupted: () => {},
    lost: () => {},
    audio: (frame) => frames.push(frame),
    agentAudio: () => {},
    dtmf: (digit) => digits.push(digit),
    video: () => {},
    activity: () => {},
    channel: () => {},
    failure: (err) => assert.fail(err),
  });
  // Closed whatever happens: its sockets and media clock would keep the test process alive.
  after(() => transport.close());
  transport.setInputRate(16_000);
  transport.confirm();
  assert.ok(connected);

  const payload = Buffer.from(alawmulaw.mulaw.encode(tone(20, 440).filter((_, i) => i % 6 === 0)));
  const packet = (seq: number, pt = 0, body: Uint8Array = payload) => writeRtp({ payloadType: pt, sequenceNumber: seq, timestamp: seq * 160, ssrc: 7, marker: false }, body);
  for (let seq = 1; seq <= 10; seq++) caller.socket.send(packet(seq), transport.rtpPort, '127.0.0.1');
  await until("the caller's frames", () => frames.length, (n) => n >= 6);
  assert.equal(frames[0]!.length, 320, '20 ms at the 16 kHz asked for');

  // Ours go to the caller's source, not to the address its SDP gave.
  transport.audioOut.write(tone(200));
  await until('our audio at the caller', () => caller.received.filter((p) => readRtp(p)?.payloadType === 0).length, (n) => n >= 5);
  // Before the caller's packets latched, only keep-alive silence (µ-law 0xFF) went where its SDP said.
  const speech = (p: Buffer) => readRtp(p)?.payloadType === 0 && readRtp(p)!.payload.some((b) => b !== 0xff);
  assert.equal(announced.received.filter(speech).length, 0);

  const before = frames.length;
  const sent = [];
  for (let seq = 11; seq <= 30; seq++) sent.push(new Promise((resolve) => stranger.socket.send(packet(seq), transport.rtpPort, '127.0.0.1', resolve)));
  await Promise.all(sent);
  // The caller's key press after the stranger's packets (on loopback, queued once sent): once it is told, they were all read.
  caller.socket.send(packet(31, 101, Buffer.from([5, 0, 0, 160])), transport.rtpPort, '127.0.0.1');
  await until('the key press', () => digits.join(''), (d) => d === '5');
  assert.ok(frames.length <= before + 3, `the stranger's packets were dropped (${frames.length - before} frames after)`);
});

/** A transport answering a PCMU offer to `port` (with comfort noise on 13 when `cn`), its events collected. */
async function answering(port: number, opts: { cn?: boolean; inactivityTimeoutMs: number; now?: () => number }) {
  const transport = await SipTransport.open(
    '127.0.0.1',
    { inactivityTimeoutMs: opts.inactivityTimeoutMs, ...(opts.now ? { now: opts.now } : {}) },
    { protocol: 'RTP/AVP', address: '127.0.0.1', port, rtcpPort: port + 1, codec: 'pcmu', payloadType: 0, dtmfPayloadType: undefined, ...(opts.cn ? { comfortNoisePayloadType: 13 } : {}), direction: 'sendrecv', ptime: 20 },
  );
  const lost: string[] = [];
  let heard = 0;
  transport.attach({
    connected: () => {},
    interrupted: () => {},
    lost: (reason) => lost.push(reason),
    audio: () => {},
    agentAudio: () => {},
    dtmf: () => {},
    video: () => {},
    activity: () => heard++,
    channel: () => {},
    failure: (err) => assert.fail(err),
  });
  after(() => transport.close());
  return { transport, lost, heard: () => heard };
}

test('while the agent is silent: G.711 silence at 20 ms, or RFC 3389 comfort noise when offered', async () => {
  const plain = await udp();
  const withCn = await udp();
  const a = await answering(plain.port, { inactivityTimeoutMs: 0 });
  const b = await answering(withCn.port, { cn: true, inactivityTimeoutMs: 0 });
  a.transport.confirm();
  b.transport.confirm();
  await until('keep-alive packets at both', () => Math.min(plain.received.length, withCn.received.length), (n) => n >= 5);
  const silence = plain.received.map((p) => readRtp(p)!);
  assert.ok(silence.every((h) => h.payloadType === 0 && h.payload.length === 160 && h.payload.every((x) => x === 0xff)), 'µ-law silence, 160 samples');
  assert.ok(silence.slice(1).every((h, i) => ((h.sequenceNumber - silence[i]!.sequenceNumber) & 0xffff) === 1 && ((h.timestamp - silence[i]!.timestamp) >>> 0) % 160 === 0), 'consecutive sequence numbers, timestamps on the 20 ms grid');
  const noise = withCn.received.map((p) => readRtp(p)!);
  assert.ok(noise.every((h) => h.payloadType === 13 && h.payload.length === 1), 'CN packets carrying a noise level');
  // Once the agent speaks, its speech leaves as PCMU with the marker bit.
  b.transport.audioOut.write(tone(100));
  await until('speech after comfort noise', () => withCn.received.map((p) => readRtp(p)!).find((h) => h.payloadType === 0), (h) => h !== undefined && h.marker);
});

test('a caller whose RTP and RTCP stop is lost (media_timeout); its packets keep the call', async (t) => {
  // The timeout's check (once a second) and the clock it reads are fake: a packet each 100 ms keeps
  // the call for twice the timeout, then the caller's silence past the timeout ends it.
  t.mock.timers.enable({ apis: ['setInterval'] });
  let now = 0;
  // In 100 ms steps, as time passes: each check reads the clock of its own moment.
  const advance = (ms: number) => {
    for (let step = 0; step < ms; step += 100) {
      now += 100;
      t.mock.timers.tick(100);
    }
  };
  const caller = await udp();
  const { transport, lost, heard } = await answering(caller.port, { inactivityTimeoutMs: 2000, now: () => now });
  transport.confirm();
  // RTP comes while the caller is there.
  const packet = (seq: number) => writeRtp({ payloadType: 0, sequenceNumber: seq, timestamp: seq * 160, ssrc: 9, marker: false }, Buffer.alloc(160, 0xff));
  for (let seq = 1; seq <= 40; seq++) {
    caller.socket.send(packet(seq), transport.rtpPort, '127.0.0.1');
    while (heard() < seq) await new Promise((resolve) => setImmediate(resolve)); // loopback: a moment
    advance(100);
  }
  assert.deepEqual(lost, [], 'not lost while its packets came');
  advance(1000);
  assert.deepEqual(lost, [], 'not lost 1.1 s into its silence');
  advance(1000);
  assert.deepEqual(lost, ['media_timeout'], 'lost at the first check past 2 s of silence');
});
