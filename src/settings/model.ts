/**
 * The settings model: the bounds no setting may pass and the options of create and alter. Rules
 * in rules.ts, defaults in defaults.ts, merging in resolve.ts.
 */

import type { DomainName } from '../store/port.js';

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
   * Named bound for the IDs: `int32` (max 2^31-1), `safe53` (max 2^53-1, fits a JavaScript
   * number) or `int63` (max 2^63-1; open the sequence with `{ bigint: true }`). With an explicit
   * `max` the domain is `custom`, and `max` must not exceed this domain's maximum.
   * @default 'int32'
   */
  readonly domain?: DomainPreset | undefined;
  /**
   * Smallest ID ever handed out; at least 0.
   * @default 1
   */
  readonly min?: bigint | number | undefined;
  /**
   * Largest ID ever handed out (inclusive); giving it makes the domain `custom`.
   * @default the maximum of `domain`
   */
  readonly max?: bigint | number | undefined;
  /**
   * First ID handed out, within `[min, max]`; IDs below it are never used.
   * @default min
   */
  readonly start?: bigint | number | undefined;
  /**
   * IDs one grant gives a DC (the DC range, `R`). A DC holds between `R·(1 - threshold)` and
   * `2R` IDs, so size it for the longest partition the DC must survive at its peak rate.
   * @default 100_000, or the domain's size if smaller; 10_000_000 for adaptive blocks in a domain
   * of 2^48 IDs or more (`safe53`, `int63`)
   */
  readonly dcRangeSize?: bigint | number | undefined;
  /**
   * IDs one process claims from its DC at a time (`B`): the least, when blocks are adaptive. At
   * most `dcRangeSize` and 10,000,000. Given without `maxBlockSize`, blocks have this fixed size.
   * @default 1_000 (or `maxBlockSize`, or `dcRangeSize`, if smaller): what a process that draws
   * slowly claims, and loses if it crashes
   */
  readonly blockSize?: number | undefined;
  /**
   * The most IDs one block may hold. Above `blockSize`, each process sizes its next block from
   * its recent draw rate to claim about once every `claimIntervalMs`. Also the largest count
   * `take()` accepts. At most `dcRangeSize` and 10,000,000.
   * @default 100_000 (or `dcRangeSize` if smaller); 10_000_000 in a domain of 2^48 IDs or more;
   * `blockSize` when `blockSize` alone is given (fixed blocks)
   */
  readonly maxBlockSize?: number | undefined;
  /**
   * How often a process should claim a block when its blocks are adaptive, in ms: each claim is
   * a LOCAL_SERIAL compare-and-set on a state partition every process of the DC (shard) shares.
   * From 10 ms to 1 h (docs/sizing.md).
   * @default 2_000
   */
  readonly claimIntervalMs?: number | undefined;
  /**
   * Seconds a DC cut off from the others must keep serving at its current rate: each grant is
   * `rate × autonomySeconds / (1 - threshold)`, within `[dcRangeSize, maxDcRangeSize]` and at
   * most an eighth of the IDs not granted yet. At most a year.
   * @default 0 (grants of dcRangeSize, or of 8 blocks where adaptive blocks grew that large)
   */
  readonly autonomySeconds?: number | undefined;
  /**
   * The most IDs one grant may give a DC when grants follow the DC's rate, or hold several of
   * the adaptive blocks its processes ask for (a grant holds at least 8 of them).
   * @default with an autonomy target 1000 × dcRangeSize; without one, 8 × maxBlockSize for
   * adaptive blocks and dcRangeSize for fixed ones; at most an eighth of the domain, never
   * below dcRangeSize
   */
  readonly maxDcRangeSize?: bigint | number | undefined;
  /**
   * How many state partitions (shards) each DC's claims spread over, from 1 to 256; only grows.
   * With S shards a DC can make S times the claims (docs/design.md, "Past one DC-state
   * partition: shards"). Each shard holds DC ranges of its own. A handle opened again may start
   * below its last IDs.
   * @default with adaptive blocks 16, or one per 1,000 DC ranges the domain holds if that is fewer
   * (at least 1); with fixed blocks 1
   */
  readonly shards?: number | undefined;
  /**
   * Share of a block (process level) or DC range (DC level) used before the next one is loaded
   * in the background; strictly between 0 and 1.
   * @default 0.5
   */
  readonly threshold?: number | undefined;
  /**
   * DCs to grant their first DC range (one per shard) in the write that creates the sequence,
   * so processes start without a write at SERIAL (docs/design.md, "A DC's first range, granted
   * at creation"). A DC that never allocates keeps them unused. Refused if they do not fit the
   * domain from `start`, number more than 64 (DCs × shards), or name a DC the keyspace does not
   * replicate to. `[]`: none.
   * @default with adaptive blocks, every DC the keyspace replicates to (NetworkTopologyStrategy),
   * if their ranges number at most 64 and take at most an eighth of the IDs from `start`;
   * otherwise none: each DC asks for its first range when its first process starts
   */
  readonly firstRanges?: readonly string[] | undefined;
  /**
   * If a sequence of that name exists, return its stored settings (unchanged) instead of
   * throwing `SequenceExistsError`. Sizes may differ from those given; if `domain`, `min`, `max`
   * or `start` is given and differs, it still throws: IDs from another start than asked is how
   * IDs collide.
   * @default false
   */
  readonly ifNotExists?: boolean | undefined;
}

/** The changeable settings of an existing sequence, as given by a user. */
export interface AlterSequenceOptions {
  /** See {@link CreateSequenceOptions.dcRangeSize}. @default unchanged */
  readonly dcRangeSize?: bigint | number | undefined;
  /**
   * See {@link CreateSequenceOptions.blockSize}. On a sequence with fixed blocks, the new fixed
   * size. @default unchanged
   */
  readonly blockSize?: number | undefined;
  /** See {@link CreateSequenceOptions.threshold}. @default unchanged */
  readonly threshold?: number | undefined;
  /** See {@link CreateSequenceOptions.maxBlockSize}. @default unchanged */
  readonly maxBlockSize?: number | undefined;
  /** See {@link CreateSequenceOptions.claimIntervalMs}. @default unchanged */
  readonly claimIntervalMs?: number | undefined;
  /** See {@link CreateSequenceOptions.autonomySeconds}. @default unchanged */
  readonly autonomySeconds?: number | undefined;
  /** See {@link CreateSequenceOptions.maxDcRangeSize}. @default unchanged */
  readonly maxDcRangeSize?: bigint | number | undefined;
  /**
   * See {@link CreateSequenceOptions.shards}. At least the current number: processes that run
   * keep their shard, and a shard keeps its ranges. @default unchanged
   */
  readonly shards?: number | undefined;
}
