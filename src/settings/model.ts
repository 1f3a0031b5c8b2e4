/** The settings model: the bounds no setting may pass and the options of create and alter. */

import type { DomainName, SizeSettings } from '../store/port.js';

/** `custom` is recorded instead when an explicit `max` is given. */
export type DomainPreset = Exclude<DomainName, 'custom'>;

/** Largest ID any sequence may have: Cassandra's `bigint` is a signed 64-bit integer. */
export const MAX_INT63 = 2n ** 63n - 1n;

/** Largest ID a `Sequence<number>` can hand out without losing precision. */
export const MAX_SAFE_ID = BigInt(Number.MAX_SAFE_INTEGER);

/** Largest block size: a block's offsets are JavaScript numbers, and claims should stay cheap. */
export const MAX_BLOCK_SIZE = 10_000_000;

export const DOMAIN_MAX: Readonly<Record<DomainPreset, bigint>> = Object.freeze({
  int32: 2n ** 31n - 1n,
  safe53: MAX_SAFE_ID,
  int63: MAX_INT63,
});

/** Of the interval adaptive blocks aim for between claims. */
export const CLAIM_INTERVAL_RANGE = Object.freeze({ min: 10, max: 3_600_000 });

/** A year. */
export const MAX_AUTONOMY_SECONDS = 365 * 24 * 3600;

/** A grant holds at least this many requested blocks, lest every claim wait for a SERIAL grant. */
export const GRANT_BLOCKS = 8n;

/** Options of a new sequence; the bigint fields also take safe integer numbers. */
export interface CreateSequenceOptions {
  /** Named bound for the IDs (`int63` needs `{ bigint: true }` handles). @default 'int32' */
  readonly domain?: DomainPreset | undefined;
  /** Smallest ID ever handed out; at least 0. @default 1 */
  readonly min?: bigint | number | undefined;
  /** Largest ID ever handed out (inclusive). @default the maximum of `domain` */
  readonly max?: bigint | number | undefined;
  /** First ID handed out, within `[min, max]`; IDs below it are never used. @default min */
  readonly start?: bigint | number | undefined;
  /**
   * IDs one grant gives a DC (docs/sizing.md).
   * @default 100_000 (at most the domain's size); 10_000_000 for adaptive blocks in a domain of
   * 2^48 IDs or more
   */
  readonly dcRangeSize?: bigint | number | undefined;
  /** IDs one process claims at a time; the least if blocks adapt. @default 1_000 or maxBlockSize */
  readonly blockSize?: number | undefined;
  /**
   * The most IDs one block may hold, and the largest count `take()` accepts; above `blockSize`,
   * blocks adapt to the draw rate.
   * @default 100_000 (at most `dcRangeSize`); 10_000_000 in a domain of 2^48 IDs or more;
   * `blockSize` when `blockSize` alone is given
   */
  readonly maxBlockSize?: number | undefined;
  /** How often a process with adaptive blocks should claim one: 10 ms to 1 h. @default 2_000 */
  readonly claimIntervalMs?: number | undefined;
  /** Seconds a DC cut off must keep serving at its current rate; at most a year. @default 0 */
  readonly autonomySeconds?: number | undefined;
  /**
   * The most IDs one grant may give a DC when grants follow its rate or its blocks adapt.
   * @default 1000 × dcRangeSize with an autonomy target; else 8 × maxBlockSize for adaptive blocks
   * and dcRangeSize for fixed ones; at most an eighth of the domain, never below dcRangeSize
   */
  readonly maxDcRangeSize?: bigint | number | undefined;
  /**
   * State partitions each DC's claims spread over, 1 to 256; only grows.
   * @default 16 with adaptive blocks (at most one per 1,000 DC ranges of the domain); 1 with
   * fixed blocks
   */
  readonly shards?: number | undefined;
  /** Share of a block or DC range used before the next is loaded; in (0, 1). @default 0.5 */
  readonly threshold?: number | undefined;
  /**
   * DCs granted their first DC range per shard as the sequence is created; at most 64 ranges.
   * @default with adaptive blocks, every DC the keyspace replicates to if their ranges fit 64
   * and an eighth of the IDs from `start`; otherwise none
   */
  readonly firstRanges?: readonly string[] | undefined;
  /** Return an existing sequence's settings unless its ID space differs. @default false */
  readonly ifNotExists?: boolean | undefined;
}

/** The changeable settings of an existing sequence; each left out stays unchanged. */
export type AlterSequenceOptions = Pick<CreateSequenceOptions, keyof SizeSettings>;
