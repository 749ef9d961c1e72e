// Per-user backoff of wrong SIP digest passwords, whatever the source address (a guesser spreads
// its tries over many): after `maxFailures` wrong passwords in a row a user is refused for 30 s,
// twice as long after each further wrong one, up to 30 minutes; the right password once the wait
// is over starts the count over. Kept for configured users only (made-up names cost no state), in
// this process (each node, each worker).

const FIRST_WAIT_MS = 30_000;
const LONGEST_WAIT_MS = 30 * 60_000;

interface Failures {
  /** Wrong passwords in a row. */
  count: number;
  lastAt: number;
  /** Refused until then. */
  until: number;
}

export class AuthBackoff {
  private readonly users = new Map<string, Failures>();

  /** `maxFailures` 0: no backoff. */
  constructor(private readonly maxFailures: number) {}

  /** How long `user` must still wait before a password of theirs is checked again (ms; 0: none). */
  waitFor(user: string, now = Date.now()): number {
    const failures = this.users.get(user);
    return failures ? Math.max(0, failures.until - now) : 0;
  }

  failed(user: string, now = Date.now()): void {
    if (this.maxFailures === 0) return;
    const previous = this.users.get(user);
    // Wrong passwords further apart than the longest wait are not a run of guesses.
    const count = previous && now - previous.lastAt <= LONGEST_WAIT_MS ? previous.count + 1 : 1;
    const over = count - this.maxFailures;
    const until = over >= 0 ? now + Math.min(FIRST_WAIT_MS * 2 ** over, LONGEST_WAIT_MS) : 0;
    this.users.set(user, { count, lastAt: now, until });
  }

  succeeded(user: string): void {
    this.users.delete(user);
  }
}
