// Who may place a SIP call, the way trunks are admitted: a source in the trusted ranges as it is;
// anyone else by digest when users are configured, else refused. With neither configured, only
// loopback callers (a SIP port open to the internet is scanned for toll fraud within minutes).
import type { BlockList } from 'node:net';
import { contains } from '../system/cidr.js';
import type { DigestAuth } from './digest.js';

export type CallerVerdict = 'admitted' | 'challenge' | 'forbidden';

export function callerAdmission(policy: { trusted: BlockList | undefined; auth: DigestAuth }, address: string, authorization: string | undefined, method: string): CallerVerdict {
  const { trusted, auth } = policy;
  if (trusted && contains(trusted, address)) return 'admitted';
  if (auth.enabled) return auth.verify(authorization, method) ? 'admitted' : 'challenge';
  if (!trusted && (address === '::1' || address.startsWith('127.'))) return 'admitted';
  return 'forbidden';
}
