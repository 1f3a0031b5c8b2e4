/** The allocator's durations and failures, for metrics; methods return at once, never throw. */
export interface AllocatorObserver {
  /** `error`: what the waiting call rejected with, if it did. */
  waited(sequence: string, ms: number, error: unknown): void;
  blockClaimed(sequence: string, ms: number): void;
  rangeRequested(sequence: string, ms: number): void;
  /** A failure counted in `stats().errors`. */
  failed(sequence: string, error: unknown): void;
}
