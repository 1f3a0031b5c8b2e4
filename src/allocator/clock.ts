/** Time as the allocator sees it (the simulation replaces it); no safety argument reads it. */

import { after, sleep } from '../timers.js';

export interface Clock {
  /** Milliseconds on a local monotonic clock (only differences mean anything). */
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Runs `fn` after about `ms` unless cancelled; returns the canceller. Never keeps Node alive. */
  after(ms: number, fn: () => void): () => void;
  /** Resolves once the event loop handled the ready I/O. */
  yieldToIo(): Promise<void>;
}

/** The original `setImmediate`: a yield to I/O must reach the real loop even under fake timers. */
const immediate = globalThis.setImmediate;

export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: () => performance.now(),
  sleep: (ms: number) => sleep(ms),
  // timers.ts handles a far-off or Infinity deadline, where one timer would fire at once.
  after: (ms: number, fn: () => void) => after(ms, fn),
  yieldToIo: () => new Promise<void>((resolve) => immediate(resolve)),
});
