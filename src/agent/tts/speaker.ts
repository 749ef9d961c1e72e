// A reply's voice: text deltas in (push/end), audio out as an async stream of SpokenChunk. The text
// is cut into clauses (clauses.ts); each clause is synthesised as soon as it is complete, the next
// overlapping the current one's delivery, and the audio comes out in clause order whichever
// finishes first. Aborting the signal (or leaving the loop early) stops every synthesis.
import type { SpanParent } from '../../observability/tracing.js';
import { ClauseSplitter, speakableText } from './clauses.js';
import type { SpeechEngine, SpokenChunk } from './types.js';

export interface SpeakerOptions {
  /** The catalogue voice. */
  voice: string;
  /** Cancels the reply: syntheses stop and the stream ends. */
  signal: AbortSignal;
  /** Clauses synthesised at once, counting the one being delivered. */
  lookahead?: number;
  /** Where the spans of requests to a speech service go. */
  trace?: SpanParent;
}

/** A sample this loud (about −40 dBFS) is where a clause's voice begins. */
const AUDIBLE = 320;
/** Kept before it, so the onset is not clipped (10 ms at 48 kHz). */
const LEAD_IN_SAMPLES = 480;

/** Index of the first sample at or above the audible level, −1 when there is none. */
export function firstAudibleSample(pcm: Int16Array): number {
  for (let i = 0; i < pcm.length; i++) if (pcm[i]! >= AUDIBLE || pcm[i]! <= -AUDIBLE) return i;
  return -1;
}

/** A clause's synthesis could not be done; the reply's speech stops there. */
export class SpeechSynthesisError extends Error {
  constructor(
    readonly clause: string,
    cause: Error,
  ) {
    super(`speech synthesis failed: ${cause.message}`, { cause });
  }
}

interface Job {
  text: string;
  chunks: Int16Array[];
  started: boolean;
  done: boolean;
  error?: Error;
}

export class Speaker implements AsyncIterable<SpokenChunk> {
  private readonly splitter = new ClauseSplitter();
  private readonly jobs: Job[] = [];
  /** Index of the job being delivered. */
  private current = 0;
  private ended = false;
  private readonly abort = new AbortController();
  private wake: (() => void) | undefined;
  private readonly lookahead: number;

  constructor(
    private readonly engine: SpeechEngine,
    private readonly options: SpeakerOptions,
  ) {
    this.lookahead = Math.max(1, options.lookahead ?? 2);
    if (options.signal.aborted) this.abort.abort();
    else options.signal.addEventListener('abort', () => this.stop(), { once: true });
  }

  /** More of the reply's text. */
  push(delta: string): void {
    if (this.ended) throw new Error('Speaker.push after end()');
    this.add(this.splitter.push(delta));
  }

  /** The reply's text is complete. */
  end(): void {
    if (this.ended) return;
    this.add(this.splitter.end());
    this.ended = true;
    this.notify();
  }

  private add(clauses: string[]): void {
    for (const text of clauses) this.jobs.push({ text, chunks: [], started: false, done: false });
    this.startJobs();
  }

  private startJobs(): void {
    const limit = Math.min(this.jobs.length, this.current + this.lookahead);
    for (let i = this.current; i < limit; i++) {
      const job = this.jobs[i]!;
      if (!job.started && !this.abort.signal.aborted) void this.run(job);
    }
  }

  private async run(job: Job): Promise<void> {
    job.started = true;
    // Engines start a clause with silence (flite: ≈ 230 ms); it would only delay the voice.
    let voiced = false;
    try {
      for await (const chunk of this.engine.synthesize(speakableText(job.text), this.options.voice, this.abort.signal, this.options.trace)) {
        if (this.abort.signal.aborted) break;
        let pcm = chunk;
        if (!voiced) {
          const onset = firstAudibleSample(pcm);
          if (onset < 0) continue;
          voiced = true;
          pcm = pcm.subarray(Math.max(0, onset - LEAD_IN_SAMPLES));
        }
        if (pcm.length) job.chunks.push(pcm);
        this.notify();
      }
    } catch (err) {
      if (!this.abort.signal.aborted) job.error = new SpeechSynthesisError(job.text, err as Error);
    }
    job.done = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private stop(): void {
    this.abort.abort();
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SpokenChunk> {
    /** Text of clauses that produced no audio, carried to the next chunk that has some. */
    let unspoken = '';
    let firstOfClause = true;
    try {
      for (;;) {
        if (this.abort.signal.aborted) return;
        const job = this.jobs[this.current];
        if (job?.chunks.length) {
          const pcm = job.chunks.shift()!;
          yield { text: firstOfClause ? unspoken + job.text : '', pcm };
          if (firstOfClause) unspoken = '';
          firstOfClause = false;
          continue;
        }
        if (job?.error) throw job.error;
        if (job?.done) {
          if (firstOfClause) unspoken += job.text;
          firstOfClause = true;
          this.current++;
          this.startJobs();
          continue;
        }
        if (!job && this.ended) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      // Done, failed, or the consumer left early: nothing more is synthesised.
      this.stop();
    }
  }
}
