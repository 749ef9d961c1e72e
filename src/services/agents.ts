// The agents (the model catalogue, the speech engines, realtime upstreams) and their readiness.
import type { Config } from '../config/env.js';
import { createAgents } from '../agent/agents.js';
import type { EngineHealth } from '../agent/health.js';
import { realtimeAgents } from '../agent/realtime/bridge.js';
import type { Metrics } from '../observability/metrics.js';
import type { Health, ReadinessChecks } from '../observability/readiness.js';
import type { OutboundGuard } from '../system/outboundRequest.js';
import type { Teardown } from '../system/teardown.js';
import type { Log } from './types.js';

export type AgentsPart = ReturnType<typeof createAgents>;

export function startAgents(config: Config, deps: { metrics: Metrics; mcpGuard: OutboundGuard; log: Log }, teardown: Teardown): AgentsPart {
  const { metrics, mcpGuard, log } = deps;
  const agents = createAgents(config, log, { metrics, mcpGuard, realtime: realtimeAgents(config, log, metrics) });
  teardown.add('agents', () => agents.close());
  return agents;
}

/** /readyz's checks of the speech engines and the models. */
export function registerAgentReadiness(readiness: ReadinessChecks, agents: AgentsPart): void {
  readiness.register('speech', () => speechReadiness(agents.health()));
  readiness.register('models', () => modelsReadiness(agents.models.health()));
}

/** Degraded while a model is passed over (its calls go to its fallback); a model that cannot run here is named. */
function modelsReadiness(models: Record<string, EngineHealth>): Health {
  const troubled = Object.entries(models).filter(([, h]) => h.state !== 'ready');
  if (!troubled.length) return { state: 'ready' };
  return { state: 'degraded', detail: troubled.map(([id, h]) => `${id}: ${h.detail ?? h.state}`).join('; ') };
}

/** The speech engines, the worst first: the voice agent needs them all. */
function speechReadiness(engines: Record<string, EngineHealth>): Health {
  const entries = Object.entries(engines);
  if (!entries.length) return { state: 'failed', detail: 'speech engines unavailable: run scripts/setup.sh --runtime' };
  const order: EngineHealth['state'][] = ['failed', 'starting', 'degraded', 'ready'];
  const worst = order.find((state) => entries.some(([, h]) => h.state === state)) ?? 'ready';
  const detail = entries.filter(([, h]) => h.state !== 'ready').map(([stage, h]) => `${stage}: ${h.state}${h.detail ? ` (${h.detail})` : ''}`).join('; ');
  return { state: worst, ...(detail ? { detail } : {}) };
}
