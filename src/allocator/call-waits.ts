/** How a handle's call waits: one deadline per call, the signal checked after each await. */

import { AbortedError } from '../errors.js';
import type { CallOptions } from './call-deadline.js';
import type { Clock } from './clock.js';
import type { AllocatorObserver } from './observer.js';

export interface CallDeadline {
  readonly timeoutMs: number;
  /** `clock.now()` at which the call gives up. */
  readonly deadline: number;
}

/** The call's timeout (its own, else `defaultMs`) and its deadline on `clock`. */
export function deadlineOf(
  options: CallOptions | undefined,
  defaultMs: number,
  clock: Clock,
): CallDeadline {
  // Checked by checkCallOptions when the call began.
  const timeoutMs = options?.timeoutMs ?? defaultMs;
  return { timeoutMs, deadline: clock.now() + timeoutMs };
}

/** Runs the waiting part of a call, telling `observer` how long it took and how it ended. */
export async function timedWait<R>(
  observer: AllocatorObserver | undefined,
  clock: Clock,
  name: string,
  wait: () => Promise<R>,
): Promise<R> {
  if (observer === undefined) return wait();
  const started = clock.now();
  let failure: unknown;
  try {
    return await wait();
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    observer.waited(name, clock.now() - started, failure);
  }
}

/** @throws {AbortedError} once `signal` fired (checked before waiting or taking, after awaits). */
export function throwIfAborted(name: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new AbortedError(name, { cause: signal.reason });
}
