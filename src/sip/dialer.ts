// Outbound phone calls as the HTTP door asks for them (POST /v1/realtime/sip/calls) and the SIP door
// places them: the request, what can refuse it, and the slot the SIP door fills when it starts (a
// node without SIP_PORT has none).
import type { Session } from '../session/session.js';
import type { Refusal } from '../calls/door.js';

export interface DialRequest<Placed = never> {
  apiKeyId: string;
  /** The destination as the app wrote it: +number, sip:/tel: URI, or a registered user's name. */
  to: string;
  /** The caller id (From user); undefined: SIP_OUTBOUND_CALLER_ID. */
  from?: string;
  session: Session;
  /** How long the callee's phone rings before the call is given up (CANCEL): no_answer. */
  ringTimeoutMs: number;
  /** The agent waits for the callee to speak first (else it speaks as soon as the call is answered). */
  waitForCallee: boolean;
  /** Another node passed the request here: its attempt was counted there. */
  passedOn?: boolean;
  /** Offers the call to another node with a SIP door when this one has no room (the HTTP door passes the request on). */
  elsewhere?: () => Promise<Placed | undefined>;
}

/** Why an outbound call was not placed, in the API's terms (the call's own refusals aside: calls/door.ts). */
export interface DialRefusal {
  status: 400 | 403 | 404 | 429 | 503;
  code: string;
  message: string;
  param?: string;
  retryAfterSeconds?: number;
}

export type DialResult<Placed = never> =
  | { ok: true; conversationId: string; to: string; from: string }
  | { ok: false; refusal: DialRefusal }
  /** The call was not opened here (calls/door.ts), or another node placed it (`placed`). */
  | { ok: false; call: Refusal<Placed> };

export interface SipDialer {
  dial<Placed = never>(req: DialRequest<Placed>): Promise<DialResult<Placed>>;
}

/** Where the SIP door puts its dialer once it listens. */
export class SipDialerSlot {
  dialer: SipDialer | undefined;
}
