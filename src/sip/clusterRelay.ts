// SIP on every worker of PARLEY_WORKERS. Node 20 cannot share a UDP port between processes
// (reusePort needs 22.12), and the kernel's spreading by source would put a whole trunk's calls on
// one worker anyway; so the primary holds SIP's sockets (UDP, TCP, TLS: SipSockets, with the
// connection limits) and hands each message over the cluster's IPC to the worker its Call-ID
// belongs to (callIds.ts). A worker's server runs on a RelayedListener: what it sends goes back
// through the primary, to the datagram's source or on the stream connection the primary numbered.
// Media (RTP) does not pass here: each worker's calls have UDP sockets of their own.
import type { Worker } from 'node:cluster';
import { workerOfCallId } from './callIds.js';
import { SipSockets, portOf, type ListenerEvents, type Peer, type SipListener, type SipPorts, type SipSocketOptions } from './listener.js';
import { parseMessage } from './message.js';

/** What the primary tells a worker through its environment: the ports SIP listens on, as JSON. */
export const SIP_RELAY_PORTS = 'PARLEY_SIP_RELAY_PORTS';

type ToWorker =
  | { kind: 'sip-in'; text: string; peer: Peer }
  | { kind: 'sip-carries?'; id: number; connection: number }
  | { kind: 'sip-refused' };
type ToPrimary = { kind: 'sip-out'; text: string; peer: Peer } | { kind: 'sip-carries'; id: number; carries: boolean };

/** How long the primary waits for the workers to say whether an idle connection carries a call (then it keeps it). */
const CARRIES_TIMEOUT_MS = 5000;

/**
 * Messages handed to one worker and not yet written to its IPC channel: past this a busy worker's
 * new messages are dropped, as a full socket buffer would drop them, instead of piling up in the
 * primary's memory during a flood (UDP callers resend; a stream's dialog sees a lost request).
 */
const MAX_QUEUED_PER_WORKER = 2048;

/** The primary's side: SIP's sockets, each message relayed to its worker. */
export class SipRelay {
  private readonly workers = new Map<number, Worker>();
  private readonly queued = new WeakMap<Worker, number>();
  private readonly asking = new Map<number, { waiting: number; answered: (carries: boolean) => void }>();
  private lastQuery = 0;
  private sockets!: SipSockets;

  private constructor(private readonly count: number) {}

  /** Opens SIP's sockets for `count` workers (a SipBindError when a port is taken). */
  static async open(opts: Omit<SipSocketOptions, 'refusedConnection'>, count: number): Promise<SipRelay> {
    const relay = new SipRelay(count);
    relay.sockets = await SipSockets.open({
      ...opts,
      received: (bytes, peer) => relay.received(bytes, peer),
      carriesCall: (connection) => relay.carries(connection),
      // Counted by a worker (the primary keeps no metrics of its own).
      refusedConnection: () => relay.anyWorker()?.send({ kind: 'sip-refused' } satisfies ToWorker),
    });
    return relay;
  }

  get ports(): SipPorts {
    return this.sockets.ports;
  }

  /** The environment that makes a worker's SIP door run on the relay. */
  get workerEnv(): NodeJS.ProcessEnv {
    return { [SIP_RELAY_PORTS]: JSON.stringify(this.ports) };
  }

  /** Worker `index` (a new one after a death takes its place) sends through the relay. */
  attach(index: number, worker: Worker): void {
    this.workers.set(index, worker);
    worker.on('message', (message: ToPrimary) => {
      if (message?.kind === 'sip-out') this.sockets.send(message.peer, Buffer.from(message.text, 'latin1'));
      else if (message?.kind === 'sip-carries') this.asking.get(message.id)?.answered(message.carries);
    });
    worker.once('exit', () => this.workers.get(index) === worker && this.workers.delete(index));
  }

  /** Closes the sockets (once the workers have left: their last BYEs go out here). */
  close(): Promise<void> {
    return this.sockets.close();
  }

  private received(bytes: Buffer, peer: Peer): void {
    const parsed = parseMessage(bytes);
    const callId = parsed.ok ? parsed.message.callId : parsed.partial?.callId;
    // One without a Call-ID is answered 400 (or dropped) by whichever worker its source hashes to.
    const index = workerOfCallId(callId || `${peer.address}:${peer.port}`, this.count);
    const worker = this.workers.get(index);
    // A worker starting again after a crash: the dialogs it held died with it, and UDP resends the rest.
    if (!worker?.isConnected()) return;
    const queued = this.queued.get(worker) ?? 0;
    if (queued >= MAX_QUEUED_PER_WORKER) return;
    this.queued.set(worker, queued + 1);
    worker.send({ kind: 'sip-in', text: bytes.toString('latin1'), peer } satisfies ToWorker, undefined, {}, () => this.queued.set(worker, (this.queued.get(worker) ?? 1) - 1));
  }

  /** Whether any worker has a dialog on the stream connection; unanswered in time: yes (kept for another idle period). */
  private carries(connection: number): Promise<boolean> {
    const workers = [...this.workers.values()].filter((w) => w.isConnected());
    if (!workers.length) return Promise.resolve(false);
    const id = ++this.lastQuery;
    return new Promise((resolve) => {
      const done = (carries: boolean) => {
        clearTimeout(timer);
        this.asking.delete(id);
        resolve(carries);
      };
      const timer = setTimeout(() => done(true), CARRIES_TIMEOUT_MS);
      const query = { waiting: workers.length, answered: (carries: boolean) => (carries || --query.waiting === 0 ? done(carries) : undefined) };
      this.asking.set(id, query);
      for (const w of workers) w.send({ kind: 'sip-carries?', id, connection } satisfies ToWorker);
    });
  }

  private anyWorker(): Worker | undefined {
    return [...this.workers.values()].find((w) => w.isConnected());
  }
}

/** In a worker: the ports of the primary's SIP relay, when its SIP door runs on one. */
export function relayedPorts(): SipPorts | undefined {
  const ports = process.env[SIP_RELAY_PORTS];
  return ports ? (JSON.parse(ports) as SipPorts) : undefined;
}

/** A worker's side: messages come from the primary, and what the server sends goes back to it. */
export class RelayedListener implements SipListener {
  private closed = false;
  private readonly handler = (message: ToWorker) => void this.fromPrimary(message);

  constructor(
    readonly ports: SipPorts,
    private readonly events: ListenerEvents & { refusedConnection: () => void },
  ) {
    process.on('message', this.handler);
  }

  portOf(peer: Peer): number {
    return portOf(this.ports, peer);
  }

  send(peer: Peer, bytes: Buffer): void {
    // An INVITE still being worked on when the server closes has nowhere to answer (as with sockets of its own).
    if (this.closed || !process.connected) return;
    process.send!({ kind: 'sip-out', text: bytes.toString('latin1'), peer } satisfies ToPrimary);
  }

  async close(): Promise<void> {
    this.closed = true;
    process.off('message', this.handler);
  }

  private async fromPrimary(message: ToWorker): Promise<void> {
    if (message?.kind === 'sip-in') this.events.received(Buffer.from(message.text, 'latin1'), message.peer);
    else if (message?.kind === 'sip-carries?') {
      const carries = await this.events.carriesCall(message.connection);
      if (process.connected) process.send!({ kind: 'sip-carries', id: message.id, carries } satisfies ToPrimary);
    } else if (message?.kind === 'sip-refused') this.events.refusedConnection();
  }
}
