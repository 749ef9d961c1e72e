// Agent calls with remote models for the load generator (`--model remote`): the stand-in backends
// in a process of their own, pinned away from the server (bench/lib/modelBackendsMain.ts), and the
// voice-to-voice an agent that cost nothing would reach with them — what the turn-detection rule
// waits plus what the backends take — so that what Parley adds can be told apart.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { loadConfig } from '../../src/config/env.ts';
import { createVadProvider, endpointingDefaults } from '../../src/agent/providers.ts';
import { createTurnDetector } from '../../src/agent/turn/detector.ts';
import { StreamResampler } from '../../src/media/audio/resample.ts';

/** What the stand-in model answers every question with, piece by piece (two sentences: two syntheses). */
export const REMOTE_ANSWER_PIECES = ['It is ', 'ten past ', 'eleven. ', 'Is there ', 'anything else?'];

export interface RemoteLatencies {
  transcriptionMs: number;
  firstTokenMs: number;
  firstAudioMs: number;
}

export interface BackendsProcess {
  baseUrl: string;
  proc: ChildProcess;
  /** Stops it; resolves with the requests it answered, by path. */
  stop(): Promise<Record<string, number>>;
}

const MAIN = resolve(import.meta.dirname, 'modelBackendsMain.ts');

/** Starts the stand-ins in their own process, on `cpus` (taskset) unless undefined. */
export async function startBackendsProcess(latencies: RemoteLatencies, cpus: string | undefined): Promise<BackendsProcess> {
  const node = [
    process.execPath, '--import', 'tsx', MAIN,
    '--transcription-ms', String(latencies.transcriptionMs), '--first-token-ms', String(latencies.firstTokenMs), '--first-audio-ms', String(latencies.firstAudioMs),
  ];
  const [cmd, ...args] = cpus === undefined ? node : ['taskset', '-c', cpus, ...node];
  const proc = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! });
  const next = () =>
    new Promise<Record<string, unknown>>((resolveLine, reject) => {
      const onExit = () => reject(new Error('the model backends process ended'));
      proc.once('exit', onExit);
      lines.once('line', (line) => {
        proc.off('exit', onExit);
        resolveLine(JSON.parse(line));
      });
    });
  const { baseUrl } = (await next()) as { baseUrl: string };
  return {
    baseUrl,
    proc,
    stop: async () => {
      if (proc.exitCode !== null) return {};
      const answered = next().then((l) => (l.answered ?? {}) as Record<string, number>, () => ({}));
      proc.kill('SIGTERM');
      return answered;
    },
  };
}

/**
 * The voice-to-voice of an agent that costs nothing, for one question (48 kHz PCM, its last loud
 * sample at `speechMs`), under the server's settings `env`: the caller's audio runs through the same
 * VAD and turn rule as the server's; the turn ends at the window that ends it, a reply prepared at the
 * pause (PREPARE_REPLY_AFTER_MS) is ready the backends' time after that window, otherwise the
 * backends' time after the end of the turn. Audio time, so it does not depend on load.
 */
export async function idealVoiceToVoiceMs(question48k: Int16Array, speechMs: number, env: Record<string, string>, latencies: RemoteLatencies): Promise<{ idealMs: number; turnEndMs: number; pauseMs: number | undefined }> {
  const config = loadConfig({ ...env, DATA_DIR: '/nonexistent' });
  const vad = await createVadProvider(config).create();
  const windowMs = vad.windowSamples / 16;
  const prepare = config.PREPARE_REPLY_AFTER_MS;
  const endpointing = endpointingDefaults(config);
  const pauseMs = prepare > 0 && prepare < endpointing.silenceMs ? prepare : undefined;
  const leadMs = 1000;
  const result = await new Promise<{ pausedAt?: number; stoppedAt: number }>((done, fail) => {
    let pausedAt: number | undefined;
    const detector = createTurnDetector(vad, { ...endpointing, ...(pauseMs ? { pauseMs } : {}) }, {
      speechStarted: () => {},
      speech: () => {},
      // The event comes with the window that crosses the silence's length.
      speechPaused: (silenceStartMs) => (pausedAt = Math.ceil((silenceStartMs + pauseMs!) / windowMs) * windowMs),
      speechStopped: (audioEndMs) => {
        done({ ...(pausedAt !== undefined ? { pausedAt } : {}), stoppedAt: audioEndMs });
        detector.close();
      },
      error: fail,
    });
    const down = new StreamResampler(48_000, 16_000);
    const audio = [new Int16Array(leadMs * 48), question48k, new Int16Array(3000 * 48)];
    for (const part of audio) for (let i = 0; i < part.length; i += 960) detector.push(down.push(part.subarray(i, i + 960)));
  });
  const backendsMs = latencies.transcriptionMs + latencies.firstTokenMs + latencies.firstAudioMs;
  const voiceEnd = leadMs + speechMs;
  const ready = result.pausedAt !== undefined ? Math.max(result.stoppedAt, result.pausedAt + backendsMs) : result.stoppedAt + backendsMs;
  return { idealMs: ready - voiceEnd, turnEndMs: result.stoppedAt - voiceEnd, pauseMs };
}
