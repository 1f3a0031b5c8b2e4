/**
 * The settings model: the bounds no setting may pass and the options of create and alter. Rules
 * in rules.ts, defaults in defaults.ts, merging in resolve.ts.
 */

import type { DomainName, SizeSettings } from '../store/port.js';

/** The named domains; `custom` is recorded instead when an explicit `max` is given. */
export type DomainPreset = Exclude<DomainName, 'custom'>;

/** Largest ID any sequence may have: Cassandra's `bigint` is a signed 64-bit integer. */
export const MAX_INT63 = 2n ** 63n - 1n;

/** Largest ID a `Sequence<number>` can hand out without losing precision. */
export const MAX_SAFE_ID = BigInt(Number.MAX_SAFE_INTEGER);

/** Largest block size: a block's offsets are JavaScript numbers, and claims should stay cheap. */
export const MAX_BLOCK_SIZE = 10_000_000;

/** The maximum ID of each named domain. Every domain starts at `min` (default 1). */
export const DOMAIN_MAX: Readonly<Record<DomainPreset, bigint>> = Object.freeze({
  int32: 2n ** 31n - 1n,
  safe53: MAX_SAFE_ID,
  int63: MAX_INT63,
});

/** Bounds of the interval adaptive blocks aim for between claims, in ms. */
export const CLAIM_INTERVAL_RANGE = Object.freeze({ min: 10, max: 3_600_000 });

/** The longest autonomy target: a year, in seconds. */
export const MAX_AUTONOMY_SECONDS = 365 * 24 * 3600;

/**
 * A grant holds at least this many of the blocks its requester asks for (within the stored
 * bounds): a range of one block would make every claim wait for a SERIAL grant.
 */
export const GRANT_BLOCKS = 8n;

/** Options of a new sequence. Numbers are accepted for the bigint fields if they are safe integers. */
export interface CreateSequenceOptions {
  /**
   * Named bound for the IDs: `int32` (max 2^31-1), `safe53` (2^53-1) or `int63` (2^63-1; open
   * the sequence with `{ bigint: true }`). An explicit `max` makes the domain `custom`.
   * @default 'int32'
   */
  readonly domain?: DomainPreset | undefined;
  /** Smallest ID ever handed out; at least 0. @default 1 */
  readonly min?: bigint | number | undefined;
  /** Largest ID ever handed out (inclusive). @default the maximum of `domain` */
  readonly max?: bigint | number | undefined;
  /** First ID handed out, within `[min, max]`; IDs below it are never used. @default min */
  readonly start?: bigint | number | undefined;
  /**
   * IDs one grant gives a DC (`R`): a DC holds between `R·(1 - threshold)` and `2R` IDs, so size
   * it for the longest partition the DC must survive at its peak rate.
   * @default 100_000, or the domain's size if smaller; 10_000_000 for adaptive blocks in a domain
   * of 2^48 IDs or more
   */
  readonly dcRangeSize?: bigint | number | undefined;
  /**
   * IDs one process claims from its DC at a time (`B`); the least when blocks are adaptive. At
   * most `dcRangeSize` and 10,000,000. Given without `maxBlockSize`, blocks have this fixed size.
   * @default 1_000, or `maxBlockSize` if smaller
   */
  readonly blockSize?: number | undefined;
  /**
   * The most IDs one block may hold, and the largest count `take()` accepts. Above `blockSize`,
   * each process sizes its blocks from its draw rate to claim about once every `claimIntervalMs`.
   * @default 100_000 (or `dcRangeSize` if smaller); 10_000_000 in a domain of 2^48 IDs or more;
   * `blockSize` when `blockSize` alone is given
   */
  readonly maxBlockSize?: number | undefined;
  /**
   * How often a process with adaptive blocks should claim one, in ms (10 ms to 1 h): each claim
   * is a LOCAL_SERIAL write on a partition the DC's processes share (docs/sizing.md).
   * @default 2_000
   */
  readonly claimIntervalMs?: number | undefined;
  /**
   * Seconds a DC cut off from the others must keep serving at its current rate: grants are sized
   * `rate × autonomySeconds / (1 - threshold)` within `[dcRangeSize, maxDcRangeSize]`. At most a
   * year.
   * @default 0 (grants of dcRangeSize)
   */
  readonly autonomySeconds?: number | undefined;
  /**
   * The most IDs one grant may give a DC when grants follow its rate or hold 8 adaptive blocks.
   * @default 1000 × dcRangeSize with an autonomy target; else 8 × maxBlockSize for adaptive blocks
   * and dcRangeSize for fixed ones; at most an eighth of the domain, never below dcRangeSize
   */
  readonly maxDcRangeSize?: bigint | number | undefined;
  /**
   * State partitions (shards) each DC's claims spread over, from 1 to 256; only grows. Each shard
   * holds DC ranges of its own (docs/design.md, "Past one DC-state partition: shards").
   * @default 16 with adaptive blocks, or one per 1,000 DC ranges the domain holds if fewer; 1
   * with fixed blocks
   */
  readonly shards?: number | undefined;
  /**
   * Share of a block or DC range used before the next one is loaded in the background; strictly
   * between 0 and 1.
   * @default 0.5
   */
  readonly threshold?: number | undefined;
  /**
   * DCs granted their first DC range (one per shard) in the write that creates the sequence
   * (docs/design.md, "A DC's first range, granted at creation"); `[]`: none. At most 64 ranges
   * (DCs × shards), fitting the domain from `start`, in DCs the keyspace replicates to.
   * @default with adaptive blocks, every DC the keyspace replicates to if their ranges fit 64
   * and an eighth of the IDs from `start`; otherwise none
   */
  readonly firstRanges?: readonly string[] | undefined;
  /**
   * If the sequence exists, return its stored settings instead of throwing
   * `SequenceExistsError`; it still throws if a given `domain`, `min`, `max` or `start` differs.
   * @default false
   */
  readonly ifNotExists?: boolean | undefined;
}

/**
 * The changeable settings of an existing sequence, as {@link CreateSequenceOptions} describes
 * them; each left out stays unchanged. On fixed blocks `blockSize` sets the new fixed size;
 * `shards` only grows.
 */
export type AlterSequenceOptions = Pick<CreateSequenceOptions, keyof SizeSettings>;
