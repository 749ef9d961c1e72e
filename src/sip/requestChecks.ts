// What a user agent server checks of a request before handling it (RFC 3261 §8.2.2, §16.3): a
// request that has run out of hops (Max-Forwards 0: a routing loop between proxies) is refused
// 483, and one that requires an extension we do not support is refused 420 with the extensions in
// Unsupported (§8.2.2.3) — answering it as if we did would break what the caller relies on.
import type { SipRequest } from './message.js';
import type { Headers } from './responses.js';

/** Option tags we support in a Require (none: no 100rel, no session timers, no precondition). */
const SUPPORTED = new Set<string>();

export interface Refusal {
  status: number;
  reason: string;
  headers: Headers;
}

/** The refusal `req` gets before its method's handler, if any (CANCEL is its INVITE's, ACK has no answer). */
export function refusalOf(req: SipRequest): Refusal | undefined {
  if (req.method === 'ACK' || req.method === 'CANCEL') return undefined;
  const maxForwards = req.headers.get('max-forwards');
  // OPTIONS with no hops left is still answered by the UAS it reached (§11).
  if (maxForwards !== undefined && Number(maxForwards.trim()) === 0 && req.method !== 'OPTIONS') return { status: 483, reason: 'Too Many Hops', headers: [] };
  const required = req.headers
    .all('require')
    .flatMap((v) => v.split(','))
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  const unsupported = [...new Set(required.filter((tag) => !SUPPORTED.has(tag)))];
  if (unsupported.length) return { status: 420, reason: 'Bad Extension', headers: [['Unsupported', unsupported.join(', ')]] };
  return undefined;
}
