// What the parts of the SIP front door share: the way they answer and send, and the server's options
// (options.ts). The parts import this file; it imports none of them (a part's own settings live in
// options.ts), so no import runs back up from a part to the core.
import type { Peer } from './listener.js';
import type { SipRequest } from './message.js';
import type { SipServerOptions } from './options.js';
import type { Headers } from './responses.js';
import type { AnyServerTransaction } from './serverTransactions.js';

export const ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY, INFO, REGISTER';

/** Parley's id of the call in the 180 and 200 (for a PBX's logs, and the app's hangup and sideband). */
export const CALL_ID_HEADER = 'X-Parley-Call-Id';

/** The server as its request handlers see it. */
export interface SipCore {
  readonly opts: SipServerOptions;
  /** Answers `req` (a To-tag added when given and absent), through `tx` when it has one (for its retransmissions). */
  respond(req: SipRequest, peer: Peer, status: number, reason: string, tx?: AnyServerTransaction, extra?: Headers, toTag?: string, body?: string): void;
  send(peer: Peer, bytes: Buffer): void;
  /** Our host:port as `peer` reaches us: the announced address and the port of its transport. */
  hostPortFor(peer: Peer): string;
  /** Our Contact for `peer`. */
  contact(peer: Peer): string;
}
