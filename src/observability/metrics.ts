// Prometheus metrics for operators (GET /metrics): calls, their outcomes, answer latency, tokens,
// call sessions still in memory, ICE candidates refused.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { LiveObjects } from './liveObjects.js';

export class Metrics {
  readonly registry = new Registry();
  readonly activeCalls = new Gauge({ name: 'parley_active_calls', help: 'Calls this node carries now', registers: [this.registry] });
  readonly callsEnded = new Counter({
    name: 'parley_calls_ended_total',
    help: 'Calls ended, by final state and reason',
    labelNames: ['state', 'reason'] as const,
    registers: [this.registry],
  });
  readonly answerSeconds = new Histogram({
    name: 'parley_offer_to_answer_seconds',
    help: 'Time from a calls request to its SDP answer',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly tokensIssued = new Counter({ name: 'parley_tokens_issued_total', help: 'Ephemeral tokens minted', registers: [this.registry] });
  /** CallSession objects not yet garbage-collected: returns to 0 once calls end (a leak never does). */
  readonly callSessions = new LiveObjects();
  readonly callSessionsAlive: Gauge = new Gauge({
    name: 'parley_call_sessions_alive',
    help: 'CallSession objects still in memory (forces a full GC first when the process runs with --expose-gc)',
    registers: [this.registry],
    collect: async (): Promise<void> => this.callSessionsAlive.set(await this.callSessions.alive()),
  });
  readonly iceCandidatesDropped = new Counter({
    name: 'parley_ice_candidates_dropped_total',
    help: "Remote ICE candidates (offer.candidates or the SDP's a=candidate lines) refused by the candidate filter, by reason",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'parley_' });
  }
}
