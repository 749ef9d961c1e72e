// TURN REST-API credentials as coturn's `use-auth-secret` mode checks them:
// username = "<unix expiry>:<label>", credential = base64(HMAC-SHA1(secret, username)).
import { createHmac, randomUUID } from 'node:crypto';

export interface TurnCredential {
  username: string;
  credential: string;
  expiresAt: number;
}

export function turnPassword(secret: string, username: string): string {
  return createHmac('sha1', secret).update(username).digest('base64');
}

/** A fresh credential tied to a token: the label is the token's jti plus a per-response nonce. */
export function mintTurnCredential(secret: string, tokenJti: string, ttlSeconds: number, now = Date.now()): TurnCredential {
  const expiresAt = Math.floor(now / 1000) + ttlSeconds;
  const username = `${expiresAt}:${tokenJti}.${randomUUID().slice(0, 13).replace('-', '')}`;
  return { username, credential: turnPassword(secret, username), expiresAt };
}
