// What one WebSocket's messages may cost the node in a turn of the event loop. `ws` hands over every
// message the socket read at once (libuv reads a busy socket many times in a turn), so a client
// sending fast could hold the loop for every other call. Here the messages wait in a queue and are
// handled up to a byte budget a turn, the rest after the loop has served the others (setImmediate);
// while much is waiting, the socket stops being read, so a fast sender is held back by TCP rather
// than by the node's memory. A message handled may leave work for later (a long audio append): it
// is done next, before the messages that came after it.

/** Something to do, and what it counts for: the bytes it handles. */
interface Work {
  bytes: number;
  run: () => void;
}

/** Bytes handled at most a turn (always at least one piece of work). */
export const BYTES_PER_TURN = 128 * 1024;
/** Every message counts at least this much, so a stream of tiny ones is bounded by their number too. */
const MIN_WORK_BYTES = 1024;
/** Waiting beyond this, the socket is paused; it is read again once less than half waits. */
export const PAUSE_AT_BYTES = 1024 * 1024;

export class InboundWork {
  private readonly waiting: Work[] = [];
  private waitingBytes = 0;
  /** Budget spent in the current turn; set back to 0 by the turn's setImmediate. */
  private spent = 0;
  private turnEnds: NodeJS.Immediate | undefined;
  private working = false;
  private paused = false;
  private closed = false;

  constructor(private readonly socket: { pause(): void; resume(): void }) {}

  /** A message's handling, after what waits already. */
  add(bytes: number, run: () => void): void {
    if (this.closed) return;
    this.waiting.push({ bytes: Math.max(bytes, MIN_WORK_BYTES), run });
    this.waitingBytes += Math.max(bytes, MIN_WORK_BYTES);
    this.work();
  }

  /** Work the message being handled leaves for later, done before anything that waits. */
  next(pieces: Work[]): void {
    if (this.closed) return;
    this.waiting.unshift(...pieces);
    for (const p of pieces) this.waitingBytes += p.bytes;
    this.work();
  }

  /** The socket closed: what waits is dropped. */
  close(): void {
    this.closed = true;
    this.waiting.length = 0;
    this.waitingBytes = 0;
    if (this.turnEnds) clearImmediate(this.turnEnds);
  }

  private work(): void {
    // A piece of work that adds more (next) leaves it to the loop already running.
    if (this.working) return;
    this.working = true;
    try {
      while (this.waiting.length && this.spent < BYTES_PER_TURN && !this.closed) {
        const w = this.waiting.shift()!;
        this.waitingBytes -= w.bytes;
        this.spent += w.bytes;
        w.run();
      }
    } finally {
      this.working = false;
      this.flow();
      this.turnEnds ??= setImmediate(() => {
        this.turnEnds = undefined;
        this.spent = 0;
        if (this.waiting.length) this.work();
      });
    }
  }

  /** Backpressure: the socket is not read while much waits. */
  private flow(): void {
    if (this.closed) return;
    if (!this.paused && this.waitingBytes > PAUSE_AT_BYTES) {
      this.paused = true;
      this.socket.pause();
    } else if (this.paused && this.waitingBytes <= PAUSE_AT_BYTES / 2) {
      this.paused = false;
      this.socket.resume();
    }
  }
}
