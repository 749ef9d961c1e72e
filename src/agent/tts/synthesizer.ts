// Text-to-speech with the local engines (flite, espeak-ng), 48 kHz mono out. Each sentence is one
// short-lived engine process (a few ms to start), so sentences stream as soon as each is ready.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readWav } from '../../media/audio/wav.js';
import { resampleTo48k } from '../../media/audio/resample.js';
import { localVoice } from './voices.js';

export interface SpeechSynthesizer {
  /** One sentence of speech at 48 kHz. */
  synthesize(text: string, voice: string, signal?: AbortSignal): Promise<Int16Array>;
}

/** Markup the existing clients strip from replies (`<emotion value="happy"/>`, `[laughter]`) is not spoken. */
export function speakableText(text: string): string {
  return text
    .replace(/<[^>]*>/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function run(cmd: string, args: string[], signal?: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], signal, timeout: 15_000 });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', (err) => reject(err.name === 'AbortError' ? err : new Error(`${cmd} failed: ${err.message}`)));
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${cmd} exited with ${code}: ${stderr.slice(0, 200)}`))));
  });
}

export class LocalSynthesizer implements SpeechSynthesizer {
  async synthesize(text: string, voice: string, signal?: AbortSignal): Promise<Int16Array> {
    const clean = speakableText(text).slice(0, 1000);
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
}

const local = new LocalSynthesizer();

/** `text` spoken by the catalogue voice `voiceName` with the local engines, 48 kHz mono. */
export function synthesize(voiceName: string, text: string, signal?: AbortSignal): Promise<Int16Array> {
  return local.synthesize(text, voiceName, signal);
}
