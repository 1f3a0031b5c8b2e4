/** The sizes that follow the load, apart from the allocator: rates and block sizes. */
import { describe, expect, it } from 'vitest';

import {
  CLAIM_MARGIN,
  DC_CLAIMS_PER_SECOND,
  DcUsage,
  Rate,
  blockSizeFor,
  grantSizeFor,
} from '../../src/allocator/sizing.js';

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

  it('doubles the least block for every race the claim lost, within [min, max]', () => {
    expect(blockSizeFor({ ...bounds, rate: undefined, waiting: 1, lostRaces: 0 })).toBe(100);
    expect(blockSizeFor({ ...bounds, rate: undefined, waiting: 1, lostRaces: 3 })).toBe(800);
    expect(blockSizeFor({ ...bounds, rate: 1_234, waiting: 0, lostRaces: 3 })).toBe(2_468);
    expect(blockSizeFor({ ...bounds, rate: undefined, waiting: 1, lostRaces: 9 })).toBe(50_000);
    expect(blockSizeFor({ ...bounds, rate: undefined, waiting: 1, lostRaces: 1e6 })).toBe(50_000);
    expect(blockSizeFor({ ...bounds, min: 500, max: 500, rate: 1, waiting: 1, lostRaces: 5 })).toBe(
      500,
    );
  });

  it('keeps fixed blocks fixed', () => {
    expect(blockSizeFor({ ...bounds, min: 500, max: 500, rate: 1e6, waiting: 9_999 })).toBe(500);
    expect(blockSizeFor({ ...bounds, min: 500, max: 500, rate: 1, waiting: 0, dcRate: 1e6 })).toBe(
      500,
    );
    expect(
      blockSizeFor({
        ...bounds,
        min: 500,
        max: 500,
        rate: 1e3,
        waiting: 1,
        claimMs: 1e4,
      }),
    ).toBe(500);
  });

  it('holds at least the DC rate ÷ DC_CLAIMS_PER_SECOND, so the DC claims about that often whatever its processes number', () => {
    // 64 processes at 156/s each: by its own rate a process asks for 312 a block (min 100), so
    // the DC would claim 32 times a second; with the DC's 10,000/s each asks for 2,500.
    const one = blockSizeFor({ ...bounds, rate: 156, waiting: 0, dcRate: 10_000 });
    expect(one).toBe(10_000 / DC_CLAIMS_PER_SECOND);
    expect((64 * 156) / one).toBeLessThanOrEqual(DC_CLAIMS_PER_SECOND);
    // A process alone in its DC: its own rate decides.
    expect(blockSizeFor({ ...bounds, rate: 1_234, waiting: 0, dcRate: 1_234 })).toBe(2_468);
    expect(blockSizeFor({ ...bounds, rate: 1, waiting: 0, dcRate: 1e12 })).toBe(50_000);
  });

  it('lasts CLAIM_MARGIN claims after the next claim starts, at the measured rate', () => {
    // 1,000 IDs/s and claims of 600 ms: the half left when the next claim starts must last
    // 1.2 s, so 2,400 IDs.
    const slow = { ...bounds, rate: 1_000, waiting: 0, threshold: 0.5 };
    expect(blockSizeFor({ ...slow, claimMs: 600 })).toBe((1_000 * 0.6 * CLAIM_MARGIN) / 0.5);
    expect(blockSizeFor({ ...slow, claimMs: 600, threshold: 0.75 })).toBe(
      (1_000 * 0.6 * CLAIM_MARGIN) / 0.25,
    );
    // Fast claims: the claim interval decides.
    expect(blockSizeFor({ ...slow, claimMs: 50 })).toBe(2_000);
    expect(blockSizeFor({ ...slow, claimMs: 60_000 })).toBe(50_000);
    // While calls wait the rate is what the blocks let through: a block of B every claim of L
    // ms is B / L per ms, so the next block is 2 · CLAIM_MARGIN · B.
    const B = 300;
    const L = 600;
    expect(blockSizeFor({ ...slow, claimIntervalMs: 100, rate: (B * 1_000) / L, claimMs: L })).toBe(
      2 * CLAIM_MARGIN * B,
    );
  });
});

describe('DcUsage', () => {
  const state = (
    lastInteger: bigint,
    reservedGrant: number,
    reservedMin: bigint,
    reservedMax: bigint,
  ) => ({
    lastInteger,
    reservedGrant,
    reservedMin,
    reservedMax,
  });

  it('counts claims within a range and across a switch to the next grant; give-backs count nothing', () => {
    const usage = new DcUsage();
    usage.observe(state(10n, 1, 1n, 100n));
    expect(usage.total).toBe(0);
    usage.observe(state(60n, 1, 1n, 100n));
    expect(usage.total).toBe(50);
    usage.observe(state(55n, 1, 1n, 100n)); // a give-back
    expect(usage.total).toBe(50);
    usage.observe(state(1_009n, 2, 1_000n, 1_999n)); // 45 left of grant 1, then 10 of grant 2
    expect(usage.total).toBe(105);
    usage.observe(state(3_000n, 4, 2_900n, 3_999n)); // skipped a grant: starts afresh
    expect(usage.total).toBe(105);
    usage.observe(state(3_100n, 4, 2_900n, 3_999n));
    expect(usage.total).toBe(205);
  });
});

describe('grantSizeFor', () => {
  const demand = {
    autonomySeconds: 3_600,
    threshold: 0.5,
    min: 1_000n,
    max: 10_000_000n,
    unGranted: 2n ** 31n,
    block: 0n,
  };

  it('keeps rate x autonomy in the DC at its low point: rate x T / (1 - threshold)', () => {
    expect(grantSizeFor({ ...demand, rate: 100 })).toBe(720_000n);
    expect(grantSizeFor({ ...demand, rate: 100, threshold: 0.75 })).toBe(1_440_000n);
  });

  it('stays within [dcRangeSize, maxDcRangeSize] and an eighth of what is not granted', () => {
    expect(grantSizeFor({ ...demand, rate: 0.01 })).toBe(1_000n);
    expect(grantSizeFor({ ...demand, rate: 1e6 })).toBe(10_000_000n);
    expect(grantSizeFor({ ...demand, rate: Infinity })).toBe(10_000_000n);
    expect(grantSizeFor({ ...demand, rate: 100, unGranted: 800_000n })).toBe(100_000n);
    expect(grantSizeFor({ ...demand, rate: 100, unGranted: 4_000n })).toBe(1_000n);
  });

  it('holds at least eight of the blocks asked for, within the same bounds', () => {
    // No target: a range of one 100,000-ID block would send every claim to SERIAL.
    expect(grantSizeFor({ ...demand, autonomySeconds: 0, rate: 1e6, block: 100_000n })).toBe(
      800_000n,
    );
    expect(grantSizeFor({ ...demand, rate: undefined, block: 100_000n })).toBe(800_000n);
    // The target's size where it is larger; the stored maximum and the domain share still bound it.
    expect(grantSizeFor({ ...demand, rate: 100, block: 1_000n })).toBe(720_000n);
    expect(grantSizeFor({ ...demand, rate: undefined, block: 5_000_000n })).toBe(10_000_000n);
    expect(
      grantSizeFor({ ...demand, rate: undefined, block: 100_000n, unGranted: 1_600_000n }),
    ).toBe(200_000n);
    // Fixed DC ranges stay fixed however large the blocks.
    expect(grantSizeFor({ ...demand, max: 1_000n, rate: 1e6, block: 1_000n })).toBe(1_000n);
    // Small blocks leave dcRangeSize alone.
    expect(grantSizeFor({ ...demand, autonomySeconds: 0, rate: 1e6, block: 100n })).toBe(1_000n);
  });

  it('is dcRangeSize with no target or no rate yet', () => {
    expect(grantSizeFor({ ...demand, autonomySeconds: 0, rate: 1e6 })).toBe(1_000n);
    expect(grantSizeFor({ ...demand, rate: undefined })).toBe(1_000n);
  });
});
