// A new call's INVITE: the source's INVITE limit, the caller's admission, the SDP offer read, the
// call created on a SipTransport, then it rings (180) while the routing decides what it becomes —
// answered (200 with our SDP), rejected, or redirected (302).
import { openCall, type Refusal } from '../calls/door.js';
import { readOffer, writeAnswer } from '../calls/sip/sdp.js';
import { SipTransport } from '../calls/sip/sipTransport.js';
import { contains } from '../system/cidr.js';
import { randomId } from '../system/ids.js';
import { callerAdmission, refuseUnauthenticated } from './callerAdmission.js';
import { CALL_ID_HEADER, type SipCore } from './core.js';
import type { Dialog, Dialogs } from './dialogs.js';
import { sipRefusal } from './doorRefusals.js';
import type { Peer } from './listener.js';
import { uriOf, userOf, type SipRequest } from './message.js';
import { randomTag, reasonPhrase } from './responses.js';
import type { InviteServerTransaction } from './serverTransactions.js';
import { TRANSACTION_MS } from './timers.js';
import type { RouteOutcome } from './routing.js';

export class InviteHandler {
  constructor(
    private readonly core: SipCore,
    private readonly dialogs: Dialogs,
  ) {}

  async invite(req: SipRequest, peer: Peer, tx: InviteServerTransaction): Promise<void> {
    const { opts } = this.core;
    const respond = this.core.respond.bind(this.core);
    const { calls, log, trusted, inviteLimit } = opts;
    // At once, before any round trip (the INVITE limit's store, the routing): the caller stops
    // retransmitting its INVITE while we work (RFC 3261 §8.2.6.1).
    respond(req, peer, 100, 'Trying', tx);
    // A trunk's own addresses carry every call it routes: only the call limits apply to them.
    if (inviteLimit && !(trusted && contains(trusted, peer.address))) {
      const decision = await inviteLimit(peer.address);
      if (!decision.allowed) return respond(req, peer, 503, 'Service Unavailable', tx, [['Retry-After', String(decision.retryAfterSeconds)]]);
    }
    const verdict = await callerAdmission(opts, req, peer.address);
    if (verdict !== 'admitted') return refuseUnauthenticated(this.core, req, peer, tx, verdict);
    if (calls.isDraining) return this.refuse(req, peer, tx, { kind: 'draining', message: 'shutting down' });
    // An INVITE must name where the dialog's requests go (§8.1.1.8); an RFC 2543 one (no branch
    // cookie) need not, and its From says it (RFC 4475 §3.4.1).
    const contact = req.headers.get('contact') ?? (req.branch.startsWith('z9hG4bK') ? undefined : req.from);
    if (!contact) return respond(req, peer, 400, 'Bad Request', tx, [['Warning', '399 parley "no Contact"']]);
    // Our answer is SDP: a caller that accepts no SDP cannot take it (§21.4.7; RFC 4475 §3.3.15).
    if (!acceptsSdp(req.headers.all('accept'))) return respond(req, peer, 406, 'Not Acceptable', tx, [['Accept', 'application/sdp']]);
    const contentType = (req.headers.get('content-type') ?? '').toLowerCase();
    // A body we cannot read is 415 (§8.2.3; RFC 4475 §3.3.6); no body at all, no offer to answer: 488.
    if (req.body.length && !contentType.startsWith('application/sdp')) return respond(req, peer, 415, 'Unsupported Media Type', tx, [['Accept', 'application/sdp']]);
    const offer = req.body.length ? readOffer(req.body.toString('latin1')) : { ok: false as const, reason: 'no SDP offer' };
    if (!offer.ok) return respond(req, peer, 488, 'Not Acceptable Here', tx, [['Warning', `304 parley "${offer.reason}"`]]);
    const apiKeyId = await opts.owner();
    if (!apiKeyId) {
      log.warn('SIP call refused: no active API key owns SIP calls (create one, or set SIP_API_KEY_ID)');
      return respond(req, peer, 503, 'Service Unavailable', tx);
    }
    const localTag = randomTag();
    const sessionId = Date.now() % 1e9;
    // Its RTP sockets are opened once the call is admitted.
    let transport!: SipTransport;
    const answer = () => writeAnswer({ sessionId, version: 1, address: opts.announcedAddress, rtpPort: transport.rtpPort, rtcpPort: transport.rtcpPort, offer: offer.offer, localCrypto: transport.localCrypto });
    const { elsewhere } = opts;
    const opened = await openCall(calls, {
      // A phone has no channel for the event protocol. It counts against SIP's own half-open budget
      // while it rings for the routing's time, then waits 64·T1 for the ACK of its 200 (dialogs.ts ends it then).
      request: { apiKeyId, tokenId: randomId('sip_'), halfOpenBudget: 'sip', endUser: userOf(req.from) || null, session: opts.session(), connectTimeoutMs: opts.routing.timeoutMs + TRANSACTION_MS + 5000 },
      open: async () => {
        transport = await SipTransport.open(opts.host, opts.media, offer.offer);
        return { transport, accept: async () => answer() };
      },
      // A full or loaded node redirects the caller to another node with room (sip/start.ts).
      ...(elsewhere ? { elsewhere: () => elsewhere().catch(() => undefined) } : {}),
    });
    if (!opened.ok) return this.refuse(req, peer, tx, opened.refusal);
    const { call } = opened;
    const conversationId = call.id;
    if (tx.cancelled || call.state === 'ended' || call.state === 'failed') {
      void call.end('cancelled');
      return respond(req, peer, 487, 'Request Terminated', tx, [], localTag);
    }
    const dialog = this.dialogs.open({ side: 'callee', invite: req, contact, localTag }, { conversationId, peer, transport, sessionId, observe: (o) => call.observe(o) });
    respond(req, peer, 180, 'Ringing', tx, [[CALL_ID_HEADER, conversationId]], localTag);
    // A call ended while it rings (hung up through the API, timed out) stops waiting too.
    tx.ringing = new AbortController();
    const ringing = tx.ringing;
    call.observe({ ended: () => ringing.abort() });
    const outcome = await opts.routing.route({ callId: conversationId, apiKeyId, sipHeaders: sipHeadersOf(req) }, ringing.signal);
    tx.ringing = undefined;
    this.routed(req, dialog, tx, outcome, answer);
  }

  /** The final response to an INVITE whose call was not opened (doorRefusals.ts). */
  private refuse(req: SipRequest, peer: Peer, tx: InviteServerTransaction, refusal: Refusal<string>): void {
    const { status, reason, headers } = sipRefusal(refusal, userOf(req.uri));
    this.core.respond(req, peer, status, reason, tx, headers);
  }

  /** Carries out what became of a ringing call. */
  private routed(req: SipRequest, dialog: Dialog, tx: InviteServerTransaction, outcome: RouteOutcome, answer: () => string): void {
    const { opts } = this.core;
    const respond = this.core.respond.bind(this.core);
    const { peer, conversationId, localTag } = dialog;
    const call = opts.calls.get(conversationId);
    const log = opts.log.child({ conversation: conversationId });
    if (tx.cancelled) {
      void call?.end('cancelled');
      return respond(req, peer, 487, 'Request Terminated', tx, [], localTag);
    }
    if (outcome.kind === 'abandoned' || !call) {
      // Ended while it rang: the caller hears it is not available.
      return respond(req, peer, 480, 'Temporarily Unavailable', tx, [], localTag);
    }
    if (outcome.kind === 'reject') {
      log.info({ status: outcome.status }, 'SIP call rejected');
      void call.end('rejected');
      return respond(req, peer, outcome.status, reasonPhrase(outcome.status), tx, [[CALL_ID_HEADER, conversationId]], localTag);
    }
    if (outcome.kind === 'refer') {
      log.info({ target: outcome.target }, 'SIP call redirected');
      void call.end('referred');
      return respond(req, peer, 302, 'Moved Temporarily', tx, [[CALL_ID_HEADER, conversationId], ['Contact', `<${outcome.target}>`]], localTag);
    }
    if (outcome.session) call.updateSession(outcome.session);
    // From now on a call that ends here ends with a BYE (while it rang, a final response said so).
    dialog.transport.bindDialog({ hangUp: () => this.dialogs.hangUp(dialog) });
    // Answered, it can still be transferred: a REFER inside the dialog.
    opts.routing.answered(conversationId, call.apiKeyId, (target) => this.dialogs.transfer(dialog, target));
    call.observe({ ended: () => opts.routing.ended(conversationId) });
    log.info({ transport: peer.transport, from: uriOf(req.from) }, 'SIP call answered');
    this.dialogs.answer(req, peer, dialog, tx, answer());
  }
}

/** Whether Accept headers (none: SDP is assumed, §20.1) let our answer be SDP. */
function acceptsSdp(accept: string[]): boolean {
  if (!accept.length) return true;
  const types = accept.flatMap((value) => value.split(',')).map((type) => type.split(';')[0]!.trim().toLowerCase());
  return types.some((type) => type === 'application/sdp' || type === 'application/*' || type === '*/*');
}

/** Header names as they are usually written (we keep them lower-cased). */
const SPELLINGS: Record<string, string> = { 'call-id': 'Call-ID', cseq: 'CSeq', 'www-authenticate': 'WWW-Authenticate' };

/** Credentials the caller sent us: not passed on to the app. */
const WITHHELD = new Set(['authorization', 'proxy-authorization']);

/** The INVITE's headers as the app is told them (realtime.call.incoming). */
function sipHeadersOf(req: SipRequest): { name: string; value: string }[] {
  return req.headers.entries.filter(([name]) => !WITHHELD.has(name)).map(([name, value]) => ({
    name: SPELLINGS[name] ?? name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()),
    value,
  }));
}
