// Hosts a call's agent: builds its context, swaps it when the session moves to a model another
// factory runs, and hands the call to the model's fallback when the model fails (the conversation
// stays with the call, so nothing said is forgotten); closes it.
import type { Agent, AgentContext, ModelChoice, ModelChooser } from '../agent/types.js';

export class AgentHost {
  private choice: ModelChoice;
  private current: Agent;
  /** The model name the session asked for when the current agent was chosen. */
  private requested: string;
  /** The models this call has failed on: a fallback never goes back to one. */
  private readonly failed = new Set<string>();
  /** Which agent's context is the current one: a replaced agent's late failure is not the current model's. */
  private generation = 0;

  constructor(
    private readonly ctx: Omit<AgentContext, 'modelFailed'>,
    private readonly models: ModelChooser,
    /** Told each agent that takes the call (the first, after a model switch, after a fallback). */
    private readonly took: (agent: Agent) => void,
    /** No model can go on with the call: it ends with this reason. */
    private readonly noModelLeft: (reason: string) => void,
  ) {
    this.requested = ctx.session().model;
    // The door checked that the model (or a fallback) is available; a breaker that opened since
    // leaves the last resort: the model as asked.
    this.choice = models.choose(this.requested) ?? models.forced(this.requested);
    this.current = this.start(this.choice);
  }

  private start(choice: ModelChoice): Agent {
    const generation = ++this.generation;
    const agent = choice.factory.create({ ...this.ctx, modelFailed: (failure) => generation === this.generation && this.modelFailed(failure) });
    this.took(agent);
    return agent;
  }

  get agent(): Agent {
    return this.current;
  }

  /** The catalogue id of the model running the call now. */
  get model(): string {
    return this.choice.id;
  }

  /** The session changed: the same agent follows it, or another model's agent takes over. */
  sessionChanged(): void {
    const session = this.ctx.session();
    if (session.model === this.requested) return this.current.onSessionUpdate(session);
    const next = this.models.choose(session.model, this.failed);
    this.requested = session.model;
    if (!next || next.factory === this.choice.factory) {
      if (next) this.choice = next;
      return this.current.onSessionUpdate(session);
    }
    this.swap(next);
  }

  private modelFailed(failure: { code: string; message: string }): void {
    const failedId = this.choice.id;
    if (this.failed.has(failedId)) return;
    this.failed.add(failedId);
    this.models.failed(failedId, failure.code);
    const next = this.models.fallbackAfter(failedId, this.failed);
    const message = next ? `${failure.message} The call goes on with ${next.id}.` : `${failure.message} No other model can take the call over.`;
    this.ctx.emit({ type: 'error', kind: 'server_error', code: failure.code, message });
    if (!next) return this.noModelLeft('model_unavailable');
    this.models.fellBack(failedId, next.id);
    this.swap(next);
  }

  private swap(next: ModelChoice): void {
    this.current.close();
    this.choice = next;
    this.current = this.start(next);
  }

  close(): void {
    this.current.close();
  }
}
