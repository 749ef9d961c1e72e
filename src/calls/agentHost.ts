// Hosts a call's agent: builds its context, swaps it when the session moves to a model another
// factory runs (the conversation stays with the call, so nothing said is forgotten), and closes it.
import type { Agent, AgentContext, AgentFactory } from '../agent/types.js';

export class AgentHost {
  private factory: AgentFactory;
  private current: Agent;

  constructor(
    private readonly ctx: AgentContext,
    private readonly agentFor: (model: string) => AgentFactory,
    /** Told each agent that takes the call (the first, and each after a model switch). */
    private readonly took: (agent: Agent) => void = () => {},
  ) {
    this.factory = agentFor(ctx.session().model);
    this.current = this.factory.create(ctx);
    took(this.current);
  }

  get agent(): Agent {
    return this.current;
  }

  /** The session changed: the same agent follows it, or another model's agent takes over. */
  sessionChanged(): void {
    const session = this.ctx.session();
    const factory = this.agentFor(session.model);
    if (factory === this.factory) return this.current.onSessionUpdate(session);
    this.current.close();
    this.factory = factory;
    this.current = factory.create(this.ctx);
    this.took(this.current);
  }

  close(): void {
    this.current.close();
  }
}
