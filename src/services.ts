// Wires the parts of a Parley node together from its configuration: each area's starter
// (src/services/) opens its part, registering its close with the teardown, in the order below.
import type { FastifyBaseLogger } from 'fastify';
import type { ApiKeyCache } from './auth/keyCache.js';
import { NodeAuth } from './auth/nodeAuth.js';
import type { Store } from './auth/store.js';
import type { TokenService } from './auth/tokens.js';
import type { ModelRouter } from './agent/modelRouter.js';
import type { Admission } from './calls/admission.js';
import type { CallManager } from './calls/callManager.js';
import type { NodeDirectory } from './calls/nodeDirectory.js';
import { Placement } from './calls/placement.js';
import type { WebRtcTransports } from './calls/webrtc/webrtcTransports.js';
import type { Config } from './config/env.js';
import type { IceServerEntry } from './ice/iceConfig.js';
import type { TurnService } from './ice/turnService.js';
import { Metrics } from './observability/metrics.js';
import { ReadinessChecks } from './observability/readiness.js';
import { startTracing } from './observability/tracing.js';
import type { Recordings } from './recordings/recordings.js';
import type { SessionDefaults } from './session/session.js';
import { SipDialerSlot } from './sip/dialer.js';
import type { SipRouting } from './sip/routing.js';
import { databaseHealth } from './storage/db.js';
import { NodeStore, VERSION, loadOrCreateNodeId } from './storage/nodes.js';
import { Teardown } from './system/teardown.js';
import type { WebhookStores } from './webhooks/stores.js';
import { startAccess, startRevocations } from './services/access.js';
import { registerAgentReadiness, startAgents } from './services/agents.js';
import { sessionDefaultsOf, startAdmission, startCalls } from './services/calls.js';
import { startCluster } from './services/cluster.js';
import { iceServersOf, startStun, startTurn, turnReadiness, type NodeRole } from './services/ice.js';
import { startLoad } from './services/load.js';
import { startStore } from './services/store.js';
import { outboundOf, startWebhooks } from './services/webhooks.js';

export type { NodeRole } from './services/ice.js';

export interface Services extends Store, WebhookStores {
  config: Config;
  keyCache: ApiKeyCache;
  tokens: TokenService;
  calls: CallManager;
  /** Ringing SIP calls waiting for the app's accept, reject or refer. */
  sipRouting: SipRouting;
  /** Outbound phone calls, once the SIP door listens (SIP_PORT). */
  sipDialer: SipDialerSlot;
  /** WebRTC transports for the calls routes' offers. */
  webrtc: WebRtcTransports;
  /** Who may open another call (node, half-open, per-key and per-token limits). */
  admission: Admission;
  /** The catalogue's models: who may use which, what runs each, their breakers. */
  models: ModelRouter;
  /** Session defaults from the configuration (turn detection). */
  sessionDefaults: SessionDefaults;
  /**
   * ice-config's body for a token of key `apiKeyId`: STUN, and the TURN servers that answer with
   * fresh credentials, which live no longer than the token plus a call's maximum duration.
   */
  iceServers(token: { jti: string; exp: number }, apiKeyId: string): IceServerEntry[];
  /** The TURN servers and their last checks (health() is for GET /readyz). */
  turn: TurnService;
  metrics: Metrics;
  /** Which calls are recorded and where their files are. */
  recordings: Recordings;
  /** /readyz: other parts register their checks here (TURN, speech engines…). */
  readiness: ReadinessChecks;
  nodeId: string;
  /** Signs the requests this node passes to the others, and checks those its node-to-node listener takes. */
  nodeAuth: NodeAuth;
  /** The other nodes (and workers) calls can be passed to. */
  nodeDirectory: NodeDirectory;
  /** Where a call goes that this node takes no more: every door's way to the other nodes. */
  placement: Placement;
  /**
   * Records where this node's node-to-node listener is, so the others can pass it requests, and
   * the port its HTTP server got (neither receives webhooks).
   */
  announce(url: string, httpPort: number): Promise<void>;
  /** Records where this node's SIP door listens for callers (host:port), so that other nodes can redirect INVITEs here. */
  announceSip(address: string): Promise<void>;
  close(): Promise<void>;
}

export async function createServices(config: Config, log: FastifyBaseLogger, role: NodeRole = {}): Promise<Services> {
  // Each part registers its close as it is opened: a start that fails part-way closes what it had
  // opened, and close() closes everything, the same way (newest first).
  const teardown = new Teardown(log);
  try {
    return await startServices(config, log, role, teardown);
  } catch (err) {
    await teardown.close();
    throw err;
  }
}

async function startServices(config: Config, log: FastifyBaseLogger, role: NodeRole, teardown: Teardown): Promise<Services> {
  // First, so a taken STUN port stops the start before anything else is opened.
  const stun = await startStun(config, { log }, teardown);
  const store = await startStore(config, { log }, teardown);
  const metrics = new Metrics();
  const ice = await startTurn(config, { turnSecrets: store.turnSecrets, metrics, log, role }, teardown);
  const readiness = new ReadinessChecks();
  metrics.watchReadiness(readiness);
  readiness.register('database', databaseHealth(store.database));
  const load = startLoad(config, { metrics, readiness, log }, teardown);
  const access = startAccess(config, { store, log }, teardown);
  if (config.REDIS_URL) readiness.register('redis', store.bus);
  const nodeStore = new NodeStore(store.db);
  const outbound = outboundOf(config, nodeStore);
  const agents = startAgents(config, { metrics, mcpGuard: outbound.guard, log }, teardown);
  const sessionDefaults = sessionDefaultsOf(config);
  const nodeId = loadOrCreateNodeId(config.DATA_DIR, config.NODE_ID);
  // Traces (when configured): closed after the calls and the webhook dispatcher that make spans,
  // so a shutdown exports their last spans.
  const tracing = startTracing(config, log, { nodeId, version: VERSION });
  if (tracing.enabled) {
    teardown.add('traces', () => tracing.shutdown());
    log.info({ sampler: config.OTEL_TRACES_SAMPLER }, 'traces exported over OTLP/HTTP');
  }
  const admission = await startAdmission(config, { load, metrics, nodeId, log }, teardown);
  const webhooks = await startWebhooks(config, { store, guard: outbound.guard, metrics, log, trace: tracing.root }, teardown);
  const { calls, recordings, sipRouting, webrtc } = startCalls(
    config,
    { store, models: agents.models, sessionDefaults, admission, webhooks, load, metrics, nodeId, traceRoot: tracing.root, log },
    teardown,
  );
  startRevocations(config, { store, calls, turnKeys: ice.turnKeys, keyRevoked: access.keyRevoked, log }, teardown);
  const cluster = await startCluster(config, { store, nodeStore, nodeId, calls, load, webhooks, outbound, log }, teardown);
  readiness.register('node', () => (calls.isDraining ? { state: 'failed', detail: 'shutting down' } : { state: 'ready' }));
  readiness.register('turn', () => turnReadiness(ice.turn.health()));
  registerAgentReadiness(readiness, agents);
  return {
    ...store,
    config,
    keyCache: access.keyCache,
    tokens: access.tokens,
    calls,
    sipRouting,
    sipDialer: new SipDialerSlot(),
    webrtc,
    admission,
    metrics,
    recordings,
    readiness,
    nodeId,
    nodeAuth: new NodeAuth(nodeId, store.pepper),
    nodeDirectory: cluster.nodeDirectory,
    placement: new Placement(cluster.nodeDirectory, admission, metrics),
    announce: cluster.announce,
    announceSip: cluster.announceSip,
    models: agents.models,
    sessionDefaults,
    turn: ice.turn,
    iceServers: iceServersOf(config, { stun, ...ice, turnSecrets: store.turnSecrets }),
    close: () => teardown.close(),
  };
}
