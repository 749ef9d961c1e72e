// The load generator's sending: one timer paces every call's packets, and each call's probe says
// what it sends and measures what it hears (echo delays, or voice-to-voice). Shared by
// bench/loadgen.ts and bench/placement-ramp.ts.
import type { LoadCall, PacketSource } from './loadCall.ts';

/** What a call sends and how what it hears is measured: echo delays, or voice-to-voice. */
export interface Probe extends PacketSource {
  heard(payload: Buffer, now: number): void;
  /** Delays measured since the last take(), ms. */
  take(): number[];
  /** Questions given up on (no answer within 10 s) so far. */
  unanswered?(): number;
}

export interface Paced {
  call: LoadCall;
  probe: Probe;
  /** performance.now() of the call's first packet; packet k leaves at start + k × ptime. */
  start: number;
  sent: number;
  reports: number;
}

/**
 * One timer paces every call: every 5 ms it sends each call's due packets. Calls start at spread
 * offsets, so their packets are spread over the 20 ms instead of leaving in one burst.
 */
export class Pacer {
  readonly calls: Paced[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Packets sent more than one packet time late (the load generator itself fell behind). */
  late = 0;

  add(call: LoadCall, probe: Probe): void {
    this.calls.push({ call, probe, start: performance.now() + Math.random() * call.ptimeMs, sent: 0, reports: 0 });
    this.timer ??= setTimeout(() => this.tick(), 5);
  }

  private tick(): void {
    const now = performance.now();
    for (const p of this.calls) {
      const due = Math.floor((now - p.start) / p.call.ptimeMs) + 1;
      if (due - p.sent > 1) this.late += due - p.sent - 1;
      for (; p.sent < due; p.sent++) p.call.sendNext(now);
      if ((now - p.start) / 1000 >= p.reports) {
        p.reports++;
        p.call.sendReport();
      }
    }
    this.timer = setTimeout(() => this.tick(), 5 - ((performance.now() - now) % 5));
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
