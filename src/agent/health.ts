// What a speech engine reports about itself, for /readyz and the logs.
export type EngineState = 'starting' | 'ready' | 'degraded' | 'failed';

export interface EngineHealth {
  state: EngineState;
  /** Why it is not ready, in words an operator can act on. */
  detail?: string;
}
