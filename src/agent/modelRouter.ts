// The catalogue's models at run time: which agent runs the model a call asks for, which keys may
// use it, and a circuit breaker per model that passes a failing one over for its fallbacks.
import { findModel, keyMayUse, type ModelCatalogue, type ModelEntry } from '../config/models.js';
import { SAMPLE_RATE } from '../media/audio/format.js';
import type { Metrics } from '../observability/metrics.js';
import type { EngineHealth } from './health.js';
import type { Agent, AgentContext, AgentFactory, ModelChoice, ModelChooser, Refusal } from './types.js';

const unavailable = (model: string) => ({ code: 'model_unavailable', message: `The model ${model} is not available on this server.` });

/** Answers every request with an error: a model that cannot run here (its engines are not installed). */
class UnavailableAgent implements Agent {
  readonly inputSampleRate = SAMPLE_RATE;
  constructor(
    ctx: AgentContext,
    private readonly model: string,
  ) {
    ctx.emit({ type: 'error', kind: 'server_error', ...unavailable(model) });
  }
  onAudio(): void {}
  onSessionUpdate(): void {}
  createResponse(): Refusal {
    return { ok: false, ...unavailable(this.model) };
  }
  cancelResponse(): boolean {
    return false;
  }
  clearOutputAudio(): void {}
  commitInput(): Refusal {
    return { ok: false, ...unavailable(this.model) };
  }
  clearInput(): void {}
  close(): void {}
}

export interface BreakerOptions {
  /** Failures within `cooldownMs` that open the breaker. */
  failures: number;
  /** How long an open breaker passes the model over (and how far back failures count). */
  cooldownMs: number;
}

interface ModelState {
  failedAt: number[];
  openUntil: number;
  lastError?: string;
}

export class ModelRouter implements ModelChooser {
  private readonly factories = new Map<string, AgentFactory | undefined>();
  private readonly states = new Map<string, ModelState>();

  constructor(
    readonly catalogue: ModelCatalogue,
    /** The factory of the agents that run an entry; undefined when it cannot run on this node. */
    factoryOf: (entry: ModelEntry) => AgentFactory | undefined,
    private readonly breaker: BreakerOptions,
    private readonly metrics?: Metrics,
    private readonly now: () => number = Date.now,
  ) {
    for (const entry of catalogue.entries) this.factories.set(entry.id, factoryOf(entry));
  }

  /** The entry a name runs: its own, or the default's for a name the catalogue does not know. */
  entryFor(name: string): ModelEntry {
    return findModel(this.catalogue, name) ?? findModel(this.catalogue, this.catalogue.default)!;
  }

  /** Whether `name` is an id or alias of the catalogue (the Orga protocol refuses others; OpenAI's run the default). */
  knows(name: string): boolean {
    return findModel(this.catalogue, name) !== undefined;
  }

  /** Whether the key may use the model `name` stands for. */
  allows(name: string, apiKeyId: string): boolean {
    return keyMayUse(this.entryFor(name), apiKeyId);
  }

  /** The models a key may use, in the catalogue's order. */
  listFor(apiKeyId: string): ModelEntry[] {
    return this.catalogue.entries.filter((e) => keyMayUse(e, apiKeyId));
  }

  private isOpen(id: string): boolean {
    return (this.states.get(id)?.openUntil ?? 0) > this.now();
  }

  private runnable(id: string, exclude?: ReadonlySet<string>): boolean {
    return this.factories.get(id) !== undefined && !this.isOpen(id) && !exclude?.has(id);
  }

  choose(name: string, exclude?: ReadonlySet<string>): ModelChoice | undefined {
    const entry = this.entryFor(name);
    if (this.runnable(entry.id, exclude)) return { id: entry.id, factory: this.factories.get(entry.id)! };
    const next = this.fallbackAfter(entry.id, exclude ?? new Set());
    if (next) this.metrics?.modelFallbacks.inc({ model: entry.id, to: next.id });
    return next;
  }

  forced(name: string): ModelChoice {
    const entry = this.entryFor(name);
    return { id: entry.id, factory: this.factories.get(entry.id) ?? { create: (ctx) => new UnavailableAgent(ctx, entry.id) } };
  }

  fallbackAfter(id: string, exclude: ReadonlySet<string>): ModelChoice | undefined {
    const seen = new Set<string>([id]);
    const visit = (entryId: string): ModelChoice | undefined => {
      const entry = findModel(this.catalogue, entryId);
      for (const name of entry?.fallback ?? []) {
        const next = this.entryFor(name);
        if (seen.has(next.id)) continue;
        seen.add(next.id);
        if (this.runnable(next.id, exclude)) return { id: next.id, factory: this.factories.get(next.id)! };
        const deeper = visit(next.id);
        if (deeper) return deeper;
      }
      return undefined;
    };
    const next = visit(id);
    return next;
  }

  /** Whether a call asking for `name` can start: its model or a fallback can run. */
  available(name: string): boolean {
    return this.choose(name) !== undefined;
  }

  failed(id: string, code = 'model_failed'): void {
    const now = this.now();
    const state = this.states.get(id) ?? { failedAt: [], openUntil: 0 };
    this.states.set(id, state);
    state.failedAt = [...state.failedAt.filter((t) => t > now - this.breaker.cooldownMs), now];
    state.lastError = code;
    this.metrics?.modelFailures.inc({ model: id, code });
    if (state.failedAt.length >= this.breaker.failures && state.openUntil <= now) {
      state.openUntil = now + this.breaker.cooldownMs;
      state.failedAt = [];
      this.metrics?.modelBreakerOpen.set({ model: id }, 1);
      setTimeout(() => this.metrics?.modelBreakerOpen.set({ model: id }, 0), this.breaker.cooldownMs).unref();
    }
  }

  /** A fallback took a call over from `id`. */
  fellBack(id: string, to: string): void {
    this.metrics?.modelFallbacks.inc({ model: id, to });
  }

  /** Each model's state for /readyz: degraded while its breaker is open, failed when it cannot run here. */
  health(): Record<string, EngineHealth> {
    const out: Record<string, EngineHealth> = {};
    for (const entry of this.catalogue.entries) {
      const state = this.states.get(entry.id);
      if (this.factories.get(entry.id) === undefined) out[entry.id] = { state: 'failed', detail: 'its engines are not available on this node' };
      else if (this.isOpen(entry.id)) out[entry.id] = { state: 'degraded', detail: `passed over for ${Math.ceil((state!.openUntil - this.now()) / 1000)} s after repeated failures (last: ${state!.lastError})` };
      else out[entry.id] = { state: 'ready', detail: state?.failedAt.length ? `${state.failedAt.length} recent failure(s) (last: ${state.lastError})` : 'ready' };
    }
    return out;
  }
}
