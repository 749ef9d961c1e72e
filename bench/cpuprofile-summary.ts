// Where a `.cpuprofile` (node --cpu-prof) spent its time: self time by function and by module
// (file, or a package under node_modules), in % of the samples; --after S leaves out the first S
// seconds (start-up and call setup) and --for S keeps S seconds from there.
//   node --import tsx bench/cpuprofile-summary.ts FILE.cpuprofile [--top 25] [--after 20] [--for 20]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, after: { type: 'string', default: '0' }, for: { type: 'string' } } });
const fromUs = Number(values.after) * 1e6;
const toUs = values.for === undefined ? Number.POSITIVE_INFINITY : fromUs + Number(values.for) * 1e6;
const top = Number(values.top);

/** A module's short name: the package for node_modules, the path under the repository otherwise. */
function moduleOf(url: string): string {
  if (!url) return '(native / V8)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node internals';
  const repo = /\/(src|bench|test)\/(.*)$/.exec(url);
  return repo ? `${repo[1]}/${repo[2]}` : url;
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  let at = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (at < fromUs || at >= toUs) return;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const fns = new Map<string, number>();
  const modules = new Map<string, number>();
  for (const [id, t] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    add(fns, `${functionName || '(anonymous)'} ${moduleOf(url)}${url ? `:${lineNumber + 1}` : ''}`, t);
    add(modules, moduleOf(url), t);
  }
  const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;
  const pct = (t: number) => `${((100 * t) / busy).toFixed(1)} %`;
  const rows = (m: Map<string, number>) =>
    [...m]
      .filter(([k]) => !k.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, t]) => `  ${pct(t).padStart(7)}  ${k}`)
      .join('\n');
  process.stdout.write(
    `${file}: ${(total / 1e6).toFixed(1)} s sampled, busy ${((100 * busy) / total).toFixed(1)} % (shares below are of the busy time)\n` +
      `by module:\n${rows(modules)}\nby function (self time):\n${rows(fns)}\n\n`,
  );
}
