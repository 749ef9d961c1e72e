// Settings of one area. The HTTP server: where it listens, TLS, logs, the data directory, worker processes, timeouts and shutdown. src/config/env.ts merges the areas into the one validated table.
import { int, list, oneOf, pemFile, type Setting, str, trustedProxies, workers } from '../parsers.js';

export const serverSettings = {
  HOST: { doc: 'Address the HTTP server listens on.', default: '127.0.0.1', parse: str },
  PORT: { doc: 'HTTP port (0 picks a free one).', default: '8080', parse: int(0, 65535) },
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
  DATA_DIR: {
    doc: "Directory for the SQLite file, generated local secrets and Parley's coturn files. One server per directory: a second `parley serve` on a DATA_DIR in use says so and exits with code 1, leaving the first alone (the lock on DATA_DIR/server.lock ends with the process that holds it). The CLI's other commands run beside a server.",
    default: './data',
    parse: str,
  },
  TRUST_PROXY: {
    doc: "Comma-separated addresses or CIDR ranges of the reverse proxies in front of Parley (or loopback, linklocal, uniquelocal): a request from one of them is taken to come from X-Forwarded-For's client address (rate limits, logs). Empty: the connection's address.",
    default: '',
    parse: trustedProxies,
  },
  PARLEY_WORKERS: {
    doc: "Processes serving this node's port: auto (one per core), or a number. Each worker carries the calls it answered (its own UDP sockets and agents) and is a node of its own in the registry (NODE_ID-w1, -w2…); a request for a call another worker carries is passed to it. SIP (SIP_PORT) answers on every worker: the primary holds its port and hands each message to the worker its Call-ID belongs to.",
    default: '1',
    parse: workers,
  },
  HTTP_HEADERS_TIMEOUT_MS: { doc: "Time a client has to send a request's headers (slow clients get 408 and are disconnected).", default: '10000', parse: int(1000, 600_000) },
  HTTP_REQUEST_TIMEOUT_MS: { doc: 'Time a client has to send a whole request, body included (408 after it). At least HTTP_HEADERS_TIMEOUT_MS.', default: '30000', parse: int(1000, 600_000) },
  SHUTDOWN_GRACE_MS: {
    doc: 'After SIGTERM and the drain of its calls, how long a node keeps answering 503 (and /readyz 503) before closing its port, so load balancers notice first. Behind a load balancer, set it above its health-check interval.',
    default: '0',
    parse: int(0, 120_000),
  },
  CORS_ORIGINS: { doc: 'Origins allowed to call ice-config and calls from a browser ("*" for any).', default: '*', parse: list },
} satisfies Record<string, Setting<unknown>>;
