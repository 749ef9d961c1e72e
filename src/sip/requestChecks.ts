// What a user agent server checks of a request before handling it (RFC 3261 §8.2.2, §16.3): a
// Request-URI of a scheme we do not take is refused 416 (§8.2.2.1), a request that has run out of
// hops (Max-Forwards 0: a routing loop between proxies) 483, and one that requires an extension we
// do not support 420 with the extensions in Unsupported (§8.2.2.3) — answering it as if we did would
// break what the caller relies on. A REGISTER's To must name a SIP address (§10.2; RFC 4475 §3.3.4).
import { uriOf, type SipRequest } from './message.js';
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
  if (!/^(sips?|tel):/i.test(req.uri)) return { status: 416, reason: 'Unsupported URI Scheme', headers: [] };
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
  if (req.method === 'REGISTER' && !/^sips?:/i.test(uriOf(req.to))) return { status: 400, reason: 'Bad Request', headers: [['Warning', '399 parley "the To of a REGISTER must be a SIP address"']] };
  return undefined;
}
