/**
 * What the allocator reports as it works, for metrics: only what cannot be read from a handle's
 * counters afterwards (durations, and the code of each failure). Counters such as IDs handed out
 * or blocks claimed are read from `stats()` when metrics are collected, so that the paths that
 * hand out IDs carry no hook at all. Nothing here knows about any metrics library.
 */

/** Receives the allocator's durations and failures; every method must return at once and never throw. */
export interface AllocatorObserver {
  /**
   * A `next()` or `take()` call found no ID in the process (a `nextIds()` call: too few) and
   * waited `ms` for a refill; `error` is what the call rejected with, undefined if it got its IDs.
   */
  waited(sequence: string, ms: number, error: unknown): void;
  /**
   * One block claim from the DC state ended after `ms`, lost races and a wait for a DC range
   * included, whether it brought a block or failed.
   */
  blockClaimed(sequence: string, ms: number): void;
  /**
   * One DC range request ended after `ms` (reads, the grant at SERIAL, the install at
   * LOCAL_SERIAL), whether it installed a range or failed.
   */
  rangeRequested(sequence: string, ms: number): void;
  /** A failed operation was counted in `stats().errors` (a claim, a range request, a give-back). */
  failed(sequence: string, error: unknown): void;
}
