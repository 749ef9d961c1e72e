// What every part's starter takes besides the configuration: the log and the teardown its closes go to.
import type { FastifyBaseLogger } from 'fastify';

export type Log = FastifyBaseLogger;

/** Listeners a part calls when something happens; a later part registers itself instead of filling a slot. */
export class Listeners<A extends unknown[]> {
  private readonly fns: ((...args: A) => void)[] = [];

  add(fn: (...args: A) => void): void {
    this.fns.push(fn);
  }

  call(...args: A): void {
    for (const fn of this.fns) fn(...args);
  }
}
