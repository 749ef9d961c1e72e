// The UAC core of one outbound INVITE (RFC 3261 §8.1 and §13.2), above its client transactions
// (inviteClientTransaction.ts) and below the call (outboundInvite.ts). A digest challenge (401, 407)
// is answered once with the trunk's credentials, in a new transaction with the next CSeq (a second
// one means the credentials are wrong). Giving up sends a CANCEL only once the callee said something
// (§9.1): asked before the first provisional response, it waits for one (until then Timer B runs);
// with no final response 64·T1 after the CANCEL, the INVITE is given up. A 2xx opens the dialog
// (dialogs.ts), which ACKs it and each of its retransmissions. The user hears one outcome: answered
// (the dialog) or failed (a status).
import type { ClientTransactions } from './clientTransactions.js';
import { ALLOW, type SipCore } from './core.js';
import type { Dialog, DialogCall, Dialogs } from './dialogs.js';
import { newCallId } from './callIds.js';
import { digestAnswer } from './digest.js';
import { cancelOf, type InviteClientTransaction, type InviteClientTransactions } from './inviteClientTransaction.js';
import type { Peer } from './listener.js';
import type { SipResponse } from './message.js';
import { newBranch, randomTag, type Headers } from './responses.js';
import { TRANSACTION_MS } from './timers.js';

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

/** Why an INVITE came to no call: a final response, Timer B (nothing answered), or no final response after our CANCEL. */
export type UacFailure = 'response' | 'timeout' | 'cancelled';

export interface UacEvents {
  /** The callee answered: its dialog, open and its 2xx ACKed. */
  answered(dialog: Dialog, response: SipResponse): void;
  /** No call: the status (408 without a final response). */
  failed(status: number, why: UacFailure): void;
}

/** What the UAC core sends through: the INVITE's transactions, the CANCEL's, the dialogs. */
export interface UacParts {
  core: SipCore;
  invites: InviteClientTransactions;
  requests: ClientTransactions;
  dialogs: Dialogs;
}

export class UacInvite {
  /** Marked with our worker under PARLEY_WORKERS, so that the callee's answers reach this process (callIds.ts). */
  readonly callId = newCallId();
  private readonly fromTag = randomTag();
  private cseq = 1;
  /** The INVITE's current transaction (a new one after a challenge). */
  private tx: InviteClientTransaction | undefined;
  /** A challenge was answered: a second one is a failure. */
  private challenged = false;
  /** Our CANCEL: asked for (waiting for a provisional response), or sent. */
  private cancel: 'none' | 'wanted' | 'sent' = 'none';
  private cancelTimer: NodeJS.Timeout | undefined;
  /** The dialog its 2xx opened: retransmitted 2xx are ACKed by it. */
  private dialog: Dialog | undefined;

  constructor(
    private readonly parts: UacParts,
    private readonly target: InviteTarget,
    /** The INVITE's own header fields (after the UAC's) and body. */
    private readonly content: { headers: Headers; body: string },
    /** The call the dialog will carry. */
    private readonly call: Omit<DialogCall, 'peer'>,
    private readonly events: UacEvents,
  ) {}

  private get from(): string {
    return `${this.target.from};tag=${this.fromTag}`;
  }

  start(): void {
    this.send();
  }

  /** Gives up: CANCEL once the callee said something (at once if it has); nothing once it answered or failed. */
  giveUp(): void {
    if (this.cancel !== 'none') return;
    this.cancel = 'wanted';
    if (this.tx?.state === 'proceeding') this.sendCancel();
  }

  /** Sends the INVITE in a new transaction (again, with `authorization`, after a challenge). */
  private send(authorization?: [string, string]): void {
    const { core, invites } = this.parts;
    const { peer, uri } = this.target;
    const branch = newBranch();
    const headers: Headers = [
      ['Via', `SIP/2.0/${peer.transport.toUpperCase()} ${core.hostPortFor(peer)};branch=${branch};rport`],
      ['Max-Forwards', '70'],
      ['From', this.from],
      ['To', `<${uri}>`],
      ['Call-ID', this.callId],
      ['CSeq', `${this.cseq} INVITE`],
      ['Contact', core.contact(peer)],
      ['Allow', ALLOW],
      ['User-Agent', 'Parley'],
      ...(authorization ? [authorization] : []),
      ...this.content.headers,
    ];
    this.tx = invites.start(peer, { branch, uri, headers, body: this.content.body }, { response: (res) => this.response(res), timedOut: () => this.events.failed(408, 'timeout') });
  }

  private response(res: SipResponse): void {
    if (res.status < 200) {
      if (this.cancel === 'wanted') this.sendCancel();
      return;
    }
    clearTimeout(this.cancelTimer);
    if (res.status < 300) return this.answered(res);
    const { credentials } = this.target;
    if ((res.status === 401 || res.status === 407) && credentials && !this.challenged && this.cancel === 'none') {
      const challenge = res.headers.get(res.status === 401 ? 'www-authenticate' : 'proxy-authenticate') ?? '';
      const answer = digestAnswer(challenge, 'INVITE', this.target.uri, credentials.user, credentials.password);
      if (answer) {
        this.challenged = true;
        this.cseq++;
        return this.send([res.status === 401 ? 'Authorization' : 'Proxy-Authorization', answer]);
      }
    }
    this.events.failed(res.status, 'response');
  }

  /** A 2xx: the first opens the dialog; the callee resends it until our ACK reaches it. */
  private answered(res: SipResponse): void {
    const { dialogs } = this.parts;
    if (this.dialog) return dialogs.acknowledge(this.dialog);
    const invite = { uri: this.target.uri, from: this.from, localTag: this.fromTag, cseq: this.cseq };
    this.dialog = dialogs.open({ side: 'caller', answer: res, invite }, { ...this.call, peer: this.target.peer });
    this.events.answered(this.dialog, res);
  }

  private sendCancel(): void {
    this.cancel = 'sent';
    const tx = this.tx!;
    this.parts.requests.start(this.target.peer, tx.branch, cancelOf(tx.request));
    // A callee that never answers the CANCELled INVITE with a final response: given up after a transaction's time.
    this.cancelTimer = setTimeout(() => {
      tx.terminate();
      this.events.failed(408, 'cancelled');
    }, TRANSACTION_MS);
  }
}
