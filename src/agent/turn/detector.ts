// The caller's turns from their audio: 16 kHz frames (the rate the voice agent declares; the
// transport converts at its edge) are cut into the VAD's windows, judged in order (the VAD may answer asynchronously) and run
// through the endpointing policy; the listener hears the onset with its prefix padding, the turn's
// audio and its end. Times are ms of the caller's audio since the first frame pushed.
import { levelDb } from '../../media/audio/level.js';
import { EndpointingPolicy, ONSET_MS, type EndpointingPolicyOptions } from './endpointing.js';
import type { EndpointingOptions, TurnDetector, TurnListener, Vad } from './types.js';

export type TurnDetectorOptions = EndpointingOptions & Partial<Pick<EndpointingPolicyOptions, 'maxTurnMs'>>;

/** A turn longer than this is ended anyway, unless the options say otherwise. */
const MAX_TURN_MS = 30_000;

const RATE_KHZ = 16;

interface Window {
  pcm: Int16Array;
  /** Index of its first sample among all 16 kHz samples of the call. */
  start: number;
}

export function createTurnDetector(vad: Vad, options: TurnDetectorOptions, listener: TurnListener): TurnDetector {
  const policy = new EndpointingPolicy({ maxTurnMs: MAX_TURN_MS, ...options });
  const size = vad.windowSamples;
  /** 16 kHz samples not yet making a whole window. */
  let partial = new Int16Array(size);
  let partialLength = 0;
  /** 16 kHz samples received since the first frame (the audio clock). */
  let received = 0;
  const queue: Window[] = [];
  /** Windows before the onset, kept for the prefix padding. */
  let recent: Window[] = [];
  let busy = false;
  let closed = false;
  /** Bumped by reset(): a probability computed before it is dropped. */
  let generation = 0;
  /** True while the VAD fails, so one failure streak is reported once. */
  let failing = false;

  const keepRecent = () => {
    const keep = (policy.settings.prefixPaddingMs + ONSET_MS) * RATE_KHZ + 2 * size;
    let total = recent.reduce((n, w) => n + w.pcm.length, 0);
    while (recent.length > 1 && total - recent[0]!.pcm.length >= keep) total -= recent.shift()!.pcm.length;
  };

  /** `p` undefined: the VAD failed on the window, which counts as silence and tells nothing of the room. */
  const judge = (w: Window, p: number | undefined) => {
    const wasInTurn = policy.inTurn;
    const event = policy.step(p ?? 0, w.start / RATE_KHZ, w.pcm.length / RATE_KHZ, p === undefined ? undefined : levelDb(w.pcm));
    if (wasInTurn) {
      listener.speech(w.pcm);
      if (event?.type === 'stop') listener.speechStopped(Math.round(event.endMs), Math.round(event.speechEndMs));
      else if (event?.type === 'pause') listener.speechPaused?.(Math.round(event.silenceStartMs));
      else if (event?.type === 'resume') listener.speechResumed?.();
      return;
    }
    recent.push(w);
    if (event?.type !== 'start') {
      keepRecent();
      return;
    }
    const onset = event.onsetMs * RATE_KHZ;
    const from = Math.max(recent[0]!.start, onset - policy.settings.prefixPaddingMs * RATE_KHZ);
    const preroll = concat(recent.filter((x) => x.start < onset)).subarray(from - recent[0]!.start);
    const onsetWindows = recent.filter((x) => x.start >= onset);
    recent = [];
    listener.speechStarted(Math.round(from / RATE_KHZ), preroll);
    for (const x of onsetWindows) listener.speech(x.pcm);
  };

  const failed = (err: unknown) => {
    if (!failing) listener.error(err instanceof Error ? err : new Error(String(err)));
    failing = true;
  };

  const drain = () => {
    while (!busy && !closed && queue.length) {
      const w = queue.shift()!;
      let p: number | Promise<number | undefined>;
      try {
        p = vad.probability(w.pcm);
      } catch (err) {
        p = Promise.reject(err);
      }
      if (typeof p === 'number') {
        failing = false;
        judge(w, p);
        continue;
      }
      busy = true;
      const asOf = generation;
      void p
        .then(
          (v) => {
            failing = false;
            return v;
          },
          (err) => {
            // The window counts as silence: a failing VAD ends a turn rather than holding it open.
            failed(err);
            return undefined;
          },
        )
        .then((v) => {
          busy = false;
          if (closed) return vad.close();
          try {
            if (asOf === generation) judge(w, v);
          } catch (err) {
            // Nobody awaits this chain: a listener's exception would otherwise end the process.
            listener.error(err as Error);
          }
          drain();
        });
    }
  };

  return {
    push(pcm) {
      if (closed) return;
      for (let i = 0; i < pcm.length; ) {
        const n = Math.min(size - partialLength, pcm.length - i);
        partial.set(pcm.subarray(i, i + n), partialLength);
        partialLength += n;
        i += n;
        if (partialLength === size) {
          queue.push({ pcm: partial, start: received + i - size });
          partial = new Int16Array(size);
          partialLength = 0;
        }
      }
      received += pcm.length;
      drain();
    },
    configure(update) {
      policy.configure(update);
    },
    reset() {
      generation++;
      policy.reset();
      queue.length = 0;
      recent = [];
      // The next window starts at the next sample received.
      partialLength = 0;
    },
    close() {
      if (closed) return;
      closed = true;
      queue.length = 0;
      // A VAD still judging a window is closed when it answers.
      if (!busy) vad.close();
    },
  };
}

function concat(windows: Window[]): Int16Array {
  const out = new Int16Array(windows.reduce((n, w) => n + w.pcm.length, 0));
  let at = 0;
  for (const w of windows) {
    out.set(w.pcm, at);
    at += w.pcm.length;
  }
  return out;
}
