// One 20 ms clock for all calls of a process (one timer, not one per call), corrected for drift so
// packets leave on a steady cadence even when a tick runs late.
type Tick = () => void;

export class MediaClock {
  private readonly subscribers = new Set<Tick>();
  private timer: NodeJS.Timeout | undefined;
  private start = 0;
  private ticks = 0;

  constructor(private readonly periodMs = 20) {}

  subscribe(tick: Tick): () => void {
    this.subscribers.add(tick);
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
        for (const tick of this.subscribers) {
          try {
            tick();
          } catch {
            // one call's failure must not stop the others' audio
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
