// Wires the parts of a Parley node together from its configuration.
import { modelNames } from './config/models.js';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { ApiKeyCache } from './auth/keyCache.js';
import { NodeAuth } from './auth/nodeAuth.js';
import { openStore, type Store } from './auth/store.js';
import { TokenService } from './auth/tokens.js';
import { createAgents } from './agent/agents.js';
import { realtimeAgents } from './agent/realtime/bridge.js';
import type { EngineHealth } from './agent/health.js';
import { endpointingDefaults } from './agent/providers.js';
import type { ModelRouter } from './agent/modelRouter.js';
import { Admission } from './calls/admission.js';
import { CallManager } from './calls/callManager.js';
import { RevocationWatcher } from './calls/revocationWatcher.js';
import { SipDialerSlot } from './sip/dialer.js';
import { SipRouting } from './sip/routing.js';
import { NodeDirectory } from './calls/nodeDirectory.js';
import { Placement } from './calls/placement.js';
import { CandidateFilter, ownMediaAddresses } from './calls/webrtc/candidateFilter.js';
import { WebRtcTransports } from './calls/webrtc/webrtcTransports.js';
import { Metrics } from './observability/metrics.js';
import { EventLoopWatch } from './observability/eventLoop.js';
import { DEFAULT_LOAD_THRESHOLD, NodeLoad } from './observability/nodeLoad.js';
import { EncoderComplexity } from './media/encoderComplexity.js';
import { ReadinessChecks, type Health } from './observability/readiness.js';
import { startTracing, type SpanParent } from './observability/tracing.js';
import { libDataChannelFactory } from './calls/webrtc/peer/libdatachannel.js';
import { weriftFactory } from './calls/webrtc/peer/werift.js';
import type { PeerFactory } from './calls/webrtc/peer/types.js';
import type { Config } from './config/env.js';
import { buildIceServers, type IceServerEntry } from './ice/iceConfig.js';
import { serverIceServers } from './ice/serverIceServers.js';
import { embeddedStunUrl, startStunServer, stunUrlsOfTurnServers, type StunServer } from './ice/stunServer.js';
import { openAiProtocol } from './calls/protocol/openai.js';
import { AZURE_PREVIEW_EVENTS, betaDialect } from './calls/protocol/openaiBeta.js';
import { orgaProtocol } from './calls/protocol/orga.js';
import type { SessionDefaults } from './session/session.js';
import { TurnKeySecrets } from './ice/turnKeySecrets.js';
import { TurnService, type TurnHealth } from './ice/turnService.js';
import type { Listener } from './system/outboundPolicy.js';
import { OutboundRefused, type OutboundGuard } from './system/outboundRequest.js';
import { StartupError } from './system/startupError.js';
import { Teardown } from './system/teardown.js';
import { databaseHealth } from './storage/db.js';
import { RedisKeyCallCounts, type KeyCallCounts } from './storage/keyCallCounts.js';
import { NodeLiveness } from './storage/nodeLiveness.js';
import { NodeStore, VERSION, loadOrCreateNodeId } from './storage/nodes.js';
import { CallWebhooks } from './webhooks/callWebhooks.js';
import { checkWebhookUrl, configuredHttpListener, webhookGuard } from './webhooks/destinations.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { lostCallData, realtimeCallIncomingData } from './webhooks/payloads.js';
import { WebhookPublisher } from './webhooks/publisher.js';
import { webhookStoresOf, type WebhookStores } from './webhooks/stores.js';
import { Recordings } from './recordings/recordings.js';

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

function sessionDefaultsOf(config: Config): SessionDefaults {
  return {
    turnDetection: { type: 'server_vad', ...endpointingDefaults(config), idleTimeoutMs: null, createResponse: true, interruptResponse: true },
    noiseReduction: config.NOISE_REDUCTION === 'off' ? null : config.NOISE_REDUCTION,
  };
}

export interface NodeRole {
  /** A worker whose primary process runs Parley's coturn (on TURN_PORT): this one only checks it. */
  coturnRunsElsewhere?: boolean;
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
  const stun: StunServer | undefined = config.STUN_ENABLED
    ? await startStunServer({ host: config.STUN_BIND || config.HOST, port: config.STUN_PORT })
    : undefined;
  if (stun) {
    teardown.add('STUN server', () => stun.close());
    log.info({ stun: stun.address }, 'embedded STUN server listening');
  }
  const opened = await openStore(config, log);
  teardown.add('database', () => opened.db.destroy());
  const store = { ...opened, ...webhookStoresOf(opened, config) };
  teardown.add('Redis bus', () => store.bus.close());
  const metrics = new Metrics();
  const turn = await TurnService.start(config, store.turnSecrets, log, (url, up) => metrics.turnUp.set({ url }, up ? 1 : 0), role);
  teardown.add('TURN service', () => turn.close());
  // Parley's own coturn takes a secret per API key, so a revoked key's credentials stop at once.
  const turnKeys = turn.health().managed
    ? new TurnKeySecrets(join(config.DATA_DIR, 'coturn', 'turndb'), store.turnSecrets[0]!, config.TURN_REALM, config.TURN_CREDENTIAL_TTL_SECONDS)
    : undefined;
  if (turnKeys) teardown.add('TURN key secrets', () => turnKeys.close());
  const readiness = new ReadinessChecks();
  metrics.watchReadiness(readiness);
  readiness.register('database', databaseHealth(store.database));
  const eventLoop = new EventLoopWatch(config.EVENT_LOOP_LAG_DEGRADED_MS, metrics.eventLoopLag);
  teardown.add('event loop watch', () => eventLoop.stop());
  readiness.register('event_loop', eventLoop);
  // The node's load: the encoders give up complexity as it rises, and above LOAD_THRESHOLD the node
  // takes no new calls (admission) while other nodes are offered them (the heartbeat's load).
  // Unset, the threshold steers calls to other nodes but refuses none that no other node takes.
  const loadThreshold = config.LOAD_THRESHOLD ?? DEFAULT_LOAD_THRESHOLD;
  const encoderComplexity = new EncoderComplexity({ max: config.OPUS_COMPLEXITY, min: config.OPUS_MIN_COMPLEXITY, threshold: loadThreshold });
  metrics.loadThreshold.set(loadThreshold);
  metrics.maxConcurrentCalls.set(config.MAX_CONCURRENT_CALLS);
  metrics.opusComplexity.set(encoderComplexity.current);
  /** Tells the other nodes at once when this one stops or starts taking calls (set once it heartbeats). */
  let loadTurned = () => {};
  let wasAccepting = true;
  /** The node's calls, for the load's projection (admission counts them, once it exists). */
  let callsNow = () => 0;
  const nodeLoad: NodeLoad = new NodeLoad({
    threshold: loadThreshold,
    operatorSet: config.LOAD_THRESHOLD !== undefined,
    calls: () => callsNow(),
    loopLagMs: () => eventLoop.worstDelayMs,
    onSample: (load) => {
      metrics.nodeLoad.set(load);
      metrics.opusComplexity.set(encoderComplexity.observe(load));
      const accepting = nodeLoad.overloaded === undefined;
      if (accepting !== wasAccepting) {
        wasAccepting = accepting;
        log.warn({ load: Number(load.toFixed(2)), threshold: loadThreshold }, accepting ? 'load back under the threshold: taking new calls again' : 'load above the threshold: new calls go to other nodes');
        loadTurned();
      }
    },
  });
  teardown.add('node load', () => nodeLoad.stop());
  readiness.register('load', nodeLoad);
  const keyCache = new ApiKeyCache(store.apiKeys, config.KEY_CACHE_TTL_MS, config.KEY_CACHE_STALE_MS, store.database.availability);
  keyCache.start();
  teardown.add('API key cache', () => keyCache.stop());
  // Set once the calls exist (below); notices are only delivered after Redis answers.
  let revocations: RevocationWatcher | undefined;
  followKeyChanges(store, keyCache, (id) => revocations?.keyRevoked(id), log, teardown);
  if (config.REDIS_URL) readiness.register('redis', store.bus);
  const tokens = new TokenService(store.signingKeys, {
    issuer: config.TOKEN_ISSUER,
    audience: config.TOKEN_AUDIENCE,
    ttlSeconds: config.TOKEN_TTL_SECONDS,
  });
  const nodeStore = new NodeStore(store.db);
  // Where requests to URLs a user chose may go (webhooks, a session's MCP servers): Parley's own
  // listeners are among what they may not reach, this node's HTTP port once it is known.
  let httpListener: Listener | undefined = configuredHttpListener(config);
  const outboundGuard = webhookGuard(config, nodeStore, () => httpListener);
  const agents = createAgents(config, log, { metrics, mcpGuard: outboundGuard, realtime: realtimeAgents(config, log, metrics) });
  teardown.add('agents', () => agents.close());
  const sessionDefaults = sessionDefaultsOf(config);
  const nodeId = loadOrCreateNodeId(config.DATA_DIR, config.NODE_ID);
  // Traces (when configured): closed after the calls and the webhook dispatcher that make spans,
  // so a shutdown exports their last spans.
  const tracing = startTracing(config, log, { nodeId, version: VERSION });
  if (tracing.enabled) {
    teardown.add('traces', () => tracing.shutdown());
    log.info({ sampler: config.OTEL_TRACES_SAMPLER }, 'traces exported over OTLP/HTTP');
  }
  // Each key's calls counted across the nodes (Redis), renewed at the heartbeat's pace.
  const keyCalls = config.REDIS_URL ? new RedisKeyCallCounts(config.REDIS_URL, nodeId, config.NODE_LOST_AFTER_MS, log) : undefined;
  const admission = admissionOf(config, metrics, () => nodeLoad.overloaded, keyCalls);
  callsNow = () => admission.counts.calls;
  if (keyCalls) {
    await keyCalls.start(() => admission.callsByKey, config.NODE_HEARTBEAT_MS);
    teardown.add('calls per key across the nodes', () => keyCalls.close());
  }
  const webhookPublisher = await startWebhooks(config, store, outboundGuard, metrics, log, teardown, tracing.root);
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
    models: agents.models,
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
    observers: [() => new CallWebhooks(webhookPublisher, log)],
    recordings,
    ...(tracing.root ? { traceRoot: tracing.root } : {}),
  });
  const sipRouting = new SipRouting({
    announce: async (call) => (await webhookPublisher.publish(call.apiKeyId, 'realtime.call.incoming', realtimeCallIncomingData(call))) !== undefined,
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
    opusComplexity: () => encoderComplexity.current,
  });
  const watcher = new RevocationWatcher({
    liveCalls: () => calls.liveCalls(),
    ...(turnKeys ? { otherKeys: () => turnKeys.keys(), onRevoked: (id: string) => turnKeys.revoke(id) } : {}),
    revokedAmong: (ids) => store.apiKeys.revokedAmong(ids),
    // Bounded below: KEY_CACHE_TTL_MS=0 (no cache) must not mean a query per tick.
    pollMs: Math.max(500, config.KEY_CACHE_TTL_MS),
    log,
  });
  revocations = watcher;
  watcher.start();
  teardown.add('revocation watcher', () => watcher.stop());
  let nodeUrl: string | null = null;
  let sipAddress: string | null = null;
  const liveness = new NodeLiveness(
    nodeStore,
    store.conversations,
    store.database.availability,
    {
      nodeId,
      heartbeatMs: config.NODE_HEARTBEAT_MS,
      lostAfterMs: config.NODE_LOST_AFTER_MS,
      facts: () => ({ url: nodeUrl, calls: calls.activeCount, max_calls: config.MAX_CONCURRENT_CALLS, load: nodeLoad.value, accepting: nodeLoad.overloaded === undefined ? 1 : 0, sip_address: sipAddress, media_address: config.ICE_PUBLIC_IP ?? config.ICE_BIND_ADDRESS ?? null }),
      // A call lost with its node never told its end: the node that records it failed does.
      lost: async (lostCalls) => {
        for (const call of lostCalls) await webhookPublisher.publish(call.apiKeyId, 'call.failed', lostCallData(call));
      },
    },
    log,
  );
  await liveness.start();
  teardown.add('node liveness', () => liveness.stop());
  loadTurned = () => void liveness.heartbeatNow().catch(() => {});
  // Offered calls only while its heartbeats are recent: a node killed a moment ago is not.
  const nodeDirectory = new NodeDirectory(nodeStore, { selfId: nodeId, freshForMs: Math.min(config.NODE_LOST_AFTER_MS, 3 * config.NODE_HEARTBEAT_MS) });
  readiness.register('node', () => (calls.isDraining ? { state: 'failed', detail: 'shutting down' } : { state: 'ready' }));
  readiness.register('turn', () => turnReadiness(turn.health()));
  readiness.register('speech', () => speechReadiness(agents.health()));
  readiness.register('models', () => modelsReadiness(agents.models.health()));
  return {
    ...store,
    config,
    keyCache,
    tokens,
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
    nodeDirectory,
    placement: new Placement(nodeDirectory, admission, metrics),
    async announce(url, httpPort) {
      nodeUrl = url;
      httpListener = { host: config.HOST, port: httpPort };
      await liveness.heartbeatNow();
    },
    async announceSip(address) {
      sipAddress = address;
      await liveness.heartbeatNow();
    },
    models: agents.models,
    sessionDefaults,
    turn,
    iceServers: iceServersOf(config, { stun, turn, turnKeys, turnSecrets: store.turnSecrets }),
    close: () => teardown.close(),
  };
}

/**
 * Keeps the key cache and the signing keys current: notices from the other nodes and the CLI
 * (Redis), and a reload of the signing keys every second, Redis or not (a small table; a notice
 * only makes it sooner).
 */
function followKeyChanges(store: Store, keyCache: ApiKeyCache, keyRevoked: (id: string) => void, log: FastifyBaseLogger, teardown: Teardown): void {
  const reloadSigningKeys = () => void store.signingKeys.reload().catch(() => {});
  store.bus.subscribe(
    (message) => {
      if (message.kind === 'key-revoked') {
        keyCache.invalidate();
        keyRevoked(message.id);
      } else reloadSigningKeys();
    },
    () => {
      // Back after a Redis outage: notices sent meanwhile are lost, so start over from the store.
      log.info('Redis reachable again: key caches reloaded');
      keyCache.invalidate();
      reloadSigningKeys();
    },
  );
  const reloadTimer = setInterval(reloadSigningKeys, 1000);
  reloadTimer.unref();
  teardown.add('signing key reload', () => clearInterval(reloadTimer));
}

function admissionOf(config: Config, metrics: Metrics, overload: () => string | undefined, acrossNodes: KeyCallCounts | undefined): Admission {
  return new Admission(
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
    overload,
    acrossNodes,
  );
}

/** The webhook deliveries (the dispatcher started) and the publisher that writes their events. */
async function startWebhooks(
  config: Config,
  store: Store & WebhookStores,
  guard: OutboundGuard,
  metrics: Metrics,
  log: FastifyBaseLogger,
  teardown: Teardown,
  trace: SpanParent | undefined,
): Promise<WebhookPublisher> {
  if (config.WEBHOOK_URL) await checkGlobalWebhookUrl(config.WEBHOOK_URL, guard, log);
  await store.webhookEndpoints.syncGlobal();
  const dispatcher = new WebhookDispatcher(
    store.webhookOutbox,
    store.webhookEndpoints,
    {
      pollMs: config.WEBHOOK_POLL_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      retryMaxMs: config.WEBHOOK_RETRY_MAX_MS,
      attempted: (outcome) => metrics.webhookAttempts.inc({ outcome }),
      guard,
      ...(trace ? { trace } : {}),
    },
    log,
  );
  dispatcher.start();
  teardown.add('webhook dispatcher', () => dispatcher.stop());
  return new WebhookPublisher(store.webhookEndpoints, store.webhookOutbox, dispatcher);
}

/**
 * A WEBHOOK_URL the outbound policy refuses stops the start; one that does not resolve now is only
 * warned of (its DNS may be back by the first event, and each delivery is checked again anyway).
 */
async function checkGlobalWebhookUrl(url: string, guard: OutboundGuard, log: FastifyBaseLogger): Promise<void> {
  try {
    await checkWebhookUrl(url, guard);
  } catch (err) {
    if (err instanceof OutboundRefused) throw new StartupError(`WEBHOOK_URL: ${err.message}`);
    log.warn({ err: (err as Error).message }, 'WEBHOOK_URL cannot be checked now; each delivery will be');
  }
}

/** The server's side of WebRTC calls: its own STUN/TURN list is built per peer connection, as its TURN credentials expire. */
function peersOf(config: Config, turnSecrets: string[]): PeerFactory {
  const peerFactory = config.WEBRTC_STACK === 'werift' ? weriftFactory : libDataChannelFactory;
  const peerOptions = {
    ...(config.ICE_BIND_ADDRESS ? { bindAddress: config.ICE_BIND_ADDRESS } : {}),
    ...(config.ICE_PORT_RANGE ? { portRange: config.ICE_PORT_RANGE } : {}),
    ...(config.ICE_PUBLIC_IP ? { publicIp: config.ICE_PUBLIC_IP } : {}),
  };
  return {
    name: peerFactory({ ...peerOptions, iceServers: [] }).name,
    create: (label) =>
      peerFactory({
        ...peerOptions,
        iceServers: serverIceServers(config.SERVER_ICE_SERVERS, turnSecrets[0], config.TURN_CREDENTIAL_TTL_SECONDS),
      }).create(label),
  };
}

/** ice-config's body for a token of a key (Services.iceServers). */
function iceServersOf(
  config: Config,
  ice: { stun: StunServer | undefined; turn: TurnService; turnKeys: TurnKeySecrets | undefined; turnSecrets: string[] },
): Services['iceServers'] {
  const { stun, turn, turnKeys, turnSecrets } = ice;
  return (token, apiKeyId) => {
    const turnUrls = turn.upUrls();
    // A call may start as late as the token's end and last its maximum duration: no credential needs longer.
    const tokenLeft = Math.max(0, token.exp - Math.floor(Date.now() / 1000));
    const ttl = Math.min(config.TURN_CREDENTIAL_TTL_SECONDS, tokenLeft + Math.ceil(config.CALL_MAX_DURATION_MS / 1000));
    return buildIceServers(
      {
        stunUrls: config.STUN_URLS ?? (stun ? [embeddedStunUrl(stun.address, config.ICE_PUBLIC_IP)] : stunUrlsOfTurnServers(turn.upUrls())),
        turnUrls,
        turnSecret: turnUrls.length ? (turnKeys?.grant(apiKeyId) ?? turnSecrets[0]) : undefined,
        turnTtlSeconds: ttl,
      },
      token.jti,
    );
  };
}

/** TURN is usable when it is off by choice or at least one server answers its checks. */
function turnReadiness(h: TurnHealth): Health {
  if (!h.enabled) return { state: 'ready', detail: 'TURN disabled (TURN_ENABLED=false)' };
  const down = h.servers.filter((s) => !s.up);
  if (!down.length) return { state: 'ready' };
  const detail = `not answering: ${down.map((s) => `${s.url}${s.error ? ` (${s.error})` : ''}`).join(', ')}`;
  return { state: h.ok ? 'degraded' : h.servers.some((s) => s.checkedAt) ? 'failed' : 'starting', detail };
}

/** The speech engines, the worst first: the voice agent needs them all. */
/** Degraded while a model is passed over (its calls go to its fallback); a model that cannot run here is named. */
function modelsReadiness(models: Record<string, EngineHealth>): Health {
  const troubled = Object.entries(models).filter(([, h]) => h.state !== 'ready');
  if (!troubled.length) return { state: 'ready' };
  return { state: 'degraded', detail: troubled.map(([id, h]) => `${id}: ${h.detail ?? h.state}`).join('; ') };
}

function speechReadiness(engines: Record<string, EngineHealth>): Health {
  const entries = Object.entries(engines);
  if (!entries.length) return { state: 'failed', detail: 'speech engines unavailable: run scripts/setup.sh --runtime' };
  const order: EngineHealth['state'][] = ['failed', 'starting', 'degraded', 'ready'];
  const worst = order.find((state) => entries.some(([, h]) => h.state === state)) ?? 'ready';
  const detail = entries.filter(([, h]) => h.state !== 'ready').map(([stage, h]) => `${stage}: ${h.state}${h.detail ? ` (${h.detail})` : ''}`).join('; ');
  return { state: worst, ...(detail ? { detail } : {}) };
}
