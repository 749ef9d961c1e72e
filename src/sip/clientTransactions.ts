// Our own non-INVITE requests (BYE and REFER inside a dialog, REGISTER to a provider): client
// transactions (RFC 3261 §17.1.2), resent over UDP from T1 doubling to T2 (Timer E) until a final
// response, given up at 64·T1 (Timer F: told as a 408).
import type { Peer } from './listener.js';
import type { SipResponse } from './message.js';
import { T1_MS, T2_MS, TRANSACTION_MS } from './timers.js';

/** Told a request's final response (its status, and the response; none when it timed out: 408). */
export type OnFinal = (status: number, response?: SipResponse) => void;

interface Pending {
  timer?: NodeJS.Timeout;
  onFinal?: OnFinal;
}

export class ClientTransactions {
  /** Requests awaiting a final response, by branch. */
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly send: (peer: Peer, bytes: Buffer) => void) {}

  /** Sends `bytes` (a request of Via branch `branch`) to `peer`; `onFinal` is told its final response's status. */
  start(peer: Peer, branch: string, bytes: Buffer, onFinal?: OnFinal): void {
    this.send(peer, bytes);
    const pending: Pending = { onFinal };
    this.pending.set(branch, pending);
    const started = Date.now();
    let interval = T1_MS;
    const retransmit = () => {
      if (Date.now() - started >= TRANSACTION_MS) {
        this.pending.delete(branch);
        return void onFinal?.(408);
      }
      if (peer.transport === 'udp') this.send(peer, bytes);
      interval = Math.min(interval * 2, T2_MS);
      pending.timer = setTimeout(retransmit, interval).unref();
    };
    // Over a stream nothing is resent; the timer only gives up on the answer.
    pending.timer = setTimeout(retransmit, peer.transport === 'udp' ? interval : TRANSACTION_MS).unref();
  }

  /** A response to one of our requests: a final one ends its transaction. */
  received(res: SipResponse): void {
    const pending = this.pending.get(res.branch);
    if (!pending || res.status < 200) return;
    clearTimeout(pending.timer);
    this.pending.delete(res.branch);
    pending.onFinal?.(res.status, res);
  }

  close(): void {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }
}
