// Who may place a SIP call, the way trunks are admitted: a source in the trusted ranges as it is;
// anyone else by digest when users are configured, else refused. With neither configured, only
// loopback callers (a SIP port open to the internet is scanned for toll fraud within minutes).
// Digest (digest.ts) is the registrar's too: its answer is checked here for both, an address that
// guessed wrong too often is refused for a while (authBackoff.ts), and each outcome is answered.
import type { BlockList } from 'node:net';
import { contains } from '../system/cidr.js';
import type { AuthAttempts } from './authBackoff.js';
import type { SipCore } from './core.js';
import type { DigestAuth } from './digest.js';
import type { Peer } from './listener.js';
import type { SipRequest } from './message.js';
import type { AnyServerTransaction } from './serverTransactions.js';

/**
 * `challenge`: no answer to a nonce of ours for this address yet (401); `stale`: the right
 * password on a nonce that is used, old or another request's (401 with `stale=true`); `wrong`: a
 * wrong password, or a name that is no user's (403: a retry with the same password cannot do
 * better, RFC 3261 §22.3; both alike, so that names cannot be told apart); `backoff`: the address
 * sent too many wrong ones, its passwords are not checked now.
 */
export type DigestVerdict = { verdict: 'admitted'; user: string } | { verdict: 'challenge' | 'stale' | 'wrong' | 'backoff' };

export type CallerVerdict = DigestVerdict['verdict'] | 'forbidden';

export interface AuthPolicy {
  auth: DigestAuth;
  /** Where wrong passwords are counted (authBackoff.ts). */
  authAttempts: AuthAttempts;
}

/** What `req`'s Authorization proves, from `address`. */
export async function authenticate(policy: AuthPolicy, req: SipRequest, address: string): Promise<DigestVerdict> {
  const answer = policy.auth.check(req.headers.get('authorization'), { method: req.method, source: address, callId: req.callId, uri: req.uri });
  if (!answer) return { verdict: 'challenge' };
  // Counted stale or not: a stale nonce must not be a way to try passwords uncounted.
  const verdict = await policy.authAttempts.attempt(address, answer.passwordRight);
  if (verdict !== 'admitted') return { verdict };
  return answer.stale ? { verdict: 'stale' } : { verdict, user: answer.user };
}

export async function callerAdmission(policy: AuthPolicy & { trusted: BlockList | undefined }, req: SipRequest, address: string): Promise<CallerVerdict> {
  const { trusted, auth } = policy;
  if (trusted && contains(trusted, address)) return 'admitted';
  if (auth.enabled) return (await authenticate(policy, req, address)).verdict;
  if (!trusted && (address === '::1' || address.startsWith('127.'))) return 'admitted';
  return 'forbidden';
}

/** Answers a request digest did not admit: a challenge (stale or not), or 403 with a Warning that says why. */
export function refuseUnauthenticated(core: SipCore, req: SipRequest, peer: Peer, tx: AnyServerTransaction, verdict: Exclude<CallerVerdict, 'admitted'>): void {
  const { auth } = core.opts;
  if (verdict === 'challenge' || verdict === 'stale') {
    const challenge = auth.challenge({ source: peer.address, callId: req.callId, uri: req.uri }, verdict === 'stale');
    return core.respond(req, peer, 401, 'Unauthorized', tx, [['WWW-Authenticate', challenge]]);
  }
  if (verdict === 'forbidden') return core.respond(req, peer, 403, 'Forbidden', tx);
  if (verdict === 'wrong') return core.respond(req, peer, 403, 'Forbidden', tx, [['Warning', '399 parley "wrong password"']]);
  // 403, not a challenge: its passwords are not checked now, whatever they are.
  core.opts.refused('sip-auth-ip');
  core.respond(req, peer, 403, 'Forbidden', tx, [['Warning', '399 parley "too many wrong passwords from this address; retry later"']]);
}
