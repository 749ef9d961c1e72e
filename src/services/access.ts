// Who may come in: the API key cache kept current across the nodes, the tokens, and the watcher
// that ends the calls (and TURN secrets) of revoked keys.
import type { Config } from '../config/env.js';
import { ApiKeyCache } from '../auth/keyCache.js';
import type { Store } from '../auth/store.js';
import { TokenService } from '../auth/tokens.js';
import type { CallManager } from '../calls/callManager.js';
import { RevocationWatcher } from '../calls/revocationWatcher.js';
import type { TurnKeySecrets } from '../ice/turnKeySecrets.js';
import type { Teardown } from '../system/teardown.js';
import { Listeners, type Log } from './types.js';

export interface AccessPart {
  keyCache: ApiKeyCache;
  tokens: TokenService;
  /** A key revoked on another node or by the CLI (notices are only delivered after Redis answers). */
  keyRevoked: Listeners<[id: string]>;
}

export function startAccess(config: Config, deps: { store: Store; log: Log }, teardown: Teardown): AccessPart {
  const { store, log } = deps;
  const keyCache = new ApiKeyCache(store.apiKeys, config.KEY_CACHE_TTL_MS, config.KEY_CACHE_STALE_MS, store.database.availability);
  keyCache.start();
  teardown.add('API key cache', () => keyCache.stop());
  const keyRevoked = new Listeners<[id: string]>();
  followKeyChanges(store, keyCache, (id) => keyRevoked.call(id), log, teardown);
  const tokens = new TokenService(store.signingKeys, {
    issuer: config.TOKEN_ISSUER,
    audience: config.TOKEN_AUDIENCE,
    ttlSeconds: config.TOKEN_TTL_SECONDS,
  });
  return { keyCache, tokens, keyRevoked };
}

/**
 * Keeps the key cache and the signing keys current: notices from the other nodes and the CLI
 * (Redis), and a reload of the signing keys every second, Redis or not (a small table; a notice
 * only makes it sooner).
 */
function followKeyChanges(store: Store, keyCache: ApiKeyCache, keyRevoked: (id: string) => void, log: Log, teardown: Teardown): void {
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

/** Ends the live calls of revoked keys (and their TURN secrets); registers itself for the revocations other nodes announce. */
export function startRevocations(
  config: Config,
  deps: { store: Store; calls: CallManager; turnKeys: TurnKeySecrets | undefined; keyRevoked: AccessPart['keyRevoked']; log: Log },
  teardown: Teardown,
): void {
  const { store, calls, turnKeys, log } = deps;
  const watcher = new RevocationWatcher({
    liveCalls: () => calls.liveCalls(),
    ...(turnKeys ? { otherKeys: () => turnKeys.keys(), onRevoked: (id: string) => turnKeys.revoke(id) } : {}),
    revokedAmong: (ids) => store.apiKeys.revokedAmong(ids),
    // Bounded below: KEY_CACHE_TTL_MS=0 (no cache) must not mean a query per tick.
    pollMs: Math.max(500, config.KEY_CACHE_TTL_MS),
    log,
  });
  deps.keyRevoked.add((id) => watcher.keyRevoked(id));
  watcher.start();
  teardown.add('revocation watcher', () => watcher.stop());
}
