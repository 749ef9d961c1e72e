// The local voices: flite for English (clearer), espeak-ng for the other languages, per catalogue
// voice (voices.ts). Each clause is one short-lived engine process (a few ms to start), killed when
// the reply is cancelled, started by the node's engine host (engineHost.ts: a small helper process,
// so the node never forks itself) at most TTS_PROCESSES at once: a call that asks for replies faster
// than they can be spoken waits its turn instead of starving the others of CPU.
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resampleTo48k } from '../../media/audio/resample.js';
import { onPath } from '../../system/commands.js';
import { readWav } from '../../media/audio/wav.js';
import type { EngineHealth } from '../health.js';
import { speakableText } from './clauses.js';
import { EngineHost } from './engineHost.js';
import type { SpeechEngine } from './types.js';
import { localVoice } from './voices.js';
import { wholeTextEngine } from './wholeText.js';

/** A text longer than this is cut (a clause never is). */
const MAX_CHARS = 1000;

/** `text` spoken by the catalogue voice `voice` with the local engines, 48 kHz mono. */
export async function synthesizeLocally(host: EngineHost, text: string, voice: string, signal?: AbortSignal): Promise<Int16Array> {
  const clean = speakableText(text).slice(0, MAX_CHARS);
  if (!clean) return new Int16Array(0);
  const v = localVoice(voice);
  let wav: Buffer;
  if (v.engine === 'flite') {
    // flite cannot write WAV to a socket (Node's stdio pipes are sockets): use a scratch file.
    const file = join(tmpdir(), `parley-tts-${randomBytes(6).toString('hex')}.wav`);
    const args = ['-voice', v.voice, '--setf', `int_f0_target_mean=${v.pitchHz}`, '--setf', `duration_stretch=${v.stretch}`, '-t', clean, '-o', file];
    wav = await host.run('flite', args, { outFile: file, ...(signal ? { signal } : {}) });
  } else {
    wav = await host.run('espeak-ng', ['-v', v.voice, '-p', String(v.pitch), '-s', String(v.wordsPerMinute), '--stdout', '--', clean], signal ? { signal } : {});
  }
  const pcm = readWav(wav);
  return resampleTo48k(pcm.samples, pcm.sampleRate);
}

/**
 * The local voices as a SpeechEngine, at most `processes` synthesis processes at once for the whole
 * node: health says which engine is missing, or the last failure.
 */
export function createLocalSpeechEngine(processes: number): SpeechEngine {
  const host = new EngineHost(processes).start();
  const missing = ['flite', 'espeak-ng'].filter((cmd) => !onPath(cmd));
  let lastFailure: string | undefined;
  const health = (): EngineHealth =>
    missing.length
      ? { state: 'failed', detail: `${missing.join(' and ')} not installed: run scripts/setup.sh --runtime` }
      : lastFailure
        ? { state: 'degraded', detail: `the last synthesis failed: ${lastFailure}` }
        : { state: 'ready' };
  const engine = wholeTextEngine(
    'local',
    async (text, voice, signal) => {
      try {
        const pcm = await synthesizeLocally(host, text, voice, signal);
        lastFailure = undefined;
        return pcm;
      } catch (err) {
        if (!signal.aborted) lastFailure = (err as Error).message;
        throw err;
      }
    },
    health,
  );
  return { ...engine, close: async () => host.close() };
}
