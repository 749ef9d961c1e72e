// The dialogs of answered (or ringing) calls, each from its opening to its retirement: opened from a
// caller's INVITE we answer (RFC 3261 §12.1.1) or from the 2xx to ours (§12.1.2, ACKed here, and
// again for each retransmission of it); our 2xx resent over UDP until its ACK (§13.3.1.4; the call
// ends without one); our own requests inside it — BYE when a call ends here, REFER to transfer it
// (RFC 3515); and, however it ends (our BYE, theirs, the call's end), kept a transaction's time for
// late retransmissions to find, then forgotten.
import type { SipTransport } from '../calls/sip/sipTransport.js';
import type { ClientTransactions } from './clientTransactions.js';
import { ALLOW, CALL_ID_HEADER, type SipCore } from './core.js';
import type { Peer } from './listener.js';
import { param, uriOf, writeMessage, type SipRequest, type SipResponse } from './message.js';
import { newBranch, responseTo, withTag, type Headers } from './responses.js';
import type { InviteServerTransaction } from './serverTransactions.js';
import { T1_MS, T2_MS, TRANSACTION_MS } from './timers.js';

export interface Dialog {
  /** Parley's id of the call (conv_…). */
  conversationId: string;
  callId: string;
  localTag: string;
  /** Our From and To in requests we send (our To-tagged To, the caller's From). */
  localUri: string;
  remoteUri: string;
  remoteTarget: string;
  routeSet: string[];
  peer: Peer;
  localSeq: number;
  transport: SipTransport;
  sessionId: number;
  sdpVersion: number;
  /** The 2xx we retransmit until its ACK: its timers (the copies, then 64·T1) and its CSeq. */
  unacked?: { timers: Set<NodeJS.Timeout>; cseq: number };
  /** Our ACK of the callee's 2xx (a dialog we opened as caller), sent again for each retransmission of that 2xx. */
  ack?: Buffer;
  ended: boolean;
}

/**
 * What a dialog opens from: a caller's INVITE that we answer, with our To tag (§12.1.1), or the 2xx
 * to our INVITE (§12.1.2) with what that INVITE said: its Request-URI, our tagged From, its CSeq.
 */
export type DialogOrigin =
  | { side: 'callee'; invite: SipRequest; contact: string; localTag: string }
  | { side: 'caller'; answer: SipResponse; invite: { uri: string; from: string; localTag: string; cseq: number } };

/** The call a dialog carries: its ids, its media, and its end (the dialog is retired then). */
export interface DialogCall {
  conversationId: string;
  peer: Peer;
  transport: SipTransport;
  /** Our SDP's session id, which its later answers keep (RFC 3264 §8). */
  sessionId: number;
  /** Told when the call ends; a call that ended already tells nothing (the dialog's own end retires it). */
  observe(observer: { ended(): void }): void;
}

export class Dialogs {
  private readonly table = new Map<string, Dialog>();

  constructor(
    private readonly core: SipCore,
    private readonly requests: ClientTransactions,
  ) {}

  /**
   * Opens a dialog and keeps it until it is retired, a transaction's time after it ends however it
   * ends. Opened from the 2xx to our INVITE, it ACKs that 2xx.
   */
  open(origin: DialogOrigin, call: DialogCall): Dialog {
    const { conversationId, peer, transport, sessionId } = call;
    const common = { conversationId, peer, transport, sessionId, sdpVersion: 1, ended: false };
    let dialog: Dialog;
    if (origin.side === 'callee') {
      const { invite, contact, localTag } = origin;
      const routeSet = invite.headers.all('record-route');
      dialog = { ...common, callId: invite.callId, localTag, localUri: withTag(invite.to, localTag), remoteUri: invite.from, remoteTarget: uriOf(contact), routeSet, localSeq: 0 };
    } else {
      const { answer, invite } = origin;
      const contact = answer.headers.get('contact');
      // The route set is the 2xx's Record-Route, reversed (§12.1.2).
      const routeSet = answer.headers.all('record-route').flatMap(splitRoutes).reverse();
      dialog = { ...common, callId: answer.callId, localTag: invite.localTag, localUri: invite.from, remoteUri: answer.to, remoteTarget: contact ? uriOf(contact) : invite.uri, routeSet, localSeq: invite.cseq };
      // The 2xx's ACK is the dialog's own, a transaction of its own (§13.2.2.4): through its route set, to its target.
      dialog.ack = this.write(dialog, 'ACK', invite.cseq, newBranch());
    }
    this.table.set(dialogKey(dialog.callId, dialog.localTag), dialog);
    call.observe({ ended: () => this.end(dialog) });
    if (dialog.ack) this.acknowledge(dialog);
    return dialog;
  }

  /** ACKs the callee's 2xx (again: it resends its 2xx until our ACK reaches it). */
  acknowledge(dialog: Dialog): void {
    if (dialog.ack) this.core.send(dialog.peer, dialog.ack);
  }

  /** The dialog `req` is inside (by its Call-ID and our tag in its To), if any. */
  of(req: SipRequest): Dialog | undefined {
    const tag = param(req.to, 'tag');
    return tag ? this.table.get(dialogKey(req.callId, tag)) : undefined;
  }

  /** Whether a stream connection (by the listener's number for it) carries a dialog. */
  carries(connection: number): boolean {
    return [...this.table.values()].some((d) => d.peer.connection === connection);
  }

  /**
   * 200 OK with our SDP through `tx`, retransmitted over UDP until its ACK (RFC 3261 §13.3.1.4): at
   * T1, then doubling up to T2, for 64·T1; with no ACK by then the session ends with a BYE.
   */
  answer(req: SipRequest, peer: Peer, dialog: Dialog, tx: InviteServerTransaction, sdp: string): void {
    const ok = responseTo(req, peer, 200, 'OK', [[CALL_ID_HEADER, dialog.conversationId], ['Contact', this.core.contact(peer)], ['Allow', ALLOW], ['Content-Type', 'application/sdp']], dialog.localTag, sdp);
    tx.respond(200, ok);
    if (dialog.unacked) this.stopResending(dialog.unacked);
    const unacked: NonNullable<Dialog['unacked']> = { timers: new Set(), cseq: req.cseq.seq };
    const after = (ms: number, fn: () => void) => unacked.timers.add(setTimeout(fn, ms));
    // Each copy's time is set from the first (0.5, 1.5, 3.5, 7.5, 11.5 … 31.5 s), not from the copy
    // before it: a late event loop delays copies without pushing the last past 64·T1.
    if (peer.transport === 'udp') {
      for (let at = T1_MS, interval = T1_MS; at < TRANSACTION_MS; interval = Math.min(interval * 2, T2_MS), at += interval) after(at, () => this.core.send(peer, ok));
    }
    after(TRANSACTION_MS, () => {
      this.stopResending(unacked);
      dialog.unacked = undefined;
      this.core.opts.log.info({ callId: dialog.callId }, 'SIP call not acknowledged; ending it');
      // The dialog is confirmed all the same, and ended from our side (a BYE), then the call.
      this.hangUp(dialog);
      dialog.transport.callerEnded('not_acknowledged');
    });
    dialog.unacked = unacked;
  }

  /** The ACK of a 2xx (a transaction of its own): the call is up. */
  ackReceived(req: SipRequest): void {
    const dialog = this.of(req);
    if (!dialog || !dialog.unacked || dialog.unacked.cseq !== req.cseq.seq) return;
    this.stopResending(dialog.unacked);
    dialog.unacked = undefined;
    dialog.transport.confirm();
  }

  /** Ends a dialog from our side: BYE, retransmitted over UDP until answered. */
  hangUp(dialog: Dialog): void {
    if (dialog.ended) return;
    this.end(dialog);
    this.request(dialog, 'BYE');
  }

  /**
   * Transfers an answered call (RFC 3515): REFER to `target` inside its dialog. The caller (its
   * trunk or PBX) places the call to the target and reports how it went in NOTIFYs; once the target
   * answers, this call ends (inDialog.ts). A refused REFER leaves the call as it was.
   */
  transfer(dialog: Dialog, target: string): void {
    const log = this.core.opts.log.child({ conversation: dialog.conversationId });
    this.request(dialog, 'REFER', [['Refer-To', `<${target}>`], ['Referred-By', `<sip:parley@${this.core.hostPortFor(dialog.peer)}>`], ['Contact', this.core.contact(dialog.peer)]], (status) => {
      if (status >= 300) log.warn({ status, target }, 'SIP transfer refused by the caller; the call goes on');
      else log.info({ target }, 'SIP transfer accepted by the caller');
    });
  }

  /**
   * The dialog ended (our BYE, the caller's, the call's end): no more copies of our 2xx, and it is
   * kept a transaction's time, for retransmitted requests to find, then forgotten.
   */
  end(dialog: Dialog): void {
    if (dialog.ended) return;
    dialog.ended = true;
    if (dialog.unacked) this.stopResending(dialog.unacked);
    setTimeout(() => this.table.delete(dialogKey(dialog.callId, dialog.localTag)), TRANSACTION_MS).unref();
  }

  /** Dialogs open or ending (retired ones are gone). */
  get size(): number {
    return this.table.size;
  }

  close(): void {
    for (const d of this.table.values()) if (d.unacked) this.stopResending(d.unacked);
  }

  /** No more copies of a 2xx (its ACK came, or the dialog ended). */
  private stopResending(unacked: NonNullable<Dialog['unacked']>): void {
    for (const timer of unacked.timers) clearTimeout(timer);
    unacked.timers.clear();
  }

  /** Sends `method` inside `dialog`, retransmitted over UDP until a final response, which `onFinal` is told. */
  private request(dialog: Dialog, method: string, extra: Headers = [], onFinal?: (status: number) => void): void {
    const branch = newBranch();
    this.requests.start(dialog.peer, branch, this.write(dialog, method, ++dialog.localSeq, branch, extra), onFinal);
  }

  /** A request inside `dialog` (§12.2.1.1): to its remote target, through its route set. */
  private write(dialog: Dialog, method: string, seq: number, branch: string, extra: Headers = []): Buffer {
    const via = `SIP/2.0/${dialog.peer.transport.toUpperCase()} ${this.core.hostPortFor(dialog.peer)};branch=${branch};rport`;
    return writeMessage(`${method} ${dialog.remoteTarget} SIP/2.0`, [
      ['Via', via],
      ['Max-Forwards', '70'],
      ...dialog.routeSet.map((r): [string, string] => ['Route', r]),
      ['From', dialog.localUri],
      ['To', dialog.remoteUri],
      ['Call-ID', dialog.callId],
      ['CSeq', `${seq} ${method}`],
      ...extra,
    ]);
  }
}

const dialogKey = (callId: string, localTag: string) => `${callId}|${localTag}`;

/** A Record-Route header's entries (one header may carry several, comma-separated). */
function splitRoutes(value: string): string[] {
  return value.split(/,(?=\s*<)/).map((r) => r.trim()).filter(Boolean);
}
