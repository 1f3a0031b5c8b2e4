/**
 * Time as the allocator sees it: backoffs and retry timers. Real timers by default; the
 * deterministic simulation replaces them so that it decides when each wait ends.
 */

export interface Clock {
  /** Resolves after about `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  /**
   * Runs `fn` after about `ms` milliseconds unless cancelled; returns the cancel function. A
   * pending timer never keeps the process alive on its own.
   */
  after(ms: number, fn: () => void): () => void;
}

export const SYSTEM_CLOCK: Clock = Object.freeze({
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  after: (ms: number, fn: () => void) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
});
