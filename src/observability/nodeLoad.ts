// The node's load: one figure from 0 (idle) to 1 (a node that cannot keep up), sampled each second
// from what the node can see: how busy its event loop is (every call's media clock, data channel and
// HTTP run there), how busy the machine's cores are (the speech recogniser's worker processes and
// helper processes, and anything else on the machine: a call's audio is late when the cores are taken,
// whoever took them — LiveKit's agent workers measure the machine's CPU the same way), and how late
// the loop ran (100 ms late or more counts as 1). Above its threshold the node takes no new calls
// itself (src/calls/admission.ts) and other nodes are offered them, as LiveKit's agent workers stop
// taking jobs above their load threshold; on the way there the Opus encoders give up complexity
// (src/media/encoderComplexity.ts). The threshold the operator sets (LOAD_THRESHOLD) refuses a call
// no other node takes; the default one only steers calls to other nodes: a node with none to hand a
// call to takes it (LiveKit's workers have no load threshold in development either).
import { cpus } from 'node:os';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Health } from './readiness.js';

/** Loop lateness that counts as a full load: five 20 ms media frames late. */
export const LAG_AT_FULL_LOAD_MS = 100;
/** The threshold when LOAD_THRESHOLD is not set: above it calls go to other nodes first. */
export const DEFAULT_LOAD_THRESHOLD = 0.75;
/** Below the threshold by this much before the node takes calls again, so that it does not flap. */
export const LOAD_HYSTERESIS = 0.05;
/** Weight of the newest sample in the smoothed figure (about three seconds of memory). */
const SMOOTHING = 0.4;
/**
 * The most one call is taken to cost when projecting calls the figure does not show yet: a node is
 * assumed to carry at least 33 (echo calls measured 40–60 per core here, remote-model agents ~95).
 */
export const MAX_CALL_COST = 0.03;

/**
 * The load with the calls admitted since the figure last caught up: a burst of new calls is set up
 * within a second or two, before the smoothed figure shows them, so each call the figure does not
 * show yet (the calls now, beyond their count smoothed as the figure is) is added at what a call
 * costs now (the figure over the calls it shows, at most MAX_CALL_COST).
 */
export function projectedLoad(figure: number, smoothedCalls: number, callsNow: number): number {
  const unseen = callsNow - smoothedCalls;
  if (unseen <= 0) return figure;
  const perCall = smoothedCalls >= 1 ? Math.min(MAX_CALL_COST, figure / smoothedCalls) : MAX_CALL_COST;
  // A full load is 1, however many calls it would take past it.
  return Math.min(1, figure + unseen * perCall);
}

export interface LoadSample {
  /** Share of the interval the event loop was busy (0..1). */
  eventLoopBusy: number;
  /** The machine's cores' busy share over the interval (0..1; this process's share is part of it). */
  machineCpu: number;
  /** The loop's worst lateness in the interval, ms. */
  loopLagMs: number;
}

/** One sample's load: its most loaded resource (0..1: a loop later than LAG_AT_FULL_LOAD_MS is as loaded as it gets). */
export function loadOf(sample: LoadSample): number {
  return Math.max(sample.eventLoopBusy, sample.machineCpu, Math.min(1, sample.loopLagMs / LAG_AT_FULL_LOAD_MS));
}

export interface NodeLoadOptions {
  /** The load above which the node takes no new calls; 0 turns that off. */
  threshold: number;
  /** The threshold is the operator's (LOAD_THRESHOLD): it refuses calls no other node takes; else it only steers them. */
  operatorSet: boolean;
  /** The event loop's worst delay in the last second, ms (EventLoopWatch measures it once for both). */
  loopLagMs: () => number;
  intervalMs?: number;
  /** Told each new figure (metrics, the encoders' complexity). */
  onSample?: (load: number, sample: LoadSample) => void;
  /** The calls the node carries now (connecting ones included), for projectedLoad(). */
  calls?: () => number;
}

export class NodeLoad {
  private figure = 0;
  /** The call count smoothed as the figure is: the calls the figure shows. */
  private smoothedCalls = 0;
  private shedding = false;
  private readonly timer: NodeJS.Timeout;
  private lastElu: EventLoopUtilization = performance.eventLoopUtilization();
  private lastCpu = cpuTimes();

  constructor(private readonly opts: NodeLoadOptions) {
    this.timer = setInterval(() => this.sample(), opts.intervalMs ?? 1000);
    this.timer.unref();
  }

  /** The smoothed load figure. */
  get value(): number {
    return this.figure;
  }

  /** Why the node takes no new calls now, or undefined while it does. */
  get overloaded(): string | undefined {
    const { threshold } = this.opts;
    const projected = threshold > 0 && !this.shedding ? projectedLoad(this.figure, this.smoothedCalls, this.opts.calls?.() ?? 0) : this.figure;
    if (!this.shedding && !(threshold > 0 && projected >= threshold)) return undefined;
    const whose = this.opts.operatorSet ? 'its threshold LOAD_THRESHOLD is' : 'past the default threshold';
    return `This server is loaded (${projected.toFixed(2)}, ${whose} ${threshold}); retry shortly or on another node.`;
  }

  health(): Health {
    const { threshold, operatorSet } = this.opts;
    const detail = `load ${this.figure.toFixed(2)}, threshold ${threshold ? `${threshold}${operatorSet ? '' : ' (default)'}` : 'off'}`;
    if (!this.shedding) return { state: 'ready', detail };
    return { state: 'degraded', detail: `${detail}: ${operatorSet ? 'taking no new calls' : 'new calls go to another node with room, else are taken here'}` };
  }

  private sample(): void {
    const elu = performance.eventLoopUtilization(this.lastElu);
    this.lastElu = performance.eventLoopUtilization();
    const cpu = cpuTimes();
    const total = cpu.total - this.lastCpu.total;
    const busy = total > 0 ? (cpu.busy - this.lastCpu.busy) / total : 0;
    this.lastCpu = cpu;
    const sample: LoadSample = {
      eventLoopBusy: elu.utilization,
      machineCpu: Math.min(1, Math.max(0, busy)),
      loopLagMs: this.opts.loopLagMs(),
    };
    this.figure = SMOOTHING * loadOf(sample) + (1 - SMOOTHING) * this.figure;
    this.smoothedCalls = SMOOTHING * (this.opts.calls?.() ?? 0) + (1 - SMOOTHING) * this.smoothedCalls;
    const { threshold } = this.opts;
    this.shedding = threshold > 0 && (this.shedding ? this.figure >= threshold - LOAD_HYSTERESIS : this.figure >= threshold);
    this.opts.onSample?.(this.figure, sample);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** The machine's cores' time so far, ms: all of it, and the part not idle. */
function cpuTimes(): { total: number; busy: number } {
  let total = 0;
  let idle = 0;
  for (const { times } of cpus()) {
    total += times.user + times.nice + times.sys + times.idle + times.irq;
    idle += times.idle;
  }
  return { total, busy: total - idle };
}
