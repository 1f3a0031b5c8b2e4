/** The allocator's durations and failures, for metrics; methods return at once, never throw. */

import type { Clock } from './clock.js';

export interface AllocatorObserver {
  /** `error`: what the waiting call rejected with, if it did. */
  waited(sequence: string, ms: number, error: unknown): void;
  blockClaimed(sequence: string, ms: number): void;
  rangeRequested(sequence: string, ms: number): void;
  /** A failure counted in `stats().errors`. */
  failed(sequence: string, error: unknown): void;
}

/** Runs `run`, then tells `report` how long it took and what it rejected with, if it did. */
export async function timed<R>(
  clock: Clock,
  report: ((ms: number, error: unknown) => void) | undefined,
  run: () => Promise<R>,
): Promise<R> {
  if (report === undefined) return run();
  const started = clock.now();
  let failure: unknown;
  try {
    return await run();
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    report(clock.now() - started, failure);
  }
}
