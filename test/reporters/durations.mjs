// A node:test reporter that records how long each test file took (its process's start included), for
// the slowest-files table in bench/README.md: one JSON line {file, ms, tests, failed} per file.
import { relative } from 'node:path';

export default async function* durations(source) {
  const files = new Map();
  const entry = (file) => {
    let e = files.get(file);
    if (!e) files.set(file, (e = { topLevelMs: 0, fileMs: undefined, tests: 0, failed: 0 }));
    return e;
  };
  for await (const event of source) {
    const { file, name, nesting, details } = event.data ?? {};
    if (!file) continue;
    const e = entry(file);
    // The runner reports each file it ran in a process as a test named after the file.
    if (event.type === 'test:complete' && name === file) e.fileMs = details.duration_ms;
    else if ((event.type === 'test:pass' || event.type === 'test:fail') && name !== file && details.type !== 'suite') {
      if (nesting === 0) e.topLevelMs += details.duration_ms;
      e.tests += 1;
      if (event.type === 'test:fail') e.failed += 1;
    }
  }
  for (const [file, e] of files) {
    yield JSON.stringify({ file: relative(process.cwd(), file), ms: Math.round(e.fileMs ?? e.topLevelMs), tests: e.tests, failed: e.failed }) + '\n';
  }
}
