// Polls until a condition holds, failing with the last value seen.
import { setTimeout as sleep } from 'node:timers/promises';

export async function until<T>(what: string, fn: () => Promise<T> | T, ok: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  // Soon at first (most conditions hold within milliseconds), then every 100 ms.
  let pauseMs = 5;
  for (let v = await fn(); ; v = await fn()) {
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await sleep(pauseMs);
    pauseMs = Math.min(100, pauseMs * 2);
  }
}
