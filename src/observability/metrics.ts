// Prometheus metrics for operators (GET /metrics): calls, their outcomes, answer latency, tokens, TURN.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  readonly turnUp = new Gauge({
    name: 'parley_turn_up',
    help: 'Whether a TURN server answered its last check (an allocation); 0 leaves it out of ice-config',
    labelNames: ['url'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'parley_' });
  }
}
