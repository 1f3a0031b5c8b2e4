/**
 * What the allocator reports for metrics: only what a handle's counters cannot show afterwards
 * (durations, failure codes), so the paths that hand out IDs carry no hook.
 */

/** Receives the allocator's durations and failures; every method must return at once and never throw. */
export interface AllocatorObserver {
  /** A call found too few IDs and waited `ms`; `error` is what it rejected with, if it did. */
  waited(sequence: string, ms: number, error: unknown): void;
  /** One block claim ended after `ms` (lost races and range waits included), with a block or not. */
  blockClaimed(sequence: string, ms: number): void;
  /** One DC range request ended after `ms` (reads, grant, install), installed a range or failed. */
  rangeRequested(sequence: string, ms: number): void;
  /** A failed operation was counted in `stats().errors` (a claim, a range request, a give-back). */
  failed(sequence: string, error: unknown): void;
}
