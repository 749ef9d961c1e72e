// Picks the agent behind a call from params.model: each catalogue model runs one engine.
import { MODELS } from '../session/catalog.js';
import type { Agent, AgentContext, AgentFactory } from './types.js';
import type { SessionParams } from '../session/params.js';

/** Answers every turn with an error event: an engine the operator has not made available. */
class UnavailableAgent implements Agent {
  constructor(
    private readonly ctx: AgentContext,
    private readonly engine: string,
  ) {
    ctx.emit({ type: 'error', error: { type: 'server_error', code: 'model_unavailable', message: `The ${engine} engine is not available on this server.`, param: null } });
  }
  onAudio(): void {}
  onUserText(): void {
    this.ctx.emit({ type: 'error', error: { type: 'server_error', code: 'model_unavailable', message: `The ${this.engine} engine is not available on this server.`, param: null } });
  }
  onParamsUpdate(): void {}
  cancel(): void {}
  close(): void {}
}

export class AgentRegistry {
  private readonly engines = new Map<string, AgentFactory>();

  /** `defaultEngine` is what the catalogue's `default` (orga-1-beta) runs. */
  constructor(readonly defaultEngine: string) {}

  register(engine: string, factory: AgentFactory): this {
    this.engines.set(engine, factory);
    return this;
  }

  factoryFor(params: SessionParams): AgentFactory {
    const engine = this.engineOf(params.model);
    return this.engines.get(engine) ?? { create: (ctx) => new UnavailableAgent(ctx, engine) };
  }

  engineOf(model: string): string {
    const runs = MODELS.find((m) => m.id === model)?.runs ?? model;
    return runs === 'default' ? this.defaultEngine : runs;
  }
}
