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
      this.ticks++;
      for (const tick of this.subscribers) {
        try {
          tick();
        } catch {
          // one call's failure must not stop the others' audio
        }
      }
      if (!this.subscribers.size) {
        this.timer = undefined;
        return;
      }
      let due = this.start + (this.ticks + 1) * this.periodMs - performance.now();
      if (due < -200) {
        // The process stalled: resynchronise instead of bursting to catch up.
        this.start = performance.now();
        this.ticks = 0;
        due = this.periodMs;
      }
      this.timer = setTimeout(loop, Math.max(0, due));
    };
    this.timer = setTimeout(loop, this.periodMs);
  }
}

export const mediaClock = new MediaClock();
