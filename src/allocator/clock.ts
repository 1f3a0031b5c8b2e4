/**
 * Time as the allocator sees it: backoffs, retry timers, call deadlines and the draw rates that
 * size blocks and grants. Real timers by default; the deterministic simulation replaces them so
 * that it decides when each wait ends. Nothing in the safety argument reads it: it only decides
 * when to try and how much to ask for.
 */

import { after, sleep } from '../timers.js';

export interface Clock {
  /** Milliseconds on a local monotonic clock (only differences mean anything). */
  now(): number;
  /** Resolves after about `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  /**
   * Runs `fn` after about `ms` milliseconds unless cancelled; returns the cancel function. A
   * pending timer never keeps the process alive on its own.
   */
  after(ms: number, fn: () => void): () => void;
  /**
   * Resolves once the event loop has handled the I/O that is ready (replies to our requests):
   * a caller that never waits otherwise lets them in with it.
   */
  yieldToIo(): Promise<void>;
}

/**
 * `setImmediate` as the process started with it: a yield to I/O must reach the real event loop,
 * even where a test replaced the global timers with fake ones after this module loaded.
 */
const immediate = globalThis.setImmediate;

export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => performance.now(),
  sleep: (ms: number) => sleep(ms),
  // A call's deadline may be far off, or Infinity: timers.ts waits that long, where one timer
  // would fire at once.
  after: (ms: number, fn: () => void) => after(ms, fn),
  // Callbacks of setImmediate run after the poll phase, where socket data is read.
  yieldToIo: () => new Promise<void>((resolve) => immediate(resolve)),
});
