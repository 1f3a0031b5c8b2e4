/**
 * Tests on a fake clock. A test declared with `itOnFakeClock` (or `onFakeClock(config)`) runs
 * with vitest's fake timers installed, and the real timers come back after it, also when it fails,
 * so no test hands a fake clock to the next. Time moves only through `vi.advanceTimersByTimeAsync`
 * and its kin.
 */
import { test, vi } from 'vitest';

type FakeTimerConfig = Parameters<typeof vi.useFakeTimers>[0];

export function onFakeClock(config?: FakeTimerConfig) {
  return test.extend<{ fakeClock: undefined }>({
    fakeClock: [
      // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern
      async ({}, use) => {
        vi.useFakeTimers(config);
        try {
          await use(undefined);
        } finally {
          vi.useRealTimers();
        }
      },
      { auto: true },
    ],
  });
}

/** `it` with vitest's default fake timers. */
export const itOnFakeClock = onFakeClock();
