// At most `size` holders at once; the others wait in order of arrival. A waiter whose signal
// aborts leaves the queue (it never holds a slot).
export class Semaphore {
  private held = 0;
  private readonly waiting: { grant: () => void; signal: AbortSignal | undefined; onAbort: () => void }[] = [];

  constructor(readonly size: number) {}

  /** Slots in use now. */
  get inUse(): number {
    return this.held;
  }

  /** Waiters not yet holding a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with the release of a slot once one is free; rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        signal,
        grant: () => {
          signal?.removeEventListener('abort', waiter.onAbort);
          resolve(this.releaser());
        },
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter (held stays the same).
      if (next) next.grant();
      else this.held--;
    };
  }
}
