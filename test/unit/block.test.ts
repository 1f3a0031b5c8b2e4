import { describe, expect, it } from 'vitest';

import { BIGINT_IDS, NUMBER_IDS } from '../../src/allocator/block.js';

describe('Block', () => {
  it('hands out a number block in order, then nothing', () => {
    const block = NUMBER_IDS.block(10n, 14n);
    expect(block.size).toBe(5);
    expect([block.takeOne(), block.takeOne()]).toEqual([10, 11]);
    expect(block.used).toBe(2);
    expect(block.remaining).toBe(3);
    expect(block.nextUnused).toBe(12n);
    expect(block.takeRange(3)).toEqual({ first: 12, last: 14 });
    expect(block.takeOne()).toBeUndefined();
    expect(block.remaining).toBe(0);
    expect(block.nextUnused).toBe(15n);
  });

  it('takes a run only if it fits, and takes nothing otherwise', () => {
    const block = NUMBER_IDS.block(1n, 4n);
    expect(block.takeRange(5)).toBeUndefined();
    expect(block.takeRange(0)).toBeUndefined();
    expect(block.used).toBe(0);
    expect(block.takeRange(4)).toEqual({ first: 1, last: 4 });
  });

  it('abandons the rest of a block and reports how much it was', () => {
    const block = NUMBER_IDS.block(1n, 10n);
    block.takeOne();
    expect(block.abandon()).toBe(9);
    expect(block.takeOne()).toBeUndefined();
  });

  it('hands out bigints up to 2^63-1 exactly', () => {
    const max = 2n ** 63n - 1n;
    const block = BIGINT_IDS.block(max - 2n, max);
    expect(block.takeOne()).toBe(max - 2n);
    expect(block.takeRange(2)).toEqual({ first: max - 1n, last: max });
    expect(block.takeOne()).toBeUndefined();
  });

  it('keeps number blocks exact at 2^53-1 and refuses IDs beyond it', () => {
    const max = 2n ** 53n - 1n;
    const block = NUMBER_IDS.block(max - 1n, max);
    expect([block.takeOne(), block.takeOne()]).toEqual([
      Number.MAX_SAFE_INTEGER - 1,
      Number.MAX_SAFE_INTEGER,
    ]);
    expect(() => NUMBER_IDS.block(max, max + 1n)).toThrow(/2\^53-1/);
  });

  it('refuses empty blocks', () => {
    expect(() => BIGINT_IDS.block(5n, 4n)).toThrow(/empty/);
  });
});
