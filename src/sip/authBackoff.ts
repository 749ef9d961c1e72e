// The backoff of a source address that sends wrong SIP digest passwords (for any user, or for
// names that are no user's): after `maxFailures` wrong ones in a row the address is refused for
// 30 s, twice as long after each further wrong one, up to 30 minutes; the right password once the
// wait is over starts its count over. The address that guesses waits, not the account: a guesser
// elsewhere cannot lock a user's own phone out. Bounded: past MAX_SOURCES addresses the one heard
// from longest ago is forgotten. Kept in one place per node: the process, or under PARLEY_WORKERS
// the primary, which the workers ask (clusterCounters.ts).

const FIRST_WAIT_MS = 30_000;
const LONGEST_WAIT_MS = 30 * 60_000;
/** Addresses with wrong passwords remembered at most (about 100 bytes each). */
const MAX_SOURCES = 100_000;

/** What an answer to our challenge gets: its password checked and right, checked and wrong, or not checked (its address waits). */
export type AttemptVerdict = 'admitted' | 'wrong' | 'backoff';

/** Where a node's wrong passwords are counted (this process, or the workers' primary). */
export interface AuthAttempts {
  /** Counts an answer from `source` whose password was right or not, and says what it gets. */
  attempt(source: string, passwordRight: boolean): AttemptVerdict | Promise<AttemptVerdict>;
}

interface Failures {
  /** Wrong passwords in a row. */
  count: number;
  lastAt: number;
  /** Refused until then. */
  until: number;
}

export class AuthBackoff implements AuthAttempts {
  /** By address, the one heard from longest ago first. */
  private readonly sources = new Map<string, Failures>();

  /** `maxFailures` 0: no backoff. */
  constructor(
    private readonly maxFailures: number,
    private readonly maxSources = MAX_SOURCES,
  ) {}

  attempt(source: string, passwordRight: boolean, now = Date.now()): AttemptVerdict {
    if (this.waitFor(source, now) > 0) return 'backoff';
    if (passwordRight) {
      this.sources.delete(source);
      return 'admitted';
    }
    this.failed(source, now);
    return 'wrong';
  }

  /** How long `source` must still wait before a password of its is checked again (ms; 0: none). */
  waitFor(source: string, now = Date.now()): number {
    const failures = this.sources.get(source);
    return failures ? Math.max(0, failures.until - now) : 0;
  }

  private failed(source: string, now: number): void {
    if (this.maxFailures === 0) return;
    const previous = this.sources.get(source);
    // Wrong passwords further apart than the longest wait are not a run of guesses.
    const count = previous && now - previous.lastAt <= LONGEST_WAIT_MS ? previous.count + 1 : 1;
    const over = count - this.maxFailures;
    const until = over >= 0 ? now + Math.min(FIRST_WAIT_MS * 2 ** over, LONGEST_WAIT_MS) : 0;
    this.sources.delete(source);
    this.sources.set(source, { count, lastAt: now, until });
    for (const oldest of this.sources.keys()) {
      if (this.sources.size <= this.maxSources) break;
      this.sources.delete(oldest);
    }
  }
}
