// The real PocketSphinx worker, which also ends its thread (process.exit in a worker stops only that
// thread) when it is sent DEATH_PILL as audio: a worker crash on demand, for the respawn tests.
import { parentPort } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

export const DEATH_PILL = -12345;

// Imported by the test for DEATH_PILL (no parentPort there), and run as the worker.
if (parentPort) {
  parentPort.on('message', (m) => {
    if (m.op === 'audio' && m.pcm.length === 1 && m.pcm[0] === DEATH_PILL) process.exit(70);
  });
  register();
  await import('../../src/agent/stt/pocketsphinxWorker.ts');
}
