// Wires the parts of a Parley node together from its configuration.
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
import { CallManager } from './calls/callManager.js';
import { NodeDirectory } from './calls/nodeDirectory.js';
import { CandidateFilter, ownMediaAddresses } from './calls/candidateFilter.js';
import { Metrics } from './observability/metrics.js';
import { ReadinessChecks, type Health } from './observability/readiness.js';
import { libDataChannelFactory } from './calls/peer/libdatachannel.js';
import { weriftFactory } from './calls/peer/werift.js';
import type { PeerFactory } from './calls/peer/types.js';
import type { Config } from './config/env.js';
import { buildIceServers, type IceServerEntry } from './ice/iceConfig.js';
import { serverIceServers } from './ice/serverIceServers.js';
import { embeddedStunUrl, startStunServer, stunUrlsOfTurnServers, type StunServer } from './ice/stunServer.js';
import { openAiProtocol } from './calls/protocol/openai.js';
import { orgaProtocol } from './calls/protocol/orga.js';
import type { SessionDefaults } from './session/session.js';
import { ClientSecretSessionStore } from './storage/clientSecretSessions.js';
import { TurnService, type TurnHealth } from './ice/turnService.js';
import { ConversationStore } from './storage/conversations.js';
import { openBus, type InvalidationBus } from './storage/bus.js';
import { databaseHealth, openDatabase, type DatabaseLog, type Db, type OpenDatabase } from './storage/db.js';
import { migrate } from './storage/migrations.js';
import { NodeLiveness } from './storage/nodeLiveness.js';
import { NodeStore, loadOrCreateNodeId } from './storage/nodes.js';

/** Storage and key material: what the CLI needs too. */
export interface Store {
  db: Db;
  database: OpenDatabase;
  apiKeys: ApiKeyStore;
  signingKeys: SigningKeyStore;
  conversations: ConversationStore;
  clientSecretSessions: ClientSecretSessionStore;
  turnSecrets: string[];
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
  return {
    db,
    database,
    apiKeys: new ApiKeyStore(db, pepper),
    signingKeys,
    conversations: new ConversationStore(db),
    clientSecretSessions: new ClientSecretSessionStore(db),
    bus: openBus(config.REDIS_URL),
    turnSecrets: config.TURN_SECRETS ?? [local!.turnSecret],
  };
}

export interface Services extends Store {
  config: Config;
  keyCache: ApiKeyCache;
  tokens: TokenService;
  calls: CallManager;
  agents: AgentRegistry;
  /** Session defaults from the configuration (turn detection). */
  sessionDefaults: SessionDefaults;
  /** ice-config's body for a token: STUN, and the TURN servers that answer with fresh credentials. */
  iceServers(tokenJti: string): IceServerEntry[];
  /** The TURN servers and their last checks (health() is for GET /readyz). */
  turn: TurnService;
  metrics: Metrics;
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
  return { turnDetection: { type: 'server_vad', ...endpointingDefaults(config), idleTimeoutMs: null, createResponse: true, interruptResponse: true } };
}

export interface NodeRole {
  /** A worker whose primary process runs Parley's coturn (on TURN_PORT): this one only checks it. */
  coturnRunsElsewhere?: boolean;
}

export async function createServices(config: Config, log: FastifyBaseLogger, role: NodeRole = {}): Promise<Services> {
  // First, so a taken STUN port stops the start before anything else is opened.
  const stun: StunServer | undefined = config.STUN_ENABLED
    ? await startStunServer({ host: config.STUN_BIND || config.HOST, port: config.STUN_PORT })
    : undefined;
  if (stun) log.info({ stun: stun.address }, 'embedded STUN server listening');
  const store = await openStore(config, log);
  const metrics = new Metrics();
  const turn = await TurnService.start(config, store.turnSecrets, log, (url, up) => metrics.turnUp.set({ url }, up ? 1 : 0), role).catch(async (err) => {
    await store.db.destroy();
    await stun?.close();
    throw err;
  });
  const readiness = new ReadinessChecks();
  readiness.register('database', databaseHealth(store.database));
  const keyCache = new ApiKeyCache(store.apiKeys, config.KEY_CACHE_TTL_MS, config.KEY_CACHE_STALE_MS, store.database.availability);
  keyCache.start();
  const reloadSigningKeys = () => void store.signingKeys.reload().catch(() => {});
  store.bus.subscribe(
    (message) => {
      if (message.kind === 'key-revoked') keyCache.invalidate();
      else reloadSigningKeys();
    },
    () => {
      // Back after a Redis outage: notices sent meanwhile are lost, so start over from the store.
      log.info('Redis reachable again: key caches reloaded');
      keyCache.invalidate();
      reloadSigningKeys();
    },
  );
  if (config.REDIS_URL) readiness.register('redis', store.bus);
  // Another node (or the CLI) may rotate the signing key: pick the new one up.
  const reloadTimer = setInterval(() => void store.signingKeys.reload().catch(() => {}), 30_000);
  reloadTimer.unref();
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
  const sessionDefaults = sessionDefaultsOf(config);
  const nodeId = loadOrCreateNodeId(config.DATA_DIR, config.NODE_ID);
  const nodeStore = new NodeStore(store.db);
  const calls = new CallManager({
    peers,
    conversations: store.conversations,
    agentFor: (model) => agents.registry.factoryFor(model),
    protocols: { orga: orgaProtocol, openai: openAiProtocol(sessionDefaults) },
    limits: {
      connectTimeoutMs: config.CALL_CONNECT_TIMEOUT_MS,
      idleTimeoutMs: config.CALL_IDLE_TIMEOUT_MS,
      maxDurationMs: config.CALL_MAX_DURATION_MS,
      maxConcurrentCalls: config.MAX_CONCURRENT_CALLS,
      opusComplexity: config.OPUS_COMPLEXITY,
    },
    nodeId,
    candidates: new CandidateFilter({
      allow: config.ICE_CANDIDATE_ALLOW,
      deny: config.ICE_CANDIDATE_DENY,
      ownAddresses: ownMediaAddresses(config.ICE_BIND_ADDRESS),
    }),
    log,
    metrics,
  });
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
    },
    log,
  );
  await liveness.start();
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
    metrics,
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
    iceServers: (tokenJti) =>
      buildIceServers(
        {
          stunUrls: config.STUN_URLS ?? (stun ? [embeddedStunUrl(stun.address, config.ICE_PUBLIC_IP)] : stunUrlsOfTurnServers(turn.upUrls())),
          turnUrls: turn.upUrls(),
          turnSecrets: store.turnSecrets,
          turnTtlSeconds: config.TURN_CREDENTIAL_TTL_SECONDS,
        },
        tokenJti,
      ),
    async close() {
      clearInterval(reloadTimer);
      await liveness.stop();
      await keyCache.stop();
      await agents.close();
      await store.bus.close();
      await store.db.destroy();
      await stun?.close();
      await turn.close();
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
