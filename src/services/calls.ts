// The calls: who may open one (admission, counted across the nodes), recordings, the call manager,
// and what the doors place calls with (SIP routing, WebRTC transports).
import { join } from 'node:path';
import type { Config } from '../config/env.js';
import { modelNames } from '../config/models.js';
import type { Store } from '../auth/store.js';
import { endpointingDefaults } from '../agent/providers.js';
import type { ModelRouter } from '../agent/modelRouter.js';
import { Admission } from '../calls/admission.js';
import { CallManager } from '../calls/callManager.js';
import { openAiProtocol } from '../calls/protocol/openai.js';
import { AZURE_PREVIEW_EVENTS, betaDialect } from '../calls/protocol/openaiBeta.js';
import { orgaProtocol } from '../calls/protocol/orga.js';
import { CandidateFilter, ownMediaAddresses } from '../calls/webrtc/candidateFilter.js';
import { WebRtcTransports } from '../calls/webrtc/webrtcTransports.js';
import type { Metrics } from '../observability/metrics.js';
import type { SpanParent } from '../observability/tracing.js';
import { Recordings } from '../recordings/recordings.js';
import type { SessionDefaults } from '../session/session.js';
import { SipRouting } from '../sip/routing.js';
import { RedisKeyCallCounts } from '../storage/keyCallCounts.js';
import type { Teardown } from '../system/teardown.js';
import { CallWebhooks } from '../webhooks/callWebhooks.js';
import { realtimeCallIncomingData } from '../webhooks/payloads.js';
import type { WebhookPublisher } from '../webhooks/publisher.js';
import { peersOf } from './ice.js';
import type { LoadPart } from './load.js';
import type { Log } from './types.js';

export function sessionDefaultsOf(config: Config): SessionDefaults {
  return {
    turnDetection: { type: 'server_vad', ...endpointingDefaults(config), idleTimeoutMs: null, createResponse: true, interruptResponse: true },
    noiseReduction: config.NOISE_REDUCTION === 'off' ? null : config.NOISE_REDUCTION,
  };
}

/** Who may open another call (node, half-open, per-key and per-token limits); each key's calls counted across the nodes (Redis), renewed at the heartbeat's pace. */
export async function startAdmission(config: Config, deps: { load: LoadPart; metrics: Metrics; nodeId: string; log: Log }, teardown: Teardown): Promise<Admission> {
  const { load, metrics, nodeId, log } = deps;
  const keyCalls = config.REDIS_URL ? new RedisKeyCallCounts(config.REDIS_URL, nodeId, config.NODE_LOST_AFTER_MS, log) : undefined;
  const admission = new Admission(
    {
      maxCalls: config.MAX_CONCURRENT_CALLS,
      maxHalfOpen: config.MAX_HALF_OPEN_CALLS,
      maxCallsPerKey: config.MAX_CALLS_PER_KEY,
      maxHalfOpenPerKey: config.MAX_HALF_OPEN_CALLS_PER_KEY,
      maxCallsPerToken: config.MAX_CALLS_PER_TOKEN,
      ownHalfOpen: { sip: config.SIP_MAX_HALF_OPEN_CALLS },
      loadRefusesAlone: config.LOAD_THRESHOLD !== undefined,
    },
    (counts) => metrics.halfOpenCalls.set(counts.halfOpen),
    () => load.nodeLoad.overloaded,
    keyCalls,
  );
  load.countCalls(() => admission.counts.calls);
  if (keyCalls) {
    await keyCalls.start(() => admission.callsByKey, config.NODE_HEARTBEAT_MS);
    teardown.add('calls per key across the nodes', () => keyCalls.close());
  }
  return admission;
}

export interface CallsPart {
  calls: CallManager;
  recordings: Recordings;
  sipRouting: SipRouting;
  webrtc: WebRtcTransports;
}

export function startCalls(
  config: Config,
  deps: {
    store: Store;
    models: ModelRouter;
    sessionDefaults: SessionDefaults;
    admission: Admission;
    webhooks: WebhookPublisher;
    load: LoadPart;
    metrics: Metrics;
    nodeId: string;
    traceRoot: SpanParent | undefined;
    log: Log;
  },
  teardown: Teardown,
): CallsPart {
  const { store, models, sessionDefaults, admission, webhooks, load, metrics, nodeId, traceRoot, log } = deps;
  const recordings = new Recordings(
    {
      byDefault: config.RECORDING === 'on',
      dir: config.RECORDING_DIR ?? join(config.DATA_DIR, 'recordings'),
      retentionDays: config.RECORDING_RETENTION_DAYS,
      maxBytes: config.RECORDING_MAX_BYTES,
      minFreeBytes: config.RECORDING_MIN_FREE_BYTES,
    },
    (apiKeyId) => store.apiKeys.recordingOf(apiKeyId),
    log,
  );
  recordings.startRetention();
  teardown.add('recordings retention and disk guard', () => recordings.stop());
  const calls = new CallManager({
    conversations: store.conversations,
    models,
    protocols: { orga: orgaProtocol(modelNames(config.MODELS)), openai: openAiProtocol(sessionDefaults), 'openai-beta': betaDialect(openAiProtocol(sessionDefaults)),
      'openai-azure': betaDialect(openAiProtocol(sessionDefaults), AZURE_PREVIEW_EVENTS),
    },
    timeouts: {
      connectTimeoutMs: config.CALL_CONNECT_TIMEOUT_MS,
      idleTimeoutMs: config.CALL_IDLE_TIMEOUT_MS,
      maxDurationMs: config.CALL_MAX_DURATION_MS,
      reconnectGraceMs: config.CALL_RECONNECT_GRACE_MS,
    },
    rates: { messagesPerSecond: config.CALL_EVENTS_PER_SECOND, repliesPerSecond: config.CALL_REPLIES_PER_SECOND, sidebands: config.MAX_SIDEBANDS_PER_CALL },
    nodeId,
    log,
    metrics,
    admission,
    observers: [() => new CallWebhooks(webhooks, log)],
    recordings,
    ...(traceRoot ? { traceRoot } : {}),
  });
  const sipRouting = new SipRouting({
    announce: async (call) => (await webhooks.publish(call.apiKeyId, 'realtime.call.incoming', realtimeCallIncomingData(call))) !== undefined,
    timeoutMs: config.SIP_ROUTING_TIMEOUT_MS,
    defaultRoute: config.SIP_DEFAULT_ROUTE,
    routed: (decision, by) => metrics.sipRouting.inc({ decision, by }),
  });
  const webrtc = new WebRtcTransports({
    peers: peersOf(config, store.turnSecrets),
    candidates: new CandidateFilter({
      allow: config.ICE_CANDIDATE_ALLOW,
      deny: config.ICE_CANDIDATE_DENY,
      ownAddresses: ownMediaAddresses(config.ICE_BIND_ADDRESS),
    }),
    metrics,
    log,
    opusComplexity: () => load.encoderComplexity.current,
  });
  return { calls, recordings, sipRouting, webrtc };
}
