// What the parts of the SIP front door share: the server's options and the way they answer.
import type { BlockList } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { CallManager } from '../calls/callManager.js';
import type { Session } from '../session/session.js';
import type { AuthAttempts } from './authBackoff.js';
import type { DigestAuth } from './digest.js';
import type { Peer } from './listener.js';
import type { OutboundOptions } from './outboundCalls.js';
import type { RegistrarOptions } from './registrar.js';
import type { RegistrationState } from './outboundRegistrations.js';
import type { SipRegistrationSetting } from '../config/env.js';
import type { SipRequest } from './message.js';
import type { Headers } from './responses.js';
import type { AnyServerTransaction } from './serverTransactions.js';
import type { SipRouting } from './routing.js';
import type { SipMediaOptions } from '../calls/sip/sipTransport.js';

/** The SIP door's own limits: connections per source address, an address's wrong-password backoff. */
export type SipLimit = 'sip-tcp-ip' | 'sip-auth-ip';

export const ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, NOTIFY, INFO, REGISTER';

/** Parley's id of the call in the 180 and 200 (for a PBX's logs, and the app's hangup and sideband). */
export const CALL_ID_HEADER = 'X-Parley-Call-Id';

export interface SipServerOptions {
  /** The address calls' media sockets bind (the SIP sockets are the listener's: start.ts). */
  host: string;
  /** Accounts registered with upstream providers (outboundRegistrations.ts), and who is told of their state. */
  registrations: { accounts: SipRegistrationSetting[]; changed: (state: RegistrationState) => void };
  /** Where registered phones' bindings are kept (the registrar, registrar.ts). */
  registrar: RegistrarOptions;
  /** Outbound calls: the trunk, the caller id, the toll-fraud guard (outboundCalls.ts). */
  outbound: OutboundOptions;
  /** Each call's media settings (the caller's inactivity timeout). */
  media: SipMediaOptions;
  /** The address our SDP and Contact announce (reachable by callers). */
  announcedAddress: string;
  calls: CallManager;
  auth: DigestAuth;
  /** Where wrong passwords are counted: addresses that sent too many are refused for a while (authBackoff.ts). */
  authAttempts: AuthAttempts;
  /** Sources admitted without authentication; undefined when none are configured. */
  trusted: BlockList | undefined;
  /** The API key that owns SIP calls (undefined: none exists yet). */
  owner: () => Promise<string | undefined>;
  /** A new call's session (the default agent). */
  session: () => Session;
  /** Who decides what a ringing call becomes (routing.ts). */
  routing: SipRouting;
  /**
   * Counts an INVITE from an untrusted source address (challenged and refused ones included): a
   * scanner or a password guesser gets `503` with Retry-After past its limit. Unset: no limit.
   */
  inviteLimit?: (address: string) => Promise<{ allowed: boolean; retryAfterSeconds: number }>;
  /** Told of each refusal by a limit of the SIP door's own (for parley_rate_limited_total). */
  refused: (limit: SipLimit) => void;
  /**
   * Another node's SIP address (host:port, UDP) with room for a call this node cannot take (full,
   * or above its load threshold): the INVITE is answered `302` to it. Unset, or undefined: `503`.
   */
  elsewhere?: () => Promise<string | undefined>;
  log: FastifyBaseLogger;
}

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
