// SIP calls (issue 22), from a raw SIP caller on loopback as a trunk's would be (UDP, G.711 μ-law,
// 20 ms RTP packets):
// 1. INVITE → 200 OK, one call at a time (no credentials: loopback callers are admitted);
// 2. voice-to-voice at the caller, offline pipeline: a question sent as PCMU at real-time pace, from
//    the end of its speech to the first loud RTP packet back;
// 3. concurrent SIP calls, the server pinned to core 0 and this process to core 1: each call sends
//    quiet noise (jitter buffer, G.711 decode, resampling and VAD run; no turn); the server's CPU per
//    call, its memory, and an OPTIONS round trip each second (how late signalling gets).
//
//   node --import tsx bench/sip.ts [--invites 50] [--turns 8] [--calls 50,100,200] [--seconds 20]
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import alawmulaw from 'alawmulaw';
import { freePort } from '../test/helpers/baresip.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, startServer } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { SENTENCES } from './lib/sentences.ts';
import { loadAverage, percentile, pin, processTree, rssMb, treeCpuSeconds } from './lib/proc.ts';

const { values } = parseArgs({
  options: {
    invites: { type: 'string', default: '50' },
    turns: { type: 'string', default: '8' },
    calls: { type: 'string', default: '50,100,200' },
    seconds: { type: 'string', default: '20' },
  },
});
const invites = Number(values.invites);
const turns = Number(values.turns);
const steps = values.calls!.split(',').map(Number);
const seconds = Number(values.seconds);

const tag = () => randomBytes(6).toString('hex');
const bind = async (): Promise<Socket> => {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
};

/** One SIP signalling socket for every call, its answers handed out by Call-ID. */
class Signalling {
  private readonly waiting = new Map<string, { match: RegExp; resolve: (text: string) => void }[]>();
  private constructor(
    readonly socket: Socket,
    readonly sipPort: number,
  ) {
    socket.on('message', (data) => {
      const text = data.toString();
      const callId = /^Call-ID:\s*(.+)$/im.exec(text)?.[1]?.trim();
      const list = callId ? this.waiting.get(callId) : undefined;
      const i = list?.findIndex((w) => w.match.test(text)) ?? -1;
      if (i >= 0) list!.splice(i, 1)[0]!.resolve(text);
    });
  }

  static async open(sipPort: number): Promise<Signalling> {
    return new Signalling(await bind(), sipPort);
  }

  get port(): number {
    return this.socket.address().port;
  }

  /** Sends `text` and waits for an answer of this call that matches. */
  request(callId: string, text: string, match: RegExp, timeoutMs = 10_000): Promise<string> {
    const answered = new Promise<string>((resolve, reject) => {
      const list = this.waiting.get(callId) ?? [];
      this.waiting.set(callId, list);
      const entry = { match, resolve };
      list.push(entry);
      setTimeout(() => {
        const k = list.indexOf(entry);
        if (k >= 0) list.splice(k, 1);
        reject(new Error(`no ${match} for ${callId}`));
      }, timeoutMs).unref();
    });
    this.send(text);
    return answered;
  }

  send(text: string): void {
    this.socket.send(text, this.sipPort, '127.0.0.1');
  }
}

function message(sig: Signalling, method: string, d: { callId: string; fromTag: string; toTag?: string; cseq: number; body?: string }): string {
  const body = d.body ?? '';
  return [
    `${method} sip:agent@127.0.0.1:${sig.sipPort} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${sig.port};branch=z9hG4bK${tag()};rport`,
    'Max-Forwards: 70',
    `From: <sip:bench@127.0.0.1>;tag=${d.fromTag}`,
    `To: <sip:agent@127.0.0.1>${d.toTag ? `;tag=${d.toTag}` : ''}`,
    `Call-ID: ${d.callId}`,
    `CSeq: ${d.cseq} ${method === 'ACK' ? 'ACK' : method}`,
    `Contact: <sip:bench@127.0.0.1:${sig.port}>`,
    ...(body ? ['Content-Type: application/sdp'] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

const offer = (rtpPort: number) =>
  ['v=0', `o=- ${Date.now()} 1 IN IP4 127.0.0.1`, 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${rtpPort} RTP/AVP 0 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', 'a=ptime:20', 'a=sendrecv', ''].join('\r\n');

/** A SIP call from the bench: its dialog, its RTP socket and what came back on it. */
interface SipCall {
  callId: string;
  inviteToOkMs: number;
  rtp: Socket;
  /** Where the server wants RTP. */
  serverRtpPort: number;
  /** μ-law packets received, with when. */
  received: { at: number; payload: Buffer }[];
  send(pcm8k: Int16Array): void;
  hangUp(): Promise<void>;
}

async function placeCall(sig: Signalling): Promise<SipCall> {
  const rtp = await bind();
  const received: { at: number; payload: Buffer }[] = [];
  rtp.on('message', (packet) => received.push({ at: performance.now(), payload: packet.subarray(12) }));
  const callId = `${tag()}@bench`;
  const fromTag = tag();
  const sent = performance.now();
  const ok = await sig.request(callId, message(sig, 'INVITE', { callId, fromTag, cseq: 1, body: offer(rtp.address().port) }), /^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/i);
  const inviteToOkMs = performance.now() - sent;
  const toTag = /^To:.*;tag=([^;\s]+)/im.exec(ok)![1]!;
  const serverRtpPort = Number(/^m=audio (\d+)/m.exec(ok)![1]);
  sig.send(message(sig, 'ACK', { callId, fromTag, toTag, cseq: 1 }));
  let seq = Math.floor(Math.random() * 60_000);
  let timestamp = Math.floor(Math.random() * 2 ** 31);
  const ssrc = Math.floor(Math.random() * 2 ** 31);
  return {
    callId,
    inviteToOkMs,
    rtp,
    serverRtpPort,
    received,
    send(pcm8k) {
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = 0;
      header.writeUInt16BE(seq++ & 0xffff, 2);
      header.writeUInt32BE(timestamp >>> 0, 4);
      header.writeUInt32BE(ssrc, 8);
      timestamp = (timestamp + pcm8k.length) >>> 0;
      rtp.send(Buffer.concat([header, Buffer.from(alawmulaw.mulaw.encode(pcm8k))]), serverRtpPort, '127.0.0.1');
    },
    async hangUp() {
      await sig.request(callId, message(sig, 'BYE', { callId, fromTag, toTag, cseq: 2 }), /^SIP\/2\.0 200 [^]*CSeq: 2 BYE/i).catch(() => undefined);
      rtp.close();
    },
  };
}

const rms = (samples: ArrayLike<number>) => {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / Math.max(1, samples.length));
};

/** Sends `pcm` (8 kHz) as 20 ms packets at real-time pace; returns when its last loud packet went. */
async function sendAtPace(call: SipCall, pcm: Int16Array): Promise<number> {
  let lastLoud = performance.now();
  const start = performance.now();
  for (let at = 0, n = 0; at < pcm.length; at += 160, n++) {
    const piece = new Int16Array(160);
    piece.set(pcm.subarray(at, at + 160));
    call.send(piece);
    if (rms(piece) >= 300) lastLoud = performance.now();
    await sleep(Math.max(0, start + (n + 1) * 20 - performance.now()));
  }
  return lastLoud;
}

const summary = (xs: number[], of: number) => (xs.length ? `${xs.length}/${of}, p50 ${Math.round(percentile(xs, 50))} ms, p95 ${Math.round(percentile(xs, 95))} ms` : 'none');
const lines: string[] = [];

{
  const sipPort = await freePort();
  const server = await startServer({ LOG_LEVEL: 'warn', SIP_PORT: String(sipPort), ...NO_CALL_LIMITS, ...NO_RATE_LIMITS });
  const sig = await Signalling.open(sipPort);
  try {
    const times: number[] = [];
    for (let i = 0; i < invites; i++) {
      const call = await placeCall(sig);
      times.push(call.inviteToOkMs);
      await call.hangUp();
    }
    lines.push(`INVITE → 200 OK, one call at a time: ${summary(times, invites)}`);

    const call = await placeCall(sig);
    const v2v: number[] = [];
    try {
      await sendAtPace(call, new Int16Array(8000)); // a second of silence first, as a caller listens
      for (let k = 0; k < turns; k++) {
        const question = speak(SENTENCES[k % SENTENCES.length]!, 8000);
        const from = call.received.length;
        const speechEnded = await sendAtPace(call, question);
        // Silence while the agent answers, watching for its first loud packet.
        let firstLoud: number | undefined;
        for (let n = 0; n < 400 && firstLoud === undefined; n++) {
          await sendAtPace(call, new Int16Array(160));
          firstLoud = call.received.slice(from).find((p) => p.at > speechEnded && rms(alawmulaw.mulaw.decode(p.payload)) > 300)?.at;
        }
        if (firstLoud !== undefined) v2v.push(firstLoud - speechEnded);
        // Let the reply play out before the next question.
        let quietSince = performance.now();
        while (performance.now() - quietSince < 1000) {
          await sendAtPace(call, new Int16Array(160));
          const last = call.received.at(-1);
          if (last && performance.now() - last.at < 100) quietSince = performance.now();
        }
      }
    } finally {
      await call.hangUp();
    }
    lines.push(`voice-to-voice at the SIP caller, offline pipeline (${turns} questions): ${summary(v2v, turns)}`);
  } finally {
    sig.socket.close();
    await server.stop();
  }
}

// Concurrent calls: 20 ms of quiet noise each (a few distinct pieces).
const noise = Array.from({ length: 8 }, (_, k) => new Int16Array(160).map((_, i) => Math.round(150 * Math.sin(i * (k + 3) * 1.7) * Math.cos(i * 0.37))));
const rows: string[] = [];
for (const n of steps) {
  const sipPort = await freePort();
  const server = await startServer({ LOG_LEVEL: 'warn', SIP_PORT: String(sipPort), MAX_CONCURRENT_CALLS: String(n + 10), ...NO_CALL_LIMITS, ...NO_RATE_LIMITS });
  const sig = await Signalling.open(sipPort);
  try {
    for (const pid of processTree(server.proc.pid!)) pin(pid, '0');
    pin(process.pid, '1');
    const calls: SipCall[] = [];
    const setup: number[] = [];
    for (let i = 0; i < n; i++) {
      const call = await placeCall(sig);
      calls.push(call);
      setup.push(call.inviteToOkMs);
    }
    const rssIdle = rssMb(server.proc.pid!);
    const optionsRoundTrips: number[] = [];
    const cpu0 = treeCpuSeconds(server.proc.pid!);
    const t0 = performance.now();
    let tick = 0;
    while (performance.now() - t0 < seconds * 1000) {
      for (const c of calls) c.send(noise[tick % noise.length]!);
      if (tick % 50 === 0) {
        const callId = `${tag()}@probe`;
        const sent = performance.now();
        void sig
          .request(callId, message(sig, 'OPTIONS', { callId, fromTag: tag(), cseq: 1 }), /^SIP\/2\.0 200/, 5000)
          .then(() => optionsRoundTrips.push(performance.now() - sent))
          .catch(() => undefined);
      }
      tick++;
      await sleep(Math.max(0, t0 + tick * 20 - performance.now()));
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = (100 * (treeCpuSeconds(server.proc.pid!) - cpu0)) / wall;
    const rssBusy = rssMb(server.proc.pid!);
    for (const c of calls) await c.hangUp();
    rows.push(
      `| ${n} | ${Math.round(percentile(setup, 50))} / ${Math.round(percentile(setup, 95))} | ${cpu.toFixed(0)} | ${(cpu / n).toFixed(2)} | ${Math.round(rssIdle)} → ${Math.round(rssBusy)} | ${Math.round(percentile(optionsRoundTrips, 50))} / ${Math.round(percentile(optionsRoundTrips, 95))} |`,
    );
  } finally {
    sig.socket.close();
    await server.stop();
  }
}

console.log(`\nbench/sip.ts, load average ${loadAverage()}, ${new Date().toISOString()}\n`);
for (const l of lines) console.log(l);
console.log(`\nconcurrent SIP calls (G.711 μ-law, 20 ms packets of quiet noise for ${seconds} s), server pinned to core 0:\n`);
console.log('| calls | INVITE → 200 OK p50 / p95 ms (placing them) | server CPU % of a core | per call | server RSS MB idle → busy | OPTIONS round trip p50 / p95 ms |');
console.log('|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
