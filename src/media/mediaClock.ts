// One 20 ms clock for all calls of a process (one timer, not one per call), corrected for drift so
// packets leave on a steady cadence even when a tick runs late.
type Tick = () => void;

export class MediaClock {
  /** Each subscriber's tick and what to do when it throws. */
  private readonly subscribers = new Map<Tick, (err: Error) => void>();
  private timer: NodeJS.Timeout | undefined;
  private start = 0;
  private ticks = 0;

  constructor(private readonly periodMs = 20) {}

  /** Calls `tick` every period; a tick that throws is reported to `onError` and the others go on. */
  subscribe(tick: Tick, onError: (err: Error) => void): () => void {
    this.subscribers.set(tick, onError);
    if (!this.timer) this.run();
    return () => {
      this.subscribers.delete(tick);
      if (!this.subscribers.size && this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    };
  }

  private run(): void {
    this.start = performance.now();
    this.ticks = 0;
    const loop = () => {
      // Run every tick that is due: a callback that comes late (a busy event loop) must not
      // lose packets, or the stream slows down and its delay grows.
      let due = Math.floor((performance.now() - this.start) / this.periodMs) - this.ticks;
      if (due > 10) {
        // The process stalled for more than 200 ms: resynchronise instead of bursting to catch up.
        this.start = performance.now() - this.periodMs;
        this.ticks = 0;
        due = 1;
      }
      for (let i = 0; i < due; i++) {
        this.ticks++;
        for (const [tick, onError] of this.subscribers) {
          try {
            tick();
          } catch (err) {
            // One call's failure must not stop the others' audio; its owner hears of it.
            onError(err instanceof Error ? err : new Error(String(err)));
          }
        }
      }
      if (!this.subscribers.size) {
        this.timer = undefined;
        return;
      }
      this.timer = setTimeout(loop, Math.max(0, this.start + (this.ticks + 1) * this.periodMs - performance.now()));
    };
    this.timer = setTimeout(loop, this.periodMs);
  }
}

export const mediaClock = new MediaClock();
