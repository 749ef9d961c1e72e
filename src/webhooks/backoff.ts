// When a failed delivery is tried again: exponential backoff with full jitter (a random delay up to
// the exponential bound, so receivers coming back are not hit by every sender at once), capped, for
// at least a day after the event, then the delivery is given up (failed).

/** How long an event is retried, from its creation. */
export const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** The bound of the first retry's delay. */
const FIRST_RETRY_BOUND_MS = 1000;

/** The delay before attempt `attempts + 1`, after `attempts` failed ones; `random` in [0, 1). */
export function retryDelayMs(attempts: number, capMs: number, random: () => number = Math.random): number {
  const bound = Math.min(capMs, FIRST_RETRY_BOUND_MS * 2 ** Math.min(attempts - 1, 40));
  return Math.floor(random() * bound);
}

/** When to try again, or null when the retry window has passed: the delivery is failed. */
export function nextAttemptAt(createdAtMs: number, attempts: number, capMs: number, now = Date.now(), random: () => number = Math.random): number | null {
  const at = now + retryDelayMs(attempts, capMs, random);
  // The last attempt may fall after the window's end; none starts beyond it.
  return now - createdAtMs >= RETRY_WINDOW_MS ? null : at;
}
