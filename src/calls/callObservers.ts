// What a node does as its calls move on, beside the calls themselves: logs and metrics (each call's
// quality and usage at its end among them), as observers of each call (the record is one too:
// callRecord.ts).
import type { FastifyBaseLogger } from 'fastify';
import type { Metrics } from '../observability/metrics.js';
import type { Session } from '../session/session.js';
import type { CallObserver } from './call.js';
import type { CallFigures } from './callFigures.js';

export function callLog(log: FastifyBaseLogger): CallObserver {
  return {
    connected: (call) => log.info({ conversation: call.id, transport: call.transportKind, ...call.trace.logFields }, 'call connected'),
    event: (call, event) => {
      if (event.type !== 'stage.failed') return;
      const fields = { conversation: call.id, stage: event.stage, code: event.code, err: event.cause ?? event.message, ...call.trace.logFields };
      if (event.recoverable) log.warn(fields, 'call stage failed');
      else log.error(fields, 'call stage failed; the call ends');
    },
    ended: (call) => log.info({ conversation: call.id, state: call.state, reason: call.endReason, ...(call.wireOutcome ? { wire: call.wireOutcome } : {}), ...call.figures(), ...call.trace.logFields }, 'call ended'),
  };
}

/** One call's metrics (one observer per call). */
export function callMetrics(metrics: Metrics): CallObserver {
  /** The noise suppression this call is counted under while connected. */
  let suppression: string | undefined;
  const countSuppression = (session: Session | undefined) => {
    if (suppression !== undefined) metrics.noiseReductionCalls.dec({ type: suppression });
    suppression = session ? (session.noiseReduction ?? 'off') : undefined;
    if (suppression !== undefined) metrics.noiseReductionCalls.inc({ type: suppression });
  };
  return {
    connected: (call) => {
      if (suppression === undefined) countSuppression(call.session());
    },
    sessionChanged: (_call, session) => {
      if (suppression !== undefined) countSuppression(session);
    },
    event: (_call, event) => {
      if (event.type === 'stage.failed') metrics.stageFailures.inc({ stage: event.stage });
    },
    videoFrame: () => metrics.videoFramesReceived.inc(),
    ended: (call) => {
      countSuppression(undefined);
      const transport = call.transportKind;
      metrics.callsEnded.inc({ state: call.state, reason: call.endReason ?? 'unknown', transport });
      observeFigures(metrics, transport, call.figures());
    },
  };
}

/** A call's figures into the quality histograms and usage counters; what its wire cannot measure is left out. */
function observeFigures(metrics: Metrics, transport: string, { usage, quality }: CallFigures): void {
  metrics.callAudioSeconds.inc({ direction: 'caller', transport }, usage.caller_audio_s);
  metrics.callAudioSeconds.inc({ direction: 'agent', transport }, usage.agent_audio_s);
  metrics.callModelTokens.inc({ kind: 'input' }, usage.input_tokens);
  metrics.callModelTokens.inc({ kind: 'output' }, usage.output_tokens);
  if (!quality) return;
  metrics.callTimeToConnectedSeconds.observe({ transport }, quality.time_to_connected_ms / 1000);
  if (quality.inbound.loss_pct !== null) metrics.callPacketLoss.observe({ transport }, quality.inbound.loss_pct / 100);
  if (quality.inbound.jitter_p95_ms !== null) metrics.callJitterSeconds.observe({ transport }, quality.inbound.jitter_p95_ms / 1000);
  if (quality.rtt_ms.p95 !== null) metrics.callRttSeconds.observe({ transport }, quality.rtt_ms.p95 / 1000);
}
