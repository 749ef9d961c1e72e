// How late the event loop runs its work: one loop carries every call's media clock, data channels
// and HTTP, so a loop held up is every caller's problem at once. The worst delay of each second is
// kept (parley_event_loop_lag_seconds) and /readyz says `degraded` while it is past a bound.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Gauge } from 'prom-client';
import type { Health } from './readiness.js';

const WINDOW_MS = 1000;

export class EventLoopWatch {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  /** The worst delay of the last full window, ms. */
  private lastMaxMs = 0;

  constructor(
    private readonly degradedAboveMs: number,
    gauge: Gauge,
  ) {
    this.histogram.enable();
    this.timer = setInterval(() => {
      // The histogram counts in ns, and its resolution's own period in the delay.
      this.lastMaxMs = Math.max(0, this.histogram.max / 1e6 - 10);
      this.histogram.reset();
      gauge.set(this.lastMaxMs / 1000);
    }, WINDOW_MS);
    this.timer.unref();
  }

  /** The loop's worst delay in the last full second, ms (the node's load takes it too). */
  get worstDelayMs(): number {
    return this.lastMaxMs;
  }

  health(): Health {
    if (this.lastMaxMs <= this.degradedAboveMs) return { state: 'ready' };
    return { state: 'degraded', detail: `the event loop ran ${Math.round(this.lastMaxMs)} ms late in the last second (bound ${this.degradedAboveMs} ms)` };
  }

  stop(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
