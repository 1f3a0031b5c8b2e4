/** The defaults of a new sequence, each computed from checked settings above it (rules.ts). */

import type { SequenceSettings } from '../store/port.js';
import { GRANT_BLOCKS, type CreateSequenceOptions } from './model.js';
import {
  blockCap,
  domainCap,
  domainSize,
  maxBigInt,
  minBigInt,
  rangeCap,
  type Field,
} from './rules.js';

/** Defaults of {@link CreateSequenceOptions}; `start` defaults to `min`, `max` to the domain's. */
export const SEQUENCE_DEFAULTS = Object.freeze({
  domain: 'int32',
  min: 1n,
  dcRangeSize: 100_000n,
  blockSize: 1_000,
  maxBlockSize: 100_000,
  threshold: 0.5,
  claimIntervalMs: 2_000,
  autonomySeconds: 0,
  /** Of fixed blocks, and the fewest of adaptive ones. */
  shards: 1,
  /** Of adaptive blocks where the domain holds `shardRoom` DC ranges per shard. */
  adaptiveShards: 16,
  shardRoom: 1_000n,
  /** maxDcRangeSize with an autonomy target, in DC ranges. */
  maxDcRanges: 1_000n,
  /** Adaptive blocks in a domain this large get the `large` sizes (docs/sizing.md). */
  largeDomain: 2n ** 48n,
  largeDcRangeSize: 10_000_000n,
  largeMaxBlockSize: 10_000_000,
} as const);

/** Each setting's default on a create: `s` holds the settings above it, `given` the options. */
export const DEFAULTS: {
  readonly [F in Exclude<Field, 'name'>]: (
    s: SequenceSettings,
    given: CreateSequenceOptions,
  ) => SequenceSettings[F];
} = Object.freeze({
  domain: (_, given) => (given.max === undefined ? SEQUENCE_DEFAULTS.domain : 'custom'),
  min: () => SEQUENCE_DEFAULTS.min,
  max: (s) => domainCap(s.domain),
  start: (s) => s.min,
  dcRangeSize: (s, given) => minBigInt(sizes(s, given).dcRangeSize, rangeCap(s)),
  maxBlockSize: (s, given) => Math.min(sizes(s, given).maxBlockSize, blockCap(s)),
  blockSize: (s) => Math.min(SEQUENCE_DEFAULTS.blockSize, s.maxBlockSize),
  threshold: () => SEQUENCE_DEFAULTS.threshold,
  claimIntervalMs: () => SEQUENCE_DEFAULTS.claimIntervalMs,
  autonomySeconds: () => SEQUENCE_DEFAULTS.autonomySeconds,
  maxDcRangeSize: defaultMaxDcRange,
  shards: defaultShards,
});

/** The sizes to cap to the domain; fixed blocks (`blockSize` given alone) keep the small ones. */
function sizes(s: SequenceSettings, given: CreateSequenceOptions) {
  const { largeDomain, largeDcRangeSize, largeMaxBlockSize, dcRangeSize, maxBlockSize } =
    SEQUENCE_DEFAULTS;
  const fixed = given.blockSize !== undefined && given.maxBlockSize === undefined;
  return !fixed && domainSize(s) >= largeDomain
    ? { dcRangeSize: largeDcRangeSize, maxBlockSize: largeMaxBlockSize }
    : { dcRangeSize, maxBlockSize };
}

/** Also on an alter that sets an autonomy target. */
export function defaultMaxDcRange(s: SequenceSettings): bigint {
  const wanted =
    s.autonomySeconds > 0
      ? s.dcRangeSize * SEQUENCE_DEFAULTS.maxDcRanges
      : s.maxBlockSize > s.blockSize
        ? BigInt(s.maxBlockSize) * GRANT_BLOCKS
        : s.dcRangeSize;
  return maxBigInt(minBigInt(wanted, domainSize(s) / 8n), s.dcRangeSize);
}

function defaultShards(s: SequenceSettings): number {
  const { adaptiveShards, shardRoom, shards } = SEQUENCE_DEFAULTS;
  if (s.maxBlockSize === s.blockSize) return shards;
  const room = domainSize(s) / (s.dcRangeSize * shardRoom);
  return Math.max(shards, Math.min(adaptiveShards, Number(room)));
}
