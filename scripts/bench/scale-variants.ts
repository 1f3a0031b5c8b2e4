/** The block policies the scale phase compares, and the sequence options of each. */
import { SEQUENCE_DEFAULTS, type CreateSequenceOptions } from '../../src/index.js';

/** A block policy; an option left out takes the library's default. */
export interface ScaleVariant {
  readonly key: string;
  readonly label: string;
  /** Undefined: adaptive blocks. The rest apply to adaptive ones, `shards` and `firstRanges` aside. */
  readonly fixedBlockSize?: number;
  readonly autonomySeconds?: number;
  /** In a safe53 domain, with DC ranges as large (a block never spans two ranges). */
  readonly maxBlockSize?: number;
  readonly shards?: number;
  /** Every DC's first ranges granted with the sequence (true), or none (false). */
  readonly firstRanges?: boolean;
  readonly dcRangeSize?: number;
  readonly domain?: 'safe53';
}

/** Every policy the phase knows; `--scale-variants` picks. */
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

/** The options of `variant` but its first ranges; a fixed one pins its block and DC range sizes. */
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
