// How long each test file took (its process's start included), for the slowest-files table in
// bench/results/test-suite.md: scripts/test.mjs feeds it the runner's events; as a node:test reporter it writes
// one JSON line {file, ms, tests, failed} per file.
import { relative } from 'node:path';

export class FileDurations {
  #files = new Map();

  /** One event of the test runner. */
  add(event) {
    const { file, name, nesting, details } = event.data ?? {};
    if (!file) return;
    let e = this.#files.get(file);
    if (!e) this.#files.set(file, (e = { topLevelMs: 0, fileMs: undefined, tests: 0, failed: 0 }));
    // The runner reports each file it ran in a process as a test named after the file.
    if (event.type === 'test:complete' && name === file) e.fileMs = details.duration_ms;
    else if ((event.type === 'test:pass' || event.type === 'test:fail') && name !== file && details.type !== 'suite') {
      if (nesting === 0) e.topLevelMs += details.duration_ms;
      e.tests += 1;
      if (event.type === 'test:fail') e.failed += 1;
    }
  }

  /** Each file's figures; without the file's own report, its top-level tests add up. */
  results() {
    return [...this.#files].map(([file, e]) => ({ file: relative(process.cwd(), file), ms: Math.round(e.fileMs ?? e.topLevelMs), tests: e.tests, failed: e.failed }));
  }
}

export default async function* durations(source) {
  const files = new FileDurations();
  for await (const event of source) files.add(event);
  for (const result of files.results()) yield JSON.stringify(result) + '\n';
}
