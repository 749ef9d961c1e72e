// Round-trip time from RTCP (RFC 3550 §6.4.1): the far end's reception report about our stream
// echoes the middle 32 bits of the NTP time of the last sender report it had from us (LSR) and how
// long it held that report before reporting (DLSR, in 1/65536 s); the round trip is the time since
// that SR was sent less that delay. For the SRs we remember sending, that time is read on our
// monotonic clock (a step of the wall clock cannot skew it, and it is finer than the NTP stamps'
// milliseconds); an SR the WebRTC stack sent on its own (werift does) is measured as RFC 3550 says,
// NTP time now less LSR less DLSR.
import { SampleSet } from '../system/sampleSet.js';
import { ntpMiddle } from './rtcp.js';

/** SRs remembered (one a second). */
const REMEMBERED_REPORTS = 16;
/** A round trip beyond this is an echo of something else (a stale or foreign LSR), not a measurement. */
const MAX_ROUND_TRIP_MS = 10_000;
/** NTP middle-32 units (1/65536 s) in a millisecond. */
const UNITS_PER_MS = 65536 / 1000;

export class RoundTripMeter {
  /** Our SRs by their LSR value: when each was sent (performance.now() ms). */
  private readonly sent = new Map<number, number>();
  readonly samples = new SampleSet();
  /** The latest round trip measured (ms). */
  last: number | undefined;

  /** We sent an SR with this NTP timestamp at `atMs` (performance.now()). */
  senderReportSent(ntp: bigint, atMs: number): void {
    this.sent.set(ntpMiddle(ntp), atMs);
    if (this.sent.size > REMEMBERED_REPORTS) this.sent.delete(this.sent.keys().next().value!);
  }

  /**
   * A reception report about our stream arrived at `atMs` (performance.now()), when the wall clock
   * read `ntpNow`; returns the round trip it gives (ms), if any.
   */
  reportReceived(lsr: number, dlsr: number, atMs: number, ntpNow: bigint): number | undefined {
    // LSR 0: the far end has had no SR from us yet.
    if (lsr === 0) return undefined;
    const sentAt = this.sent.get(lsr);
    // Signed 32-bit difference: a round trip a hair below zero (rounding) stays small, not 18 hours.
    const rtt = sentAt !== undefined ? atMs - sentAt - dlsr / UNITS_PER_MS : ((ntpMiddle(ntpNow) - lsr - dlsr) | 0) / UNITS_PER_MS;
    // A little below zero is the stamps' rounding; much below or far above, not an echo of our SR.
    if (rtt < -2 || rtt > MAX_ROUND_TRIP_MS) return undefined;
    this.last = Math.max(0, rtt);
    this.samples.add(this.last);
    return this.last;
  }
}
