/** A caller's wait for IDs: one deadline per call; the refill carries on after it gives up. */

import { AbortedError, ContentionError, DeadlineError, InvalidOptionError } from '../errors.js';
import { checkAbortSignal, checkKeys, everyKeyOf } from '../options.js';
import type { Clock } from './clock.js';

/** How long a call may wait for IDs, and how it can be cancelled. */
export interface CallOptions {
  /**
   * Milliseconds the call may wait for a refill; `Infinity`: no deadline.
   * @default the `callTimeoutMs` option of `connect()` (10 000)
   */
  readonly timeoutMs?: number | undefined;
  /** Rejects the call with {@link AbortedError} when it fires; the refill carries on. */
  readonly signal?: AbortSignal | undefined;
}

/** Checked on every call, even one served at once, so a bad option fails predictably. */
export function checkCallOptions(options: CallOptions | undefined): void {
  if (options === undefined) return;
  checkKeys(options, CALL_KEYS);
  const { timeoutMs, signal } = options;
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs >= 0))) {
    throw new InvalidOptionError('timeoutMs', timeoutMs, 'a number of milliseconds, at least 0');
  }
  checkAbortSignal('signal', signal);
}

const CALL_KEYS = everyKeyOf<CallOptions>()(['timeoutMs', 'signal']);

export interface CallDeadline {
  readonly timeoutMs: number;
  readonly deadline: number;
}

export function throwIfAborted(name: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new AbortedError(name, { cause: signal.reason });
}

export interface Wait extends CallDeadline {
  readonly sequence: string;
  readonly signal: AbortSignal | undefined;
  readonly clock: Clock;
  /** Asked at the deadline, so a caller learns why it gave up. */
  readonly lastFailure: () => Error | undefined;
}

/** Waits for `refill` until the deadline or the signal; lost races alone never fail it early. */
export function waitWithinDeadline(refill: Promise<void>, wait: Wait): Promise<void> {
  const { sequence, timeoutMs, signal, clock } = wait;
  if (signal?.aborted === true) {
    // The refill records its own failure.
    refill.catch(() => undefined);
    return Promise.reject(new AbortedError(sequence, { cause: signal.reason }));
  }
  return new Promise<void>((resolve, reject) => {
    const cancelTimer = clock.after(Math.max(0, wait.deadline - clock.now()), () => {
      done();
      const failure = wait.lastFailure();
      reject(
        failure === undefined || failure instanceof ContentionError
          ? new DeadlineError(sequence, timeoutMs, { cause: failure })
          : failure,
      );
    });
    const onAbort = () => {
      done();
      reject(new AbortedError(sequence, { cause: signal?.reason }));
    };
    const done = () => {
      cancelTimer();
      signal?.removeEventListener('abort', onAbort);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    refill.then(
      () => {
        done();
        resolve();
      },
      (error: unknown) => {
        done();
        if (!(error instanceof ContentionError)) reject(error);
        else if (clock.now() < wait.deadline) resolve();
        else reject(new DeadlineError(sequence, timeoutMs, { cause: error }));
      },
    );
  });
}
