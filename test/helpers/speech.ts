// Spoken test input: a sentence synthesised with flite's slt voice (pocketsphinx understands it, unlike
// espeak-ng's), resampled with sox to 48 kHz mono 16-bit PCM.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wrtc from '@roamhq/wrtc';
import { encodeWav } from '../../src/media/audio/wav.ts';
import type { RtcClient } from './rtcClient.ts';

/** `text` spoken as mono 16-bit PCM at `rate` (sox resamples flite's 16 kHz with its own filter, as a phone line's audio is band-limited). */
export function speak(text: string, rate = 48_000): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'parley-speech-'));
  try {
    const wav = join(dir, 'in.wav');
    const raw = join(dir, 'out.raw');
    execFileSync('flite', ['-voice', 'slt', '-t', text, '-o', wav]);
    execFileSync('sox', [wav, '-r', String(rate), '-c', '1', '-b', '16', '-e', 'signed-integer', '-t', 'raw', raw]);
    const bytes = readFileSync(raw);
    return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `text` spoken into a WAV file (48 kHz mono 16-bit) after `leadSeconds` of silence, for a browser's fake microphone. */
export function speakToWav(text: string, file: string, leadSeconds = 1): void {
  const dir = mkdtempSync(join(tmpdir(), 'parley-speech-'));
  try {
    const wav = join(dir, 'in.wav');
    execFileSync('flite', ['-voice', 'slt', '-t', text, '-o', wav]);
    execFileSync('sox', [wav, '-r', '48000', '-c', '1', '-b', '16', '-e', 'signed-integer', file, 'pad', String(leadSeconds), '1']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A WAV file (48 kHz mono 16-bit) for Chromium's fake microphone: spoken parts and silences in
 * order, e.g. `[{ silenceMs: 2000 }, 'what time is it', { silenceMs: 3000 }]`.
 */
export function speechWav(path: string, parts: (string | { silenceMs: number })[]): string {
  const pcm = parts.map((p) => (typeof p === 'string' ? speak(p) : new Int16Array(Math.round(p.silenceMs * 48))));
  const out = encodeWav(pcm, 48_000);
  writeFileSync(path, out);
  return path;
}

/**
 * A microphone for the call (attached with replaceTrack): silence until `say(pcm)` queues speech,
 * fed in real time in 10 ms chunks. Returns say() and stop().
 */
export async function attachMicrophone(client: RtcClient): Promise<{ say: (pcm: Int16Array) => Promise<void>; stop: () => void }> {
  const { RTCAudioSource } = (wrtc as any).nonstandard;
  const source = new RTCAudioSource();
  const track = source.createTrack();
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'audio');
  await transceiver.sender.replaceTrack(track);
  let queue: Int16Array = new Int16Array(0);
  let waiters: (() => void)[] = [];
  const timer = setInterval(() => {
    const chunk = new Int16Array(480);
    if (queue.length) {
      const n = Math.min(480, queue.length);
      chunk.set(queue.subarray(0, n));
      queue = queue.subarray(n);
      if (!queue.length) {
        for (const w of waiters) w();
        waiters = [];
      }
    }
    source.onData({ samples: chunk, sampleRate: 48000, bitsPerSample: 16, channelCount: 1, numberOfFrames: 480 });
  }, 10);
  return {
    say: (pcm) =>
      new Promise<void>((resolve) => {
        const merged = new Int16Array(queue.length + pcm.length);
        merged.set(queue);
        merged.set(pcm, queue.length);
        queue = merged;
        waiters.push(resolve);
      }),
    stop: () => {
      clearInterval(timer);
      track.stop();
    },
  };
}
