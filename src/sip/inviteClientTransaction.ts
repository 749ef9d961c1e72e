// The INVITE client transaction (RFC 3261 §17.1.1, as RFC 6026 §8.4 amends it), beside the server
// transactions (serverTransactions.ts). Calling: the INVITE resent over UDP from T1 doubling (Timer
// A), given up at 64·T1 without any response (Timer B: its user takes it as a 408). A provisional
// response makes it proceeding: no more resends. A 2xx makes it accepted: each 2xx (the first, its
// retransmissions) goes up to the user, whose dialog ACKs it (dialogs.ts), until Timer M. A failure
// response makes it completed: ACKed here, in the transaction, and each retransmission ACKed again
// without troubling the user, until Timer D. Then it is terminated, and its branch forgotten.
import type { Peer } from './listener.js';
import { writeMessage, type SipResponse } from './message.js';
import type { Headers } from './responses.js';
import { T1_MS, TIMER_D_MS, TRANSACTION_MS } from './timers.js';

export type InviteClientState = 'calling' | 'proceeding' | 'accepted' | 'completed' | 'terminated';

/** The transaction's user (the UAC core, uac.ts): what it is told. */
export interface InviteClientUser {
  /** A response for the user: each provisional one, the final one, and each 2xx while accepted. */
  response(res: SipResponse): void;
  /** Timer B fired while calling: nothing answered (the user takes it as a 408, §8.1.3.1). */
  timedOut(): void;
}

/** Our INVITE as its transaction sends it, and what the ACK of a failure is made of (§17.1.1.3). */
export interface OutgoingInvite {
  /** The top Via's branch: the transaction's id. */
  branch: string;
  uri: string;
  /** Its header fields, the Via first. */
  headers: Headers;
  body: string;
}

/** Header fields of our INVITE that its ACK and CANCEL repeat as they are (besides the top Via). */
const KEPT = new Set(['max-forwards', 'route', 'from', 'call-id']);

export class InviteClientTransaction {
  state: InviteClientState = 'calling';
  private readonly bytes: Buffer;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly request: OutgoingInvite,
    private readonly send: (bytes: Buffer) => void,
    /** Over a stream the transport retransmits, not us; and a failure's ACK needs no lingering. */
    private readonly reliable: boolean,
    private readonly user: InviteClientUser,
    private readonly ended: () => void,
  ) {
    this.bytes = writeMessage(`INVITE ${request.uri} SIP/2.0`, request.headers, request.body);
  }

  get branch(): string {
    return this.request.branch;
  }

  /** Sends the INVITE, and starts Timers A (over UDP) and B. */
  start(): void {
    this.send(this.bytes);
    // Timer A: each copy's time is set from the first (0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s), not from
    // the copy before it, so that a late event loop does not push the copies past Timer B.
    if (!this.reliable) for (let at = T1_MS, interval = T1_MS; at < TRANSACTION_MS; interval *= 2, at += interval) this.after(at, () => this.send(this.bytes));
    this.after(TRANSACTION_MS, () => {
      this.terminate();
      this.user.timedOut();
    });
  }

  /** A response matched to this transaction (by its branch and method). */
  received(res: SipResponse): void {
    switch (this.state) {
      case 'calling':
      case 'proceeding':
        if (res.status < 200) {
          // Timers A and B are the calling state's: the callee is there, the user decides how long it rings.
          if (this.state === 'calling') this.stop();
          this.state = 'proceeding';
          return this.user.response(res);
        }
        this.stop();
        if (res.status < 300) {
          this.state = 'accepted';
          this.after(TRANSACTION_MS, () => this.terminate()); // Timer M
          return this.user.response(res);
        }
        this.state = 'completed';
        this.ack(res);
        this.user.response(res);
        // Timer D: over UDP the callee resends its failure until our ACK reaches it.
        if (this.reliable) this.terminate();
        else this.after(TIMER_D_MS, () => this.terminate());
        return;
      case 'accepted':
        // A retransmitted 2xx (our ACK was lost), or another fork's: the user's dialog ACKs it.
        if (res.status >= 200 && res.status < 300) this.user.response(res);
        return;
      case 'completed':
        if (res.status >= 300) this.ack(res);
        return;
      case 'terminated':
        return;
    }
  }

  /** Ends it now (the user gave up on it: no final response came after its CANCEL, §9.1). */
  terminate(): void {
    if (this.state === 'terminated') return;
    this.stop();
    this.state = 'terminated';
    this.ended();
  }

  /** The server closes: no timer outlives it. */
  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  /** The ACK of a failure response (§17.1.1.3): our INVITE's, with the response's To (the callee's tag). */
  private ack(res: SipResponse): void {
    this.send(sameTransaction(this.request, 'ACK', res.to));
  }

  private after(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms).unref();
    this.timers.add(timer);
  }
}

/**
 * A request of the same transaction as our INVITE (its ACK of a failure, §17.1.1.3; its CANCEL, §9.1):
 * the INVITE's Request-URI, top Via, Max-Forwards, Route, From, Call-ID and CSeq number, in its order,
 * with `to` as the To.
 */
function sameTransaction(invite: OutgoingInvite, method: 'ACK' | 'CANCEL', to: string): Buffer {
  let via = false;
  const headers: Headers = [];
  for (const [name, value] of invite.headers) {
    const key = name.toLowerCase();
    if (key === 'via') {
      if (!via) headers.push([name, value]);
      via = true;
    } else if (key === 'to') headers.push([name, to]);
    else if (key === 'cseq') headers.push([name, `${value.split(' ')[0]} ${method}`]);
    else if (KEPT.has(key)) headers.push([name, value]);
  }
  return writeMessage(`${method} ${invite.uri} SIP/2.0`, headers);
}

/** The CANCEL of our INVITE (§9.1): the To as the INVITE's (no tag), and the same branch. */
export function cancelOf(invite: OutgoingInvite): Buffer {
  const to = invite.headers.find(([name]) => name.toLowerCase() === 'to')?.[1] ?? `<${invite.uri}>`;
  return sameTransaction(invite, 'CANCEL', to);
}

/** Our INVITEs' client transactions, by branch: where the responses to an INVITE are matched (§17.1.3). */
export class InviteClientTransactions {
  private readonly table = new Map<string, InviteClientTransaction>();

  constructor(private readonly send: (peer: Peer, bytes: Buffer) => void) {}

  /** Sends `request` to `peer` in a transaction of its own, whose responses and timeout `user` is told. */
  start(peer: Peer, request: OutgoingInvite, user: InviteClientUser): InviteClientTransaction {
    const tx = new InviteClientTransaction(request, (bytes) => this.send(peer, bytes), peer.transport !== 'udp', user, () => {
      if (this.table.get(request.branch) === tx) this.table.delete(request.branch);
    });
    this.table.set(request.branch, tx);
    tx.start();
    return tx;
  }

  /** A response: to its INVITE's transaction; false when it is none of ours. */
  received(res: SipResponse): boolean {
    const tx = res.cseq.method === 'INVITE' ? this.table.get(res.branch) : undefined;
    if (!tx) return false;
    tx.received(res);
    return true;
  }

  /** Transactions not yet terminated. */
  get size(): number {
    return this.table.size;
  }

  close(): void {
    for (const tx of this.table.values()) tx.stop();
    this.table.clear();
  }
}
