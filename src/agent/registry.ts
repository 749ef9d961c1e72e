// Picks the agent behind a call from the session's model: each catalogue model runs one engine;
// any other name (the OpenAI protocol passes whatever the app asks for) runs the operator's default.
import { SAMPLE_RATE } from '../media/audio/format.js';
import { MODELS } from '../session/catalog.js';
import type { Agent, AgentContext, AgentFactory, Refusal } from './types.js';

const unavailable = (engine: string) => ({ code: 'model_unavailable', message: `The ${engine} engine is not available on this server.` });

/** Answers every reply with an error event: an engine the operator has not made available. */
class UnavailableAgent implements Agent {
  readonly inputSampleRate = SAMPLE_RATE;
  constructor(
    private readonly ctx: AgentContext,
    private readonly engine: string,
  ) {
    ctx.emit({ type: 'error', kind: 'server_error', ...unavailable(engine) });
  }
  onAudio(): void {}
  onSessionUpdate(): void {}
  createResponse(): Refusal {
    return { ok: false, ...unavailable(this.engine) };
  }
  cancelResponse(): boolean {
    return false;
  }
  clearOutputAudio(): void {}
  commitInput(): Refusal {
    return { ok: false, ...unavailable(this.engine) };
  }
  clearInput(): void {}
  close(): void {}
}

export class AgentRegistry {
  private readonly engines = new Map<string, AgentFactory>();

  /** `defaultEngine` is what the catalogue's `default` (orga-1-beta) and unknown names run. */
  constructor(readonly defaultEngine: string) {}

  register(engine: string, factory: AgentFactory): this {
    this.engines.set(engine, factory);
    return this;
  }

  /** The same factory for every model an engine runs, so a call changes agents only when its engine's factory changes. */
  factoryFor(model: string): AgentFactory {
    const engine = this.engineOf(model);
    let factory = this.engines.get(engine);
    if (!factory) this.engines.set(engine, (factory = { create: (ctx) => new UnavailableAgent(ctx, engine) }));
    return factory;
  }

  engineOf(model: string): string {
    const runs = MODELS.find((m) => m.id === model)?.runs ?? 'default';
    return runs === 'default' ? this.defaultEngine : runs;
  }
}
