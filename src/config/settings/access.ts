// Settings of one area. Who may come in: API keys, tokens, rate limits, the demo page and the operator console. src/config/env.ts merges the areas into the one validated table.
import { looksLikeApiKey } from '../apiKeyFormat.js';
import { bool, int, type Setting, str } from '../parsers.js';

export const accessSettings = {
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
  RATE_LIMIT_CALLS_PER_TOKEN: {
    doc: 'Calls requests (both forms) one ephemeral token may make per window; 0: no limit.',
    default: '20',
    parse: int(0, 10_000_000),
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
} satisfies Record<string, Setting<unknown>>;
