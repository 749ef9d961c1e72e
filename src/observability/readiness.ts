// /readyz: named readiness checks that the parts of a node plug in (database, Redis, TURN, speech
// engines, the node's own shutdown). The node is ready while none of them is starting or failed.
export const HEALTH_STATES = ['starting', 'ready', 'degraded', 'failed'] as const;
export type HealthState = (typeof HEALTH_STATES)[number];

export interface Health {
  state: HealthState;
  /** Why it is not ready, in words an operator can act on (never a secret). */
  detail?: string;
}

/** Anything that can say how it is: a speech engine, a store, a TURN prober. */
export interface HealthSource {
  health(): Health | Promise<Health>;
}

export interface Readiness {
  ready: boolean;
  checks: Record<string, Health>;
}

/** A check that has not answered by then counts as failed (a hung dependency is not a ready one). */
const CHECK_TIMEOUT_MS = 2000;

export class ReadinessChecks {
  private readonly sources = new Map<string, HealthSource>();

  /** Adds (or replaces) the check `name`. */
  register(name: string, source: HealthSource | (() => Health | Promise<Health>)): void {
    this.sources.set(name, typeof source === 'function' ? { health: source } : source);
  }

  async evaluate(timeoutMs = CHECK_TIMEOUT_MS): Promise<Readiness> {
    const entries = await Promise.all([...this.sources].map(async ([name, source]) => [name, await bounded(source, timeoutMs)] as const));
    const checks = Object.fromEntries(entries);
    // Degraded still serves; a node is out only while something is starting or has failed.
    return { ready: entries.every(([, h]) => h.state === 'ready' || h.state === 'degraded'), checks };
  }
}

async function bounded(source: HealthSource, timeoutMs: number): Promise<Health> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Health>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'failed', detail: `no answer within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => source.health()), timeout]);
  } catch (err) {
    return { state: 'failed', detail: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}
