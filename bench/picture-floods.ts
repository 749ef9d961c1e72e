// One tenant floods the node's picture decoder (issue 44 item 6): key A's ten OpenAI Realtime
// sessions each send a PNG bomb (8000² pixels of one colour, ≈ 190 KB) as an input_image; then key
// B's session sends an ordinary 17 KB JPEG and asks what it shows (test/helpers/pictureFlood.ts, as
// test/picture-floods.test.ts does). Prints what each side got, /healthz (its slowest answer, its
// failures), the node's RSS and its ffmpeg processes'. B's picture is sent once A has had its
// refusals past its bound, or 3 s after A's bombs went out (code that refuses A nothing).
// `--parley` runs another checkout's sources (the "before" column: `git archive <commit> | tar -x -C
// /tmp/before`, node_modules linked).
//   node --import tsx bench/picture-floods.ts [--parley /tmp/before/src/cli/main.ts] [--bombs 10] [--env KEY=VALUE]…
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import { outcomeOf, pictureFlood } from '../test/helpers/pictureFlood.ts';
import { killWithThisProcess, LOOPBACK_SERVER_ENV } from '../test/helpers/server.ts';

const { values } = parseArgs({
  options: {
    parley: { type: 'string', default: resolve(import.meta.dirname, '../src/cli/main.ts') },
    bombs: { type: 'string', default: '10' },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const bombs = Number(values.bombs);
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-picture-floods-'));
const env = { ...process.env, ...LOOPBACK_SERVER_ENV, DATA_DIR: dataDir, TURN_ENABLED: 'false', ...Object.fromEntries(values.env!.map((kv) => kv.split(/=(.*)/s).slice(0, 2))) };
const proc = spawn(process.execPath, ['--import', 'tsx', values.parley!, 'serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
killWithThisProcess(proc);
const { baseUrl, devKey } = await new Promise<{ baseUrl: string; devKey: string }>((ready) => {
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
    const m = /parley ready at (\S+)/.exec(out);
    if (m) ready({ baseUrl: m[1]!, devKey: /(sk_parley_ai_\w+)/.exec(out)![1]! });
  });
});
const created = await promisify(execFile)(process.execPath, ['--import', 'tsx', values.parley!, 'keys', 'create', '--name', 'tenant-b'], { env });
const otherKey = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;

try {
  const report = await pictureFlood(
    { baseUrl, proc },
    {
      attackerKey: devKey,
      victimKey: otherKey,
      bombs,
      beforeVictim: async (attacker) => {
        const end = performance.now() + 3000;
        while (performance.now() < end && attacker.filter((s, i) => outcomeOf(s, `bomb-${i}`) === 'server_error/server_busy').length < bombs - 5) await sleep(20);
      },
    },
  );
  const counts = (os: string[]) => [...new Set(os)].map((o) => `${os.filter((x) => x === o).length} × ${o}`).join(', ');
  console.log(`A's ${bombs} bombs: ${counts(report.attacker)}`);
  console.log(`B's JPEG: ${report.victim.outcome} after ${report.victim.ms.toFixed(0)} ms; reply: ${JSON.stringify(report.victim.reply)}`);
  console.log(`/healthz: slowest ${report.maxHealthzMs.toFixed(0)} ms, ${report.healthzFailures} not 200`);
  console.log(`node RSS ${report.nodeRssMb.before} → peak ${report.nodeRssMb.peak} MB; ffmpeg: at most ${report.maxDecoders} at once, ${report.ffmpegRssPeakMb.toFixed(0)} MB together at most`);
} finally {
  proc.kill();
  await new Promise((r) => proc.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
}
