// Wires the parts of a Parley node together from its configuration.
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { ApiKeyStore } from './auth/apiKeys.js';
import { ApiKeyCache } from './auth/keyCache.js';
import { loadOrCreateLocalSecrets } from './auth/localSecrets.js';
import { SigningKeyStore } from './auth/signingKeys.js';
import { TokenService } from './auth/tokens.js';
import { createAgents } from './agent/agents.js';
import type { EngineHealth } from './agent/health.js';
import { endpointingDefaults } from './agent/providers.js';
import type { AgentRegistry } from './agent/registry.js';
import { Admission } from './calls/admission.js';
import { CallManager } from './calls/callManager.js';
import { RevocationWatcher } from './calls/revocationWatcher.js';
import { DigestAuth } from './sip/digest.js';
import { SipRouting } from './sip/sipRouting.js';
import { SipServer } from './sip/sipServer.js';
import { openRateLimitStore } from './http/rateLimits.js';
import { openAiDefaultSession } from './calls/protocol/openaiSession.js';
import { NodeDirectory } from './calls/nodeDirectory.js';
import { CandidateFilter, ownMediaAddresses } from './calls/webrtc/candidateFilter.js';
import { WebRtcTransports } from './calls/webrtc/webrtcTransports.js';
import { Metrics } from './observability/metrics.js';
import { EventLoopWatch } from './observability/eventLoop.js';
import { ReadinessChecks, type Health } from './observability/readiness.js';
import { libDataChannelFactory } from './calls/webrtc/peer/libdatachannel.js';
import { weriftFactory } from './calls/webrtc/peer/werift.js';
import type { PeerFactory } from './calls/webrtc/peer/types.js';
import type { Config } from './config/env.js';
import { buildIceServers, type IceServerEntry } from './ice/iceConfig.js';
import { serverIceServers } from './ice/serverIceServers.js';
import { embeddedStunUrl, startStunServer, stunUrlsOfTurnServers, type StunServer } from './ice/stunServer.js';
import { openAiProtocol } from './calls/protocol/openai.js';
import { betaDialect } from './calls/protocol/openaiBeta.js';
import { orgaProtocol } from './calls/protocol/orga.js';
import type { SessionDefaults } from './session/session.js';
import { ClientSecretSessionStore } from './storage/clientSecretSessions.js';
import { TurnKeySecrets } from './ice/turnKeySecrets.js';
import { TurnService, type TurnHealth } from './ice/turnService.js';
import { blockList } from './system/cidr.js';
import { ConversationStore } from './storage/conversations.js';
import { openBus, type InvalidationBus } from './storage/bus.js';
import { databaseHealth, openDatabase, type DatabaseLog, type Db, type OpenDatabase } from './storage/db.js';
import { migrate } from './storage/migrations.js';
import { NodeLiveness } from './storage/nodeLiveness.js';
import { NodeStore, loadOrCreateNodeId } from './storage/nodes.js';
import { CallWebhooks } from './webhooks/callWebhooks.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { WebhookEndpointStore } from './webhooks/endpoints.js';
import { WebhookOutbox } from './webhooks/outbox.js';
import { lostCallData, realtimeCallIncomingData } from './webhooks/payloads.js';
import { WebhookPublisher } from './webhooks/publisher.js';
import { Recordings } from './recordings/recordings.js';

/** Storage and key material: what the CLI needs too. */
export interface Store {
  db: Db;
  database: OpenDatabase;
  apiKeys: ApiKeyStore;
  signingKeys: SigningKeyStore;
  conversations: ConversationStore;
  clientSecretSessions: ClientSecretSessionStore;
  turnSecrets: string[];
  /** Where call events go (the global endpoint and each key's), and their deliveries. */
  webhookEndpoints: WebhookEndpointStore;
  webhookOutbox: WebhookOutbox;
  /** Cross-node notices (Redis), so a revocation or rotation takes effect everywhere at once. */
  bus: InvalidationBus;
}

export async function openStore(config: Config, log?: DatabaseLog): Promise<Store> {
  const needsLocal = !config.API_KEY_PEPPER || !config.TURN_SECRETS;
  const local = needsLocal ? loadOrCreateLocalSecrets(config.DATA_DIR) : undefined;
  const pepper = config.API_KEY_PEPPER ?? local!.apiKeyPepper;
  const database = await openDatabase(config.DATABASE_URL, log);
  const { db } = database;
  await migrate(db);
  const signingKeys = new SigningKeyStore(db, pepper, database.availability);
  await signingKeys.init();
  const global = config.WEBHOOK_URL && config.WEBHOOK_SECRET ? { url: config.WEBHOOK_URL, secret: config.WEBHOOK_SECRET, events: config.WEBHOOK_EVENTS } : undefined;
  return {
    db,
    database,
    apiKeys: new ApiKeyStore(db, pepper),
    signingKeys,
    conversations: new ConversationStore(db),
    clientSecretSessions: new ClientSecretSessionStore(db),
    webhookEndpoints: new WebhookEndpointStore(db, pepper, global),
    webhookOutbox: new WebhookOutbox(db),
    bus: openBus(config.REDIS_URL),
    turnSecrets: config.TURN_SECRETS ?? [local!.turnSecret],
  };
}

export interface Services extends Store {
  config: Config;
  keyCache: ApiKeyCache;
  tokens: TokenService;
  calls: CallManager;
  /** Ringing SIP calls waiting for the app's accept, reject or refer. */
  sipRouting: SipRouting;
  /** WebRTC transports for the calls routes' offers. */
  webrtc: WebRtcTransports;
  /** Who may open another call (node, half-open, per-key and per-token limits). */
  admission: Admission;
  agents: AgentRegistry;
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
  /** The other nodes (and workers) calls can be passed to. */
  nodeDirectory: NodeDirectory;
  /** Records where this node's node-to-node listener is, so the others can pass it requests. */
  announce(url: string): Promise<void>;
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
  // What is opened is closed again, newest first, when a later step of the start fails.
  const opened: (() => Promise<void> | void)[] = [];
  try {
    return await startServices(config, log, role, (close) => void opened.unshift(close));
  } catch (err) {
    for (const close of opened) await Promise.resolve().then(close).catch(() => {});
    throw err;
  }
}

async function startServices(config: Config, log: FastifyBaseLogger, role: NodeRole, opened: (close: () => Promise<void> | void) => void): Promise<Services> {
  // First, so a taken STUN port stops the start before anything else is opened.
  const stun: StunServer | undefined = config.STUN_ENABLED
    ? await startStunServer({ host: config.STUN_BIND || config.HOST, port: config.STUN_PORT })
    : undefined;
  if (stun) opened(() => stun.close());
  if (stun) log.info({ stun: stun.address }, 'embedded STUN server listening');
  const store = await openStore(config, log);
  opened(() => store.db.destroy());
  opened(() => store.bus.close());
  const metrics = new Metrics();
  const turn = await TurnService.start(config, store.turnSecrets, log, (url, up) => metrics.turnUp.set({ url }, up ? 1 : 0), role);
  opened(() => turn.close());
  // Parley's own coturn takes a secret per API key, so a revoked key's credentials stop at once.
  const turnKeys = turn.health().managed
    ? new TurnKeySecrets(join(config.DATA_DIR, 'coturn', 'turndb'), store.turnSecrets[0]!, config.TURN_REALM, config.TURN_CREDENTIAL_TTL_SECONDS)
    : undefined;
  if (turnKeys) opened(() => turnKeys.close());
  const readiness = new ReadinessChecks();
  readiness.register('database', databaseHealth(store.database));
  const eventLoop = new EventLoopWatch(config.EVENT_LOOP_LAG_DEGRADED_MS, metrics.eventLoopLag);
  opened(() => eventLoop.stop());
  readiness.register('event_loop', eventLoop);
  const keyCache = new ApiKeyCache(store.apiKeys, config.KEY_CACHE_TTL_MS, config.KEY_CACHE_STALE_MS, store.database.availability);
  keyCache.start();
  opened(() => keyCache.stop());
  const reloadSigningKeys = () => void store.signingKeys.reload().catch(() => {});
  // Set once the calls exist (below); notices are only delivered after Redis answers.
  let revocations: RevocationWatcher | undefined;
  store.bus.subscribe(
    (message) => {
      if (message.kind === 'key-revoked') {
        keyCache.invalidate();
        revocations?.keyRevoked(message.id);
      } else reloadSigningKeys();
    },
    () => {
      // Back after a Redis outage: notices sent meanwhile are lost, so start over from the store.
      log.info('Redis reachable again: key caches reloaded');
      keyCache.invalidate();
      reloadSigningKeys();
    },
  );
  if (config.REDIS_URL) readiness.register('redis', store.bus);
  // Another node (or the CLI) may rotate the signing key: pick the new one up within a second, Redis
  // or not (a small table; the notice only makes it sooner).
  const reloadTimer = setInterval(() => void store.signingKeys.reload().catch(() => {}), 1000);
  reloadTimer.unref();
  opened(() => clearInterval(reloadTimer));
  const tokens = new TokenService(store.signingKeys, {
    issuer: config.TOKEN_ISSUER,
    audience: config.TOKEN_AUDIENCE,
    ttlSeconds: config.TOKEN_TTL_SECONDS,
  });
  const peerFactory = config.WEBRTC_STACK === 'werift' ? weriftFactory : libDataChannelFactory;
  const peerOptions = {
    ...(config.ICE_BIND_ADDRESS ? { bindAddress: config.ICE_BIND_ADDRESS } : {}),
    ...(config.ICE_PORT_RANGE ? { portRange: config.ICE_PORT_RANGE } : {}),
    ...(config.ICE_PUBLIC_IP ? { publicIp: config.ICE_PUBLIC_IP } : {}),
  };
  // The server's own STUN/TURN list is built per peer connection: its TURN credentials expire.
  const peers: PeerFactory = {
    name: peerFactory({ ...peerOptions, iceServers: [] }).name,
    create: (label) =>
      peerFactory({
        ...peerOptions,
        iceServers: serverIceServers(config.SERVER_ICE_SERVERS, store.turnSecrets[0], config.TURN_CREDENTIAL_TTL_SECONDS),
      }).create(label),
  };
  const agents = createAgents(config, log, metrics);
  opened(() => agents.close());
  const sessionDefaults = sessionDefaultsOf(config);
  const nodeId = loadOrCreateNodeId(config.DATA_DIR, config.NODE_ID);
  const nodeStore = new NodeStore(store.db);
  const admission = new Admission(
    {
      maxCalls: config.MAX_CONCURRENT_CALLS,
      maxHalfOpen: config.MAX_HALF_OPEN_CALLS,
      maxCallsPerKey: config.MAX_CALLS_PER_KEY,
      maxHalfOpenPerKey: config.MAX_HALF_OPEN_CALLS_PER_KEY,
      maxCallsPerToken: config.MAX_CALLS_PER_TOKEN,
    },
    (counts) => metrics.halfOpenCalls.set(counts.halfOpen),
  );
  await store.webhookEndpoints.syncGlobal();
  const webhooks = new WebhookDispatcher(
    store.webhookOutbox,
    store.webhookEndpoints,
    {
      pollMs: config.WEBHOOK_POLL_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      retryMaxMs: config.WEBHOOK_RETRY_MAX_MS,
      attempted: (outcome) => metrics.webhookAttempts.inc({ outcome }),
    },
    log,
  );
  webhooks.start();
  opened(() => webhooks.stop());
  const webhookPublisher = new WebhookPublisher(store.webhookEndpoints, store.webhookOutbox, webhooks);
  const recordings = new Recordings(
    { byDefault: config.RECORDING === 'on', dir: config.RECORDING_DIR ?? join(config.DATA_DIR, 'recordings'), retentionDays: config.RECORDING_RETENTION_DAYS },
    (apiKeyId) => store.apiKeys.recordingOf(apiKeyId),
    log,
  );
  recordings.startRetention();
  opened(() => recordings.stop());
  const calls = new CallManager({
    conversations: store.conversations,
    agentFor: (model) => agents.registry.factoryFor(model),
    protocols: { orga: orgaProtocol, openai: openAiProtocol(sessionDefaults), 'openai-beta': betaDialect(openAiProtocol(sessionDefaults)) },
    timeouts: {
      connectTimeoutMs: config.CALL_CONNECT_TIMEOUT_MS,
      idleTimeoutMs: config.CALL_IDLE_TIMEOUT_MS,
      maxDurationMs: config.CALL_MAX_DURATION_MS,
      reconnectGraceMs: config.CALL_RECONNECT_GRACE_MS,
    },
    rates: { messagesPerSecond: config.CALL_EVENTS_PER_SECOND, repliesPerSecond: config.CALL_REPLIES_PER_SECOND },
    nodeId,
    log,
    metrics,
    admission,
    observers: [() => new CallWebhooks(webhookPublisher, log)],
    recordings,
  });
  const sipRouting = new SipRouting({
    announce: async (call) => (await webhookPublisher.publish(call.apiKeyId, 'realtime.call.incoming', realtimeCallIncomingData(call))) !== undefined,
    timeoutMs: config.SIP_ROUTING_TIMEOUT_MS,
    defaultRoute: config.SIP_DEFAULT_ROUTE,
    routed: (decision, by) => metrics.sipRouting.inc({ decision, by }),
  });
  const sip = config.SIP_PORT === undefined ? undefined : await startSip(config, { calls, apiKeys: store.apiKeys, sessionDefaults, routing: sipRouting, log, metrics });
  if (sip) opened(() => sip.close());
  const webrtc = new WebRtcTransports({
    peers,
    candidates: new CandidateFilter({
      allow: config.ICE_CANDIDATE_ALLOW,
      deny: config.ICE_CANDIDATE_DENY,
      ownAddresses: ownMediaAddresses(config.ICE_BIND_ADDRESS),
    }),
    metrics,
    log,
    opusComplexity: config.OPUS_COMPLEXITY,
  });
  revocations = new RevocationWatcher({
    liveCalls: () => calls.liveCalls(),
    ...(turnKeys ? { otherKeys: () => turnKeys.keys(), onRevoked: (id: string) => turnKeys.revoke(id) } : {}),
    revokedAmong: (ids) => store.apiKeys.revokedAmong(ids),
    // Bounded below: KEY_CACHE_TTL_MS=0 (no cache) must not mean a query per tick.
    pollMs: Math.max(500, config.KEY_CACHE_TTL_MS),
    log,
  });
  revocations.start();
  opened(() => revocations?.stop());
  let nodeUrl: string | null = null;
  const liveness = new NodeLiveness(
    nodeStore,
    store.conversations,
    store.database.availability,
    {
      nodeId,
      heartbeatMs: config.NODE_HEARTBEAT_MS,
      lostAfterMs: config.NODE_LOST_AFTER_MS,
      facts: () => ({ url: nodeUrl, calls: calls.activeCount, max_calls: config.MAX_CONCURRENT_CALLS, media_address: config.ICE_PUBLIC_IP ?? config.ICE_BIND_ADDRESS ?? null }),
      // A call lost with its node never told its end: the node that records it failed does.
      lost: async (lostCalls) => {
        for (const call of lostCalls) await webhookPublisher.publish(call.apiKeyId, 'call.failed', lostCallData(call));
      },
    },
    log,
  );
  await liveness.start();
  opened(() => liveness.stop());
  // Offered calls only while its heartbeats are recent: a node killed a moment ago is not.
  const nodeDirectory = new NodeDirectory(nodeStore, { selfId: nodeId, freshForMs: Math.min(config.NODE_LOST_AFTER_MS, 3 * config.NODE_HEARTBEAT_MS) });
  readiness.register('node', () => (calls.isDraining ? { state: 'failed', detail: 'shutting down' } : { state: 'ready' }));
  readiness.register('turn', () => turnReadiness(turn.health()));
  readiness.register('speech', () => speechReadiness(agents.health()));
  return {
    ...store,
    config,
    keyCache,
    tokens,
    calls,
    sipRouting,
    webrtc,
    admission,
    metrics,
    recordings,
    readiness,
    nodeId,
    nodeDirectory,
    async announce(url) {
      nodeUrl = url;
      await liveness.heartbeatNow();
    },
    agents: agents.registry,
    sessionDefaults,
    turn,
    iceServers: (token, apiKeyId) => {
      const turnUrls = turn.upUrls();
      // A call may start as late as the token's end and last its maximum duration: no credential needs longer.
      const tokenLeft = Math.max(0, token.exp - Math.floor(Date.now() / 1000));
      const ttl = Math.min(config.TURN_CREDENTIAL_TTL_SECONDS, tokenLeft + Math.ceil(config.CALL_MAX_DURATION_MS / 1000));
      return buildIceServers(
        {
          stunUrls: config.STUN_URLS ?? (stun ? [embeddedStunUrl(stun.address, config.ICE_PUBLIC_IP)] : stunUrlsOfTurnServers(turn.upUrls())),
          turnUrls,
          turnSecret: turnUrls.length ? (turnKeys?.grant(apiKeyId) ?? store.turnSecrets[0]) : undefined,
          turnTtlSeconds: ttl,
        },
        token.jti,
      );
    },
    async close() {
      clearInterval(reloadTimer);
      eventLoop.stop();
      turnKeys?.close();
      revocations?.stop();
      recordings.stop();
      await liveness.stop();
      await keyCache.stop();
      await webhooks.stop();
      await agents.close();
      await store.bus.close();
      await store.db.destroy();
      await stun?.close();
      await sip?.close();
      await turn.close();
    },
  };
}

/** The SIP front door (SIP_PORT set): its calls are owned by SIP_API_KEY_ID, else the oldest active key. */
async function startSip(config: Config, deps: { calls: CallManager; apiKeys: ApiKeyStore; sessionDefaults: SessionDefaults; routing: SipRouting; log: FastifyBaseLogger; metrics: Metrics }): Promise<{ close: () => Promise<void> }> {
  const host = config.SIP_HOST || config.HOST;
  const wildcard = host === '0.0.0.0' || host === '::';
  // Our SDP must name an address the caller's RTP can reach: a wildcard names none.
  if (wildcard && !config.ICE_PUBLIC_IP) throw new Error(`SIP binds ${host}: set SIP_HOST to an address callers reach, or ICE_PUBLIC_IP, for the SDP answers to announce`);
  // INVITEs are counted where the HTTP limits are (Redis across nodes, else this process).
  const limits = config.RATE_LIMIT_SIP_INVITES_PER_IP ? await openRateLimitStore(config, deps.log) : undefined;
  const started = SipServer.start({
    inviteLimit: limits && (async (address) => {
      const decision = await limits.hit('sip-invite-ip', address, config.RATE_LIMIT_SIP_INVITES_PER_IP, config.RATE_LIMIT_WINDOW_SECONDS * 1000);
      if (!decision.allowed) deps.metrics.rateLimited.inc({ limit: 'sip-invite-ip' });
      return decision;
    }),
    host,
    port: config.SIP_PORT!,
    // The certificate HTTPS serves also secures SIP signalling (the media stays plain RTP).
    tls: config.TLS_CERT_FILE && config.TLS_KEY_FILE ? { port: config.SIP_TLS_PORT ?? (config.SIP_PORT && config.SIP_PORT < 65535 ? config.SIP_PORT + 1 : 0), cert: config.TLS_CERT_FILE, key: config.TLS_KEY_FILE } : undefined,
    announcedAddress: config.ICE_PUBLIC_IP || host,
    calls: deps.calls,
    auth: new DigestAuth(config.SIP_USERS),
    trusted: config.SIP_TRUSTED_CIDRS.length ? blockList(config.SIP_TRUSTED_CIDRS) : undefined,
    owner: async () => {
      const active = (await deps.apiKeys.list()).filter((k) => !k.revokedAt);
      if (config.SIP_API_KEY_ID) return active.find((k) => k.id === config.SIP_API_KEY_ID)?.id;
      return active.sort((a, b) => a.createdAt.localeCompare(b.createdAt))[0]?.id;
    },
    session: () => openAiDefaultSession(deps.sessionDefaults),
    routing: deps.routing,
    log: deps.log,
  });
  const server = await started.catch(async (err: Error) => {
    await limits?.close();
    throw err;
  });
  deps.log.info({ sip: server.ports }, 'SIP front door listening');
  return {
    close: async () => {
      await server.close();
      await limits?.close();
    },
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
function speechReadiness(engines: Record<string, EngineHealth>): Health {
  const entries = Object.entries(engines);
  if (!entries.length) return { state: 'failed', detail: 'speech engines unavailable: run scripts/setup.sh --runtime' };
  const order: EngineHealth['state'][] = ['failed', 'starting', 'degraded', 'ready'];
  const worst = order.find((state) => entries.some(([, h]) => h.state === state)) ?? 'ready';
  const detail = entries.filter(([, h]) => h.state !== 'ready').map(([stage, h]) => `${stage}: ${h.state}${h.detail ? ` (${h.detail})` : ''}`).join('; ');
  return { state: worst, ...(detail ? { detail } : {}) };
}
