// Reception statistics of one inbound RTP stream, as RFC 3550 §6.4.1 / A.3 / A.8 define them:
// extended highest sequence number, packets received, interarrival jitter.

export interface ReceiveSnapshot {
  highest: number;
  received: number;
  at: number;
}

export class ReceiveStats {
  private highest = -1;
  received = 0;
  /** Interarrival jitter in RTP timestamp units. */
  private jitter = 0;
  private lastTransit = Number.NaN;

  constructor(private readonly clockRate = 48_000) {}

  /** A packet with this sequence number and RTP timestamp arrived at `now` (ms). */
  packet(seq16: number, timestamp: number, now: number): void {
    this.received++;
    if (this.highest < 0) {
      this.highest = seq16 + 65536;
    } else {
      let ext = this.highest - (this.highest & 0xffff) + seq16;
      if (ext - this.highest > 32768) ext -= 65536;
      else if (this.highest - ext > 32768) ext += 65536;
      if (ext > this.highest) this.highest = ext;
    }
    const transit = (now * this.clockRate) / 1000 - timestamp;
    if (!Number.isNaN(this.lastTransit)) {
      let d = Math.abs(transit - this.lastTransit);
      // Timestamps are 32-bit: a wrap between two packets is not a 24-hour delay.
      if (d > 2 ** 31) d = 2 ** 32 - d;
      this.jitter += (d - this.jitter) / 16;
    }
    this.lastTransit = transit;
  }

  get jitterMs(): number {
    return (this.jitter * 1000) / this.clockRate;
  }

  snapshot(now: number): ReceiveSnapshot {
    return { highest: this.highest, received: this.received, at: now };
  }
}

/** Expected, received and lost packets between two snapshots (lost counts packets never received). */
export function between(a: ReceiveSnapshot, b: ReceiveSnapshot): { expected: number; received: number; lost: number; seconds: number } {
  const expected = a.highest < 0 ? b.received : b.highest - a.highest;
  const received = b.received - a.received;
  return { expected, received, lost: Math.max(0, expected - received), seconds: (b.at - a.at) / 1000 };
}
