// The local voices: flite for English (clearer), espeak-ng for the other languages, per catalogue
// voice (voices.ts). Each clause is one short-lived engine process (a few ms to start), killed when
// the reply is cancelled.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resampleTo48k } from '../../media/audio/resample.js';
import { onPath } from '../../system/commands.js';
import { readWav } from '../../media/audio/wav.js';
import type { EngineHealth } from '../health.js';
import { speakableText } from './clauses.js';
import type { SpeechEngine } from './types.js';
import { localVoice } from './voices.js';
import { wholeTextEngine } from './wholeText.js';

/** A text longer than this is cut (a clause never is). */
const MAX_CHARS = 1000;
const PROCESS_TIMEOUT_MS = 15_000;

function run(cmd: string, args: string[], signal?: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], signal, timeout: PROCESS_TIMEOUT_MS });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', (err) => reject(err.name === 'AbortError' ? err : new Error(`${cmd} failed: ${err.message}`)));
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${cmd} exited with ${code}: ${stderr.slice(0, 200)}`))));
  });
}

/** `text` spoken by the catalogue voice `voice` with the local engines, 48 kHz mono. */
export async function synthesizeLocally(text: string, voice: string, signal?: AbortSignal): Promise<Int16Array> {
  const clean = speakableText(text).slice(0, MAX_CHARS);
  if (!clean) return new Int16Array(0);
  const v = localVoice(voice);
  let wav: Buffer;
  if (v.engine === 'flite') {
    // flite cannot write WAV to a socket (Node's stdio pipes are sockets): use a scratch file.
    const file = join(tmpdir(), `parley-tts-${randomBytes(6).toString('hex')}.wav`);
    try {
      await run('flite', ['-voice', v.voice, '--setf', `int_f0_target_mean=${v.pitchHz}`, '--setf', `duration_stretch=${v.stretch}`, '-t', clean, '-o', file], signal);
      wav = await readFile(file);
    } finally {
      await rm(file, { force: true });
    }
  } else {
    wav = await run('espeak-ng', ['-v', v.voice, '-p', String(v.pitch), '-s', String(v.wordsPerMinute), '--stdout', '--', clean], signal);
  }
  const pcm = readWav(wav);
  return resampleTo48k(pcm.samples, pcm.sampleRate);
}

/** The local voices as a SpeechEngine: health says which engine is missing, or the last failure. */
export function createLocalSpeechEngine(): SpeechEngine {
  const missing = ['flite', 'espeak-ng'].filter((cmd) => !onPath(cmd));
  let lastFailure: string | undefined;
  const health = (): EngineHealth =>
    missing.length
      ? { state: 'failed', detail: `${missing.join(' and ')} not installed: run scripts/setup.sh --runtime` }
      : lastFailure
        ? { state: 'degraded', detail: `the last synthesis failed: ${lastFailure}` }
        : { state: 'ready' };
  return wholeTextEngine(
    'local',
    async (text, voice, signal) => {
      try {
        const pcm = await synthesizeLocally(text, voice, signal);
        lastFailure = undefined;
        return pcm;
      } catch (err) {
        if (!signal.aborted) lastFailure = (err as Error).message;
        throw err;
      }
    },
    health,
  );
}
