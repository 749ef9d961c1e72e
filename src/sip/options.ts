// The SIP front door's options, each part's own among them (the registrar's, the outbound calls',
// the upstream registrations' state): they import no part of the door, so that the core (core.ts)
// and every part can import them without an import running back up.
import type { BlockList } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { CallManager } from '../calls/callManager.js';
import type { SipRouting } from './routing.js';
import type { SipMediaOptions } from '../calls/sip/sipTransport.js';
import type { SipOutboundAllow, SipRegistrationSetting, SipTrunkSetting } from '../config/env.js';
import type { SipBindingStore } from '../storage/sipBindings.js';
import type { Session } from '../session/session.js';
import type { AuthAttempts } from './authBackoff.js';
import type { DigestAuth } from './digest.js';

/** The SIP door's own limits: connections per source address, an address's wrong-password backoff. */
export type SipLimit = 'sip-tcp-ip' | 'sip-auth-ip';

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

/** The registrar's store and limit (registrar.ts). */
export interface RegistrarOptions {
  bindings: Pick<SipBindingStore, 'of' | 'put' | 'remove'>;
  /** Counts a REGISTER from an untrusted source address; unset: no limit. */
  limit?: (address: string) => Promise<{ allowed: boolean; retryAfterSeconds: number }>;
}

/** Outbound calls' trunk, caller id and toll-fraud guard (outboundCalls.ts). */
export interface OutboundOptions {
  trunk: SipTrunkSetting | undefined;
  callerId: string;
  allow: SipOutboundAllow;
  maxCalls: number;
  maxCallsPerKey: number;
  /** Counts an attempt of key `apiKeyId` (SIP_OUTBOUND rate limit); unset: no limit. */
  attemptLimit?: (apiKeyId: string) => Promise<{ allowed: boolean; retryAfterSeconds: number }>;
  /** Told how each attempt went (for parley_sip_outbound_calls_total). */
  counted: (outcome: OutboundOutcome) => void;
}

export type OutboundOutcome = 'placed' | 'refused' | 'answered' | InviteFailure;

/** How an outbound INVITE ended, before or without an answer. */
export type InviteFailure = 'busy' | 'no_answer' | 'unreachable' | 'rejected' | 'media_unacceptable';

/** An account registered with an upstream provider, as the node is told it (outboundRegistrations.ts). */
export type RegistrationStateName = 'registering' | 'registered' | 'failed';

export interface RegistrationState {
  /** The registrar, host:port. */
  registrar: string;
  user: string;
  state: RegistrationStateName;
  /** The last final status (408: no answer; 0: the registrar's name did not resolve). */
  status?: number;
  /** When the current registration lapses (unix ms), while registered. */
  expiresAt?: number;
  /** Failures in a row. */
  failures: number;
}
