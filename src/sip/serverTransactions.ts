// Server transactions (RFC 3261 §17.2): each request is handled once, and its retransmissions get
// the last answer again. An INVITE's transaction is proceeding while it rings; a failure response
// makes it completed, Timer G resending that response over UDP until the caller's ACK (Timer H gives
// up), the ACK makes it confirmed (Timer I absorbs the ACK's own retransmissions), then terminated.
// A 2xx makes it accepted (RFC 6026): the dialog resends the 2xx until its ACK (dialogs.ts), and
// until Timer L a retransmitted INVITE gets the 2xx again. Other requests' transactions are trying
// or proceeding until their final response, then completed until Timer J.
import type { Peer } from './listener.js';
import { param, type SipRequest } from './message.js';
import { T1_MS, T2_MS, T4_MS, TRANSACTION_MS } from './timers.js';

/** Server transactions remembered at most: past it, a flood's new requests go unanswered. */
const MAX_TRANSACTIONS = 20_000;

type Send = (bytes: Buffer) => void;

abstract class ServerTransaction<State extends string> {
  abstract state: State | 'terminated';
  /** The last response sent, resent on a retransmitted request (none yet: still working on it). */
  protected last: Buffer | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    protected readonly send: Send,
    /** Over a stream the transport retransmits, not us. */
    protected readonly reliable: boolean,
    private readonly ended: () => void,
  ) {}

  /** Sends `bytes`, the response of `status`, and moves on accordingly. */
  abstract respond(status: number, bytes: Buffer): void;

  /** The request came again: the last answer again (none yet: still being worked on). */
  retransmitted(): void {
    if (this.last && this.state !== 'terminated') this.send(this.last);
  }

  /** The server closes: no timer outlives it. */
  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  protected after(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms).unref();
    this.timers.add(timer);
  }

  protected terminate(): void {
    this.stop();
    this.state = 'terminated';
    this.ended();
  }
}

type InviteState = 'proceeding' | 'accepted' | 'completed' | 'confirmed' | 'terminated';

export class InviteServerTransaction extends ServerTransaction<InviteState> {
  state: InviteState = 'proceeding';
  /** CANCELled before its final response. */
  cancelled = false;
  /** While it rings, waiting for the app's decision: aborted by a CANCEL. */
  ringing: AbortController | undefined;

  /** Whether its final response was sent. */
  get final(): boolean {
    return this.state !== 'proceeding';
  }

  respond(status: number, bytes: Buffer): void {
    // One final response per transaction; what the core sends after it goes nowhere.
    if (this.final) return;
    this.last = bytes;
    this.send(bytes);
    if (status < 200) return;
    if (status < 300) {
      this.state = 'accepted';
      this.after(TRANSACTION_MS, () => this.terminate()); // Timer L
      return;
    }
    this.state = 'completed';
    if (!this.reliable) this.resendEvery(T1_MS); // Timer G
    this.after(TRANSACTION_MS, () => this.terminate()); // Timer H: no ACK came
  }

  /**
   * An ACK matching this transaction: true when it acknowledges our failure response (and is this
   * transaction's), false when it is a 2xx's ACK (the dialog's, a transaction of its own).
   */
  acknowledged(): boolean {
    if (this.state === 'confirmed') return true;
    if (this.state !== 'completed') return false;
    this.stop();
    this.state = 'confirmed';
    if (this.reliable) this.terminate();
    else this.after(T4_MS, () => this.terminate()); // Timer I
    return true;
  }

  private resendEvery(interval: number): void {
    this.after(interval, () => {
      this.send(this.last!);
      this.resendEvery(Math.min(interval * 2, T2_MS));
    });
  }
}

type NonInviteState = 'trying' | 'proceeding' | 'completed' | 'terminated';

export class NonInviteServerTransaction extends ServerTransaction<NonInviteState> {
  state: NonInviteState = 'trying';

  respond(status: number, bytes: Buffer): void {
    if (this.state === 'completed' || this.state === 'terminated') return;
    this.last = bytes;
    this.send(bytes);
    if (status < 200) return void (this.state = 'proceeding');
    this.state = 'completed';
    // Timer J, over streams too: a stateless proxy may forward a UDP caller's retransmissions over TCP.
    this.after(TRANSACTION_MS, () => this.terminate());
  }
}

export type AnyServerTransaction = InviteServerTransaction | NonInviteServerTransaction;

/** The server transactions of a listener, by what matches a request to its transaction. */
export class ServerTransactions {
  private readonly table = new Map<string, AnyServerTransaction>();
  /** Transactions of requests outside a dialog, by From tag, Call-ID and CSeq (merged requests). */
  private readonly outsideDialogs = new Map<string, string>();

  /** The transaction `req` belongs to as a request of `method` (an ACK's or a CANCEL's: its INVITE's). */
  find(req: SipRequest, method = req.method): AnyServerTransaction | undefined {
    return this.table.get(transactionKey(req, method));
  }

  /**
   * Whether `req` (a new request, outside a dialog) is one we already have a transaction for under
   * another branch: the same request forked by a proxy and arriving twice, or looped back to us
   * (RFC 3261 §8.2.2.2), to be answered 482 Loop Detected.
   */
  merged(req: SipRequest): boolean {
    const key = this.outsideDialogs.get(mergeKey(req));
    return key !== undefined && key !== transactionKey(req, req.method) && this.table.has(key);
  }

  /** A new transaction for `req` answered through `send`; undefined when there are too many already. */
  open(req: SipRequest, peer: Peer, send: Send): AnyServerTransaction | undefined {
    if (this.table.size >= MAX_TRANSACTIONS) return undefined;
    const key = transactionKey(req, req.method);
    const reliable = peer.transport !== 'udp';
    const merge = param(req.to, 'tag') === undefined ? mergeKey(req) : undefined;
    const ended = () => {
      if (this.table.get(key) === tx) this.table.delete(key);
      if (merge !== undefined && this.outsideDialogs.get(merge) === key) this.outsideDialogs.delete(merge);
    };
    const tx = req.method === 'INVITE' ? new InviteServerTransaction(send, reliable, ended) : new NonInviteServerTransaction(send, reliable, ended);
    this.table.set(key, tx);
    if (merge !== undefined && !this.outsideDialogs.has(merge)) this.outsideDialogs.set(merge, key);
    return tx;
  }

  close(): void {
    for (const tx of this.table.values()) tx.stop();
    this.table.clear();
    this.outsideDialogs.clear();
  }
}

/** What makes two requests the same one whatever path they took: From tag, Call-ID, CSeq. */
function mergeKey(req: SipRequest): string {
  return `${param(req.from, 'tag') ?? ''}|${req.callId}|${req.cseq.seq}|${req.cseq.method}`;
}

/**
 * RFC 3261 §17.2.3: the top Via's branch and sent-by, and the method (an ACK's is its INVITE's).
 * RFC 2543 peers have no branch cookie: the dialog and sequence name the transaction.
 */
function transactionKey(req: SipRequest, method: string): string {
  const m = method === 'ACK' ? 'INVITE' : method;
  if (!req.branch.startsWith('z9hG4bK')) return `${req.callId}|${req.from}|${req.cseq.seq}|${m}`;
  return `${req.branch}|${sentBy(req.headers.all('via')[0] ?? '')}|${m}`;
}

/** The host[:port] a Via names (`SIP/2.0/UDP host:port;branch=…`). */
function sentBy(via: string): string {
  return (/^SIP\/2\.0\/[A-Za-z]+\s+([^;\s]+)/i.exec(via)?.[1] ?? '').toLowerCase();
}
