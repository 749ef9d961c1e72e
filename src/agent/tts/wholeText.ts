// An adapter from an engine that only speaks whole texts (one call, all the audio at the end) to a
// streaming SpeechEngine: the text is cut into sentences, the next is synthesised while the current
// one is handed out, and each sentence's audio is one chunk. (The Speaker hands it one clause at a
// time, which stays whole.)
import type { EngineHealth } from '../health.js';
import { SENTENCES, splitClauses } from './clauses.js';
import type { SpeechEngine } from './types.js';

/** Speaks one short text (a clause) with `voice`, 48 kHz mono; rejects when `signal` aborts. */
type WholeTextSynthesis = (text: string, voice: string, signal: AbortSignal) => Promise<Int16Array>;

export function wholeTextEngine(name: string, synthesizeWhole: WholeTextSynthesis, health: () => EngineHealth): SpeechEngine {
  return {
    name,
    health,
    async *synthesize(text, voice, signal) {
      const clauses = splitClauses(text, SENTENCES);
      const start = (i: number) => {
        const pcm = synthesizeWhole(clauses[i]!, voice, signal);
        // Awaited in turn below; this keeps an early failure from being reported as unhandled meanwhile.
        pcm.catch(() => {});
        return pcm;
      };
      let next = clauses.length ? start(0) : undefined;
      for (let i = 0; next; i++) {
        const current = next;
        next = i + 1 < clauses.length ? start(i + 1) : undefined;
        const pcm = await current;
        if (pcm.length) yield pcm;
      }
    },
  };
}
