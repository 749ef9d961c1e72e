// The real PocketSphinx worker process, which also exits when it is sent DEATH_PILL as audio: a
// worker crash on demand, for the respawn tests. Forked by the recogniser with tsx's loader inherited.
import { pathToFileURL } from 'node:url';

export const DEATH_PILL = -12345;

// Imported by the test for DEATH_PILL, and run as the worker (its main module).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.on('message', (m) => {
    if (m.op === 'audio' && m.pcm.length === 1 && m.pcm[0] === DEATH_PILL) process.exit(70);
  });
  await import('../../src/agent/stt/pocketsphinxProcess.ts');
}
