/**
 * Sequence options: presets, defaults and the one place they are validated.
 *
 * User input is checked by {@link resolveSequenceSettings} (create), {@link checkChanges} and
 * {@link validateChanges} (alter) and throws {@link InvalidOptionError}; settings read back from
 * the store are checked by {@link validateStoredSettings} and throw {@link InvariantError},
 * because nothing may be allocated from rows that break the rules.
 */

import { GRANT_BLOCKS } from './allocator/sizing.js';
import { InvalidNameError, InvalidOptionError, InvariantError } from './errors.js';
import { granteeName, isValidName, MAX_SHARDS, type NameKind } from './names.js';
import type {
  DomainName,
  FirstGrant,
  SequenceChanges,
  SequenceSettings,
  SizeSettings,
} from './store/port.js';

/** The named domains; `custom` is recorded instead when an explicit `max` is given. */
export type DomainPreset = Exclude<DomainName, 'custom'>;

/** Largest ID any sequence may have: Cassandra's `bigint` is a signed 64-bit integer. */
export const MAX_INT63 = 2n ** 63n - 1n;

/**
 * The most IDs one DC range may hold: the domain's size, and no more than a CQL bigint holds
 * (2^63 - 1; the domain [0, 2^63 - 1] holds one more, which the driver would store as -2^63).
 */
function rangeSizeCap(min: bigint, max: bigint): bigint {
  return minBigInt(max - min + 1n, MAX_INT63);
}

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

/** Options of a new sequence. Numbers are accepted for the bigint fields if they are safe integers. */
export interface CreateSequenceOptions {
  /**
   * Named bound for the IDs: `int32` (max 2^31-1, fits a signed 32-bit column), `safe53`
   * (max 2^53-1, fits a JavaScript number) or `int63` (max 2^63-1; open the sequence with
   * `{ bigint: true }`). With an explicit `max` the stored domain is `custom`, and `max` must not
   * exceed this domain's maximum.
   * @default 'int32' (the IDENTITY columns this replaces are usually 32-bit)
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
   * most `dcRangeSize` and 10,000,000. Given without `maxBlockSize`, blocks have this fixed size
   * (as before blocks could adapt).
   * @default 1_000 (or `maxBlockSize`, or `dcRangeSize`, if smaller): what a process that draws
   * slowly claims, and loses if it crashes
   */
  readonly blockSize?: number | undefined;
  /**
   * The most IDs one block may hold. Above `blockSize`, each process sizes its next block from
   * its own recent draw rate so that it claims about once every `claimIntervalMs`, and a burst
   * larger than the IDs it holds gets a block that covers it at once. Also the largest count
   * `take()` accepts. At most `dcRangeSize` and 10,000,000.
   * @default 100_000 (or `dcRangeSize` if smaller; a block is cut from one DC range): enough for
   * 50,000 IDs/s per process at the default claim interval; 10_000_000 in a domain of 2^48 IDs or
   * more (`safe53`, `int63`), where a tight loop needs blocks that outlast a claim; unless
   * `blockSize` alone is given: then `blockSize` (fixed blocks)
   */
  readonly maxBlockSize?: number | undefined;
  /**
   * How often a process should claim a block when its blocks are adaptive, in ms: each claim is
   * one LOCAL_SERIAL compare-and-set on the DC's one state partition, which every process of the
   * DC shares. From 10 ms to 1 h.
   * @default 2_000: 50 processes of a DC then make 25 claims/s in all (the benchmark's two shared
   * cores completed at most 24 claims/s on one partition, a floor for real hardware), and a
   * block still outlasts a claim's round trip many times over
   */
  readonly claimIntervalMs?: number | undefined;
  /**
   * Seconds a DC cut off from the other DCs must keep serving at its current rate. Each grant is
   * then sized from the DC's measured rate so that what the DC holds when it asks for a range
   * lasts that long: `rate × autonomySeconds / (1 - threshold)`, within `[dcRangeSize,
   * maxDcRangeSize]` and at most an eighth of the IDs not granted yet. 0: grants of
   * `dcRangeSize`, or of 8 blocks where adaptive blocks grew that large. At most a year.
   * @default 0 (no target: grants of dcRangeSize, as before)
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
   * How many state partitions (shards) each DC's claims spread over, from 1 to 256. Every claim
   * is a LOCAL_SERIAL compare-and-set on its shard's partition, and one partition completes only
   * so many of them a second (docs/design.md, "Past one DC-state partition: shards"): with S
   * shards a DC can make S times the claims. Each process claims from one shard, picked at random
   * when it opens the sequence, so its IDs still only grow. Each shard holds DC ranges of its own
   * (S grants at SERIAL where one DC made one) and sizes its grants from its own rate. Only grows.
   * With shards, a handle opened again (or a restarted process) may start below its last IDs.
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
   * DCs to grant their first DC range (one per shard, `dcRangeSize` IDs each) in the write that
   * creates the sequence. Processes then start without a write at SERIAL: a DC with no state
   * installs its grant 1 after a plain LOCAL_QUORUM read of it (docs/design.md, "A DC's first
   * range, granted at creation"). Every DC that will allocate, as a rule: the processes of a
   * fleet that start at once then never crowd the one grants partition all DCs share. A DC
   * listed here that never allocates keeps its first ranges unused. Refused if they do not fit
   * the domain from `start`, number more than 64 (DCs × shards), or name a DC the keyspace does
   * not replicate to (NetworkTopologyStrategy). `[]`: none.
   * @default with adaptive blocks, every DC the keyspace replicates to (NetworkTopologyStrategy),
   * if their ranges number at most 64 and take at most an eighth of the IDs from `start`;
   * otherwise none: each DC asks for its first range when its first process starts
   */
  readonly firstRanges?: readonly string[] | undefined;
  /**
   * If a sequence of that name exists, return its stored settings instead of throwing
   * `SequenceExistsError`; its settings are left as they are. Sizes may differ from those given
   * (`alterSequence` changes them); the IDs may not: if `domain`, `min`, `max` or `start` is
   * given and the existing sequence's differs, it still throws `SequenceExistsError`, naming the
   * differences, since handing out IDs from another start than asked (e.g. below the highest key
   * a table already holds) is how IDs collide.
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
  /** Shards of fixed blocks, and the fewest of adaptive ones. */
  shards: 1,
  /**
   * Shards of adaptive blocks where the domain has room (`shardRoom`). At 64 processes per DC in
   * the benchmark's scale phase, a claim lost fewer races with fewer processes per partition:
   * in tight loops 14 and 16 calls threw with 16 shards against 45 and 80 with 8; at 10,000
   * IDs/s per DC none threw with either, and 4 shards let 55 throw (docs/sizing.md, "The
   * defaults: 16 shards and first ranges").
   */
  adaptiveShards: 16,
  /** Adaptive blocks get at most one shard per this many DC ranges the domain holds. */
  shardRoom: 1_000n,
  /** maxDcRangeSize defaults to this many DC ranges (at most an eighth of the domain). */
  maxDcRanges: 1_000n,
  /**
   * Adaptive blocks in a domain of at least this many IDs (`safe53`, `int63`, a `custom` one as
   * large) get `largeDcRangeSize` and `largeMaxBlockSize` by default. The sizes above are for
   * 32-bit domains, where a crash may leave two largest blocks unused and a fast process spends
   * the domain in minutes anyway; in 2^48 IDs a fleet's gaps and first ranges are too few to
   * count, and a tight loop needs blocks that outlast a claim's round trip (bench/REPORT.md).
   */
  largeDomain: 2n ** 48n,
  largeDcRangeSize: 10_000_000n,
  largeMaxBlockSize: 10_000_000,
} as const satisfies {
  domain: DomainPreset;
  min: bigint;
  dcRangeSize: bigint;
  blockSize: number;
  maxBlockSize: number;
  threshold: number;
  claimIntervalMs: number;
  autonomySeconds: number;
  shards: number;
  adaptiveShards: number;
  shardRoom: bigint;
  maxDcRanges: bigint;
  largeDomain: bigint;
  largeDcRangeSize: bigint;
  largeMaxBlockSize: number;
});

/** Bounds of the interval adaptive blocks aim for between claims, in ms. */
export const CLAIM_INTERVAL_RANGE = Object.freeze({ min: 10, max: 3_600_000 });
/** The longest autonomy target: a year, in seconds. */
export const MAX_AUTONOMY_SECONDS = 365 * 24 * 3600;

const SIZE_KEYS = everyKeyOf<SizeSettings>()([
  'dcRangeSize',
  'blockSize',
  'threshold',
  'maxBlockSize',
  'claimIntervalMs',
  'autonomySeconds',
  'maxDcRangeSize',
  'shards',
]);
/** The size settings of `settings`, the only ones `alter` can change. */
export function pickSizes(settings: SizeSettings): SizeSettings {
  return Object.fromEntries(
    SIZE_KEYS.map((key) => [key, settings[key]]),
  ) as unknown as SizeSettings;
}

const CREATE_KEYS = everyKeyOf<CreateSequenceOptions>()([
  'ifNotExists',
  'firstRanges',
  'domain',
  'min',
  'max',
  'start',
  ...SIZE_KEYS,
]);
const ALTER_KEYS = everyKeyOf<AlterSequenceOptions>()(SIZE_KEYS);

/**
 * Checks a name against the rule for its kind (names.ts).
 * @throws {InvalidNameError} if the name breaks the rule.
 */
export function validateName(kind: NameKind, name: unknown): asserts name is string {
  if (!isValidName(kind, name)) throw new InvalidNameError(kind, name);
}

/**
 * Checks a sequence name: 1 to 48 letters, digits or `_`, starting with a letter (it becomes a
 * Cassandra partition key and a CLI argument, so it stays plain).
 * @throws {InvalidNameError} if the name breaks the rule.
 */
export function validateSequenceName(name: unknown): asserts name is string {
  validateName('sequence', name);
}

/**
 * Validates `options` once and fills in the defaults.
 * @throws {InvalidNameError} if `name` breaks the naming rule.
 * @throws {InvalidOptionError} naming the first option that is unknown or out of range.
 */
export function resolveSequenceSettings(
  name: string,
  options: CreateSequenceOptions = {},
): SequenceSettings {
  validateSequenceName(name);
  checkKeys(options, CREATE_KEYS);
  checkBooleanOption('ifNotExists', options.ifNotExists);

  const presetGiven = options.domain !== undefined;
  const preset = options.domain ?? SEQUENCE_DEFAULTS.domain;
  if (!Object.hasOwn(DOMAIN_MAX, preset)) {
    throw new InvalidOptionError('domain', options.domain, 'one of "int32", "safe53", "int63"');
  }
  const presetMax = DOMAIN_MAX[preset];
  const maxCap = presetGiven ? presetMax : MAX_INT63;

  const min =
    options.min === undefined
      ? SEQUENCE_DEFAULTS.min
      : integerOption('min', options.min, 0n, options.max === undefined ? presetMax : maxCap);
  const max =
    options.max === undefined ? presetMax : integerOption('max', options.max, min, maxCap);
  const start = options.start === undefined ? min : integerOption('start', options.start, min, max);
  const domainSize = max - min + 1n;
  const rangeCap = rangeSizeCap(min, max);
  // blockSize alone means fixed blocks, which keep the sizes of small domains; neither means
  // adaptive blocks within the defaults of the domain's size.
  const fixedAlone = options.blockSize !== undefined && options.maxBlockSize === undefined;
  const large = domainSize >= SEQUENCE_DEFAULTS.largeDomain && !fixedAlone;
  const dcRangeSize =
    options.dcRangeSize === undefined
      ? minBigInt(
          large ? SEQUENCE_DEFAULTS.largeDcRangeSize : SEQUENCE_DEFAULTS.dcRangeSize,
          rangeCap,
        )
      : integerOption('dcRangeSize', options.dcRangeSize, 1n, rangeCap);
  const cap = blockSizeCap(dcRangeSize);
  const maxBlockSize =
    options.maxBlockSize !== undefined
      ? intOption(
          'maxBlockSize',
          options.maxBlockSize,
          1,
          cap,
          `at most dcRangeSize and ${MAX_BLOCK_SIZE}`,
        )
      : fixedAlone
        ? intOption(
            'blockSize',
            options.blockSize,
            1,
            cap,
            `at most dcRangeSize and ${MAX_BLOCK_SIZE}`,
          )
        : Math.min(
            large ? SEQUENCE_DEFAULTS.largeMaxBlockSize : SEQUENCE_DEFAULTS.maxBlockSize,
            cap,
          );
  const blockSize =
    options.blockSize === undefined
      ? Math.min(SEQUENCE_DEFAULTS.blockSize, maxBlockSize)
      : intOption(
          'blockSize',
          options.blockSize,
          1,
          maxBlockSize,
          'at most maxBlockSize, dcRangeSize and 10000000',
        );
  const threshold =
    options.threshold === undefined
      ? SEQUENCE_DEFAULTS.threshold
      : thresholdOption(options.threshold);
  const claimIntervalMs =
    options.claimIntervalMs === undefined
      ? SEQUENCE_DEFAULTS.claimIntervalMs
      : claimIntervalOption(options.claimIntervalMs);
  const autonomySeconds =
    options.autonomySeconds === undefined
      ? SEQUENCE_DEFAULTS.autonomySeconds
      : autonomyOption(options.autonomySeconds);
  const maxDcRangeSize =
    options.maxDcRangeSize !== undefined
      ? integerOption('maxDcRangeSize', options.maxDcRangeSize, dcRangeSize, rangeCap)
      : defaultMaxDcRange(dcRangeSize, domainSize, autonomySeconds, blockSize, maxBlockSize);
  const shards =
    options.shards === undefined
      ? defaultShards(domainSize, dcRangeSize, blockSize, maxBlockSize)
      : shardsOption(options.shards, 1);

  return Object.freeze({
    name,
    domain: options.max === undefined ? preset : 'custom',
    min,
    max,
    start,
    dcRangeSize,
    blockSize,
    threshold,
    maxBlockSize,
    claimIntervalMs,
    autonomySeconds,
    maxDcRangeSize,
    shards,
  });
}

/**
 * Checks each change of `alter` on its own, against the bounds no stored setting can widen
 * (`threshold` 2, `blockSize` 0, `shards` 257), so that a value that can never be valid is
 * refused before any read: with Cassandra unreachable it is still named as bad input. What a
 * value must also meet given the stored settings (`blockSize` at most `maxBlockSize`, `shards` at
 * least the current number) is {@link validateChanges}'s to check.
 * @throws {InvalidOptionError} naming the first option that is unknown or out of range, or
 * `changes` if it sets nothing.
 */
export function checkChanges(changes: AlterSequenceOptions): void {
  checkKeys(changes, ALTER_KEYS);
  if (ALTER_KEYS.every((key) => (changes as Record<string, unknown>)[key] === undefined)) {
    throw new InvalidOptionError('changes', 'nothing', `at least one of ${ALTER_KEYS.join(', ')}`);
  }
  const { dcRangeSize, blockSize, maxBlockSize, maxDcRangeSize } = changes;
  if (dcRangeSize !== undefined) integerOption('dcRangeSize', dcRangeSize, 1n, MAX_INT63);
  if (blockSize !== undefined) {
    const why = 'at most dcRangeSize too, and maxBlockSize if blocks adapt';
    intOption('blockSize', blockSize, 1, MAX_BLOCK_SIZE, why);
  }
  if (maxBlockSize !== undefined) {
    intOption('maxBlockSize', maxBlockSize, 1, MAX_BLOCK_SIZE, 'at most dcRangeSize too');
  }
  if (changes.threshold !== undefined) thresholdOption(changes.threshold);
  if (changes.claimIntervalMs !== undefined) claimIntervalOption(changes.claimIntervalMs);
  if (changes.autonomySeconds !== undefined) autonomyOption(changes.autonomySeconds);
  if (maxDcRangeSize !== undefined) integerOption('maxDcRangeSize', maxDcRangeSize, 1n, MAX_INT63);
  if (changes.shards !== undefined) shardsOption(changes.shards, 1);
}

/**
 * Validates the changes of `alter` against the sequence's current settings and normalises them
 * (bigint DC range sizes; the keys given, and the ones that change with them: on fixed blocks a
 * new `blockSize` is the new `maxBlockSize` too, on fixed DC ranges a new `dcRangeSize` the new
 * `maxDcRangeSize`).
 * @throws {InvalidOptionError} naming the first option that is unknown, unchangeable or out of
 * range, or `changes` if nothing would change.
 */
export function validateChanges(
  changes: AlterSequenceOptions,
  current: SequenceSettings,
): SequenceChanges {
  checkChanges(changes);
  const given = ALTER_KEYS.filter((key) => (changes as Record<string, unknown>)[key] !== undefined);
  const domainSize = current.max - current.min + 1n;
  const rangeCap = rangeSizeCap(current.min, current.max);
  const dcRangeSize =
    changes.dcRangeSize === undefined
      ? current.dcRangeSize
      : integerOption('dcRangeSize', changes.dcRangeSize, 1n, rangeCap);
  const cap = blockSizeCap(dcRangeSize);
  const fixed = current.maxBlockSize === current.blockSize;
  // A fixed-size sequence stays fixed when only its block size changes.
  const maxBlockSize =
    changes.maxBlockSize !== undefined
      ? intOption(
          'maxBlockSize',
          changes.maxBlockSize,
          1,
          cap,
          `at most dcRangeSize (${dcRangeSize}) and ${MAX_BLOCK_SIZE}`,
        )
      : fixed && changes.blockSize !== undefined
        ? intOption(
            'blockSize',
            changes.blockSize,
            1,
            cap,
            `at most dcRangeSize (${dcRangeSize}) and ${MAX_BLOCK_SIZE}`,
          )
        : current.maxBlockSize;
  if (maxBlockSize > cap) {
    throw new InvalidOptionError(
      'dcRangeSize',
      changes.dcRangeSize,
      `at least the largest block (maxBlockSize ${maxBlockSize}), or lower maxBlockSize too`,
    );
  }
  const blockSize =
    changes.blockSize === undefined
      ? Math.min(current.blockSize, maxBlockSize)
      : intOption(
          'blockSize',
          changes.blockSize,
          1,
          maxBlockSize,
          `at most maxBlockSize (${maxBlockSize})`,
        );
  const threshold =
    changes.threshold === undefined ? current.threshold : thresholdOption(changes.threshold);
  const claimIntervalMs =
    changes.claimIntervalMs === undefined
      ? current.claimIntervalMs
      : claimIntervalOption(changes.claimIntervalMs);
  const autonomySeconds =
    changes.autonomySeconds === undefined
      ? current.autonomySeconds
      : autonomyOption(changes.autonomySeconds);
  const maxDcRangeSize =
    changes.maxDcRangeSize !== undefined
      ? integerOption('maxDcRangeSize', changes.maxDcRangeSize, dcRangeSize, rangeCap)
      : current.autonomySeconds === 0 && autonomySeconds > 0
        ? defaultMaxDcRange(dcRangeSize, domainSize, autonomySeconds, blockSize, maxBlockSize)
        : current.maxDcRangeSize === current.dcRangeSize
          ? dcRangeSize // fixed DC ranges stay fixed
          : maxBigInt(current.maxDcRangeSize, dcRangeSize);
  const shards =
    changes.shards === undefined ? current.shards : shardsOption(changes.shards, current.shards);
  const next: SizeSettings = {
    dcRangeSize,
    blockSize,
    threshold,
    maxBlockSize,
    claimIntervalMs,
    autonomySeconds,
    maxDcRangeSize,
    shards,
  };
  // Only what changes: a key not given may still change with one that is (fixed sizes move together).
  const changed = SIZE_KEYS.filter((key) => given.includes(key) || next[key] !== current[key]);
  return Object.freeze(Object.fromEntries(changed.map((key) => [key, next[key]])));
}

/**
 * Checks settings read back from the store: every rule {@link resolveSequenceSettings} enforces.
 * @throws {InvariantError} if they are inconsistent; nothing may be allocated from them.
 */
export function validateStoredSettings(s: SequenceSettings): void {
  const broken = (detail: string): never => {
    throw new InvariantError(s.name, `settings: ${detail}`);
  };
  if (!isValidName('sequence', s.name))
    broken(`name ${JSON.stringify(s.name)} breaks the naming rule`);
  if (s.domain !== 'custom' && !Object.hasOwn(DOMAIN_MAX, s.domain)) {
    broken(`unknown domain ${JSON.stringify(s.domain)}`);
  }
  if (s.min < 0n || s.min > s.max) broken(`min ${s.min} is not within [0, max ${s.max}]`);
  const domainCap = s.domain === 'custom' ? MAX_INT63 : DOMAIN_MAX[s.domain];
  if (s.max > domainCap) broken(`max ${s.max} exceeds ${domainCap} (domain ${s.domain})`);
  if (s.start < s.min || s.start > s.max) {
    broken(`start ${s.start} is not within [${s.min}, ${s.max}]`);
  }
  const rangeCap = rangeSizeCap(s.min, s.max);
  if (s.dcRangeSize < 1n || s.dcRangeSize > rangeCap) {
    broken(`dcRangeSize ${s.dcRangeSize} is not within [1, ${rangeCap}]`);
  }
  const cap = blockSizeCap(s.dcRangeSize);
  if (!Number.isSafeInteger(s.blockSize) || s.blockSize < 1 || s.blockSize > cap) {
    broken(`blockSize ${s.blockSize} is not an integer within [1, ${cap}]`);
  }
  if (
    !Number.isSafeInteger(s.maxBlockSize) ||
    s.maxBlockSize < s.blockSize ||
    s.maxBlockSize > cap
  ) {
    broken(
      `maxBlockSize ${s.maxBlockSize} is not an integer within [blockSize ${s.blockSize}, ${cap}]`,
    );
  }
  if (!(s.threshold > 0 && s.threshold < 1)) {
    broken(`threshold ${s.threshold} is not strictly between 0 and 1`);
  }
  const { min: low, max: high } = CLAIM_INTERVAL_RANGE;
  if (
    !Number.isSafeInteger(s.claimIntervalMs) ||
    s.claimIntervalMs < low ||
    s.claimIntervalMs > high
  ) {
    broken(`claimIntervalMs ${s.claimIntervalMs} is not an integer within [${low}, ${high}]`);
  }
  if (
    !Number.isSafeInteger(s.autonomySeconds) ||
    s.autonomySeconds < 0 ||
    s.autonomySeconds > MAX_AUTONOMY_SECONDS
  ) {
    broken(
      `autonomySeconds ${s.autonomySeconds} is not an integer within [0, ${MAX_AUTONOMY_SECONDS}]`,
    );
  }
  if (s.maxDcRangeSize < s.dcRangeSize || s.maxDcRangeSize > rangeCap) {
    broken(
      `maxDcRangeSize ${s.maxDcRangeSize} is not within [dcRangeSize ${s.dcRangeSize}, ${rangeCap}]`,
    );
  }
  if (!Number.isSafeInteger(s.shards) || s.shards < 1 || s.shards > MAX_SHARDS) {
    broken(`shards ${s.shards} is not an integer within [1, ${MAX_SHARDS}]`);
  }
}

/**
 * The most first grants (DCs × shards) one create may write: they are rows of one batch, and
 * Cassandra refuses a batch above `batch_size_fail_threshold` (50 KiB by default).
 */
export const MAX_FIRST_GRANTS = 64;

/**
 * Grant 1 of every shard of every DC in `dcs`, `dcRangeSize` IDs each and contiguous from
 * `start`, in the order given (shards in order within a DC).
 * @throws {InvalidOptionError} for a DC name that is not one, a DC named twice, more than
 *   {@link MAX_FIRST_GRANTS} ranges, or ranges that do not fit the domain from `start`.
 */
export function resolveFirstGrants(
  settings: SequenceSettings,
  dcs: readonly string[] | undefined,
): FirstGrant[] {
  if (dcs === undefined) return [];
  const allowed = 'a list of distinct datacenter names (letters, digits, "_", "-", ".")';
  if (!Array.isArray(dcs)) throw new InvalidOptionError('firstRanges', dcs, allowed);
  const list: readonly unknown[] = dcs;
  if (list.some((dc) => !isValidName('datacenter', dc)) || new Set(list).size !== list.length) {
    throw new InvalidOptionError('firstRanges', dcs, allowed);
  }
  const count = dcs.length * settings.shards;
  if (count > MAX_FIRST_GRANTS) {
    throw new InvalidOptionError(
      'firstRanges',
      dcs,
      `DCs whose first ranges number at most ${MAX_FIRST_GRANTS} (DCs × shards; they are one batch): ${dcs.length} DC(s) × ${settings.shards} shard(s) = ${count}; create with fewer shards and raise them with alter (later shards ask for their first range when they start)`,
    );
  }
  const total = BigInt(count) * settings.dcRangeSize;
  const room = settings.max - settings.start + 1n;
  if (total > room) {
    throw new InvalidOptionError(
      'firstRanges',
      dcs,
      `DCs whose first ranges fit the domain: ${dcs.length} DC(s) × ${settings.shards} shard(s) × dcRangeSize ${settings.dcRangeSize} = ${total} IDs, but only ${room} lie from start ${settings.start} to max ${settings.max}; list fewer DCs or lower dcRangeSize`,
    );
  }
  const grants: FirstGrant[] = [];
  let next = settings.start;
  for (const dc of dcs) {
    for (let shard = 0; shard < settings.shards; shard++) {
      const grant = { number: 1, min: next, max: next + settings.dcRangeSize - 1n };
      grants.push({ grantee: granteeName(dc, shard), grant });
      next = grant.max + 1n;
    }
  }
  return grants;
}

/**
 * Refuses first ranges for a DC the keyspace does not replicate to, when its replication is
 * known (NetworkTopologyStrategy): no process there could claim at LOCAL_SERIAL, so its ranges
 * would be lost from the domain, and a misspelt DC would lose them without a word.
 * @throws {InvalidOptionError} (option `firstRanges`) naming the DCs outside the replication.
 */
export function checkFirstRangeDcs(
  dcs: readonly string[],
  replicaDcs: readonly string[] | undefined,
): void {
  if (replicaDcs === undefined) return;
  const outside = dcs.filter((dc) => !replicaDcs.includes(dc));
  if (outside.length === 0) return;
  throw new InvalidOptionError(
    'firstRanges',
    dcs,
    `DCs the keyspace replicates to: ${replicaDcs.join(', ')} (not ${outside.join(', ')}); add a DC to the keyspace's replication before granting it first ranges, or leave it out: its first process then asks SERIAL for its first range`,
  );
}

/**
 * The DCs a create grants first ranges to when it names none: with adaptive blocks, every DC the
 * keyspace replicates to, so that a fleet starting at once in every DC never crowds the one
 * grants partition at SERIAL (docs/sizing.md, "The defaults: 16 shards and first ranges"). None
 * with fixed blocks (as before), under a strategy that names no DC, with a DC name the protocol
 * cannot use, or when the ranges would be more than one batch may hold or more than an eighth of
 * the IDs from `start`.
 */
export function defaultFirstRanges(
  settings: SequenceSettings,
  replicaDcs: readonly string[] | undefined,
): readonly string[] | undefined {
  if (settings.maxBlockSize === settings.blockSize) return undefined;
  if (replicaDcs === undefined || replicaDcs.length === 0) return undefined;
  // A name the protocol cannot use (the snitch allows more than our names do): the create goes
  // on without first ranges rather than failing on a list the user never gave.
  if (replicaDcs.some((dc) => !isValidName('datacenter', dc))) return undefined;
  const count = replicaDcs.length * settings.shards;
  const room = settings.max - settings.start + 1n;
  if (count > MAX_FIRST_GRANTS || BigInt(count) * settings.dcRangeSize * 8n > room) {
    return undefined;
  }
  return replicaDcs;
}

/**
 * `keys` as given, for {@link checkKeys}, checked when it compiles to name only keys of `T` and
 * every one of them: an option added to `T` and left out here is a type error, not an option
 * refused at run time. Called as `everyKeyOf<T>()([...])`, so that `T` is given and the keys
 * are inferred.
 */
export function everyKeyOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & (Exclude<keyof T, K[number]> extends never ? unknown : never),
  ): K => keys;
}

/**
 * Refuses a flag that is neither a boolean nor absent: `'false'` read from the environment, or
 * `1`, would otherwise be taken as false (or true) without a word.
 * @throws {InvalidOptionError} naming `option`.
 */
export function checkBooleanOption(option: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new InvalidOptionError(option, value, 'true or false');
  }
}

/**
 * Refuses a `signal` that is neither absent nor an AbortSignal (anything with `aborted` and
 * `addEventListener`, so that polyfills pass): `true` would fail later, in a timer callback,
 * as an exception nobody catches.
 * @throws {InvalidOptionError} naming `option`.
 */
export function checkAbortSignal(option: string, value: unknown): void {
  if (
    value !== undefined &&
    (typeof value !== 'object' ||
      value === null ||
      typeof (value as Partial<AbortSignal>).aborted !== 'boolean' ||
      typeof (value as Partial<AbortSignal>).addEventListener !== 'function')
  ) {
    throw new InvalidOptionError(option, value, 'an AbortSignal');
  }
}

/**
 * Refuses a key of `options` outside `allowed`: a misspelt option (`callTimeoutMS`, `blocksize`)
 * would otherwise be ignored, and its default used without a word.
 * @throws {InvalidOptionError} naming the first unknown key, and listing the allowed ones.
 */
export function checkKeys(options: object, allowed: readonly string[], prefix = ''): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('options', options, 'an object');
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new InvalidOptionError(
        prefix + key,
        undefined,
        `one of the options ${allowed.map((name) => prefix + name).join(', ')}`,
        'unknown-key',
      );
    }
  }
}

/** What an integer option of the API takes besides its range; the CLI, taking digits, drops it. */
export const INTEGER_TYPES = ' (a number up to 2^53-1, or a bigint)';

function integerOption(option: string, value: unknown, low: bigint, high: bigint): bigint {
  const allowed = `an integer from ${low} to ${high}${INTEGER_TYPES}`;
  let result: bigint;
  if (typeof value === 'bigint') result = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) result = BigInt(value);
  else throw new InvalidOptionError(option, value, allowed);
  if (result < low || result > high) throw new InvalidOptionError(option, value, allowed);
  return result;
}

function intOption(option: string, value: unknown, low: number, high: number, why: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < low || value > high) {
    // These options are numbers only (unlike the ID bounds and DC range sizes): a bigint in
    // range would otherwise read as refused for no reason.
    const kind = typeof value === 'bigint' ? 'a number (not a bigint)' : 'an integer';
    throw new InvalidOptionError(option, value, `${kind} from ${low} to ${high} (${why})`);
  }
  return value;
}

function claimIntervalOption(value: unknown): number {
  const { min: low, max: high } = CLAIM_INTERVAL_RANGE;
  return intOption('claimIntervalMs', value, low, high, "milliseconds between a process's claims");
}

/** `shards`, at least `low`: the current number on an alter, since shards are never drained. */
function shardsOption(value: unknown, low: number): number {
  return intOption(
    'shards',
    value,
    low,
    MAX_SHARDS,
    low > 1
      ? `the sequence has ${low} shards and their number only grows`
      : 'state partitions per DC',
  );
}

/**
 * `shards` when not given. Adaptive blocks (a fleet whose blocks follow its rate is one that may
 * grow) spread a DC's claims over {@link SEQUENCE_DEFAULTS.adaptiveShards} partitions, or fewer
 * where the domain holds fewer than `shardRoom` DC ranges per shard: each shard holds ranges of
 * its own, and in a small domain S shards' ranges would be too large a share of it. Fixed blocks
 * keep one shard, as before.
 */
function defaultShards(
  domainSize: bigint,
  dcRangeSize: bigint,
  blockSize: number,
  maxBlockSize: number,
): number {
  const { adaptiveShards, shardRoom, shards } = SEQUENCE_DEFAULTS;
  if (maxBlockSize === blockSize) return shards;
  const room = domainSize / (dcRangeSize * shardRoom);
  return Math.max(shards, Math.min(adaptiveShards, Number(room)));
}

function autonomyOption(value: unknown): number {
  return intOption(
    'autonomySeconds',
    value,
    0,
    MAX_AUTONOMY_SECONDS,
    'seconds; 0 for fixed DC ranges',
  );
}

/**
 * `maxDcRangeSize` when not given. With an autonomy target: room for grants to grow. Without
 * one: `dcRangeSize` (fixed DC ranges), but adaptive blocks get room for {@link GRANT_BLOCKS} of
 * their largest block per grant, so that a block as large as the DC range does not cost a
 * SERIAL grant per claim. Both at most an eighth of the domain, never below `dcRangeSize`.
 */
function defaultMaxDcRange(
  dcRangeSize: bigint,
  domainSize: bigint,
  autonomySeconds: number,
  blockSize: number,
  maxBlockSize: number,
): bigint {
  const wanted =
    autonomySeconds > 0
      ? dcRangeSize * SEQUENCE_DEFAULTS.maxDcRanges
      : maxBlockSize > blockSize
        ? BigInt(maxBlockSize) * GRANT_BLOCKS
        : dcRangeSize;
  return maxBigInt(minBigInt(wanted, domainSize / 8n), dcRangeSize);
}

function maxBigInt(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function thresholdOption(value: unknown): number {
  if (typeof value !== 'number' || !(value > 0 && value < 1)) {
    throw new InvalidOptionError('threshold', value, 'a number strictly between 0 and 1');
  }
  return value;
}

function blockSizeCap(dcRangeSize: bigint): number {
  return dcRangeSize < BigInt(MAX_BLOCK_SIZE) ? Number(dcRangeSize) : MAX_BLOCK_SIZE;
}

function minBigInt(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/**
 * How an existing sequence's IDs differ from those a create asked for, judging only what the
 * create gave (`domain`, `min`, `max`, `start`): a create that leaves them to their defaults
 * accepts any existing sequence's. `[]` when none differs.
 * @param asked the create's settings, resolved from `options`.
 */
export function idSpaceDifferences(
  options: CreateSequenceOptions,
  asked: SequenceSettings,
  existing: SequenceSettings,
): string[] {
  // A domain given without max sets max (its maximum); min and start keep their own options.
  const given = (field: 'min' | 'max' | 'start') =>
    options[field] !== undefined || (field === 'max' && options.domain !== undefined);
  return differences(['min', 'max', 'start'], given, asked, existing);
}

/**
 * The sizes a create gave (`dcRangeSize`, `blockSize`, ...) that an existing sequence does not
 * have, as `blockSize 100 (asked 5000)`: `alter` changes them. `[]` when none differs.
 * @param asked the create's settings, resolved from `options`.
 */
export function sizeDifferences(
  options: CreateSequenceOptions,
  asked: SequenceSettings,
  existing: SequenceSettings,
): string[] {
  return differences(SIZE_KEYS, (key) => options[key] !== undefined, asked, existing);
}

/** Each of `fields` that was `given` and differs, as `field <existing> (asked <asked>)`. */
function differences<K extends keyof SequenceSettings>(
  fields: readonly K[],
  given: (field: K) => boolean,
  asked: SequenceSettings,
  existing: SequenceSettings,
): string[] {
  return fields
    .filter((field) => given(field) && String(asked[field]) !== String(existing[field]))
    .map((field) => `${field} ${String(existing[field])} (asked ${String(asked[field])})`);
}
