/**
 * Waits longer than one Node timer holds (2^31-1 ms, about 24.8 days), `Infinity` included: one
 * timer given such a delay fires after 1 ms, so a call with no deadline failed at once and a
 * status sampled over a month measured its rates over 1 ms. vitest's fake timers fire such a
 * delay after 1 ms too, as Node does.
 */
import { describe, expect, it, vi } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { DeadlineError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import { MAX_TIMER_MS, TIMED_OUT, after, settleWithin, sleep } from '../../src/timers.js';
import { KEYSPACE } from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

describe('after', () => {
  itOnFakeClock('fires after a delay longer than one timer holds, not before', async () => {
    const fn = vi.fn();
    after(MAX_TIMER_MS + 1_000, fn);
    await vi.advanceTimersByTimeAsync(10);
    expect(fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 980);
    expect(fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(20);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  itOnFakeClock('never fires after Infinity, and a cancel stops a chained wait', async () => {
    const never = vi.fn();
    after(Infinity, never);
    const cancelled = vi.fn();
    const cancel = after(MAX_TIMER_MS * 2, cancelled);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 5);
    cancel();
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS * 3);
    expect(never).not.toHaveBeenCalled();
    expect(cancelled).not.toHaveBeenCalled();
  });

  itOnFakeClock('fires a short delay as setTimeout does', async () => {
    const fn = vi.fn();
    after(50, fn);
    await vi.advanceTimersByTimeAsync(49);
    expect(fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(fn).toHaveBeenCalledTimes(1);
  });
});

describe('sleep', () => {
  itOnFakeClock('waits a delay longer than one timer holds', async () => {
    let done = false;
    void sleep(MAX_TIMER_MS + 1_000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(done).toBe(true);
  });

  it("rejects with the signal's reason when it fires first, or has fired", async () => {
    const controller = new AbortController();
    const waiting = sleep(Infinity, controller.signal);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await expect(sleep(10, controller.signal)).rejects.toBe(reason);
  });
});

describe('settleWithin', () => {
  it("gives the promise's value, its rejection, or TIMED_OUT when the time runs out first", async () => {
    await expect(settleWithin(Promise.resolve(7), 1_000)).resolves.toBe(7);
    const failure = new Error('refused');
    await expect(settleWithin(Promise.reject(failure), 1_000)).rejects.toBe(failure);
    await expect(settleWithin(new Promise<never>(() => undefined), 10)).resolves.toBe(TIMED_OUT);
  });
});

describe('waits a user sets beyond one timer', () => {
  /** A sequence on a store whose every call takes 20 ms: a first ID needs a wait for a claim. */
  async function slowSequence(callTimeoutMs?: number) {
    const store = new MemoryStore({ keyspace: KEYSPACE, latencyMs: 20 });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, callTimeoutMs });
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    return { store, ids };
  }

  it('a call with timeoutMs Infinity, or a callTimeoutMs of 30 days, waits for its ID', async () => {
    const { ids } = await slowSequence(30 * 86_400_000);
    const id = await ids.sequence('orders').next();
    expect(id).toBeGreaterThan(0);
    await ids.close();

    const other = await slowSequence();
    await expect(other.ids.sequence('orders').next({ timeoutMs: Infinity })).resolves.toBe(1);
    await other.ids.close();
  });

  it('a short deadline still fails the call', async () => {
    const { ids } = await slowSequence();
    await expect(ids.sequence('orders').next({ timeoutMs: 1 })).rejects.toBeInstanceOf(
      DeadlineError,
    );
    await ids.close();
  });

  it('status sampled over 30 days waits (until its signal fires) instead of measuring over 1 ms', async () => {
    const { store, ids } = await slowSequence();
    const admin = new Admin({ store, dc: 'dc1', keyspace: KEYSPACE, hosts: () => [] });
    const controller = new AbortController();
    const reason = new Error('stop sampling');
    setTimeout(() => controller.abort(reason), 200);
    await expect(
      admin.status({ sampleMs: 30 * 86_400_000, signal: controller.signal }),
    ).rejects.toBe(reason);
    await ids.close();
  });
});
