/**
 * Timers for waits a user sets. One Node timer holds at most 2^31-1 ms (a longer one fires after
 * 1 ms); these chain timers, so any delay waits as long as it says and `Infinity` never ends.
 */

export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs `fn` after `ms` ms unless cancelled; with `ref: false` the process may exit before. */
export function after(ms: number, fn: () => void, { ref = false } = {}): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = (left: number) => {
    const step = Math.min(left, MAX_TIMER_MS);
    timer = setTimeout(() => (left > step ? arm(left - step) : fn()), step);
    if (!ref) timer.unref();
  };
  arm(ms);
  return () => clearTimeout(timer);
}

/** Rejects with `signal.reason` if `signal` fires first. The wait keeps the process alive. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason);
    const onAbort = () => {
      cancel();
      reject(signal?.reason);
    };
    const done = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const cancel = after(ms, done, { ref: true });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const TIMED_OUT: unique symbol = Symbol('timed out');

/** `promise`'s outcome, or {@link TIMED_OUT} after `ms`; the timer keeps the process alive. */
export async function settleWithin<T>(
  promise: Promise<T>,
  ms: number,
): Promise<T | typeof TIMED_OUT> {
  let cancel = () => {};
  const late = new Promise<typeof TIMED_OUT>((resolve) => {
    cancel = after(ms, () => resolve(TIMED_OUT), { ref: true });
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    cancel();
  }
}
