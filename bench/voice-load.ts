// How many talking calls this machine carries with the offline pipeline: N calls at once, each
// asking questions in turn; voice-to-voice latency (p50/p95 over all turns) and the server's CPU.
// Usage: node --import tsx bench/voice-load.ts [--calls 1,2,4,6] [--turns 4]
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer, NO_CALL_LIMITS } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { cpuSeconds, openTalker, percentile } from './lib/talker.ts';

const argv = process.argv;
const steps = (argv.includes('--calls') ? argv[argv.indexOf('--calls') + 1]! : '1,2,4,6').split(',').map(Number);
const turns = Number(argv[argv.indexOf('--turns') + 1] || 4) || 4;
const TARGET_MS = 800;

const server = await startServer({ LOG_LEVEL: 'warn', MAX_CONCURRENT_CALLS: '100', ...NO_CALL_LIMITS });
const question = speak('what time is it');
try {
  console.log(`| talking calls | turns | p50 ms | p95 ms | server CPU (% of one core) | p50 < ${TARGET_MS} ms |`);
  console.log('|---:|---:|---:|---:|---:|:---:|');
  for (const n of steps) {
    const talkers = await Promise.all(Array.from({ length: n }, () => openTalker(server, 'parley-offline')));
    const cpuStart = cpuSeconds(server.proc.pid!);
    const wallStart = performance.now();
    const results = await Promise.all(
      talkers.map(async (t, i) => {
        await sleep(i * 150); // stagger the callers a little, as real ones would be
        const out: number[] = [];
        for (let k = 0; k < turns; k++) {
          const r = await t.turn(question);
          if (r) out.push(r.voiceToVoiceMs);
        }
        return out;
      }),
    );
    const cpu = (100 * (cpuSeconds(server.proc.pid!) - cpuStart)) / ((performance.now() - wallStart) / 1000);
    for (const t of talkers) t.close();
    const all = results.flat();
    const p50 = percentile(all, 50);
    console.log(`| ${n} | ${all.length}/${n * turns} | ${Math.round(p50)} | ${Math.round(percentile(all, 95))} | ${cpu.toFixed(0)} | ${p50 < TARGET_MS ? 'yes' : 'no'} |`);
    await sleep(1000);
  }
} finally {
  await server.stop();
}
