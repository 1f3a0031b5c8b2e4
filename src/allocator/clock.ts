/**
 * Time as the allocator sees it; the deterministic simulation replaces it. Nothing in the safety
 * argument reads it: it only decides when to try and how much to ask for.
 */

import { after, sleep } from '../timers.js';

export interface Clock {
  /** Milliseconds on a local monotonic clock (only differences mean anything). */
  now(): number;
  /** Resolves after about `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  /** Runs `fn` after about `ms` unless cancelled; returns the canceller. Never keeps Node alive. */
  after(ms: number, fn: () => void): () => void;
  /** Resolves once the event loop handled the ready I/O, for callers that never wait otherwise. */
  yieldToIo(): Promise<void>;
}

/** The original `setImmediate`: a yield to I/O must reach the real loop even under fake timers. */
const immediate = globalThis.setImmediate;

export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => performance.now(),
  sleep: (ms: number) => sleep(ms),
  // A deadline may be far off or Infinity: timers.ts waits that long; one timer would fire at once.
  after: (ms: number, fn: () => void) => after(ms, fn),
  // Callbacks of setImmediate run after the poll phase, where socket data is read.
  yieldToIo: () => new Promise<void>((resolve) => immediate(resolve)),
});
