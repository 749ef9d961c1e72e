// Ends the live calls of a revoked API key (end reason key_revoked, which the client is told in
// its protocol's session-ended event). A revocation reaches a node two ways: a notice on the bus
// (Redis: at once), and a short poll of the store for the keys that have live calls on this node,
// so a node without Redis, a missed notice or a revocation made straight in the store still ends
// them within a poll interval.
import type { FastifyBaseLogger } from 'fastify';

export const KEY_REVOKED = 'key_revoked';

/** What the watcher needs of a live call. */
export interface RevocableCall {
  readonly apiKeyId: string;
  end(reason: string): Promise<void>;
}

export interface RevocationWatcherOptions {
  /** The calls this node carries now. */
  liveCalls: () => Iterable<RevocableCall>;
  /** Other keys whose revocation this node must act on (those its coturn holds TURN secrets of). */
  otherKeys?: () => Iterable<string>;
  /** Told each revoked key, besides its calls being ended (its TURN secret withdrawn). */
  onRevoked?: (apiKeyId: string) => void;
  /** Which of these key ids are revoked (or gone), by the store. */
  revokedAmong: (ids: string[]) => Promise<string[]>;
  pollMs: number;
  log: FastifyBaseLogger;
}

export class RevocationWatcher {
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(private readonly opts: RevocationWatcherOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), this.opts.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** A revocation notice (bus): ends that key's calls now. */
  keyRevoked(apiKeyId: string): void {
    this.opts.onRevoked?.(apiKeyId);
    let ended = 0;
    for (const call of [...this.opts.liveCalls()]) {
      if (call.apiKeyId !== apiKeyId) continue;
      ended++;
      void call.end(KEY_REVOKED);
    }
    if (ended) this.opts.log.info({ key: apiKeyId, calls: ended }, 'API key revoked: its live calls ended');
  }

  /** Asks the store about the keys with live calls here (none: no query). */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      // Inside the try: the poll runs on a timer, where a throw (coturn's user database not there
      // yet, or coturn not installed) would end the process.
      const ids = new Set<string>(this.opts.otherKeys?.() ?? []);
      for (const call of this.opts.liveCalls()) ids.add(call.apiKeyId);
      if (!ids.size) return;
      for (const id of await this.opts.revokedAmong([...ids])) this.keyRevoked(id);
    } catch (err) {
      // The store (or coturn's database) cannot answer: the calls go on, as everything the node holds in memory does.
      this.opts.log.debug({ err: (err as Error).message }, 'revocation poll failed');
    } finally {
      this.polling = false;
    }
  }
}
