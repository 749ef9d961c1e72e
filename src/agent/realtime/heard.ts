// What the caller has heard of each reply item the bridge played: the audio out is one queue, so the
// milliseconds written so far, less what is still queued, is where its playout stands; the item that
// position falls in was heard up to there. Parley's own playout is the truth here (an upstream's guess
// of what was heard is not).

/** A stretch of an item's audio, written without another item's between. */
interface Stretch {
  itemId: string;
  responseId: string;
  /** Where it starts on the playout's clock. */
  startMs: number;
  ms: number;
  /** The item's audio before this stretch. */
  itemOffsetMs: number;
}

export interface HeardItem {
  itemId: string;
  responseId: string;
  /** How far into the item's audio the caller heard. */
  heardMs: number;
}

/** Stretches remembered (the playout queue holds a few items at most). */
const MAX_STRETCHES = 64;

export class HeardAudio {
  /** Milliseconds written on the playout's clock (a clear moves it back to what was heard). */
  private totalMs = 0;
  private readonly stretches: Stretch[] = [];
  private readonly itemMs = new Map<string, number>();

  /** `ms` more of the item's audio was written to the audio out. */
  written(itemId: string, responseId: string, ms: number): void {
    const before = this.itemMs.get(itemId) ?? 0;
    this.itemMs.set(itemId, before + ms);
    if (this.itemMs.size > MAX_STRETCHES) this.itemMs.delete(this.itemMs.keys().next().value!);
    const last = this.stretches.at(-1);
    if (last?.itemId === itemId) last.ms += ms;
    else {
      this.stretches.push({ itemId, responseId, startMs: this.totalMs, ms, itemOffsetMs: before });
      if (this.stretches.length > MAX_STRETCHES) this.stretches.shift();
    }
    this.totalMs += ms;
  }

  /** Milliseconds of the item's audio written so far. */
  writtenMs(itemId: string): number {
    return this.itemMs.get(itemId) ?? 0;
  }

  /**
   * The audio out was cleared while `queuedMs` of what was written was still unheard: each item the
   * caller did not hear all of, and how far into it they heard (an item not started: 0).
   */
  cleared(queuedMs: number): HeardItem[] {
    const position = Math.max(0, this.totalMs - queuedMs);
    const cut = new Map<string, HeardItem>();
    for (const s of this.stretches) {
      if (s.startMs + s.ms <= position) continue;
      const heardMs = s.itemOffsetMs + Math.max(0, position - s.startMs);
      // An item in several stretches was heard up to the first one cut.
      if (!cut.has(s.itemId)) cut.set(s.itemId, { itemId: s.itemId, responseId: s.responseId, heardMs });
      s.ms = Math.max(0, position - s.startMs);
    }
    for (const c of cut.values()) this.itemMs.set(c.itemId, c.heardMs);
    // Stretches nothing of which was heard are gone from the playout.
    for (let i = this.stretches.length - 1; i >= 0 && this.stretches[i]!.ms === 0; i--) this.stretches.pop();
    this.totalMs = position;
    return [...cut.values()];
  }
}
