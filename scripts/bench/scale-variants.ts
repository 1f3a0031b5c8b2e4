/** The block policies the scale phase compares, and the sequence options of each. */
import { SEQUENCE_DEFAULTS, type CreateSequenceOptions } from '../../src/index.js';

/** A block policy of the comparison; an option left out takes the library's default. */
export interface ScaleVariant {
  readonly key: string;
  readonly label: string;
  /** Fixed blocks of this size; undefined: adaptive blocks. */
  readonly fixedBlockSize?: number;
  /** Adaptive only: DC ranges sized to last this long (`autonomySeconds`). */
  readonly autonomySeconds?: number;
  /**
   * Adaptive only: blocks up to this many IDs, in a 53-bit domain whose DC ranges are at least
   * as large (a block never spans two ranges).
   */
  readonly maxBlockSize?: number;
  /** State partitions per DC (`shards`). */
  readonly shards?: number;
  /** Every DC's first ranges granted with the sequence (true), or none (false). */
  readonly firstRanges?: boolean;
  /** Adaptive only: the least DC range (`dcRangeSize`, also each first range). */
  readonly dcRangeSize?: number;
  /** Adaptive only: the domain, whose size picks the default sizes. */
  readonly domain?: 'safe53';
}

/** Every policy the phase knows; `--scale-variants` picks (default: {@link DEFAULT_SCALE_VARIANTS}). */
export const SCALE_VARIANTS: readonly ScaleVariant[] = Object.freeze([
  { key: 'fixed100', label: 'fixed 100', fixedBlockSize: 100 },
  { key: 'fixed1000', label: 'fixed 1,000', fixedBlockSize: 1_000 },
  {
    key: 'adaptiveOneShard',
    label: 'adaptive, 1 shard, no first ranges (the defaults before shards)',
    shards: 1,
    firstRanges: false,
  },
  { key: 'adaptive', label: 'adaptive (defaults: 16 shards per DC, first ranges at creation)' },
  {
    key: 'adaptiveFirst800k',
    label: 'adaptive, 8 shards per DC, DC ranges from 800,000',
    shards: 8,
    dcRangeSize: 800_000,
  },
  {
    key: 'adaptiveSharded16First800k',
    label: 'adaptive, 16 shards per DC, DC ranges from 800,000',
    shards: 16,
    dcRangeSize: 800_000,
  },
  {
    key: 'adaptiveLarge',
    label: 'adaptive, blocks up to 10,000,000, DC ranges for 60 s',
    autonomySeconds: 60,
    maxBlockSize: 10_000_000,
  },
  {
    key: 'adaptive53',
    label: 'adaptive, defaults of a safe53 domain (DC ranges and blocks up to 10,000,000)',
    domain: 'safe53',
  },
  { key: 'adaptive60', label: 'adaptive, DC ranges for 60 s', autonomySeconds: 60 },
  {
    key: 'fixed100Sharded',
    label: 'fixed 100, 4 shards per DC',
    fixedBlockSize: 100,
    shards: 4,
  },
  {
    key: 'adaptiveSharded',
    label: 'adaptive, 8 shards per DC, no first ranges',
    shards: 8,
    firstRanges: false,
  },
  {
    key: 'adaptiveFirst',
    label: 'adaptive, 1 shard, first ranges at creation',
    shards: 1,
    firstRanges: true,
  },
  {
    key: 'adaptiveSharded4First',
    label: 'adaptive, 4 shards per DC, first ranges at creation',
    shards: 4,
    firstRanges: true,
  },
  {
    key: 'adaptiveShardedFirst',
    label: 'adaptive, 8 shards per DC, first ranges at creation (the defaults before 16 shards)',
    shards: 8,
    firstRanges: true,
  },
  {
    key: 'adaptiveLargeShardedFirst',
    label:
      'adaptive, blocks up to 10,000,000, DC ranges for 60 s, 8 shards per DC, first ranges at creation',
    autonomySeconds: 60,
    maxBlockSize: 10_000_000,
    shards: 8,
    firstRanges: true,
  },
  {
    key: 'adaptiveLargeSharded16First',
    label:
      'adaptive, blocks up to 10,000,000, DC ranges for 60 s, 16 shards per DC, first ranges at creation',
    autonomySeconds: 60,
    maxBlockSize: 10_000_000,
    shards: 16,
    firstRanges: true,
  },
]);

export const DEFAULT_SCALE_VARIANTS: readonly string[] = Object.freeze([
  'fixed100',
  'fixed1000',
  'adaptiveOneShard',
  'adaptiveShardedFirst',
  'adaptive',
  'adaptive53',
]);

/**
 * The sequence options of `variant` (its first ranges aside, which name the cluster's DCs): a
 * fixed variant pins its block (`maxBlockSize = blockSize`) and its DC range (`maxDcRangeSize =
 * dcRangeSize`, `autonomySeconds: 0`) at the default DC range size; an adaptive one takes every
 * default it does not set.
 */
export function scaleSequenceOptions(variant: ScaleVariant): CreateSequenceOptions {
  const shards = variant.shards === undefined ? {} : { shards: variant.shards };
  const blockSize = variant.fixedBlockSize;
  if (blockSize === undefined) {
    return {
      ...shards,
      ...(variant.autonomySeconds === undefined
        ? {}
        : { autonomySeconds: variant.autonomySeconds }),
      ...(variant.dcRangeSize === undefined ? {} : { dcRangeSize: variant.dcRangeSize }),
      ...(variant.domain === undefined ? {} : { domain: variant.domain }),
      ...(variant.maxBlockSize === undefined
        ? {}
        : {
            domain: 'safe53' as const,
            dcRangeSize: variant.maxBlockSize,
            maxBlockSize: variant.maxBlockSize,
          }),
    };
  }
  const dcRangeSize = Number(SEQUENCE_DEFAULTS.dcRangeSize);
  return {
    ...shards,
    blockSize,
    dcRangeSize,
    maxBlockSize: blockSize,
    maxDcRangeSize: dcRangeSize,
    autonomySeconds: 0,
  };
}
