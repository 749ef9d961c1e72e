// One outbound call's INVITE (RFC 3261 §17.1.1, the INVITE client transaction, and §13.2, the UAC
// core): sent with our SDP offer and resent over UDP from T1 doubling (Timer A) until the first
// response, given up at 64·T1 without one (Timer B: unreachable); a digest challenge (401, 407)
// answered once with the trunk's credentials; provisional responses mean it rings; at the ring
// timeout (or a hang-up through the API) it is CANCELled once something came back; a failure
// response is ACKed in the transaction (again for each retransmission) and ends the call with its
// status; a 2xx is ACKed end to end (again for each retransmission), its Record-Route becomes the
// dialog's route set, its SDP answer starts the media, and the call is up.
import { randomBytes } from 'node:crypto';
import { readOffer, writeOffer } from '../calls/sip/sdp.js';
import type { SipTransport } from '../calls/sip/sipTransport.js';
import type { ClientTransactions } from './clientTransactions.js';
import { ALLOW, CALL_ID_HEADER, type SipCore } from './core.js';
import type { Dialog, Dialogs } from './dialogs.js';
import { newCallId } from './callIds.js';
import { digestAnswer } from './digest.js';
import type { Peer } from './listener.js';
import { uriOf, writeMessage, type SipResponse } from './message.js';
import type { InviteFailure } from './options.js';
import { T1_MS, TRANSACTION_MS } from './timers.js';

/** Where and how an outbound INVITE goes. */
export interface InviteTarget {
  /** The Request-URI (and the To). */
  uri: string;
  /** The next hop: the trunk or proxy, or the callee itself. */
  peer: Peer;
  /** The From (our caller id, without tag). */
  from: string;
  /** The trunk's digest credentials, for its challenge. */
  credentials?: { user: string; password: string };
}

export interface InviteEvents {
  /** The callee answered: the call's dialog, its media started. */
  answered(dialog: Dialog): void;
  /** It did not come to a call (the SIP status: 408 when nothing answered). */
  failed(reason: InviteFailure, status: number): void;
}

/** The failure a final status means for the app. */
export function failureOf(status: number, cancelledAtRingTimeout: boolean): InviteFailure {
  if (status === 486 || status === 600) return 'busy';
  if (status === 408 || status === 480 || (status === 487 && cancelledAtRingTimeout)) return 'no_answer';
  return 'rejected';
}

export class OutboundInvite {
  /** Marked with our worker under PARLEY_WORKERS, so that the callee's answers reach this process (callIds.ts). */
  readonly callId = newCallId();
  private readonly fromTag = randomBytes(6).toString('hex');
  /** Our offer's SDP session id, which the dialog's later answers keep (RFC 3264 §8). */
  private readonly sessionId = Date.now() % 1e9;
  private cseq = 1;
  private branch = newBranch();
  private invite!: Buffer;
  private authorized = false;
  /** A provisional response came (Proceeding): no more resends, and a CANCEL may go. */
  private proceeding = false;
  private finalStatus: number | undefined;
  /** Why we want it cancelled: the ring timeout, or the call hung up while it rang. */
  private cancelWanted: 'ring_timeout' | 'hangup' | undefined;
  private cancelSent = false;
  private resendTimer: NodeJS.Timeout | undefined;
  private ringTimer: NodeJS.Timeout | undefined;
  private dialog: Dialog | undefined;
  /** Our ACK of the 2xx (sent again when the 2xx is), or of a failure response. */
  private ack: Buffer | undefined;
  private done = false;

  constructor(
    private readonly core: SipCore,
    private readonly dialogs: Dialogs,
    private readonly requests: ClientTransactions,
    private readonly target: InviteTarget,
    private readonly call: { conversationId: string; transport: SipTransport; ringTimeoutMs: number },
    private readonly events: InviteEvents,
    /** Told each branch this INVITE uses (its responses are routed here by it) and when it is over. */
    private readonly branches: { add(branch: string): void; remove(branch: string): void },
  ) {}

  start(): void {
    this.send();
    this.ringTimer = setTimeout(() => this.cancel('ring_timeout'), this.call.ringTimeoutMs);
  }

  /** Gives up ringing (the call ended through the API): CANCEL, or BYE once answered. */
  hangUp(): void {
    if (this.dialog) return this.dialogs.hangUp(this.dialog);
    this.cancel('hangup');
  }

  /** A response to our INVITE (any of its branches). */
  received(res: SipResponse): void {
    if (res.status < 200) return this.provisional();
    if (res.status < 300) return this.succeeded(res);
    this.failedResponse(res);
  }

  private get ourFrom(): string {
    return `${this.target.from};tag=${this.fromTag}`;
  }

  /** One of our requests of this call: the INVITE, the CANCEL, the ACKs (a 2xx's through the dialog's route set). */
  private request(method: string, at: { uri: string; branch: string; from: string; to: string; seq: number; route?: string[] }, extra: [string, string][] = [], body = ''): Buffer {
    return writeMessage(
      `${method} ${at.uri} SIP/2.0`,
      [
        ['Via', `SIP/2.0/UDP ${this.core.hostPortFor(this.target.peer)};branch=${at.branch};rport`],
        ['Max-Forwards', '70'],
        ...(at.route ?? []).map((r): [string, string] => ['Route', r]),
        ['From', at.from],
        ['To', at.to],
        ['Call-ID', this.callId],
        ['CSeq', `${at.seq} ${method}`],
        ...extra,
      ],
      body,
    );
  }

  private send(authorization?: [string, string]): void {
    const { transport, conversationId } = this.call;
    const sdp = writeOffer({ sessionId: this.sessionId, address: this.core.opts.announcedAddress, rtpPort: transport.rtpPort, rtcpPort: transport.rtcpPort });
    this.branches.add(this.branch);
    this.invite = this.request(
      'INVITE',
      { uri: this.target.uri, branch: this.branch, from: this.ourFrom, to: `<${this.target.uri}>`, seq: this.cseq },
      [
        ['Contact', this.core.contact(this.target.peer)],
        ['Allow', ALLOW],
        ['User-Agent', 'Parley'],
        [CALL_ID_HEADER, conversationId],
        ...(authorization ? [authorization] : []),
        ['Content-Type', 'application/sdp'],
      ],
      sdp,
    );
    this.core.send(this.target.peer, this.invite);
    // Timer A (resends over UDP) and Timer B (no response at all: unreachable).
    const started = Date.now();
    let interval = T1_MS;
    const resend = () => {
      if (this.proceeding || this.finalStatus !== undefined) return;
      if (Date.now() - started >= TRANSACTION_MS) return this.finish('unreachable', 408);
      this.core.send(this.target.peer, this.invite);
      interval *= 2;
      this.resendTimer = setTimeout(resend, interval);
    };
    clearTimeout(this.resendTimer);
    this.resendTimer = setTimeout(resend, interval);
  }

  private provisional(): void {
    if (this.finalStatus !== undefined) return;
    this.proceeding = true;
    clearTimeout(this.resendTimer);
    if (this.cancelWanted && !this.cancelSent) this.sendCancel();
  }

  private succeeded(res: SipResponse): void {
    clearTimeout(this.resendTimer);
    const first = this.finalStatus === undefined;
    this.finalStatus = res.status;
    if (!first) {
      // The callee resends its 2xx until our ACK reaches it.
      if (this.ack) this.core.send(this.target.peer, this.ack);
      return;
    }
    clearTimeout(this.ringTimer);
    const contact = res.headers.get('contact');
    const routeSet = res.headers.all('record-route').flatMap(splitRoutes).reverse();
    const dialog: Dialog = {
      conversationId: this.call.conversationId,
      callId: this.callId,
      localTag: this.fromTag,
      localUri: this.ourFrom,
      remoteUri: res.to,
      remoteTarget: contact ? uriOf(contact) : this.target.uri,
      routeSet,
      peer: this.target.peer,
      localSeq: this.cseq,
      transport: this.call.transport,
      sessionId: this.sessionId,
      sdpVersion: 1,
      ended: false,
    };
    this.ack = this.request('ACK', { uri: dialog.remoteTarget, branch: newBranch(), from: dialog.localUri, to: dialog.remoteUri, seq: this.cseq, route: dialog.routeSet });
    this.core.send(this.target.peer, this.ack);
    this.dialogs.add(dialog);
    this.dialog = dialog;
    this.call.transport.sipStatus = res.status;
    const answer = readOffer(res.body.toString('latin1'));
    // Answered after we gave up (the 2xx crossed our CANCEL: as if the CANCEL had worked), or with
    // media we cannot use: hung up at once, the dialog kept a transaction's time for the BYE's answer.
    if (this.cancelWanted || !answer.ok) {
      if (!answer.ok) this.core.opts.log.warn({ conversation: this.call.conversationId, reason: answer.reason }, 'SIP callee answered with media we cannot use; hanging up');
      this.dialogs.hangUp(dialog);
      this.dialogs.forget(dialog);
      return this.finish(this.cancelWanted ? failureOf(487, this.cancelWanted === 'ring_timeout') : 'media_unacceptable', res.status);
    }
    this.call.transport.negotiated(answer.offer);
    this.done = true;
    this.retire();
    this.events.answered(dialog);
  }

  private failedResponse(res: SipResponse): void {
    clearTimeout(this.resendTimer);
    // ACK a failure in its transaction: the same branch, the To with the callee's tag (§17.1.1.3).
    const ack = this.request('ACK', { uri: this.target.uri, branch: res.branch, from: this.ourFrom, to: res.to, seq: res.cseq.seq });
    this.core.send(this.target.peer, ack);
    if (res.branch !== this.branch || this.finalStatus !== undefined) return;
    // Challenged: answered once (a second challenge means the credentials are wrong).
    const { credentials } = this.target;
    if ((res.status === 401 || res.status === 407) && credentials && !this.authorized && !this.cancelWanted) {
      const challenge = res.headers.get(res.status === 401 ? 'www-authenticate' : 'proxy-authenticate') ?? '';
      const answer = digestAnswer(challenge, 'INVITE', this.target.uri, credentials.user, credentials.password);
      if (answer) {
        this.authorized = true;
        this.branches.remove(this.branch);
        this.branch = newBranch();
        this.cseq++;
        this.proceeding = false;
        return this.send([res.status === 401 ? 'Authorization' : 'Proxy-Authorization', answer]);
      }
    }
    this.finalStatus = res.status;
    this.finish(failureOf(res.status, this.cancelWanted === 'ring_timeout'), res.status);
  }

  private cancel(why: 'ring_timeout' | 'hangup'): void {
    if (this.finalStatus !== undefined || this.cancelWanted) return;
    this.cancelWanted = why;
    // A CANCEL goes only once the callee said something (§9.1); until then the INVITE's own timer runs.
    if (this.proceeding) this.sendCancel();
  }

  private sendCancel(): void {
    this.cancelSent = true;
    const cancel = this.request('CANCEL', { uri: this.target.uri, branch: this.branch, from: this.ourFrom, to: `<${this.target.uri}>`, seq: this.cseq });
    this.requests.start(this.target.peer, this.branch, cancel);
    // A callee that never answers the CANCEL's INVITE with 487: given up after a transaction's time.
    this.resendTimer = setTimeout(() => this.finish(this.cancelWanted === 'ring_timeout' ? 'no_answer' : 'rejected', 408), TRANSACTION_MS);
  }

  /** The INVITE is over without a call: the call ends (failed) with `reason`. */
  private finish(reason: InviteFailure, status: number): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.ringTimer);
    clearTimeout(this.resendTimer);
    this.call.transport.sipStatus = status;
    this.retire();
    this.events.failed(reason, status);
  }

  /** Keeps our branches routed here a transaction's time, for retransmitted final responses to be ACKed again. */
  private retire(): void {
    const branch = this.branch;
    setTimeout(() => this.branches.remove(branch), TRANSACTION_MS).unref();
  }
}

const newBranch = () => 'z9hG4bK' + randomBytes(8).toString('hex');

/** A Record-Route header's entries (one header may carry several, comma-separated). */
function splitRoutes(value: string): string[] {
  return value.split(/,(?=\s*<)/).map((r) => r.trim()).filter(Boolean);
}
