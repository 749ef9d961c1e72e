// Configuration: every setting comes from an environment variable (or `.env` in development),
// parsed and validated once at start. The table below is also the source of the README's list.
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { looksLikeApiKey } from '../auth/apiKeys.js';
import { parseCidr } from '../calls/candidateFilter.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

type Parser<T> = (raw: string) => T;

interface Setting<T> {
  doc: string;
  /** Default as the user would write it; undefined means "unset". */
  default?: string;
  parse: Parser<T>;
}

const str: Parser<string> = (raw) => raw;

const int = (min: number, max: number): Parser<number> => (raw) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
  return n;
};

const num = (min: number, max: number): Parser<number> => (raw) => {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n)) throw new Error(`expected a number, got "${raw}"`);
  if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
  return n;
};

const bool: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  throw new Error(`expected true or false, got "${raw}"`);
};

const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!values.includes(raw as T)) throw new Error(`must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

const list: Parser<string[]> = (raw) => raw.split(',').map((s) => s.trim()).filter(Boolean);

const iceUrls = (schemes: string[]): Parser<string[]> => (raw) => {
  const urls = list(raw);
  for (const url of urls) {
    const scheme = url.split(':', 1)[0] ?? '';
    if (!schemes.includes(scheme) || !/^[a-z]+:[^\s:]+(:\d+)?(\?transport=(udp|tcp))?$/.test(url)) {
      throw new Error(`"${url}" is not a ${schemes.join('/')}: URL like ${schemes[0]}:host:port`);
    }
  }
  return urls;
};

const ip: Parser<string> = (raw) => {
  if (raw !== '' && !isIP(raw)) throw new Error(`expected an IP address, got "${raw}"`);
  return raw;
};

// Never echoes an entry: it may carry a TURN password.
const serverIceUrls: Parser<string[]> = (raw) => {
  const urls = list(raw);
  urls.forEach((url, i) => {
    if (!/^(stun|turns?):([^\s@]+@)?[^\s@:/?]+(:\d+)?(\?transport=(udp|tcp|tls))?$/.test(url)) {
      throw new Error(`entry ${i + 1} is not like stun:host:port or turn:user:pass@host:port?transport=udp`);
    }
  });
  return urls;
};

const peerIps: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) {
    if (!e.split('-').every((part) => isIP(part))) throw new Error(`"${e}" is not an IP address or a range a-b`);
  }
  return entries;
};

const cidrList: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) parseCidr(e);
  return entries;
};

const secretList: Parser<string[]> = (raw) => {
  const secrets = list(raw);
  for (const s of secrets) if (s.length < 16) throw new Error('each secret must be at least 16 characters');
  return secrets;
};

const databaseUrl: Parser<string> = (raw) => {
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(raw)) {
    throw new Error(`expected sqlite:<path> or postgres://..., got "${raw.replace(/:[^:@/]*@/, ':***@')}"`);
  }
  return raw;
};

const portRange: Parser<[number, number] | undefined> = (raw) => {
  if (raw === '') return undefined;
  const m = /^(\d+)-(\d+)$/.exec(raw.trim());
  if (!m) throw new Error(`expected MIN-MAX, got "${raw}"`);
  const lo = Number(m[1]);
  const hi = Number(m[2]);
  if (lo < 1024 || hi > 65535 || lo > hi) throw new Error(`range must lie within 1024-65535 with MIN <= MAX`);
  return [lo, hi];
};

/** PARLEY_WORKERS: auto (one per core) or a count. */
const workers: Parser<number> = (raw) => (raw.trim() === 'auto' ? availableParallelism() : int(1, 256)(raw));

/** An IP address others can reach: not a wildcard. */
const concreteIp: Parser<string> = (raw) => {
  const v = raw.trim();
  if (!isIP(v)) throw new Error(`expected an IP address, got "${raw}"`);
  if (v === '0.0.0.0' || v === '::') throw new Error('must be a concrete address (the other nodes are given it), not a wildcard');
  return v;
};

/** proxy-addr's names for ranges, and addresses or CIDR ranges. */
const trustedProxies: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) if (!['loopback', 'linklocal', 'uniquelocal'].includes(e)) parseCidr(e);
  return entries;
};

/** Every variable Parley reads. */
export const settings = {
  HOST: { doc: 'Address the HTTP server listens on.', default: '127.0.0.1', parse: str },
  PORT: { doc: 'HTTP port (0 picks a free one).', default: '8080', parse: int(0, 65535) },
  PARLEY_ENV: {
    doc: 'development enables the demo page and its backend-proxy route; production disables them (unless DEMO_ENABLED).',
    default: 'production',
    parse: oneOf('production', 'development'),
  },
  DEMO_ENABLED: {
    doc: 'Serve the demo page (GET /) and its backend-proxy route (POST /demo/session) in production too; put it behind HTTPS.',
    default: 'false',
    parse: bool,
  },
  DEMO_API_KEY: {
    doc: "API key the demo's proxy route exchanges for tokens; it never leaves the server. Unset: the service creates a demo key on first use, keeps it only in memory and revokes it at shutdown.",
    parse: (raw: string) => {
      // Never echo the value: it is a secret.
      if (!looksLikeApiKey(raw)) throw new Error('must be a Parley API key (sk_parley_ai_…)');
      return raw;
    },
  },
  DEMO_RATE_LIMIT_PER_MINUTE: {
    doc: 'Demo sessions (tokens) one client IP may request per minute (a window that starts at its first request); beyond it POST /demo/session answers 429. Shared through Redis like the RATE_LIMIT_* limits.',
    default: '10',
    parse: int(1, 10000),
  },
  LOG_LEVEL: { doc: 'pino log level.', default: 'info', parse: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent') },
  DATA_DIR: { doc: 'Directory for the SQLite file and generated local secrets.', default: './data', parse: str },
  DATABASE_URL: {
    doc: 'sqlite:<path> (embedded, default <DATA_DIR>/parley.db) or postgres://user@host/db.',
    parse: databaseUrl,
  },
  REDIS_URL: { doc: 'redis://host:port; shares call counts and key revocations across nodes. Optional.', parse: str },
  RATE_LIMIT_WINDOW_SECONDS: {
    doc: 'Window of the RATE_LIMIT_* limits: a count starts at its first request and starts over this long after (429 with Retry-After beyond it). With REDIS_URL every node and worker counts together; without, each counts alone.',
    default: '60',
    parse: int(1, 86_400),
  },
  RATE_LIMIT_CLIENT_SECRETS_PER_KEY: {
    doc: 'Tokens (client-secrets and OpenAI client_secrets) one API key may mint per window; 0: no limit.',
    default: '600',
    parse: int(0, 10_000_000),
  },
  RATE_LIMIT_CLIENT_SECRETS_PER_IP: {
    doc: 'client-secrets and client_secrets requests (wrong keys included) one client address may make per window; 0: no limit. The address is the connection\'s, or X-Forwarded-For\'s from a TRUST_PROXY proxy.',
    default: '600',
    parse: int(0, 10_000_000),
  },
  RATE_LIMIT_CALLS_PER_TOKEN: {
    doc: 'Calls requests (both forms) one ephemeral token may make per window; 0: no limit.',
    default: '20',
    parse: int(0, 10_000_000),
  },
  TRUST_PROXY: {
    doc: "Comma-separated addresses or CIDR ranges of the reverse proxies in front of Parley (or loopback, linklocal, uniquelocal): a request from one of them is taken to come from X-Forwarded-For's client address (rate limits, logs). Empty: the connection's address.",
    default: '',
    parse: trustedProxies,
  },
  API_KEY_PEPPER: {
    doc: 'Server pepper for API-key hashes (>= 32 chars). Unset: generated once into <DATA_DIR>/secrets.json. Set the same value on every node.',
    parse: (raw: string) => {
      if (raw.length < 32) throw new Error('must be at least 32 characters');
      return raw;
    },
  },
  CREATE_DEV_KEY: { doc: 'On first start with no API keys, create one and print it once.', default: 'true', parse: bool },
  TOKEN_TTL_SECONDS: { doc: 'Ephemeral token lifetime.', default: '120', parse: int(10, 3600) },
  TOKEN_ISSUER: { doc: 'JWT iss claim.', default: 'parley', parse: str },
  TOKEN_AUDIENCE: { doc: 'JWT aud claim.', default: 'parley-realtime', parse: str },
  KEY_CACHE_TTL_MS: {
    doc: 'How long a node trusts its cached view of an API key; a revocation takes effect within this time.',
    default: '1000',
    parse: int(0, 60000),
  },
  KEY_CACHE_STALE_MS: {
    doc: 'While the database is unreachable, how long a node keeps answering from API-key checks it cached before (0: never; such requests get 503). Token minting and ice-config go on for keys seen within this time.',
    default: '300000',
    parse: int(0, 86_400_000),
  },
  NODE_ID: {
    doc: "This node's id in the nodes registry and on its calls' records; keep it across restarts and unique per node. Unset: generated once into <DATA_DIR>/node-id.",
    parse: (raw: string) => {
      if (!/^[\w.:-]{1,64}$/.test(raw)) throw new Error('use 1-64 letters, digits, or . _ : -');
      return raw;
    },
  },
  NODE_HEARTBEAT_MS: { doc: "How often a node records that it is alive (and checks for other nodes' lost calls).", default: '5000', parse: int(100, 600_000) },
  NODE_LOST_AFTER_MS: {
    doc: 'A node silent this long is taken for dead: its unfinished calls are recorded failed (node_lost) by the others. At least twice NODE_HEARTBEAT_MS, and more than the clock skew between nodes.',
    default: '30000',
    parse: int(500, 3_600_000),
  },
  PARLEY_WORKERS: {
    doc: "Processes serving this node's port: auto (one per core), or a number. Each worker carries the calls it answered (its own UDP sockets and agents) and is a node of its own in the registry (NODE_ID-w1, -w2…); a request for a call another worker carries is passed to it.",
    default: '1',
    parse: workers,
  },
  INTERNAL_HOST: {
    doc: "Address of each worker's node-to-node listener, where other workers and nodes pass it calls it should answer and requests for calls it carries. Several machines: this machine's address on the network the nodes share (never public). Not a wildcard: it is also the address the others are given.",
    default: '127.0.0.1',
    parse: concreteIp,
  },
  INTERNAL_PORT: { doc: 'Port of the node-to-node listener (worker N uses INTERNAL_PORT+N-1); 0 picks a free one per worker.', default: '0', parse: int(0, 65535) },
  HTTP_HEADERS_TIMEOUT_MS: { doc: "Time a client has to send a request's headers (slow clients get 408 and are disconnected).", default: '10000', parse: int(1000, 600_000) },
  HTTP_REQUEST_TIMEOUT_MS: { doc: 'Time a client has to send a whole request, body included (408 after it). At least HTTP_HEADERS_TIMEOUT_MS.', default: '30000', parse: int(1000, 600_000) },
  SHUTDOWN_GRACE_MS: {
    doc: 'After SIGTERM and the drain of its calls, how long a node keeps answering 503 (and /readyz 503) before closing its port, so load balancers notice first. Behind a load balancer, set it above its health-check interval.',
    default: '0',
    parse: int(0, 120_000),
  },
  STUN_URLS: {
    doc: "Comma-separated stun: URLs handed out by ice-config. Unset: the embedded STUN server's address and bound port (ICE_PUBLIC_IP when set), or, with STUN_ENABLED=false, the TURN servers that answer (coturn answers STUN too).",
    parse: iceUrls(['stun']),
  },
  STUN_ENABLED: { doc: 'Run the embedded STUN server (RFC 5389 Binding on UDP).', default: 'true', parse: bool },
  STUN_PORT: { doc: 'UDP port of the embedded STUN server (0 picks a free one).', default: '3478', parse: int(0, 65535) },
  STUN_BIND: { doc: 'Address the embedded STUN server binds (empty: HOST).', default: '', parse: ip },
  TURN_ENABLED: {
    doc: 'Hand out a TURN server in ice-config (by default the coturn Parley runs itself); false: none, and no coturn.',
    default: 'true',
    parse: bool,
  },
  TURN_URLS: {
    doc: "Comma-separated turn:/turns: URLs of external TURN servers (coturn in use-auth-secret mode with TURN_SECRETS) for ice-config's TURN entry. Unset: Parley runs coturn itself on TURN_PORT.",
    parse: iceUrls(['turn', 'turns']),
  },
  TURN_PORT: {
    doc: "UDP and TCP port of the coturn Parley runs when TURN_URLS is unset (0 picks a free one).",
    default: '3479',
    parse: int(0, 65535),
  },
  TURN_BIND: {
    doc: "Address Parley's coturn listens on (empty: HOST). On a loopback address it relays on loopback only (single-machine development).",
    default: '',
    parse: ip,
  },
  TURN_CHECK_INTERVAL_MS: {
    doc: 'How often every TURN server is checked with a real allocation; one that fails is left out of ice-config until it answers again (parley_turn_up). 0: no checks, every TURN URL is handed out.',
    default: '30000',
    parse: int(0, 3_600_000),
  },
  TURN_SECRETS: {
    doc: 'Comma-separated TURN REST-API shared secrets (coturn static-auth-secret); the first signs, all are accepted by coturn. Unset: one generated into <DATA_DIR>/secrets.json.',
    parse: secretList,
  },
  TURN_CREDENTIAL_TTL_SECONDS: { doc: 'Lifetime of TURN credentials (outlasts a call).', default: '3600', parse: int(60, 86400) },
  TURN_REALM: { doc: "coturn realm (Parley's coturn and `parley turn config`).", default: 'parley', parse: str },
  TURN_RELAY_PORT_RANGE: { doc: "coturn's UDP relay port range, MIN-MAX (Parley's coturn and `parley turn config`).", default: '49152-65535', parse: portRange },
  TURN_TLS_CERT: { doc: "coturn's TLS certificate (full chain) path when TURN_URLS has a turns: URL, for `parley turn config`.", default: '/etc/coturn/fullchain.pem', parse: str },
  TURN_TLS_KEY: { doc: "coturn's TLS private key path when TURN_URLS has a turns: URL, for `parley turn config`.", default: '/etc/coturn/privkey.pem', parse: str },
  TURN_ALLOW_LOOPBACK_PEERS: { doc: "Let coturn relay to loopback peers, for tests and single-machine development only (Parley's coturn and `parley turn config`; Parley's coturn on a loopback address always does).", default: 'false', parse: bool },
  TURN_ALLOWED_PEER_IPS: {
    doc: "Comma-separated IPs or ranges (a-b) coturn may relay to despite the denied private ranges, e.g. Parley's private media address (Parley's coturn and `parley turn config`).",
    default: '',
    parse: peerIps,
  },
  CORS_ORIGINS: { doc: 'Origins allowed to call ice-config and calls from a browser ("*" for any).', default: '*', parse: list },
  ICE_BIND_ADDRESS: { doc: "Local address the server's peer connections bind to (empty: all interfaces).", default: '', parse: ip },
  ICE_PORT_RANGE: { doc: 'UDP port range for media, MIN-MAX (empty: any).', default: '', parse: portRange },
  ICE_CANDIDATE_ALLOW: {
    doc: "Comma-separated addresses or CIDR ranges the server may send ICE checks to even where the built-in rules refuse them (see \"ICE candidate filter\").",
    default: '',
    parse: cidrList,
  },
  ICE_CANDIDATE_DENY: {
    doc: 'Comma-separated addresses or CIDR ranges the server never sends ICE checks to (a client candidate there is dropped); wins over ICE_CANDIDATE_ALLOW.',
    default: '',
    parse: cidrList,
  },
  ICE_PUBLIC_IP: {
    doc: "Public address advertised in place of the server's host candidates (1:1 NAT, like every media server's NAT setting).",
    default: '',
    parse: ip,
  },
  SERVER_ICE_SERVERS: {
    doc: "Comma-separated STUN/TURN servers for the server's own peer connections (when it sits behind NAT): stun:host:port, turn:user:pass@host:port?transport=udp; a turn: URL without user:pass gets TURN REST credentials from the first TURN secret. Empty: host candidates only (an unreachable server stalls gathering).",
    default: '',
    parse: serverIceUrls,
  },
  WEBRTC_STACK: {
    doc: "Server-side WebRTC stack: libdatachannel (native, node-datachannel) or werift (pure TypeScript). Both behave the same; see bench/README.md for how they compare.",
    default: 'libdatachannel',
    parse: oneOf('libdatachannel', 'werift'),
  },
  CALL_CONNECT_TIMEOUT_MS: {
    doc: 'A call whose peer has not connected (ICE + DTLS) by then is closed and recorded as failed.',
    default: '30000',
    parse: int(1000, 600000),
  },
  CALL_IDLE_TIMEOUT_MS: {
    doc: 'A connected call with no audio or data-channel message from the client for this long is ended (idle_timeout).',
    default: '60000',
    parse: int(1000, 86_400_000),
  },
  CALL_MAX_DURATION_MS: { doc: 'A call is ended after this long (max_duration).', default: '3600000', parse: int(1000, 86_400_000) },
  MAX_CONCURRENT_CALLS: { doc: 'Calls this node (each worker) carries at once; beyond it, a calls request is passed to the least-loaded live node with room (nodes sharing the database), or answered 503 with Retry-After when there is none.', default: '50', parse: int(1, 10000) },
  OPUS_COMPLEXITY: {
    doc: "Opus encoder complexity (0–10) for the agent's voice: encoding is most of a call's CPU; 9 (libopus's default, libwebrtc's on desktops) costs ≈ 1.8× what 5 (libwebrtc's on phones) costs for slightly better sound, 1 about half.",
    default: '5',
    parse: int(0, 10),
  },
  VAD: {
    doc: "Voice-activity detector for the caller's turns: silero (Silero VAD v5, in-process ONNX, ≈ 0.3 ms per 32 ms) or webrtc (WebRTC VAD, cheaper, less sure of noise).",
    default: 'silero',
    parse: oneOf('silero', 'webrtc'),
  },
  VAD_THRESHOLD: { doc: "Speech probability (0–1) at or above which the caller's audio is speech; a session's turn_detection.threshold overrides it.", default: '0.5', parse: num(0.01, 0.99) },
  VAD_PREFIX_PADDING_MS: { doc: "Audio from before the caller's speech onset handed to the recogniser with it (turn_detection.prefix_padding_ms).", default: '300', parse: int(0, 2000) },
  VAD_SILENCE_MS: {
    doc: "Silence that ends the caller's turn (turn_detection.silence_duration_ms). 300 keeps every test sentence of bench/stages.ts one turn with either VAD (their longest pause needs 180 ms with Silero, 260 ms with WebRTC); slow speakers may want more.",
    default: '300',
    parse: int(100, 5000),
  },
  VAD_MODE: { doc: 'WebRTC VAD aggressiveness (VAD=webrtc), 0 (keeps more as speech) to 3.', default: '2', parse: int(0, 3) },
  PREPARE_REPLY_AFTER_MS: {
    doc: "Silence inside the caller's turn after which the reply is prepared unseen (recognised, generated, its first clause synthesised), so it plays the moment the turn's end is certain; dropped if the caller goes on. Must be under the turn's silence to help; 0 turns it off. With a paid LLM_BASE_URL, each dropped preparation is one extra request.",
    default: '100',
    parse: int(0, 5000),
  },
  LLM_BASE_URL: { doc: 'OpenAI-compatible API base (e.g. http://127.0.0.1:11434/v1); when set, orga-1-beta runs its chat completions.', parse: str },
  LLM_API_KEY: { doc: 'Bearer key for LLM_BASE_URL (never logged).', parse: str },
  LLM_MODEL: { doc: 'Model name sent to LLM_BASE_URL.', default: 'gpt-4o-mini', parse: str },
  LLM_TIMEOUT_MS: { doc: 'Timeout of the HTTP backends (LLM_BASE_URL, STT_URL, TTS_URL); a model reply that takes longer fails with an error event and a spoken apology.', default: '15000', parse: int(1000, 120000) },
  STT_PROVIDER: {
    doc: 'Speech recogniser: pocketsphinx (built in, English) or http (STT_URL). Unset: http when STT_URL is set, else pocketsphinx.',
    parse: oneOf('pocketsphinx', 'http'),
  },
  STT_WORKERS: {
    doc: 'Worker threads running the built-in speech recogniser (each holds its decoders; about one per core is right).',
    default: '2',
    parse: int(1, 32),
  },
  STT_URL: { doc: 'OpenAI-compatible API base whose /audio/transcriptions the http recogniser calls (the turn as one WAV file).', parse: str },
  STT_API_KEY: { doc: 'Bearer key for STT_URL (never logged).', parse: str },
  STT_MODEL: { doc: 'Model name sent to STT_URL.', default: 'whisper-1', parse: str },
  TTS_PROVIDER: {
    doc: 'Speech synthesis: local (flite and espeak-ng) or http (TTS_URL). Unset: http when TTS_URL is set, else local.',
    parse: oneOf('local', 'http'),
  },
  TTS_URL: { doc: 'OpenAI-compatible API base whose /audio/speech the http speech engine calls (the catalogue voice name as voice, response_format pcm: 24 kHz 16-bit mono, streamed).', parse: str },
  TTS_API_KEY: { doc: 'Bearer key for TTS_URL (never logged).', parse: str },
  TTS_MODEL: { doc: 'Model name sent to TTS_URL.', default: 'tts-1', parse: str },
  ECHO_DELAY_MS: { doc: "Delay before the audio-echo agent plays the caller's audio back.", default: '200', parse: int(0, 5000) },
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof settings;
type Parsed = { [K in keyof Settings]: ReturnType<Settings[K]['parse']> | (Settings[K] extends { default: string } ? never : undefined) };
/** DATABASE_URL's default depends on DATA_DIR, so it is always set after loading. */
export type Config = Omit<Parsed, 'DATABASE_URL'> & { DATABASE_URL: string };

/** Rules between settings. */
/** Rules between settings; a setting that did not parse is undefined and its rules do not apply. */
function crossChecks(c: Parsed): string[] {
  const problems: string[] = [];
  // A provider chosen by name needs its service's URL.
  if (c.STT_PROVIDER === 'http' && !c.STT_URL) problems.push('STT_PROVIDER: http needs STT_URL');
  if (c.TTS_PROVIDER === 'http' && !c.TTS_URL) problems.push('TTS_PROVIDER: http needs TTS_URL');
  if (c.NODE_LOST_AFTER_MS < 2 * c.NODE_HEARTBEAT_MS) problems.push('NODE_LOST_AFTER_MS: must be at least twice NODE_HEARTBEAT_MS');
  if (c.HTTP_REQUEST_TIMEOUT_MS < c.HTTP_HEADERS_TIMEOUT_MS) problems.push('HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS');
  return problems;
}

/** Parses every setting from `env`, collecting all problems before failing. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings) as [string, Setting<unknown>][]) {
    const raw = env[name] ?? setting.default;
    if (raw === undefined || (raw === '' && setting.default === undefined)) {
      out[name] = undefined;
      continue;
    }
    try {
      out[name] = setting.parse(raw);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
  const parsed = out as Parsed;
  problems.push(...crossChecks(parsed));
  if (problems.length) throw new ConfigError(problems);
  return { ...parsed, DATABASE_URL: parsed.DATABASE_URL ?? `sqlite:${parsed.DATA_DIR.replace(/\/$/, '')}/parley.db` };
}
