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
  /** The 2xx we retransmit until its ACK. */
  unacked?: { timer: NodeJS.Timeout; cseq: number };
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

  /** 200 OK with our SDP through `tx`, retransmitted over UDP until its ACK (the call ends without one). */
  answer(req: SipRequest, peer: Peer, dialog: Dialog, tx: InviteServerTransaction, sdp: string): void {
    const ok = responseTo(req, peer, 200, 'OK', [[CALL_ID_HEADER, dialog.conversationId], ['Contact', this.core.contact(peer)], ['Allow', ALLOW], ['Content-Type', 'application/sdp']], dialog.localTag, sdp);
    tx.respond(200, ok);
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
    const started = Date.now();
    let interval = T1_MS;
    const retransmit = () => {
      if (Date.now() - started >= TRANSACTION_MS) {
        dialog.unacked = undefined;
        this.core.opts.log.info({ callId: dialog.callId }, 'SIP call not acknowledged; ending it');
        return void dialog.transport.callerEnded('not_acknowledged');
      }
      if (peer.transport === 'udp') this.core.send(peer, ok);
      interval = Math.min(interval * 2, T2_MS);
      dialog.unacked = { timer: setTimeout(retransmit, interval), cseq: req.cseq.seq };
    };
    dialog.unacked = { timer: setTimeout(retransmit, interval), cseq: req.cseq.seq };
  }

  /** The ACK of a 2xx (a transaction of its own): the call is up. */
  ackReceived(req: SipRequest): void {
    const dialog = this.of(req);
    if (!dialog || !dialog.unacked || dialog.unacked.cseq !== req.cseq.seq) return;
    clearTimeout(dialog.unacked.timer);
    dialog.unacked = undefined;
    dialog.transport.confirm();
  }

  /** Ends a dialog from our side: BYE, retransmitted over UDP until answered. */
  hangUp(dialog: Dialog): void {
    if (dialog.ended) return;
    dialog.ended = true;
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
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
    if (dialog.unacked) clearTimeout(dialog.unacked.timer);
    dialog.ended = true;
    setTimeout(() => this.table.delete(dialogKey(dialog.callId, dialog.localTag)), TRANSACTION_MS).unref();
  }

  close(): void {
    for (const d of this.table.values()) if (d.unacked) clearTimeout(d.unacked.timer);
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
