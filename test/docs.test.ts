// The docs stay true (README.md, docs/**/*.md): no server is started, only the files and the code read.
// - README.md is a front page: at most 250 lines.
// - The configuration table (docs/reference/configuration.md) is the one generated from src/config/env.ts.
// - Every fenced code block names its language, and every shell block (sh, bash, shell, console) has,
//   on the line before its fence, either `<!-- run by test/FILE.test.ts -->` (one or more paths of this
//   repository, comma-separated: what runs those commands) or `<!-- not run by a test: why -->`.
// - Every relative link between the docs points at a file of this repository, and its #anchor at a
//   heading of the file it names; no doc names a path of the machine outside the repository.
// - Every HTTP route the docs name (/v1/…, /console/…, /demo/…) is one the server defines (src/http),
//   and docs/reference/metrics.md lists every metric src/observability/metrics.ts defines.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { CONFIG_DOC, CONFIG_TABLE_MARKERS, configTable } from '../scripts/config-table.ts';
import { parse } from './helpers/markdown.ts';

const ROOT = resolve(import.meta.dirname, '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownFiles(path) : name.endsWith('.md') ? [path] : [];
  });
}

/** The user docs: the front page and docs/. The benchmarks' index and result pages have their links checked too, but are not held to the rest. */
const DOCS = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];
const LINKED = [...DOCS, join(ROOT, 'bench/README.md'), ...markdownFiles(join(ROOT, 'bench/results'))];
const rel = (path: string) => relative(ROOT, path);

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen; repeats get -1, -2… */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of parse(text).prose) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = h[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  for (const m of text.matchAll(/<a (?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);
const RUN_BY = /^<!-- run by ([^>]+?) -->$/;
const NOT_RUN = /^<!-- not run by a test: \S[^>]*-->$/;

test('README.md is a front page: at most 250 lines', () => {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
  assert.ok(lines <= 250, `README.md has ${lines} lines; move the detail to docs/`);
});

test(`${CONFIG_DOC} lists every setting with its default (run scripts/config-table.ts --write after changing settings)`, () => {
  const block = CONFIG_TABLE_MARKERS.exec(readFileSync(join(ROOT, CONFIG_DOC), 'utf8'))?.[0];
  assert.ok(block, `${CONFIG_DOC} has the config-table markers`);
  assert.equal(block.replace(/<!-- \/?config-table -->\n?/g, '').trim(), configTable().trim());
});

test('every code block names its language, and every shell block says what runs it', () => {
  const problems: string[] = [];
  for (const file of DOCS) {
    for (const block of parse(readFileSync(file, 'utf8')).blocks) {
      const where = `${rel(file)}:${block.line}`;
      if (!block.lang) problems.push(`${where}: a code block without a language (text, json, ts, sh…)`);
      if (!SHELL.has(block.lang)) continue;
      const runBy = RUN_BY.exec(block.before);
      if (runBy) {
        for (const path of runBy[1]!.split(',').map((p) => p.trim())) {
          if (!existsSync(join(ROOT, path))) problems.push(`${where}: "run by ${path}": no such file`);
        }
      } else if (!NOT_RUN.test(block.before)) {
        problems.push(`${where}: a shell block needs <!-- run by test/FILE.test.ts --> or <!-- not run by a test: why --> on the line before it`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('every relative link points at a file of this repository, and every #anchor at a heading there', () => {
  const problems: string[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const headingsOf = (path: string) => {
    if (!anchorsOf.has(path)) anchorsOf.set(path, anchors(readFileSync(path, 'utf8')));
    return anchorsOf.get(path)!;
  };
  for (const file of LINKED) {
    const { prose } = parse(readFileSync(file, 'utf8'));
    prose.forEach((line, i) => {
      const where = `${rel(file)}:${i + 1}`;
      const text = line.replace(/`[^`]*`/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
        if (relative(ROOT, resolved).startsWith('..')) {
          problems.push(`${where}: ${target} leaves the repository`);
          continue;
        }
        if (!existsSync(resolved)) {
          problems.push(`${where}: ${target}: no such file`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !headingsOf(resolved).has(anchor)) {
          problems.push(`${where}: ${target}: no heading with that anchor in ${rel(resolved)}`);
        }
      }
      if (/(^|[\s(`'"])\/(work|home|root|tmp\/parley)\//.test(line)) problems.push(`${where}: names a path outside the repository`);
    });
  }
  assert.deepEqual(problems, []);
});

/** The routes src/http defines, as patterns (`:id` for a parameter), read from its sources. */
function definedRoutes(): string[] {
  const routes = new Set<string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'public') walk(path);
      } else if (name.endsWith('.ts')) {
        const source = readFileSync(path, 'utf8')
          .replace(/\$\{COOKIE_PATH\}/g, '/console')
          .replace(/\bCOOKIE_PATH\b/g, "'/console'")
          .replace(/\bapi \+ '/g, "'/console/api");
        for (const m of source.matchAll(/['`](\/(?:v1|console|demo|healthz|readyz|metrics|openapi\.json|docs)[^'`]*)['`]/g)) routes.add(m[1]!);
      }
    }
  };
  walk(join(ROOT, 'src/http'));
  return [...routes];
}

function matches(path: string, route: string): boolean {
  const a = path.split('/');
  const b = route.split('/');
  return a.length === b.length && a.every((seg, i) => seg === b[i] || (b[i]!.startsWith(':') && seg !== '') || b[i]!.startsWith('${'));
}

test('every route the docs name is one the server defines', () => {
  const routes = definedRoutes();
  assert.ok(routes.includes('/v1/realtime/calls/:id/hangup'), `the routes read from src/http: ${routes.join(' ')}`);
  const problems: string[] = [];
  for (const file of DOCS) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const m of line.replace(/https?:\/\/[^/\s'"`]+/g, ' ').matchAll(/(?<![\w.:/-])(\/(?:v1|console|demo)(?:\/[^\s`'"()<>,;|*?\]]*)?)/g)) {
          let path = m[1]!.replace(/[.:]+$/, '').replace(/\/…$/, '').replace(/\/$/, '');
          // Placeholders: {id}, conv_…, <call id>, XXXXXXXX.
          path = path.replace(/\{[^}]*\}|conv_[^/]*|key_[^/]*|…/g, 'X');
          if (['/v1', '/console', '/demo'].includes(path) || path.startsWith('/console/public') || path.startsWith('/demo/public')) continue;
          if (!routes.some((route) => matches(path, route))) problems.push(`${rel(file)}:${i + 1}: ${m[1]} is no route of src/http`);
        }
      });
  }
  assert.deepEqual(problems, []);
});

test('docs/reference/metrics.md lists every metric the code defines', () => {
  const source = readFileSync(join(ROOT, 'src/observability/metrics.ts'), 'utf8');
  const defined = [...source.matchAll(/'(parley_[a-z_]+)'/g)].map((m) => m[1]!);
  assert.ok(defined.length > 20, `metrics read from src/observability/metrics.ts: ${defined.join(' ')}`);
  const listed = readFileSync(join(ROOT, 'docs/reference/metrics.md'), 'utf8');
  assert.deepEqual(defined.filter((name) => !listed.includes(`\`${name}\``)), []);
});
