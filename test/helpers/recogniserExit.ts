// A process that starts the built-in speech recogniser (two workers) and exits while they load the
// model: what a node stopped during its start does. It first times one start on this machine as it
// is now (T, to ready), then exits FRACTION × T after a second start. Prints its children's pids
// (the workers) just before it exits, for the test to see that none is left behind.
import { setTimeout as sleep } from 'node:timers/promises';
import { PocketSphinxRecognizer } from '../../src/agent/stt/pocketsphinx.ts';
import { childPids } from './processes.ts';

const fraction = Number(process.argv[2] ?? 0.5);
const timing = new PocketSphinxRecognizer({ workers: 2 });
const started = performance.now();
while (timing.health().state !== 'ready') await sleep(10);
const loadMs = performance.now() - started;
await timing.close();

new PocketSphinxRecognizer({ workers: 2 });
await sleep(fraction * loadMs);
process.stdout.write(`${JSON.stringify({ loadMs: Math.round(loadMs), workers: childPids(process.pid) })}\n`, () => process.exit(0));
