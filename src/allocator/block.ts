/** A claimed block, handed out in order; number-typed blocks take an ID without bigint math. */

import assert from 'node:assert/strict';

import { MAX_BLOCK_SIZE, MAX_SAFE_ID } from '../settings/model.js';

/** A contiguous run of IDs, both ends inclusive. */
export interface IdRange<T extends number | bigint> {
  readonly first: T;
  readonly last: T;
}

export abstract class Block<T extends number | bigint> {
  readonly size: number;
  protected taken = 0;

  /** @param rangeSize of the DC range it was cut from. */
  constructor(
    readonly first: bigint,
    readonly last: bigint,
    readonly rangeSize: bigint = last - first + 1n,
  ) {
    assert(first <= last, `block [${first}, ${last}] is empty`);
    assert(last - first < BigInt(MAX_BLOCK_SIZE), `block [${first}, ${last}] is too large`);
    this.size = Number(last - first) + 1;
  }

  get used(): number {
    return this.taken;
  }

  get remaining(): number {
    return this.size - this.taken;
  }

  /** The first ID not handed out yet (`last + 1` once the block is spent). */
  get nextUnused(): bigint {
    return this.first + BigInt(this.taken);
  }

  takeOne(): T | undefined {
    return this.taken < this.size ? this.at(this.taken++) : undefined;
  }

  /** Undefined, taking nothing, if fewer than `count` remain. */
  takeRange(count: number): IdRange<T> | undefined {
    if (count < 1 || count > this.remaining) return undefined;
    const range = { first: this.at(this.taken), last: this.at(this.taken + count - 1) };
    this.taken += count;
    return range;
  }

  abandon(): number {
    const left = this.remaining;
    this.taken = this.size;
    return left;
  }

  protected abstract at(offset: number): T;
}

class NumberBlock extends Block<number> {
  private readonly base: number;

  constructor(first: bigint, last: bigint, rangeSize?: bigint) {
    super(first, last, rangeSize);
    assert(first >= 0n && last <= MAX_SAFE_ID, `block [${first}, ${last}] exceeds 2^53-1`);
    this.base = Number(first);
  }

  protected at(offset: number): number {
    return this.base + offset;
  }
}

class BigIntBlock extends Block<bigint> {
  protected at(offset: number): bigint {
    return this.first + BigInt(offset);
  }
}

export interface IdKind<T extends number | bigint> {
  readonly bigint: boolean;
  block(first: bigint, last: bigint, rangeSize?: bigint): Block<T>;
}

export const NUMBER_IDS: IdKind<number> = Object.freeze({
  bigint: false,
  block: (first: bigint, last: bigint, rangeSize?: bigint) =>
    new NumberBlock(first, last, rangeSize),
});

export const BIGINT_IDS: IdKind<bigint> = Object.freeze({
  bigint: true,
  block: (first: bigint, last: bigint, rangeSize?: bigint) =>
    new BigIntBlock(first, last, rangeSize),
});
