// The dialogs of answered (or ringing) calls, and what we send inside them: our 2xx, resent over
// UDP until its ACK (RFC 3261 §13.3.1.4; the call ends without one), and our own requests — BYE
// when a call ends here, REFER to transfer it (RFC 3515).
import { randomBytes } from 'node:crypto';
import type { SipTransport } from '../calls/sip/sipTransport.js';
import type { ClientTransactions } from './clientTransactions.js';
import { ALLOW, CALL_ID_HEADER, type SipCore } from './core.js';
import type { Peer } from './listener.js';
import { param, writeMessage, type SipRequest } from './message.js';
import { responseTo, type Headers } from './responses.js';
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
  ended: boolean;
}

export class Dialogs {
  private readonly table = new Map<string, Dialog>();

  constructor(
    private readonly core: SipCore,
    private readonly requests: ClientTransactions,
  ) {}

  add(dialog: Dialog): void {
    this.table.set(dialogKey(dialog.callId, dialog.localTag), dialog);
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
    dialog.ended = true;
    if (dialog.unacked) this.stopResending(dialog.unacked);
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

  /** The call ended: its dialog is kept a transaction's time, for retransmitted BYEs to find. */
  forget(dialog: Dialog): void {
    if (dialog.unacked) this.stopResending(dialog.unacked);
    dialog.ended = true;
    setTimeout(() => this.table.delete(dialogKey(dialog.callId, dialog.localTag)), TRANSACTION_MS).unref();
  }

  close(): void {
    for (const d of this.table.values()) if (d.unacked) this.stopResending(d.unacked);
  }

  /** No more copies of a 2xx (its ACK came, or the dialog ended). */
  stopResending(unacked: NonNullable<Dialog['unacked']>): void {
    for (const timer of unacked.timers) clearTimeout(timer);
    unacked.timers.clear();
  }

  /** Sends `method` inside `dialog`, retransmitted over UDP until a final response, which `onFinal` is told. */
  private request(dialog: Dialog, method: string, extra: Headers = [], onFinal?: (status: number) => void): void {
    const branch = 'z9hG4bK' + randomBytes(8).toString('hex');
    const via = `SIP/2.0/${dialog.peer.transport.toUpperCase()} ${this.core.hostPortFor(dialog.peer)};branch=${branch};rport`;
    const bytes = writeMessage(`${method} ${dialog.remoteTarget} SIP/2.0`, [
      ['Via', via],
      ['Max-Forwards', '70'],
      ...dialog.routeSet.map((r): [string, string] => ['Route', r]),
      ['From', dialog.localUri],
      ['To', dialog.remoteUri],
      ['Call-ID', dialog.callId],
      ['CSeq', `${++dialog.localSeq} ${method}`],
      ...extra,
    ]);
    this.requests.start(dialog.peer, branch, bytes, onFinal);
  }
}

const dialogKey = (callId: string, localTag: string) => `${callId}|${localTag}`;
