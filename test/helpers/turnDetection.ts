// The turn detector as the tests drive it: a detector recording what its listener hears, 48 kHz
// test audio pushed in frames as the transport converts it, and a run that waits for an
// asynchronous VAD to judge every window (test/unit/speech-turn-detector.test.ts, test/engines/vad.test.ts).
import { createTurnDetector, type TurnDetectorOptions } from '../../src/agent/turn/detector.ts';
import type { TurnDetector, Vad } from '../../src/agent/turn/types.ts';
import { downsample48kTo16k } from '../../src/media/audio/resample.ts';
import { frames } from './pcm.ts';
import { until } from './wait.ts';

export const options: TurnDetectorOptions = { threshold: 0.5, prefixPaddingMs: 300, silenceMs: 300 };

export type Event =
  | { type: 'started'; audioStartMs: number; preroll: Int16Array }
  | { type: 'stopped'; audioEndMs: number }
  | { type: 'error'; message: string };

/** A detector recording what its listener hears: events, and the turn's audio (preroll + speech). */
export function record(vad: Vad, opts: TurnDetectorOptions = options) {
  const events: Event[] = [];
  const audio: Int16Array[][] = [];
  const detector = createTurnDetector(vad, opts, {
    speechStarted: (audioStartMs, preroll) => {
      events.push({ type: 'started', audioStartMs, preroll });
      audio.push([preroll]);
    },
    speech: (pcm) => audio.at(-1)!.push(pcm),
    speechStopped: (audioEndMs) => events.push({ type: 'stopped', audioEndMs }),
    error: (err) => events.push({ type: 'error', message: err.message }),
  });
  const summary = () => events.map((e) => (e.type === 'started' ? `started@${e.audioStartMs}` : e.type === 'stopped' ? `stopped@${e.audioEndMs}` : `error:${e.message}`));
  return { detector, events, audio, summary };
}

export function pushAll(detector: TurnDetector, pcm: Int16Array, frameMs: number): void {
  // The call delivers the voice agent 16 kHz audio (converted at the transport's edge).
  for (const f of frames(pcm, frameMs)) detector.push(downsample48kTo16k(f));
}

/** `vad`, counting the windows it has judged (to wait for an asynchronous VAD to catch up). */
export function counting(vad: Vad): Vad & { judged: number } {
  const out = {
    windowSamples: vad.windowSamples,
    judged: 0,
    async probability(window: Int16Array) {
      const p = await vad.probability(window);
      out.judged++;
      return p;
    },
    close: () => vad.close(),
  };
  return out;
}

/** Feeds `pcm` in 20 ms frames through a detector on `vad` and waits until every window is judged. */
export async function detect(vad: Vad, pcm: Int16Array, opts: TurnDetectorOptions = options) {
  const counted = counting(vad);
  const r = record(counted, opts);
  pushAll(r.detector, pcm, 20);
  await until('every window judged', () => counted.judged, (n) => n === Math.floor(pcm.length / 3 / vad.windowSamples));
  r.detector.close();
  return r;
}
