// The TURN servers ice-config hands out, and only those that answer. By default Parley runs coturn
// itself (a supervised child process on TURN_PORT, same secrets); with TURN_URLS it uses the operator's
// external servers; with TURN_ENABLED=false there is none. Each server is checked with a real
// allocation under a credential Parley mints, at start and every TURN_CHECK_INTERVAL_MS: a browser
// client waits for every ICE server before it sends its offer, so one that does not answer would hold
// every call for seconds.
import { join } from 'node:path';
import type { Config } from '../config/env.js';
import { bindFailure } from '../system/startupError.js';
import { managedCoturnConfig, managedTurnServers, turnBindAddress } from './coturnConfig.js';
import { CoturnProcess, type Log } from './coturnProcess.js';
import { bindError, freePort } from './ports.js';
import { mintTurnCredential } from './turnCredentials.js';
import { allocateRelay } from './turnProbe.js';
import { parseTurnUrl, type TurnAddress } from './turnUrl.js';

export interface TurnServerHealth {
  url: string;
  up: boolean;
  /** When it was last checked (ISO 8601); null before the first check or with checks off. */
  checkedAt: string | null;
  /** Why the last check failed. */
  error: string | null;
}

export interface TurnHealth {
  /** False with TURN_ENABLED=false: no TURN server, by choice. */
  enabled: boolean;
  /** Parley runs the TURN server itself (TURN_URLS unset). */
  managed: boolean;
  /** TURN is usable: disabled, or at least one server answers. */
  ok: boolean;
  servers: TurnServerHealth[];
}

type TurnSettings = Pick<
  Config,
  | 'HOST'
  | 'DATA_DIR'
  | 'ICE_PUBLIC_IP'
  | 'TURN_ENABLED'
  | 'TURN_URLS'
  | 'TURN_PORT'
  | 'TURN_BIND'
  | 'TURN_CHECK_INTERVAL_MS'
  | 'TURN_REALM'
  | 'TURN_RELAY_PORT_RANGE'
  | 'TURN_TLS_CERT'
  | 'TURN_TLS_KEY'
  | 'TURN_ALLOW_LOOPBACK_PEERS'
  | 'TURN_ALLOWED_PEER_IPS'
  | 'TURN_USER_QUOTA'
  | 'TURN_TOTAL_QUOTA'
  | 'TURN_MAX_BPS'
  | 'TURN_TCP_RELAY'
>;

interface Server extends TurnServerHealth {
  /** Where the check connects: the URL's address, or for Parley's coturn its local listening address. */
  target: TurnAddress;
}

/** How long Parley's start waits for its coturn to answer. */
const START_WAIT_MS = 5000;
/** The label in the usernames of the checks' credentials (a client's carries its token's id). */
const CHECK_LABEL = 'parley-turn-check';

export class TurnService {
  private timer: NodeJS.Timeout | undefined;
  private coturn: CoturnProcess | undefined;
  private closed = false;

  private constructor(
    private readonly servers: Server[],
    private readonly settings: TurnSettings,
    /** The first TURN secret, which signs the checks' credentials as it signs the clients'. */
    private readonly secret: string,
    private readonly log: Log,
    private readonly onHealth: (url: string, up: boolean) => void,
  ) {}

  /**
   * Starts Parley's coturn when it runs one, then checks every server once before returning.
   * `coturnRunsElsewhere`: Parley's coturn is already running on TURN_PORT, started by the primary
   * process of this node's workers; this one only checks it.
   */
  static async start(
    settings: TurnSettings,
    secrets: string[],
    log: Log,
    onHealth: (url: string, up: boolean) => void,
    opts: { coturnRunsElsewhere?: boolean } = {},
  ): Promise<TurnService> {
    if (!settings.TURN_ENABLED) return new TurnService([], settings, '', log, onHealth);
    // Servers someone else runs (the operator's, or this node's primary's coturn): checked only.
    if (settings.TURN_URLS || opts.coturnRunsElsewhere) {
      const servers = settings.TURN_URLS
        ? settings.TURN_URLS.map((url) => ({ url, target: parseTurnUrl(url) }))
        : managedTurnServers(settings, settings.TURN_PORT);
      const service = new TurnService(servers.map((s) => ({ ...s, up: false, checkedAt: null, error: null })), settings, secrets[0]!, log, onHealth);
      await service.check();
      service.schedule();
      return service;
    }
    const bind = turnBindAddress(settings);
    const port = settings.TURN_PORT || (await freePort(bind));
    // Said here, in one line at start, rather than only in coturn's log.
    const held = settings.TURN_PORT ? await bindError(bind, port) : undefined;
    if (held) throw bindFailure(held, "Parley's TURN server (coturn)", bind, port, 'TURN_PORT (or TURN_URLS, or TURN_ENABLED=false)', ' (by another TURN server?)');
    const managed = managedTurnServers(settings, port).map((s) => ({ ...s, up: false, checkedAt: null, error: null }));
    const service = new TurnService(managed, settings, secrets[0]!, log, onHealth);
    await service.startCoturn(managedCoturnConfig(settings, secrets, port));
    service.schedule();
    return service;
  }

  /** The port Parley's coturn listens on (undefined when it runs none). */
  get coturnPort(): number | undefined {
    return this.coturn ? this.servers[0]?.target.port : undefined;
  }

  /** The URLs to hand out now: those whose last check succeeded (all of them with checks off). */
  upUrls(): string[] {
    return this.servers.filter((s) => s.up).map((s) => s.url);
  }

  /** For readiness reports (GET /readyz). */
  health(): TurnHealth {
    const servers = this.servers.map(({ url, up, checkedAt, error }) => ({ url, up, checkedAt, error }));
    const enabled = this.settings.TURN_ENABLED;
    return { enabled, managed: enabled && !this.settings.TURN_URLS, ok: !enabled || servers.some((s) => s.up), servers };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.coturn?.stop();
  }

  private async startCoturn(config: string): Promise<void> {
    // The first start is waited for (and checked) here; restarts are checked as they happen.
    let firstStart: (() => void) | undefined;
    const started = new Promise<void>((resolve) => (firstStart = resolve));
    this.coturn = new CoturnProcess({
      config,
      dir: join(this.settings.DATA_DIR, 'coturn'),
      log: this.log,
      onStarted: () => {
        if (firstStart) firstStart();
        else void this.checkUntilUp();
        firstStart = undefined;
      },
      onExited: (reason) => {
        firstStart?.();
        firstStart = undefined;
        for (const s of this.servers) this.record(s, false, `coturn ${reason}`);
      },
    });
    await this.coturn.start();
    await started;
    await this.checkUntilUp();
  }

  /** Right after coturn (re)starts: check often until it answers, for a bounded time, warning only then. */
  private async checkUntilUp(): Promise<void> {
    const deadline = Date.now() + START_WAIT_MS;
    for (;;) {
      const done = this.closed || Date.now() > deadline || !this.coturn?.pid;
      await this.check(500, !done);
      if (done || this.servers.every((s) => s.up)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private schedule(): void {
    const every = this.settings.TURN_CHECK_INTERVAL_MS;
    if (!every) return;
    this.timer = setInterval(() => void this.check(), every);
    this.timer.unref();
  }

  /** Checks every server at once with a fresh credential (or, with checks off, counts them all up). */
  private async check(timeoutMs = 2000, quiet = false): Promise<void> {
    if (!this.settings.TURN_CHECK_INTERVAL_MS) {
      for (const s of this.servers) this.record(s, true, null);
      return;
    }
    await Promise.all(
      this.servers.map(async (s) => {
        const { username, credential } = mintTurnCredential(this.secret, CHECK_LABEL, 60);
        const result = await allocateRelay(s.target, username, credential, { timeoutMs }).catch((err: Error) => ({ ok: false as const, code: 0, reason: err.message }));
        if (this.closed) return;
        if (quiet && !result.ok) return;
        this.record(s, result.ok, result.ok ? null : result.code ? `refused: ${result.code} ${result.reason}` : result.reason);
        s.checkedAt = new Date().toISOString();
      }),
    );
  }

  private record(s: Server, up: boolean, error: string | null): void {
    const was = s.up;
    const first = s.checkedAt === null && s.error === null;
    s.up = up;
    s.error = error;
    this.onHealth(s.url, up);
    if (up && !was) this.log.info({ url: s.url }, 'TURN server answers: handed out in ice-config');
    if (!up && (was || first)) this.log.warn({ url: s.url, error }, 'TURN server does not answer: left out of ice-config until it does');
  }
}
