// The server's per-call media path in one process, without network or timers: for N calls, the
// load generator's RTP packets go through AudioReceiver (RTP parse, jitter buffer, Opus decode,
// 20 ms frames) into the `audio-echo` agent, and AudioSender ticks turn its queue into Opus RTP
// packets (encode, RTP header) — as fast as it runs. A fixed workload, so it measures work, not
// the machine's load: CPU µs per call-second of audio (both directions), and, with --callgrind,
// instructions per call-second counted by valgrind (independent of other processes on the box).
//
//   node --import tsx bench/media-path.ts                     # 20 calls × 30 s of audio, CPU time
//   node --import tsx bench/media-path.ts --callgrind          # instructions (two runs under valgrind, the difference)
//   flags: --calls 20  --seconds 30  --ptime 20 (the callers' packets)  --complexity 5 (OPUS_COMPLEXITY)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Conversation } from '../src/session/conversation.ts';
import { echoAgentFactory } from '../src/agent/echoAgent.ts';
import { AudioReceiver } from '../src/media/audioReceiver.ts';
import { AudioSender } from '../src/media/audioSender.ts';
import { writeRtp } from '../src/media/rtp.ts';
import { buildClip } from './lib/markerClip.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '30' },
    ptime: { type: 'string', default: '20' },
    complexity: { type: 'string', default: '5' },
    callgrind: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
});

/** Runs the workload; returns CPU seconds used by it. */
function run(calls: number, seconds: number, ptimeMs: number, complexity: number): { cpu: number; sent: number; frames: number } {
  const clip = buildClip(ptimeMs);
  let sent = 0;
  let frames = 0;
  const paths = Array.from({ length: calls }, (_, i) => {
    // The sender's 20 ms clock is driven by hand: its tick is kept and called below.
    let tick = () => {};
    const clock = { subscribe: (t: () => void) => ((tick = t), () => {}) };
    const sender = new AudioSender(() => (sent++, true), 1000 + i, 111, { clock: clock as never, encoder: { complexity } });
    sender.start();
    const agent = echoAgentFactory(200).create({
      conversationId: `c${i}`,
      apiKeyId: 'key_bench',
      session: () => ({}) as never,
      audio: sender,
      conversation: new Conversation(),
      modelFailed: () => {},
      emit: () => {},
      turnCompleted: () => {},
    });
    const receiver = new AudioReceiver(111, (frame) => {
      frames++;
      agent.onAudio(frame);
    });
    return { tick: () => tick(), receiver, seq: i * 1000, ts: i * 7919 };
  });
  const ticks = (seconds * 1000) / 20;
  let packetsIn = 0;
  const start = process.cpuUsage();
  for (let t = 0; t < ticks; t++) {
    // The callers' packets due by the end of this 20 ms tick (several, one, or one every few ticks).
    const due = Math.floor(((t + 1) * 20) / ptimeMs);
    for (; packetsIn < due; packetsIn++) {
      const payload = clip.packets[packetsIn % clip.packets.length]!;
      for (const p of paths) {
        p.receiver.handle(writeRtp({ payloadType: 111, sequenceNumber: p.seq++ & 0xffff, timestamp: (p.ts += ptimeMs * 48) >>> 0, ssrc: 42, marker: packetsIn === 0 }, payload));
      }
    }
    for (const p of paths) p.tick();
  }
  const used = process.cpuUsage(start);
  return { cpu: (used.user + used.system) / 1e6, sent, frames };
}

/** Instructions valgrind counts for one run of the workload (the whole process). */
function callgrindInstructions(calls: number, seconds: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'parley-callgrind-'));
  try {
    execFileSync(
      'valgrind',
      [
        '--tool=callgrind', '--smc-check=all', `--callgrind-out-file=${join(dir, 'out.%p')}`, '--trace-children=no',
        process.execPath, '--import', 'tsx', import.meta.filename, '--quiet', '--calls', String(calls), '--seconds', String(seconds), '--ptime', values.ptime,
        '--complexity', values.complexity,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 * 1024 * 1024 },
    );
    let total = 0;
    for (const f of readdirSync(dir)) {
      const m = /^summary:\s+(\d+)/m.exec(readFileSync(join(dir, f), 'utf8')) ?? /^totals:\s+(\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
      if (m) total += Number(m[1]);
    }
    return total;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const calls = Number(values.calls);
const seconds = Number(values.seconds);
const ptime = Number(values.ptime);
const complexity = Number(values.complexity);
const settings = ` (Opus complexity ${complexity})`;
if (values.callgrind) {
  // Two runs, one with twice the audio: the difference is the media path alone, without startup.
  const small = callgrindInstructions(calls, seconds);
  const large = callgrindInstructions(calls, 2 * seconds);
  const perCallSecond = (large - small) / (calls * seconds);
  console.log(`media path${settings}, ptime ${ptime} ms: ${(perCallSecond / 1e6).toFixed(2)} M instructions per call-second (valgrind, ${calls} calls, ${seconds} s vs ${2 * seconds} s of audio)`);
} else {
  const r = run(calls, seconds, ptime, complexity);
  if (!values.quiet) {
    const perCallSecond = (r.cpu * 1e6) / (calls * seconds);
    console.log(
      `media path${settings}, ptime ${ptime} ms: ${perCallSecond.toFixed(0)} µs CPU per call-second = ${(perCallSecond / 1e4).toFixed(2)} % of a core per call ` +
        `(${calls} calls × ${seconds} s in ${r.cpu.toFixed(2)} s; ${r.frames} frames in, ${r.sent} packets out)`,
    );
  }
}
