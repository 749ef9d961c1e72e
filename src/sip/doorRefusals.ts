// How the SIP door answers an INVITE whose call was not opened (src/calls/door.ts): one table of
// final responses. A call another node took is redirected there (302, RFC 3261 §21.3.3), the number
// asked for kept, for the caller (a trunk, a proxy, a phone) to place it; a node without room, or
// shutting down, answers 503 with Retry-After for a trunk to try elsewhere; the owning key at its own
// limit is busy.
import { RETRY_AFTER_SECONDS } from '../calls/admission.js';
import type { Refusal, RefusalKind } from '../calls/door.js';
import { reasonPhrase, type Headers } from './responses.js';

export const SIP_REFUSALS: Record<RefusalKind, { status: number; retry: boolean }> = {
  limited: { status: 486, retry: false },
  full: { status: 503, retry: true },
  loaded: { status: 503, retry: true },
  draining: { status: 503, retry: true },
  rejected: { status: 488, retry: false },
  model_not_allowed: { status: 403, retry: false },
  model_unavailable: { status: 503, retry: true },
};

/** The final response for `refusal` (`placed`: the SIP address of the node that takes the call; `user`: the number asked for). */
export function sipRefusal(refusal: Refusal<string>, user: string): { status: number; reason: string; headers: Headers } {
  if ((refusal.kind === 'full' || refusal.kind === 'loaded') && refusal.placed) {
    return { status: 302, reason: 'Moved Temporarily', headers: [['Contact', `<sip:${user ? `${user}@` : ''}${refusal.placed}>`]] };
  }
  const { status, retry } = SIP_REFUSALS[refusal.kind];
  return { status, reason: reasonPhrase(status), headers: retry ? [['Retry-After', String(RETRY_AFTER_SECONDS)]] : [] };
}
