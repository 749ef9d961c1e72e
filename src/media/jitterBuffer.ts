// A small reordering buffer for inbound RTP: releases packets in sequence order, waits at most
// `depth` packets for a missing one, then declares it lost and moves on (never stalls).

export interface Sequenced<T> {
  seq: number;
  value: T;
}

export type Release<T> = { lost: true; seq: number } | { lost: false; seq: number; value: T };

export class JitterBuffer<T> {
  private readonly pending = new Map<number, T>();
  /** Next extended sequence number to release (undefined until the first packet). */
  private next: number | undefined;
  /** Highest extended sequence seen, for unwrapping 16-bit numbers. */
  private highest = -1;
  lost = 0;
  late = 0;
  duplicates = 0;

  constructor(private readonly depth = 3) {}

  /** Unwraps a 16-bit RTP sequence number against the highest seen. */
  private extend(seq16: number): number {
    if (this.highest < 0) return seq16 + 65536;
    const cycle = this.highest - (this.highest & 0xffff);
    let ext = cycle + seq16;
    if (ext - this.highest > 32768) ext -= 65536;
    else if (this.highest - ext > 32768) ext += 65536;
    return ext;
  }

  get highestSeq(): number {
    return this.highest;
  }

  /** Adds a packet and returns what can be released now, in order. */
  push(seq16: number, value: T): Release<T>[] {
    const seq = this.extend(seq16);
    if (this.next === undefined) this.next = seq;
    if (seq < this.next) {
      this.late++;
      return [];
    }
    if (this.pending.has(seq)) {
      this.duplicates++;
      return [];
    }
    this.pending.set(seq, value);
    if (seq > this.highest) this.highest = seq;

    const out: Release<T>[] = [];
    for (;;) {
      const v = this.pending.get(this.next);
      if (v !== undefined) {
        this.pending.delete(this.next);
        out.push({ lost: false, seq: this.next, value: v });
        this.next++;
      } else if (this.pending.size > this.depth) {
        // Waited long enough for this one: skip it. A large gap (a stream restart) skips at once.
        const gap = Math.min(...this.pending.keys()) - this.next;
        if (gap > 50) {
          this.next += gap;
          continue;
        }
        this.lost++;
        out.push({ lost: true, seq: this.next });
        this.next++;
      } else {
        return out;
      }
    }
  }
}
