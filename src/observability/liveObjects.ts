// Counts objects that are still alive (not yet garbage-collected), so a leak shows as a number that
// never comes back down. Run with `node --expose-gc` to have each count force a full collection
// first (tests and leak hunting; a full GC per metrics scrape is not for production).
import { setImmediate as nextTurn } from 'node:timers/promises';

export class LiveObjects {
  private count = 0;
  private readonly registry = new FinalizationRegistry<undefined>(() => this.count--);

  track(object: object): void {
    this.count++;
    this.registry.register(object, undefined);
  }

  /** The live count; with --expose-gc, after a full collection and its finalizers have run. */
  async alive(): Promise<number> {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc) {
      gc();
      // FinalizationRegistry callbacks run as a task after the collection.
      await nextTurn();
      await nextTurn();
    }
    return this.count;
  }
}
