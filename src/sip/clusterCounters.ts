// The SIP door's counts under PARLEY_WORKERS are the node's, not each worker's: a caller's
// messages reach every worker (each Call-ID picks one, clusterRelay.ts), so counted per worker its
// limits would be as many times as high. The primary keeps them — the wrong-password backoff of
// each address (authBackoff.ts), and without Redis the rate limits (RATE_LIMIT_SIP_*, in a
// MemoryRateLimitStore, as a process of its own counts them; with Redis the workers count there,
// across nodes) — and each worker asks it over the cluster's IPC. A question the primary leaves
// unanswered (it never should) is answered from the worker's own memory.
import type { Worker } from 'node:cluster';
import { MemoryRateLimitStore } from '../storage/memoryRateLimits.js';
import type { RateDecision, RateLimitStore } from '../storage/rateLimits.js';
import { AuthBackoff, type AttemptVerdict, type AuthAttempts } from './authBackoff.js';

type Question =
  | { kind: 'sip-count'; id: number; hit: { scope: string; subject: string; limit: number; windowMs: number } }
  | { kind: 'sip-count'; id: number; attempt: { source: string; passwordRight: boolean } };
type Answer = { kind: 'sip-counted'; id: number; decision?: RateDecision; verdict?: AttemptVerdict };

/** How long a worker waits for the primary's answer before it counts in its own memory instead. */
const ANSWER_TIMEOUT_MS = 2000;

/** The primary's side: the node's counts, answering its workers. */
export class SipCounters {
  private readonly limits = new MemoryRateLimitStore();
  private readonly backoff: AuthBackoff;

  constructor(authMaxFailures: number) {
    this.backoff = new AuthBackoff(authMaxFailures);
  }

  /** Answers `worker`'s questions (each worker, and each one started in a dead one's place). */
  attach(worker: Worker): void {
    worker.on('message', (message: Question) => {
      if (message?.kind !== 'sip-count') return;
      const answer: Answer =
        'hit' in message
          ? { kind: 'sip-counted', id: message.id, decision: this.limits.hit(message.hit.scope, message.hit.subject, message.hit.limit, message.hit.windowMs) }
          : { kind: 'sip-counted', id: message.id, verdict: this.backoff.attempt(message.attempt.source, message.attempt.passwordRight) };
      if (worker.isConnected()) worker.send(answer);
    });
  }

  close(): Promise<void> {
    return this.limits.close();
  }
}

/** A worker's side: the rate-limit store and wrong-password counts its SIP door uses, kept by the primary. */
export class RelayedCounters implements RateLimitStore, AuthAttempts {
  private next = 0;
  private readonly waiting = new Map<number, (answer: Answer | undefined) => void>();
  private readonly ownLimits = new MemoryRateLimitStore();
  private readonly ownBackoff: AuthBackoff;
  private readonly handler = (message: Answer) => {
    if (message?.kind === 'sip-counted') this.waiting.get(message.id)?.(message);
  };

  constructor(authMaxFailures: number) {
    this.ownBackoff = new AuthBackoff(authMaxFailures);
    process.on('message', this.handler);
  }

  async hit(scope: string, subject: string, limit: number, windowMs: number): Promise<RateDecision> {
    const answer = await this.ask((id) => ({ kind: 'sip-count', id, hit: { scope, subject, limit, windowMs } }));
    return answer?.decision ?? this.ownLimits.hit(scope, subject, limit, windowMs);
  }

  async attempt(source: string, passwordRight: boolean): Promise<AttemptVerdict> {
    const answer = await this.ask((id) => ({ kind: 'sip-count', id, attempt: { source, passwordRight } }));
    return answer?.verdict ?? this.ownBackoff.attempt(source, passwordRight);
  }

  async close(): Promise<void> {
    process.off('message', this.handler);
    for (const answered of this.waiting.values()) answered(undefined);
    await this.ownLimits.close();
  }

  private ask(question: (id: number) => Question): Promise<Answer | undefined> {
    if (!process.connected) return Promise.resolve(undefined);
    const id = ++this.next;
    return new Promise((resolve) => {
      const timer = setTimeout(() => answered(undefined), ANSWER_TIMEOUT_MS);
      const answered = (answer: Answer | undefined) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(answer);
      };
      this.waiting.set(id, answered);
      process.send!(question(id));
    });
  }
}
