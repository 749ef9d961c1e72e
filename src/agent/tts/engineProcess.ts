// The process that starts the local speech engines (flite, espeak-ng) for a node. Starting a
// program from the node itself forks the node: hundreds of MB of address space, tens of ms of its
// event loop, which every call's media clock shares. This small process pays that instead. It runs
// what engineHost.ts sends it and answers with what the program wrote; it exits with its parent.
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { setPriority } from 'node:os';

// Below the node (and so are the programs it starts, which inherit it): synthesis, the bulk of a
// reply's CPU, must never hold the node's media clock back from its core.
const NICENESS = 10;
try {
  setPriority(NICENESS);
} catch {
  // not permitted here: the programs run at the node's priority
}

/** Runs `cmd` (or stops it: `abort`), answering with its stdout, or the file it wrote (`outFile`). */
export type EngineRequest = { id: number; cmd: string; args: string[]; outFile?: string } | { id: number; abort: true };
export type EngineAnswer = { id: number; ok: true; bytes: Uint8Array } | { id: number; ok: false; message: string };

const PROCESS_TIMEOUT_MS = 15_000;

function spawnAndRead(cmd: string, args: string[], signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], signal, timeout: PROCESS_TIMEOUT_MS });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    let failure: Error | undefined;
    child.on('error', (err) => {
      failure = err.name === 'AbortError' ? err : new Error(`${cmd} failed: ${err.message}`);
      // Never started: there is no process to wait for.
      if (child.pid === undefined) reject(failure);
    });
    // Settled once the program is gone (a killed one too): the parent's pool slot is free only then.
    child.on('close', (code) => {
      if (failure) reject(failure);
      else if (code === 0) resolve(Buffer.concat(chunks));
      else reject(new Error(`${cmd} exited with ${code}: ${stderr.slice(0, 200)}`));
    });
  });
}

const running = new Map<number, AbortController>();

process.on('message', (req: EngineRequest) => {
  if ('abort' in req) return void running.get(req.id)?.abort();
  const stop = new AbortController();
  running.set(req.id, stop);
  void (async () => {
    let answer: EngineAnswer;
    try {
      const stdout = await spawnAndRead(req.cmd, req.args, stop.signal);
      answer = { id: req.id, ok: true, bytes: req.outFile ? await readFile(req.outFile) : stdout };
    } catch (err) {
      answer = { id: req.id, ok: false, message: (err as Error).message };
    } finally {
      running.delete(req.id);
      if (req.outFile) await rm(req.outFile, { force: true });
    }
    process.send?.(answer);
  })();
});

// The node is gone (even killed): so is this process.
process.on('disconnect', () => process.exit(0));
