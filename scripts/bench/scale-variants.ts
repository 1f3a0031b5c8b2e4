/**
 * The block policies the scale phase compares, and the sequence options of each, written for
 * whichever adaptive options this build's `createSequence` knows.
 */
import {
  InvalidOptionError,
  SEQUENCE_DEFAULTS,
  type CreateSequenceOptions,
} from '../../src/index.js';
import { resolveSequenceSettings } from '../../src/settings/resolve.js';

/** The options of the adaptive block and DC-range policy, where this build has them. */
export const ADAPTIVE_OPTIONS = [
  'maxBlockSize',
  'claimIntervalMs',
  'maxDcRangeSize',
  'autonomySeconds',
  'shards',
] as const;
export type AdaptiveOption = (typeof ADAPTIVE_OPTIONS)[number];

/** A block policy of the comparison. */
export interface ScaleVariant {
  readonly key: string;
  readonly label: string;
  /** Undefined: adaptive blocks, every size option at its default. */
  readonly fixedBlockSize: number | undefined;
  /** Adaptive only: DC ranges sized to last this long (`autonomySeconds`); undefined: default. */
  readonly autonomySeconds: number | undefined;
  /**
   * Adaptive only: blocks up to this many IDs, in a 53-bit domain whose DC ranges are at least
   * as large (a block never spans two ranges); undefined: the defaults.
   */
  readonly maxBlockSize?: number | undefined;
  /** State partitions per DC (`shards`); undefined: the default (16 for adaptive blocks, else 1). */
  readonly shards?: number | undefined;
  /**
   * true: every DC's first ranges (one per shard) granted with the sequence (`firstRanges`), so
   * that the instances start without SERIAL; false: none, each DC asks when its instances start;
   * undefined: the default (every DC of the keyspace for adaptive blocks, none for fixed ones).
   */
  readonly firstRanges?: boolean | undefined;
  /** Adaptive only: the least DC range (`dcRangeSize`, also each first range); undefined: default. */
  readonly dcRangeSize?: number | undefined;
  /** Adaptive only: the domain, whose size picks the default sizes; undefined: the default. */
  readonly domain?: 'safe53' | undefined;
}

/** Every policy the phase knows; `--scale-variants` picks (default: {@link DEFAULT_SCALE_VARIANTS}). */
export const SCALE_VARIANTS: readonly ScaleVariant[] = Object.freeze([
  { key: 'fixed100', label: 'fixed 100', fixedBlockSize: 100, autonomySeconds: undefined },
  { key: 'fixed1000', label: 'fixed 1,000', fixedBlockSize: 1_000, autonomySeconds: undefined },
  {
    key: 'adaptiveOneShard',
    label: 'adaptive, 1 shard, no first ranges (the defaults before shards)',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 1,
    firstRanges: false,
  },
  {
    key: 'adaptive',
    label: 'adaptive (defaults: 16 shards per DC, first ranges at creation)',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
  },
  {
    key: 'adaptiveFirst800k',
    label: 'adaptive, 8 shards per DC, DC ranges from 800,000',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 8,
    dcRangeSize: 800_000,
  },
  {
    key: 'adaptiveSharded16First800k',
    label: 'adaptive, 16 shards per DC, DC ranges from 800,000',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 16,
    dcRangeSize: 800_000,
  },
  {
    key: 'adaptiveLarge',
    label: 'adaptive, blocks up to 10,000,000, DC ranges for 60 s',
    fixedBlockSize: undefined,
    autonomySeconds: 60,
    maxBlockSize: 10_000_000,
  },
  {
    key: 'adaptive53',
    label: 'adaptive, defaults of a safe53 domain (DC ranges and blocks up to 10,000,000)',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    domain: 'safe53',
  },
  {
    key: 'adaptive60',
    label: 'adaptive, DC ranges for 60 s',
    fixedBlockSize: undefined,
    autonomySeconds: 60,
  },
  {
    key: 'fixed100Sharded',
    label: 'fixed 100, 4 shards per DC',
    fixedBlockSize: 100,
    autonomySeconds: undefined,
    shards: 4,
  },
  {
    key: 'adaptiveSharded',
    label: 'adaptive, 8 shards per DC, no first ranges',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 8,
    firstRanges: false,
  },
  {
    key: 'adaptiveFirst',
    label: 'adaptive, 1 shard, first ranges at creation',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 1,
    firstRanges: true,
  },
  {
    key: 'adaptiveSharded4First',
    label: 'adaptive, 4 shards per DC, first ranges at creation',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 4,
    firstRanges: true,
  },
  {
    key: 'adaptiveShardedFirst',
    label: 'adaptive, 8 shards per DC, first ranges at creation (the defaults before 16 shards)',
    fixedBlockSize: undefined,
    autonomySeconds: undefined,
    shards: 8,
    firstRanges: true,
  },
  {
    key: 'adaptiveLargeShardedFirst',
    label:
      'adaptive, blocks up to 10,000,000, DC ranges for 60 s, 8 shards per DC, first ranges at creation',
    fixedBlockSize: undefined,
    autonomySeconds: 60,
    maxBlockSize: 10_000_000,
    shards: 8,
    firstRanges: true,
  },
  {
    key: 'adaptiveLargeSharded16First',
    label:
      'adaptive, blocks up to 10,000,000, DC ranges for 60 s, 16 shards per DC, first ranges at creation',
    fixedBlockSize: undefined,
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

/** Sequence options with the adaptive ones this build may not know yet. */
export type ScaleSequenceOptions = CreateSequenceOptions & Partial<Record<AdaptiveOption, number>>;

/**
 * The sequence options of `variant`, given the adaptive options this build accepts: a fixed
 * variant pins its block (`maxBlockSize = blockSize`) and its DC range (`maxDcRangeSize =
 * dcRangeSize`, `autonomySeconds: 0`) at the default DC range size; the adaptive one takes
 * every default but `autonomySeconds` where it sets one. Undefined when the variant cannot run
 * here (no adaptive sizing).
 */
export function scaleSequenceOptions(
  variant: ScaleVariant,
  supported: ReadonlySet<AdaptiveOption>,
): ScaleSequenceOptions | undefined {
  // Either kind of variant may name shards; a build without them cannot run it.
  if (variant.shards !== undefined && !supported.has('shards')) return undefined;
  const shards = variant.shards === undefined ? {} : { shards: variant.shards };
  const blockSize = variant.fixedBlockSize;
  if (blockSize === undefined) {
    if (!supported.has('maxBlockSize')) return undefined;
    if (variant.autonomySeconds !== undefined && !supported.has('autonomySeconds'))
      return undefined;
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
    ...(supported.has('maxBlockSize') ? { maxBlockSize: blockSize } : {}),
    ...(supported.has('maxDcRangeSize') ? { maxDcRangeSize: dcRangeSize } : {}),
    ...(supported.has('autonomySeconds') ? { autonomySeconds: 0 } : {}),
  };
}

/** Values `createSequence` accepts for each adaptive option whenever it knows the option. */
const PROBE: Readonly<Record<AdaptiveOption, number>> = {
  maxBlockSize: 10_000,
  claimIntervalMs: 10_000,
  maxDcRangeSize: 10_000_000,
  autonomySeconds: 0,
  shards: 1,
};

/**
 * The adaptive options this build's `createSequence` knows: an unknown key is refused with
 * "one of the options …" naming the key (options.ts, checkKeys); any other answer means known.
 */
export function supportedAdaptiveOptions(): Set<AdaptiveOption> {
  const supported = new Set<AdaptiveOption>();
  for (const option of ADAPTIVE_OPTIONS) {
    try {
      resolveSequenceSettings('probe', { [option]: PROBE[option] } as ScaleSequenceOptions);
      supported.add(option);
    } catch (error) {
      const unknown =
        error instanceof InvalidOptionError &&
        error.option === option &&
        error.allowed.startsWith('one of the options');
      if (!unknown) supported.add(option);
    }
  }
  return supported;
}
