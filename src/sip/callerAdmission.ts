// Who may place a SIP call, the way trunks are admitted: a source in the trusted ranges as it is;
// anyone else by digest when users are configured, else refused. With neither configured, only
// loopback callers (a SIP port open to the internet is scanned for toll fraud within minutes). A
// user whose password was guessed wrong too often is refused for a while (authBackoff.ts).
import type { BlockList } from 'node:net';
import { contains } from '../system/cidr.js';
import type { AuthBackoff } from './authBackoff.js';
import type { DigestAuth } from './digest.js';

/**
 * `challenge`: no credentials for a nonce of ours yet (401); `wrong`: a wrong password answering
 * our challenge, refused (403: a retry with the same password cannot do better, RFC 3261 §22.3);
 * `backoff`: the user's password is not checked now (too many wrong ones).
 */
export type CallerVerdict = 'admitted' | 'challenge' | 'forbidden' | 'wrong' | 'backoff';

export function callerAdmission(
  policy: { trusted: BlockList | undefined; auth: DigestAuth; authBackoff: AuthBackoff },
  address: string,
  authorization: string | undefined,
  method: string,
): CallerVerdict {
  const { trusted, auth, authBackoff } = policy;
  if (trusted && contains(trusted, address)) return 'admitted';
  if (auth.enabled) {
    const answer = auth.check(authorization, method);
    if (!answer) return 'challenge';
    if (authBackoff.waitFor(answer.user) > 0) return 'backoff';
    if (!answer.passwordRight) {
      authBackoff.failed(answer.user);
      return 'wrong';
    }
    authBackoff.succeeded(answer.user);
    return 'admitted';
  }
  if (!trusted && (address === '::1' || address.startsWith('127.'))) return 'admitted';
  return 'forbidden';
}
