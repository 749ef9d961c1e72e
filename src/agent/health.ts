// What a speech engine reports about itself: a readiness source of /readyz like any other part.
export type { Health as EngineHealth, HealthState as EngineState } from '../observability/readiness.js';
