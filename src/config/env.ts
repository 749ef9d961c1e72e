// Configuration: every setting comes from an environment variable (or `.env` in development),
// parsed and validated once at start. The table below is also the source of docs/reference/configuration.md's list.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { parseCidr } from '../system/cidr.js';
import { looksLikeApiKey } from './apiKeyFormat.js';
import { loadModelCatalogue, ModelFileError, type ModelCatalogue } from './models.js';
import { parseEventTypes } from './webhookEventTypes.js';
import { isWebhookSecret } from './webhookSecretFormat.js';

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

/** A PEM file's contents, read once at start (an unreadable file is a one-line configuration error). */
const pemFile: Parser<string> = (raw) => {
  let text: string;
  try {
    text = readFileSync(raw, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${raw}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!text.includes('-----BEGIN ')) throw new Error(`${raw} is not a PEM file`);
  return text;
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

const webhookUrl: Parser<string> = (raw) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`expected an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`expected an http(s) URL, got "${raw}"`);
  return url.toString();
};

/** A collector's URL: http or https (its credentials go in OTEL_EXPORTER_OTLP_HEADERS, never in the URL: it is not repeated). */
const otlpUrl: Parser<string> = (raw) => {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error('expected an http(s) URL such as http://otel-collector:4318');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('expected an http(s) URL such as http://otel-collector:4318');
  return raw.trim();
};

/** The secret is never repeated in the message. */
const webhookSecret: Parser<string> = (raw) => {
  if (!isWebhookSecret(raw)) throw new Error('expected whsec_ followed by base64 of at least 24 bytes');
  return raw;
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

/** DNS servers as c-ares takes them: ip, ip:port, [ipv6]:port. */
const dnsServers: Parser<string[]> = (raw) => {
  const entries = list(raw);
  for (const e of entries) {
    const m = /^\[([^\]]+)\]:(\d+)$/.exec(e) ?? /^([^:]+):(\d+)$/.exec(e);
    const [address, port] = m ? [m[1]!, Number(m[2])] : [e, 53];
    if (!isIP(address) || port < 1 || port > 65535) throw new Error(`"${e}" is not like 192.0.2.53, 192.0.2.53:5353 or [2001:db8::53]:53`);
  }
  return entries;
};

/** SIP_USERS: user:password pairs; never echoes an entry (it carries a password). */
const sipUsers: Parser<Map<string, string>> = (raw) => {
  const users = new Map<string, string>();
  list(raw).forEach((entry, i) => {
    const at = entry.indexOf(':');
    if (at < 1 || at === entry.length - 1 || !/^[A-Za-z0-9._~!$&'()*+;=-]+$/.test(entry.slice(0, at))) {
      throw new Error(`entry ${i + 1} is not like user:password`);
    }
    users.set(entry.slice(0, at), entry.slice(at + 1));
  });
  return users;
};

/** One upstream registration (SIP_REGISTRATIONS): the account at a provider's registrar. */
export interface SipRegistrationSetting {
  user: string;
  password: string;
  /** The registrar's host (name or address) and port. */
  host: string;
  port: number;
  /** The registration's lifetime asked for (seconds). */
  expires: number;
}

const sipRegistrations: Parser<SipRegistrationSetting[]> = (raw) =>
  list(raw).map((entry, i) => {
    // sip:user:password@host[:port][;expires=N] (the password percent-encoded where it has : @ , ;).
    const m = /^sip:([^:@;]+):([^@;]*)@(\[[0-9a-fA-F:.]+\]|[^:;\[\]]+)(?::(\d{1,5}))?(?:;expires=(\d{1,6}))?$/.exec(entry);
    if (!m) throw new Error(`entry ${i + 1} is not like sip:user:password@registrar[:port][;expires=seconds]`);
    const port = m[4] ? Number(m[4]) : 5060;
    const expires = m[5] ? Number(m[5]) : 600;
    if (port < 1 || port > 65535) throw new Error(`entry ${i + 1}: port ${port} out of range`);
    if (expires < 60 || expires > 86_400) throw new Error(`entry ${i + 1}: expires must be 60–86400 seconds`);
    return { user: decodeURIComponent(m[1]!), password: decodeURIComponent(m[2]!), host: m[3]!.replace(/^\[|\]$/g, ''), port, expires };
  });

/** The trunk outbound SIP calls go through (SIP_OUTBOUND_TRUNK): its host and port, and digest credentials when it asks. */
export interface SipTrunkSetting {
  host: string;
  port: number;
  user?: string;
  password?: string;
}

const sipTrunk: Parser<SipTrunkSetting | undefined> = (raw) => {
  if (raw.trim() === '') return undefined;
  // sip:[user:password@]host[:port] (the password percent-encoded where it has : @ , ;).
  const m = /^sip:(?:([^:@;]+):([^@;]*)@)?(\[[0-9a-fA-F:.]+\]|[^:;@\[\]]+)(?::(\d{1,5}))?$/.exec(raw.trim());
  if (!m) throw new Error('is not like sip:[user:password@]host[:port]');
  const port = m[4] ? Number(m[4]) : 5060;
  if (port < 1 || port > 65535) throw new Error(`port ${port} out of range`);
  const credentials = m[1] === undefined ? {} : { user: decodeURIComponent(m[1]), password: decodeURIComponent(m[2]!) };
  return { host: m[3]!.replace(/^\[|\]$/g, ''), port, ...credentials };
};

/** SIP_OUTBOUND_ALLOW: which destinations each API key may call (`*` for every key), as glob patterns. */
export type SipOutboundAllow = Map<string, string[]>;

const sipOutboundAllow: Parser<SipOutboundAllow> = (raw) => {
  const allow: SipOutboundAllow = new Map();
  raw.split(';').map((s) => s.trim()).filter(Boolean).forEach((entry, i) => {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq).trim();
    const patterns = list(entry.slice(eq + 1));
    if (eq < 1 || !(key === '*' || /^key_[A-Za-z0-9]+$/.test(key)) || !patterns.length) throw new Error(`entry ${i + 1} is not like key_…=PATTERN[,PATTERN…] (or *=… for every key)`);
    for (const p of patterns) if (!/^[A-Za-z0-9+*._~:@;=%\[\]-]+$/.test(p)) throw new Error(`entry ${i + 1}: pattern "${p}" has characters a destination never has`);
    allow.set(key, [...(allow.get(key) ?? []), ...patterns]);
  });
  return allow;
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
  DEMO_ENABLED: {
    doc: 'The demo page (GET /) and its backend-proxy route (POST /demo/session), which hands tokens to anyone who asks (within DEMO_RATE_LIMIT_PER_MINUTE and its key\'s call limits). Unset: on when HOST is a loopback address and TRUST_PROXY is empty (only this machine can reach it), and then refused to requests a proxy forwarded; true: on whatever the bind (put it behind HTTPS); false: off.',
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
  ADMIN_TOKEN: {
    doc: 'Turns on the operator console at /console (live calls, conversations, API keys) and is its password (at least 32 characters; compared in constant time, never logged). A login gets an HttpOnly, SameSite=Strict session cookie (Secure under HTTPS) signed with a key derived from it: changing it logs every session out. Unset: no console (/console answers 404).',
    parse: (raw: string) => {
      // Never echo the value: it is a secret.
      if (raw.length < 32) throw new Error('must be at least 32 characters');
      return raw;
    },
  },
  WEBSOCKET_MAX_UNSENT_BYTES: {
    doc: 'Bytes a WebSocket session (or sideband connection) may leave unsent because its client does not read; past it the connection is cut (the session ends client_too_slow), so a stalled reader holds at most this much of the node\'s memory.',
    default: String(8 * 1024 * 1024),
    parse: int(64 * 1024, 1024 * 1024 * 1024),
  },
  WEBSOCKET_AUDIO_LEAD_MS: {
    doc: "How far ahead of the client's playback a WebSocket session's reply audio is sent: the audio deltas go out in 100 ms pieces, as a real-time service produces them, at most this much ahead of what the client has played, and the response stays in progress until its last piece is sent (so a response.cancel during the reply cancels it). 0: every piece as soon as it is synthesised (the response may be done before the client hears it).",
    default: '500',
    parse: int(0, 60_000),
  },
  TLS_CERT_FILE: {
    doc: 'PEM certificate chain: with TLS_KEY_FILE, Parley serves HTTPS and WSS on PORT (OpenAI\'s WebSocket clients open only wss:, browsers need a secure origin for the microphone). Unset: plain HTTP (put a TLS-terminating proxy in front).',
    parse: pemFile,
  },
  TLS_KEY_FILE: { doc: 'PEM private key of TLS_CERT_FILE.', parse: pemFile },
  LOG_LEVEL: { doc: 'pino log level.', default: 'info', parse: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent') },
  LOG_FORMAT: {
    doc: 'Logs (on stderr): auto is readable lines when stderr is a terminal and JSON (one object a line) otherwise; json or pretty force one. Secrets are redacted in both.',
    default: 'auto',
    parse: oneOf('auto', 'json', 'pretty'),
  },
  OTEL_TRACES_EXPORTER: {
    doc: 'OpenTelemetry traces (a span per call, per turn with a child per stage, per upstream model request and per webhook delivery), exported over OTLP/HTTP: otlp turns them on (to http://localhost:4318 unless an endpoint is set), none turns them off whatever else is set. Unset: on exactly when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set.',
    parse: (raw: string) => (raw.trim() === '' ? undefined : oneOf('otlp', 'none')(raw.trim())),
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    doc: "The OTLP/HTTP collector's base URL (e.g. http://otel-collector:4318); traces go to its v1/traces path. Setting it turns traces on. Parley's exporter sends JSON (http/json), which a collector's otlp receiver takes on its HTTP port. The other OTEL_EXPORTER_OTLP_* settings (HEADERS, TIMEOUT, COMPRESSION, CERTIFICATE…) are read by the OpenTelemetry SDK as it documents them.",
    parse: otlpUrl,
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { doc: 'The full URL traces are posted to (taken as it is, no path added); wins over OTEL_EXPORTER_OTLP_ENDPOINT. Setting it turns traces on.', parse: otlpUrl },
  OTEL_EXPORTER_OTLP_HEADERS: { doc: "Headers sent with each export, key=value pairs separated by commas (a collector's API key: never logged).", parse: str },
  OTEL_SERVICE_NAME: { doc: "The traces' service.name.", default: 'parley', parse: str },
  OTEL_RESOURCE_ATTRIBUTES: { doc: 'More resource attributes of the traces, key=value pairs separated by commas (deployment.environment=prod,…); service.name here wins over OTEL_SERVICE_NAME. Each node adds service.instance.id (its NODE_ID).', parse: str },
  OTEL_TRACES_SAMPLER: {
    doc: 'Which traces are kept: parentbased_always_on (every call), always_on, always_off, traceidratio or parentbased_traceidratio (a share of the calls, OTEL_TRACES_SAMPLER_ARG), parentbased_always_off. A call is kept or dropped whole.',
    default: 'parentbased_always_on',
    parse: oneOf('always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'),
  },
  OTEL_TRACES_SAMPLER_ARG: { doc: 'The share of traces the ratio samplers keep, 0 to 1.', default: '1', parse: num(0, 1) },
  OTEL_BSP_SCHEDULE_DELAY: { doc: 'Milliseconds between two exports of the finished spans.', default: '5000', parse: int(10, 600_000) },
  OTEL_BSP_MAX_QUEUE_SIZE: { doc: 'Finished spans held for export at most; past it new ones are dropped (a collector away loses spans, never the calls).', default: '2048', parse: int(1, 1_000_000) },
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: { doc: 'Spans in one export at most (no more than OTEL_BSP_MAX_QUEUE_SIZE).', default: '512', parse: int(1, 1_000_000) },
  OTEL_BSP_EXPORT_TIMEOUT: { doc: 'Milliseconds one export may take before it is given up.', default: '30000', parse: int(100, 600_000) },
  OTEL_SDK_DISABLED: { doc: 'true: no traces, whatever the other OTEL_* settings say.', default: 'false', parse: bool },
  OTEL_TRACE_CONTENT: {
    doc: "Parley's own: true puts what the caller said (the turn's transcript) on its turn span. Off, spans carry timings, ids and outcomes, never words; audio is never put in a span.",
    default: 'false',
    parse: bool,
  },
  DATA_DIR: {
    doc: "Directory for the SQLite file, generated local secrets and Parley's coturn files. One server per directory: a second `parley serve` on a DATA_DIR in use says so and exits with code 1, leaving the first alone (the lock on DATA_DIR/server.lock ends with the process that holds it). The CLI's other commands run beside a server.",
    default: './data',
    parse: str,
  },
  DATABASE_URL: {
    doc: 'sqlite:<path> (embedded, default <DATA_DIR>/parley.db) or postgres://user@host/db.',
    parse: databaseUrl,
  },
  RECORDING: {
    doc: "Record calls: on records every call, off none; an API key's own choice (parley keys recording <id> on|off|default) wins over it. Recordings are stereo Ogg Opus files, the caller on the left and the agent on the right.",
    default: 'off',
    parse: oneOf('off', 'on'),
  },
  RECORDING_DIR: { doc: 'Directory of the recordings (one <conversation id>.opus file a call). Unset: <DATA_DIR>/recordings. Nodes serve the recordings they find here: share it between nodes for any node to serve any.', parse: str },
  RECORDING_RETENTION_DAYS: {
    doc: 'Recordings older than this many days are deleted (checked at start and hourly); 0 keeps them for ever. 30 by default: a recording holds what callers said, kept no longer than needed (and a node records ≈ 22 MB per call-hour).',
    default: '30',
    parse: int(0, 36_500),
  },
  RECORDING_MAX_BYTES: {
    doc: "Size one call's recording may reach (its file, headers included); there the recording stops, closed as a valid Ogg Opus file, the call goes on, and its client is told (parley.recording.stopped, reason max_size). ≈ 22 MB per call-hour: the default holds about 90 minutes.",
    default: String(32 * 1024 * 1024),
    parse: int(4096, Number.MAX_SAFE_INTEGER),
  },
  RECORDING_MIN_FREE_BYTES: {
    doc: "Free space RECORDING_DIR's disk must keep: below it (checked every 5 s while calls are recorded, and as each recording starts) recordings stop, closed as valid files, their calls go on, and their clients are told (parley.recording.stopped, reason low_disk). 0: no guard (a full disk still stops a recording, as a write failure).",
    default: String(1024 * 1024 * 1024),
    parse: int(0, Number.MAX_SAFE_INTEGER),
  },
  REDIS_URL: { doc: 'redis://host:port; shares call counts and key revocations across nodes. Optional.', parse: str },
  RATE_LIMIT_WINDOW_SECONDS: {
    doc: 'Window of the RATE_LIMIT_* limits: a count starts at its first request and starts over this long after (429 with Retry-After beyond it). With REDIS_URL every node and worker counts together; without, each process counts alone (the SIP limits: each node, its workers together).',
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
  RATE_LIMIT_KEY_LOOKUPS_PER_IP: {
    doc: 'Requests one client address may make per window to the other routes that look up an API key or token (models, voices, conversation reads, hang-up, outbound SIP calls, a ringing call\'s accept, reject and refer, and OpenAI\'s WebSocket upgrade GET /v1/realtime, sessions and sideband connections alike), wrong credentials included; 0: no limit. Keeps a stream of made-up keys from reaching the store and flushing the key cache.',
    default: '600',
    parse: int(0, 10_000_000),
  },
  RATE_LIMIT_SIP_INVITES_PER_IP: {
    doc: 'SIP INVITEs one source address outside SIP_TRUSTED_CIDRS may send per window (challenged, refused and wrong-password ones included; retransmissions not); beyond it 503 with Retry-After. 0: no limit. A trunk in SIP_TRUSTED_CIDRS is held by the call limits only. Counted per node (under PARLEY_WORKERS by the primary), or across nodes with Redis.',
    default: '120',
    parse: int(0, 10_000_000),
  },
  RATE_LIMIT_SIP_REGISTERS_PER_IP: {
    doc: 'SIP REGISTERs one source address outside SIP_TRUSTED_CIDRS may send per window (challenged and refused ones included; retransmissions not); beyond it 503 with Retry-After. A phone sends two or three per registration and refresh. 0: no limit. Counted per node (under PARLEY_WORKERS by the primary), or across nodes with Redis.',
    default: '120',
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
    doc: 'How long a node trusts its cached view of an API key; a revocation takes effect within this time. Also how often (500 ms at the least) a node asks the store whether the keys of its live calls were revoked: their calls then end (key_revoked).',
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
    doc: "Processes serving this node's port: auto (one per core), or a number. Each worker carries the calls it answered (its own UDP sockets and agents) and is a node of its own in the registry (NODE_ID-w1, -w2…); a request for a call another worker carries is passed to it. SIP (SIP_PORT) answers on every worker: the primary holds its port and hands each message to the worker its Call-ID belongs to.",
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
  TURN_USER_QUOTA: { doc: "Relays (allocations) one TURN credential may hold at once in coturn (its user-quota; Parley's coturn and `parley turn config`). A browser call uses one or two. 0: no limit.", default: '10', parse: int(0, 100000) },
  TURN_TOTAL_QUOTA: { doc: "Relays coturn holds at once in all (its total-quota; Parley's coturn and `parley turn config`). 0: no limit.", default: '2000', parse: int(0, 1000000) },
  TURN_MAX_BPS: { doc: "Bytes a second one relay may carry (coturn's max-bps; Parley's coturn and `parley turn config`): a voice call needs about 10 KB/s, with camera video up to 250 KB/s. 0: no limit.", default: '500000', parse: int(0, 1_000_000_000) },
  TURN_TCP_RELAY: { doc: "Let coturn relay to TCP peers (RFC 6062; Parley's coturn and `parley turn config`). WebRTC never needs it (clients may still reach coturn over TCP), so it is off.", default: 'false', parse: bool },
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
  SIP_PORT: {
    doc: 'Port of the SIP front door (phone calls from a SIP trunk or PBX), UDP and TCP; 0 picks a free one. Unset: no SIP.',
    default: '',
    parse: (raw: string) => (raw.trim() === '' ? undefined : int(0, 65535)(raw)),
  },
  SIP_TLS_PORT: {
    doc: 'Port of SIP over TLS (sips, RFC 3261 §26.2) when TLS_CERT_FILE and TLS_KEY_FILE are set and SIP_PORT is; 0 picks a free one. Empty: SIP_PORT + 1 (5061 beside 5060), or a free one when SIP_PORT is 0.',
    default: '',
    parse: (raw: string) => (raw.trim() === '' ? undefined : int(0, 65535)(raw)),
  },
  SIP_HOST: {
    doc: "Address the SIP front door and its RTP media bind, and the address its SDP answers announce (ICE_PUBLIC_IP instead when set). Empty: HOST.",
    default: '',
    parse: ip,
  },
  SIP_USERS: {
    doc: 'Comma-separated user:password pairs SIP callers authenticate as (digest, MD5). Callers from SIP_TRUSTED_CIDRS need none; with neither set only loopback callers are admitted.',
    default: '',
    parse: sipUsers,
  },
  SIP_REGISTRATIONS: {
    doc: "Comma-separated accounts Parley registers with at upstream SIP providers or PBXes, each sip:user:password@registrar[:port][;expires=seconds] (UDP; port 5060, expires 600 by default; percent-encode : @ , ; in the password). The provider then sends that account's calls to this node's SIP port: put its addresses in SIP_TRUSTED_CIDRS. Refreshed before expiry, retried with backoff after a failure; state in /readyz (sip_registrations) and parley_sip_registration_up.",
    default: '',
    parse: sipRegistrations,
  },
  SIP_MAX_HALF_OPEN_CALLS: {
    doc: "SIP calls connecting (ringing, or answered and not yet ACKed) this node (each worker) holds at once; beyond it an INVITE gets 503 with Retry-After. A budget of SIP's own: these calls count neither against their key's MAX_HALF_OPEN_CALLS_PER_KEY nor the node's MAX_HALF_OPEN_CALLS, so unacknowledged INVITEs cannot lock the key out of its WebRTC and WebSocket calls (they still count in MAX_CALLS_PER_KEY and MAX_CONCURRENT_CALLS).",
    default: '10',
    parse: int(1, 10000),
  },
  SIP_TCP_MAX_CONNECTIONS_PER_IP: {
    doc: 'SIP TCP and TLS connections one source address may hold at once (within the node\'s 1,024); a further one is closed as it opens. Addresses in SIP_TRUSTED_CIDRS are held by the node\'s cap only. 0: no per-address limit.',
    default: '32',
    parse: int(0, 1024),
  },
  SIP_TCP_IDLE_TIMEOUT_MS: {
    doc: 'A SIP TCP or TLS connection that brings no complete SIP message for this long (keep-alives and bytes trickling in do not count) is closed, unless it carries a call.',
    default: '30000',
    parse: int(1000, 3_600_000),
  },
  SIP_MEDIA_TIMEOUT_MS: {
    doc: 'A SIP call whose caller sends neither RTP nor RTCP for this long (it vanished without BYE: a phone unplugged, a NAT binding gone) ends (end_reason media_timeout) and is sent a BYE. Not counted while the caller holds the call (recvonly, inactive). 0: never (the call idle timeout still applies).',
    default: '30000',
    parse: int(0, 3_600_000),
  },
  SIP_AUTH_MAX_FAILURES: {
    doc: 'Wrong SIP digest passwords in a row one source address may send (for any user, or for names that are no user\'s); then its INVITEs and REGISTERs with credentials get 403 Forbidden for 30 s, the wait doubling with each further wrong password (up to 30 minutes). The address that guesses waits, not the account: a phone elsewhere still logs in. The right password after the wait starts the count over. Counted per node (under PARLEY_WORKERS by the primary). 0: no backoff.',
    default: '5',
    parse: int(0, 1000),
  },
  SIP_TRUSTED_CIDRS: {
    doc: 'Comma-separated addresses or CIDR ranges (a trunk\'s signalling addresses) whose SIP calls are admitted without authentication; other sources must authenticate (SIP_USERS) or are refused (403).',
    default: '',
    parse: cidrList,
  },
  SIP_API_KEY_ID: {
    doc: 'Id of the API key (key_…) that owns SIP calls: their records, limits and the sideband connection. Empty: the oldest active key.',
    default: '',
    parse: (raw: string) => {
      if (raw !== '' && !/^key_[A-Za-z0-9]+$/.test(raw)) throw new Error('must be an API key id (key_…), as `parley keys list` shows');
      return raw;
    },
  },
  SIP_OUTBOUND_TRUNK: {
    doc: 'The SIP trunk or proxy outbound calls (POST /v1/realtime/sip/calls) go through: sip:[user:password@]host[:port] (UDP, port 5060 by default; the credentials answer its digest challenge, for numbers and SIP URIs of this host and port only; percent-encode : @ , ; in the password). A number is called as sip:NUMBER@host; a SIP URI is sent through it with its own Request-URI. Empty: numbers cannot be called, SIP URIs are called directly. Registered phones are always called directly.',
    default: '',
    parse: sipTrunk,
  },
  SIP_OUTBOUND_CALLER_ID: {
    doc: "The caller id (the From user) of outbound SIP calls that name none: a number (+…) or a user name.",
    default: 'parley',
    parse: (raw: string) => {
      if (!/^\+?[A-Za-z0-9._~-]{1,64}$/.test(raw)) throw new Error('must be a number (+…) or a user name of letters, digits and . _ ~ -');
      return raw;
    },
  },
  SIP_OUTBOUND_ALLOW: {
    doc: "Which destinations each API key may call out to (toll-fraud guard), as semicolon-separated key_…=PATTERN[,PATTERN…] entries, `*=…` for every key; a pattern is a glob (* any characters) whose start says what it allows: + (or tel:+) numbers (+4930*), a digit numbers without + and registered users named so (0049*, 1001), sip: SIP URIs (sip:*@pbx.example.com), anything else registered users' names (alice; * alone: every registered phone, no number). A number is matched as dialled however it is written: a SIP URI whose user part has no letter (sip:+4930…@pbx) must match a number pattern too. Empty: no key may call out (403).",
    default: '',
    parse: sipOutboundAllow,
  },
  SIP_OUTBOUND_MAX_CALLS: {
    doc: 'Outbound SIP calls (ringing or answered) this node (each worker) carries at once; beyond it a request gets 429.',
    default: '20',
    parse: int(1, 10_000),
  },
  SIP_OUTBOUND_MAX_CALLS_PER_KEY: {
    doc: 'Outbound SIP calls (ringing or answered) one API key has on this node (each worker) at once; beyond it a request gets 429. They count in MAX_CALLS_PER_KEY too.',
    default: '5',
    parse: int(1, 10_000),
  },
  RATE_LIMIT_SIP_OUTBOUND_PER_KEY: {
    doc: 'Outbound SIP call attempts one API key may make per RATE_LIMIT_WINDOW_SECONDS (refused ones included), counted across nodes with Redis, else per node (under PARLEY_WORKERS by the primary); beyond it 429 with Retry-After. 0: no limit.',
    default: '30',
    parse: int(0, 1_000_000),
  },
  SIP_ROUTING_TIMEOUT_MS: {
    doc: 'How long a SIP call rings waiting for the app\'s accept, reject or refer after its realtime.call.incoming webhook; then SIP_DEFAULT_ROUTE applies. A SIP call\'s connect deadline is this plus 32 s (64·T1) for the ACK of its 200, not CALL_CONNECT_TIMEOUT_MS.',
    default: '5000',
    parse: int(500, 25_000),
  },
  SIP_DEFAULT_ROUTE: {
    doc: 'What a ringing SIP call nobody decided on within SIP_ROUTING_TIMEOUT_MS gets: answer (the default agent answers) or reject (480 Temporarily Unavailable).',
    default: 'answer',
    parse: oneOf('answer', 'reject'),
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
    doc: 'A call whose peer has not connected (ICE + DTLS) by then is closed and recorded as failed (connect_timeout); until then it is half-open (MAX_HALF_OPEN_CALLS). Short, so offers that never connect hold no slot for long. Not for an incoming SIP call, which may ring for SIP_ROUTING_TIMEOUT_MS, then waits 32 s (RFC 3261\'s 64·T1) for the ACK of its 200.',
    default: '10000',
    parse: int(1000, 30000),
  },
  CALL_IDLE_TIMEOUT_MS: {
    doc: 'A connected call with no audio or data-channel message from the client for this long is ended (idle_timeout).',
    default: '60000',
    parse: int(1000, 86_400_000),
  },
  CALL_MAX_DURATION_MS: { doc: 'A call is ended after this long (max_duration).', default: '3600000', parse: int(1000, 86_400_000) },
  EVENT_LOOP_LAG_DEGRADED_MS: {
    doc: "/readyz reports the node degraded (still serving) while its event loop ran later than this in the last second; the figure is parley_event_loop_lag_seconds. Every call's media clock shares the loop.",
    default: '200',
    parse: int(10, 60000),
  },
  CALL_EVENTS_PER_SECOND: {
    doc: 'Client events (data-channel messages) one call may send a second, in bursts of twice that; beyond it they are dropped unread and the client gets an error event (rate_limit_exceeded) once a second. The call goes on.',
    default: '50',
    parse: int(1, 100000),
  },
  CALL_REPLIES_PER_SECOND: {
    doc: 'Replies one call\'s client may ask for a second (conversation.item.create, response.create), in bursts of twice that (at least 3); beyond it the request is refused with an error event (rate_limit_exceeded). Replies the agent starts at the end of a spoken turn are not counted.',
    default: '2',
    parse: int(1, 1000),
  },
  MAX_SIDEBANDS_PER_CALL: {
    doc: "Sideband connections (GET /v1/realtime?call_id=…) one call may have at once, counted on the node carrying it (a sideband relayed from another node included); one more is told an error event (too_many_sidebands) and closed; the call and its other sidebands go on. Each hears every event of the call.",
    default: '4',
    parse: int(1, 100),
  },
  CALL_RECONNECT_GRACE_MS: {
    doc: "A connected call whose client becomes unreachable (ICE disconnected: a network blip, a Wi-Fi to mobile switch) waits this long for it to come back before it ends (connection_lost). The client's own hang-up (its DTLS close) ends the call at once.",
    default: '5000',
    parse: int(0, 600000),
  },
  MAX_CONCURRENT_CALLS: { doc: 'Calls this node (each worker) carries at once; beyond it, a calls request is passed to the least-loaded live node with room (nodes sharing the database), or answered 503 with Retry-After when there is none.', default: '50', parse: int(1, 10000) },
  MAX_HALF_OPEN_CALLS: {
    doc: 'Calls not yet connected (offer answered, ICE + DTLS not done) this node (each worker) holds at once, within MAX_CONCURRENT_CALLS; beyond it the node is full for new calls (passed on, or 503) while connected calls keep the rest. 0: no separate budget.',
    default: '10',
    parse: int(0, 10000),
  },
  MAX_CALLS_PER_KEY: {
    doc: 'Calls one API key (its tokens together; the demo key too) may have at once: across every node and worker with REDIS_URL, else on this node (each worker); beyond it calls answers 429 with Retry-After, never passed to another node. 0: no limit.',
    default: '25',
    parse: int(0, 10000),
  },
  MAX_HALF_OPEN_CALLS_PER_KEY: {
    doc: 'Calls not yet connected one API key may have on this node (each worker) at once; beyond it 429 with Retry-After. 0: no limit.',
    default: '5',
    parse: int(0, 10000),
  },
  MAX_CALLS_PER_TOKEN: { doc: 'Calls one ephemeral token may have on this node (each worker) at once; beyond it 429 with Retry-After. 0: no limit.', default: '5', parse: int(0, 10000) },
  OPUS_COMPLEXITY: {
    doc: "Opus encoder complexity (0–10) for the agent's voice: encoding is most of a call's CPU; 9 (libopus's default, libwebrtc's on desktops) costs ≈ 1.8× what 5 (libwebrtc's on phones) costs for slightly better sound, 1 about half.",
    default: '5',
    parse: int(0, 10),
  },
  OPUS_MIN_COMPLEXITY: {
    doc: 'The lowest Opus encoder complexity the node steps down to under load (from OPUS_COMPLEXITY, a step each second the load is above 0.8 × LOAD_THRESHOLD, back up a step after 3 s below 0.6 × it): headroom before the node refuses calls.',
    default: '2',
    parse: int(0, 10),
  },
  LOAD_THRESHOLD: {
    doc: "The node's load (0–1: the busiest of its event loop's busy share, the machine's cores' busy share, and its event loop's lateness against 100 ms, 100 ms or more counting as 1; smoothed over ≈ 3 s) at which it takes no new calls itself: calls go to the least-loaded other node under it (WebRTC offers are passed on), or get 503 with Retry-After. It takes calls again 0.05 below. Unset: 0.75, but only to steer calls: a node that no other node takes a call from takes it itself (its Opus complexity lowered, /readyz degraded). 0: off (only MAX_CONCURRENT_CALLS limits).",
    parse: num(0, 1),
  },
  VAD: {
    doc: "Voice-activity detector for the caller's turns: silero (Silero VAD v5, in-process ONNX, ≈ 0.3 ms per 32 ms) or webrtc (WebRTC VAD, cheaper, less sure of noise).",
    default: 'silero',
    parse: oneOf('silero', 'webrtc'),
  },
  NOISE_REDUCTION: {
    doc: "Noise suppression (RNNoise, in-process WebAssembly) of the caller's turns before the recogniser hears them, for sessions that do not choose (OpenAI's audio.input.noise_reduction; null there turns it off): off, near_field (headsets, handsets) or far_field (laptops, rooms; the same model here). Off by default, as OpenAI's sessions; it costs ≈ 1.5 % of a core while the caller speaks (bench/noise.ts).",
    default: 'off',
    parse: oneOf('off', 'near_field', 'far_field'),
  },
  VAD_THRESHOLD: { doc: "Speech probability (0–1) at or above which the caller's audio is speech; a session's turn_detection.threshold overrides it.", default: '0.5', parse: num(0.01, 0.99) },
  VAD_PREFIX_PADDING_MS: { doc: "Audio from before the caller's speech onset handed to the recogniser with it (turn_detection.prefix_padding_ms).", default: '300', parse: int(0, 2000) },
  VAD_SILENCE_MS: {
    doc: "Silence that ends the caller's turn (turn_detection.silence_duration_ms). 300 keeps every test sentence of bench/stages.ts one turn with either VAD (their longest pause needs 180 ms with Silero, 260 ms with WebRTC); slow speakers may want more.",
    default: '300',
    parse: int(100, 5000),
  },
  VAD_MODE: { doc: 'WebRTC VAD aggressiveness (VAD=webrtc), 0 (keeps more as speech) to 3.', default: '2', parse: int(0, 3) },
  VAD_GATE: {
    doc: "VAD=silero: run the model only where WebRTC VAD (mode 0) hears sound, and for 500 ms after; silence in between is judged without it (≈ 0.01 ms instead of ≈ 0.15 ms per 32 ms window). The hangover outlasts Silero's own lag, so the silence ending a turn is still Silero's to time (boundaries move by at most one 32 ms window). false: Silero on every window.",
    default: 'true',
    parse: bool,
  },
  PREPARE_REPLY_AFTER_MS: {
    doc: "Silence inside the caller's turn after which the reply is prepared unseen (recognised, generated, its first clause synthesised), so it plays the moment the turn's end is certain; dropped if the caller goes on. Must be under the turn's silence to help; 0 turns it off. With a paid LLM_BASE_URL, each dropped preparation is one extra request.",
    default: '100',
    parse: int(0, 5000),
  },
  LLM_BASE_URL: { doc: 'OpenAI-compatible API base (e.g. http://127.0.0.1:11434/v1); when set (and no MODELS_FILE), the catalogue gets parley-cascade: its chat completions with the node\'s speech recognition and synthesis, the default model (orga-1-beta runs it).', parse: str },
  LLM_API_KEY: { doc: 'Bearer key for LLM_BASE_URL (never logged).', parse: str },
  LLM_MODEL: { doc: 'Model name sent to LLM_BASE_URL.', default: 'gpt-4o-mini', parse: str },
  LLM_IMAGES: {
    doc: "Whether LLM_MODEL takes images (a vision model: gpt-4o-mini, Qwen2-VL on vLLM, llava on Ollama…): the camera's picture of each turn and the clients' input_image parts are sent to it as image_url content parts. false: they are left out, and the model is told that an image was shown.",
    default: 'true',
    parse: bool,
  },
  VISION_DECODE_CONCURRENCY: {
    doc: "Pictures (the camera's key frame at the end of a turn, a client's input_image) one node decodes at once, each in an ffmpeg process of its own (≈ 40 ms of a core each), shared fairly among API keys: one key holds at most all but one of them, and may have 4 more waiting; past that its pictures are refused with server_busy (a camera's turn goes on without its picture).",
    default: '2',
    parse: int(1, 32),
  },
  VISION_DECODE_TIMEOUT_MS: {
    doc: "How long one picture's decode may take before it is stopped: the client is told server_busy (the node was too busy, or the picture too heavy), a camera's turn goes on without its picture.",
    default: '5000',
    parse: int(10, 60000),
  },
  VISION_IMAGE_LONG_SIDE: { doc: "Long side, in pixels, of the JPEG a picture is scaled to for the model (and stored on the conversation's item).", default: '768', parse: int(64, 2048) },
  VISION_KEYFRAME_WAIT_MS: {
    doc: "How long the end of a turn waits for the key frame it asked the caller's camera for (RTCP PLI) before using the last key frame received, or none.",
    default: '400',
    parse: int(50, 5000),
  },
  LLM_TIMEOUT_MS: { doc: 'Timeout of the HTTP backends (LLM_BASE_URL, STT_URL, TTS_URL); a model reply that takes longer fails with an error event and a spoken apology.', default: '15000', parse: int(1000, 120000) },
  MODELS_FILE: {
    doc: 'A models file (YAML or JSON; docs/guides/models.md): the models calls may ask for, what runs each (offline, cascade, realtime), which API keys may use each, aliases, fallbacks and the default. Unset: the catalogue these settings describe (the built-in models, the LLM_BASE_URL cascade, the REALTIME_URL model). Checked at start; a problem names its line.',
    parse: str,
  },
  REALTIME_URL: { doc: "An upstream realtime model's WebSocket URL (the OpenAI Realtime protocol: wss://api.openai.com/v1/realtime, or another Parley's ws://host:port/v1/realtime); when set, REALTIME_MODEL joins the catalogue and becomes the default.", parse: str },
  REALTIME_API_KEY: { doc: 'Bearer key for REALTIME_URL (never logged, never sent to a client).', parse: str },
  REALTIME_MODEL: { doc: "The realtime model's id: the name clients ask for and the model sent upstream.", default: 'gpt-realtime', parse: str },
  REALTIME_DIALECT: { doc: "The upstream's protocol version: ga (OpenAI's GA interface) or beta (the preview interface, as Azure's older deployments speak it).", default: 'ga', parse: oneOf('ga', 'beta') },
  REALTIME_FALLBACK: { doc: "Models that take a call over when the realtime model fails, in order (comma-separated). Unset: the cascade when LLM_BASE_URL is set, else parley-offline.", parse: list },
  MODEL_CONNECT_TIMEOUT_MS: { doc: 'Time an upstream realtime model has to accept the connection and confirm the session; past it the call goes on with the fallback.', default: '5000', parse: int(500, 60_000) },
  MODEL_RESPONSE_TIMEOUT_MS: { doc: "Time an upstream realtime model has to start a reply it was asked for (its first event for the response); past it the call goes on with the fallback.", default: '10000', parse: int(1000, 120_000) },
  MODEL_BREAKER_FAILURES: { doc: "Failures in a row after which a model is not offered to new calls (its fallback takes them) for MODEL_BREAKER_COOLDOWN_MS.", default: '3', parse: int(1, 100) },
  MODEL_BREAKER_COOLDOWN_MS: { doc: "How long a model whose breaker opened is passed over before the next call tries it again.", default: '30000', parse: int(1000, 3_600_000) },
  STT_PROVIDER: {
    doc: 'Speech recogniser: pocketsphinx (built in, English) or http (STT_URL). Unset: http when STT_URL is set, else pocketsphinx.',
    parse: oneOf('pocketsphinx', 'http'),
  },
  STT_WORKERS: {
    doc: 'Worker processes running the built-in speech recogniser, started with the node and shared by every call (each holds its decoders, about 100 MB; about one per core is right).',
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
  TTS_PROCESSES: {
    doc: 'Local speech synthesis processes (flite, espeak-ng) the node runs at once, whatever the number of calls; further clauses wait their turn. Bounds what replies asked for in a burst can cost the other calls.',
    default: '4',
    parse: int(1, 64),
  },
  TTS_URL: { doc: 'OpenAI-compatible API base whose /audio/speech the http speech engine calls (the catalogue voice name as voice, response_format pcm: 24 kHz 16-bit mono, streamed).', parse: str },
  TTS_API_KEY: { doc: 'Bearer key for TTS_URL (never logged).', parse: str },
  TTS_MODEL: { doc: 'Model name sent to TTS_URL.', default: 'tts-1', parse: str },
  WEBHOOK_URL: {
    doc: "Endpoint (http or https URL) that receives every API key's call events, signed per Standard Webhooks with WEBHOOK_SECRET. Set both or neither. Per-key endpoints are added with `parley webhooks add`.",
    parse: webhookUrl,
  },
  WEBHOOK_SECRET: { doc: 'Signing secret of WEBHOOK_URL: whsec_ followed by base64 of at least 24 random bytes (e.g. `echo whsec_$(openssl rand -base64 32)`). Never logged.', parse: webhookSecret },
  WEBHOOK_EVENTS: {
    doc: 'Comma-separated event types WEBHOOK_URL receives: call.started, call.ended, call.failed, call.turn (one per completed turn, with its transcript; opt-in), realtime.call.incoming (a SIP call rings and waits for the app\'s decision; opt-in).',
    default: 'call.started,call.ended,call.failed',
    parse: parseEventTypes,
  },
  WEBHOOK_ALLOWED_CIDRS: {
    doc: "Comma-separated addresses or CIDR ranges webhooks may be sent to although they are internal: loopback, private (RFC 1918, IPv6 ULA), link-local, cloud metadata, CGNAT, unspecified, multicast and reserved addresses are refused otherwise, when an endpoint is added (`parley webhooks add`, WEBHOOK_URL at start) and again on the address each delivery connects to. Parley's own HTTP and node-to-node listeners are refused whatever it says.",
    default: '',
    parse: cidrList,
  },
  WEBHOOK_DNS_SERVERS: {
    doc: "Comma-separated DNS servers (ip, ip:port, [ipv6]:port) that resolve webhook hosts, asked directly (A and AAAA queries). Empty: the system's resolver (/etc/hosts included).",
    default: '',
    parse: dnsServers,
  },
  WEBHOOK_TIMEOUT_MS: { doc: 'Time a webhook receiver has to answer an attempt; no answer in time is a failed attempt, retried.', default: '10000', parse: int(500, 60_000) },
  WEBHOOK_RETRY_MAX_MS: {
    doc: 'Cap of the delay between attempts of one delivery (exponential backoff with full jitter from 1 s up to this). Deliveries are retried for 24 hours after their event, then marked failed.',
    default: '3600000',
    parse: int(100, 86_400_000),
  },
  WEBHOOK_POLL_MS: { doc: "How often each node looks in the store for webhook deliveries due (another node's, or retries); its own events are sent at once.", default: '500', parse: int(50, 60_000) },
  WEBHOOK_CONCURRENCY: { doc: 'Webhook requests one node has in flight at once (one per endpoint at a time, so a slow receiver does not hold up the others).', default: '8', parse: int(1, 256) },
  ECHO_DELAY_MS: { doc: "Delay before the audio-echo agent plays the caller's audio back.", default: '200', parse: int(0, 5000) },
  MCP_TIMEOUT_MS: {
    doc: "Time each request to a session's MCP server may take (connecting, listing its tools, one call of a tool); past it the listing or the call fails (mcp_list_tools.failed, response.mcp_call.failed) and the call goes on. MCP servers' addresses follow WEBHOOK_ALLOWED_CIDRS and WEBHOOK_DNS_SERVERS: no internal address unless allowed there, never Parley's own listeners, and each request goes to the address that was checked.",
    default: '10000',
    parse: int(100, 120_000),
  },
  MCP_MAX_OUTPUT_BYTES: {
    doc: "The most of an MCP tool's answer (its text, in bytes) kept for the model and the client; the rest is cut, saying so.",
    default: '16384',
    parse: int(256, 1024 * 1024),
  },
  MCP_MAX_RESPONSE_BYTES: {
    doc: "The most of each answer of a session's MCP server that is read (a page of its tool list, a tool's result), in bytes: past it the answer is not read further, and the listing or the call fails saying so (an error answer's body is read to 512 bytes). Keep it above MCP_MAX_OUTPUT_BYTES, which cuts what is kept of an answer read whole.",
    default: String(1024 * 1024),
    parse: int(64 * 1024, 64 * 1024 * 1024),
  },
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof settings;
type Parsed = { [K in keyof Settings]: ReturnType<Settings[K]['parse']> | (Settings[K] extends { default: string } ? never : undefined) };
/** DATABASE_URL's default depends on DATA_DIR, so it is always set after loading. */
export type Config = Omit<Parsed, 'DATABASE_URL'> & { DATABASE_URL: string; /** The model catalogue (MODELS_FILE, or the settings). */ MODELS: ModelCatalogue };

/** Rules between settings. */
/** Rules between settings; a setting that did not parse is undefined and its rules do not apply. */
function crossChecks(c: Parsed): string[] {
  const problems: string[] = [];
  // A provider chosen by name needs its service's URL.
  if (c.STT_PROVIDER === 'http' && !c.STT_URL) problems.push('STT_PROVIDER: http needs STT_URL');
  if (c.TTS_PROVIDER === 'http' && !c.TTS_URL) problems.push('TTS_PROVIDER: http needs TTS_URL');
  if ((c.TLS_CERT_FILE === undefined) !== (c.TLS_KEY_FILE === undefined)) problems.push('TLS_CERT_FILE: TLS needs both TLS_CERT_FILE and TLS_KEY_FILE');
  if (c.OPUS_MIN_COMPLEXITY > c.OPUS_COMPLEXITY) problems.push('OPUS_MIN_COMPLEXITY: must be at most OPUS_COMPLEXITY');
  if (c.NODE_LOST_AFTER_MS < 2 * c.NODE_HEARTBEAT_MS) problems.push('NODE_LOST_AFTER_MS: must be at least twice NODE_HEARTBEAT_MS');
  if (c.HTTP_REQUEST_TIMEOUT_MS < c.HTTP_HEADERS_TIMEOUT_MS) problems.push('HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS');
  if (c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > c.OTEL_BSP_MAX_QUEUE_SIZE) problems.push('OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE');
  if ((c.WEBHOOK_URL === undefined) !== (c.WEBHOOK_SECRET === undefined)) problems.push('WEBHOOK_URL: webhooks need both WEBHOOK_URL and WEBHOOK_SECRET');
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
  let models: ModelCatalogue | undefined;
  if (!problems.length) {
    try {
      models = loadModelCatalogue(parsed, env);
    } catch (err) {
      if (!(err instanceof ModelFileError)) throw err;
      problems.push(...err.problems.map((p) => `MODELS_FILE: ${p}`));
    }
  }
  if (problems.length || !models) throw new ConfigError(problems);
  return { ...parsed, DATABASE_URL: parsed.DATABASE_URL ?? `sqlite:${parsed.DATA_DIR.replace(/\/$/, '')}/parley.db`, MODELS: models };
}
