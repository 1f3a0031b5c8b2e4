/** The fake-clock fixture: installed for its tests only, and removed after one that fails. */
import { describe, expect, it, vi } from 'vitest';

import { itOnFakeClock, onFakeClock } from '../support/fake-clock.js';

describe('itOnFakeClock', () => {
  itOnFakeClock('runs its test on fake timers', async () => {
    expect(vi.isFakeTimers()).toBe(true);
    let fired = false;
    setTimeout(() => (fired = true), 60_000);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(fired).toBe(true);
  });

  it('leaves the next test on real timers', () => {
    expect(vi.isFakeTimers()).toBe(false);
  });

  itOnFakeClock.fails('fails here, on fake timers', () => {
    expect(vi.isFakeTimers()).toBe(false);
  });

  it('leaves real timers behind a test that failed, too', () => {
    expect(vi.isFakeTimers()).toBe(false);
  });

  onFakeClock({ now: 0 })('takes vitest’s fake-timer options', () => {
    expect(Date.now()).toBe(0);
  });
});
