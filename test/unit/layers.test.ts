// Imports run one way: each layer of src/ (a top-level folder, or a top-level file) imports only
// from the layers after it in LAYERS, never from one before it. A cycle between two layers needs
// one such upward import, so it fails here too. docs/architecture.md's Layout section names the same
// layers in the same order; the last test holds the two together.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

/**
 * Top to bottom: entry points, the HTTP door, the node's parts wired together (which hold the SIP
 * door's routing and dialer for the HTTP door to reach), the SIP door, what the doors use, down to
 * the machine.
 */
const LAYERS = [
  'cli',
  'server.ts',
  'workers.ts',
  'startup.ts',
  'http',
  'services.ts',
  'sip',
  'webhooks',
  'calls',
  'recordings',
  'agent',
  'session',
  'media',
  'ice',
  'auth',
  'storage',
  'observability',
  'config',
  'system',
];

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

/** Source text by path relative to src/ (with `/`). Declaration files (src/types) hold no code and import nothing. */
type Sources = Map<string, string>;

function readSources(dir: string, sources: Sources = new Map()): Sources {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) readSources(path, sources);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) sources.set(relative(SRC, path).split(sep).join('/'), readFileSync(path, 'utf8'));
  }
  return sources;
}

/** A file's layer: its top-level folder, or itself when it sits at the top of src/. */
function layerOf(file: string): string {
  return file.split('/')[0]!;
}

/** The relative imports of a file (static imports, `export … from`, literal `import()`), as paths relative to src/. */
function importsOf(file: string, source: string): string[] {
  const { importedFiles } = ts.preProcessFile(source, true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => join(dirname(file), spec).split(sep).join('/').replace(/\.js$/, '.ts'))
    .filter((target) => !target.startsWith('..'));
}

/** Every import that goes up (or into no layer), as `file → import (why)`. */
function layerViolations(sources: Sources, layers: readonly string[]): string[] {
  const rank = (layer: string) => layers.indexOf(layer);
  const violations: string[] = [];
  for (const [file, source] of sources) {
    const from = layerOf(file);
    if (rank(from) < 0) {
      violations.push(`src/${file}: layer ${from} is not in LAYERS`);
      continue;
    }
    for (const target of importsOf(file, source)) {
      const to = layerOf(target);
      if (rank(to) < 0) violations.push(`src/${file} → src/${target}: layer ${to} is not in LAYERS`);
      else if (rank(to) < rank(from)) violations.push(`src/${file} → src/${target}: ${from} imports from ${to}, a layer above it`);
    }
  }
  return violations;
}

test('every file of src/ imports only from its own layer or the layers below it', () => {
  const violations = layerViolations(readSources(SRC), LAYERS);
  assert.deepEqual(violations, [], `upward imports:\n${violations.join('\n')}`);
});

test('a cycle between two top-level folders is caught', () => {
  const sources: Sources = new Map([
    ['calls/call.ts', "import type { Agent } from '../agent/types.js';"],
    ['agent/types.ts', "export type Agent = unknown;\nconst later = () => import('../calls/call.js');"],
  ]);
  assert.deepEqual(layerViolations(sources, LAYERS), ['src/agent/types.ts → src/calls/call.ts: agent imports from calls, a layer above it']);
});

test('every top-level folder and file of src/ has a layer, and every layer exists', () => {
  const present = new Set(readdirSync(SRC).filter((name) => name !== 'types'));
  assert.deepEqual([...present].sort(), [...LAYERS].sort());
});

test("docs/architecture.md's Layout section names the layers in this order", () => {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const start = doc.indexOf('\n## Layout\n');
  assert.ok(start >= 0, 'docs/architecture.md: no "## Layout" section');
  const end = doc.indexOf('\n## ', start + 1);
  const layout = doc.slice(start, end < 0 ? undefined : end);
  const oneWay = layout.split('\n').find((line) => line.startsWith('Imports run one way'));
  assert.ok(oneWay, 'docs/architecture.md Layout: no "Imports run one way" line');
  const named = oneWay.split('→').map((part) => /`([^`]+)`/.exec(part)?.[1]);
  assert.deepEqual(named, LAYERS, 'docs/architecture.md Layout: the "Imports run one way" line');
  const bullets = [...layout.matchAll(/^- `src\/([^/`]+)/gm)].map((m) => m[1]);
  assert.deepEqual(bullets, LAYERS, "docs/architecture.md Layout: the bullets' order");
});

/** Files that import each other, directly or round about (type-only imports too): each circle once, as `a → b → a`. */
function fileCycles(sources: Sources): string[] {
  const graph = new Map([...sources.keys()].map((file) => [file, importsOf(file, sources.get(file)!).filter((target) => sources.has(target))]));
  const cycles: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    const at = path.indexOf(file);
    if (at >= 0) return void cycles.push([...path.slice(at), file].map((f) => `src/${f}`).join(' → '));
    if (done.has(file)) return;
    path.push(file);
    for (const target of graph.get(file)!) visit(target);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return cycles;
}

test('no file of src/ imports itself round about (a circle of type-only imports included)', () => {
  const cycles = fileCycles(readSources(SRC));
  assert.deepEqual(cycles, [], `import circles:\n${cycles.join('\n')}`);
});

test('a circle of type-only imports inside one folder is caught', () => {
  const sources: Sources = new Map([
    ['sip/core.ts', "import type { OutboundOptions } from './outboundCalls.js';"],
    ['sip/outboundCalls.ts', "import type { SipCore } from './core.js';"],
  ]);
  assert.deepEqual(fileCycles(sources), ['src/sip/core.ts → src/sip/outboundCalls.ts → src/sip/core.ts']);
});
