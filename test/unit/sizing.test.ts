/** The sizes that follow the load, apart from the allocator: rates and block sizes. */
import { describe, expect, it } from 'vitest';

import { Rate, blockSizeFor } from '../../src/allocator/sizing.js';

describe('Rate', () => {
  it('is unknown until two samples lie apart, then smooths the increase per second', () => {
    const rate = new Rate();
    rate.sample(0, 1_000);
    expect(rate.perSecond).toBeUndefined();
    rate.sample(5, 1_000.5); // under 1 ms: added to the next sample
    expect(rate.perSecond).toBeUndefined();
    rate.sample(1_000, 2_000);
    expect(rate.perSecond).toBe(1_000);
    rate.sample(4_000, 3_000); // 3,000/s: halfway there
    expect(rate.perSecond).toBe(2_000);
    rate.sample(3_000, 4_000); // a count that went down counts as no draws
    expect(rate.perSecond).toBe(1_000);
  });
});

describe('blockSizeFor', () => {
  const bounds = { claimIntervalMs: 2_000, min: 100, max: 50_000 };

  it('asks for the rate times the claim interval, within [min, max]', () => {
    expect(blockSizeFor({ ...bounds, rate: undefined, waiting: 0 })).toBe(100);
    expect(blockSizeFor({ ...bounds, rate: 10, waiting: 0 })).toBe(100);
    expect(blockSizeFor({ ...bounds, rate: 1_234, waiting: 0 })).toBe(2_468);
    expect(blockSizeFor({ ...bounds, rate: 1e9, waiting: 0 })).toBe(50_000);
    expect(blockSizeFor({ ...bounds, rate: Infinity, waiting: 0 })).toBe(50_000);
  });

  it('covers the calls waiting now in one block, up to max', () => {
    expect(blockSizeFor({ ...bounds, rate: 10, waiting: 7_000 })).toBe(7_000);
    expect(blockSizeFor({ ...bounds, rate: 10, waiting: 70_000 })).toBe(50_000);
  });

  it('keeps fixed blocks fixed', () => {
    expect(blockSizeFor({ ...bounds, min: 500, max: 500, rate: 1e6, waiting: 9_999 })).toBe(500);
  });
});
