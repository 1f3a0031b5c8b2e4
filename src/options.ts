/**
 * Sequence options: presets, defaults and the one place they are validated.
 *
 * User input is checked by {@link resolveSequenceSettings} (create) and {@link validateChanges}
 * (alter) and throws {@link InvalidOptionError}; settings read back from the store are checked by
 * {@link validateStoredSettings} and throw {@link InvariantError}, because nothing may be
 * allocated from rows that break the rules.
 */

import { InvalidNameError, InvalidOptionError, InvariantError } from './errors.js';
import { isValidName } from './names.js';
import type { DomainName, SequenceChanges, SequenceSettings } from './store/port.js';

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
   * @default 100_000, or the domain's size if smaller
   */
  readonly dcRangeSize?: bigint | number | undefined;
  /**
   * IDs one process claims from its DC at a time (`B`); at most `dcRangeSize` and 10,000,000.
   * Also the largest count `take()` accepts.
   * @default 1_000, or `dcRangeSize` if smaller
   */
  readonly blockSize?: number | undefined;
  /**
   * Share of a block (process level) or DC range (DC level) used before the next one is loaded
   * in the background; strictly between 0 and 1.
   * @default 0.5
   */
  readonly threshold?: number | undefined;
  /**
   * If a sequence of that name exists, return its stored settings instead of throwing
   * `SequenceExistsError` (its settings are left as they are, even if they differ).
   * @default false
   */
  readonly ifNotExists?: boolean | undefined;
}

/** The changeable settings of an existing sequence, as given by a user. */
export interface AlterSequenceOptions {
  /** See {@link CreateSequenceOptions.dcRangeSize}. @default unchanged */
  readonly dcRangeSize?: bigint | number | undefined;
  /** See {@link CreateSequenceOptions.blockSize}. @default unchanged */
  readonly blockSize?: number | undefined;
  /** See {@link CreateSequenceOptions.threshold}. @default unchanged */
  readonly threshold?: number | undefined;
}

/** Defaults of {@link CreateSequenceOptions}; `start` defaults to `min`, `max` to the domain's. */
export const SEQUENCE_DEFAULTS = Object.freeze({
  domain: 'int32',
  min: 1n,
  dcRangeSize: 100_000n,
  blockSize: 1_000,
  threshold: 0.5,
} as const satisfies {
  domain: DomainPreset;
  min: bigint;
  dcRangeSize: bigint;
  blockSize: number;
  threshold: number;
});

const CREATE_KEYS: readonly string[] = [
  'ifNotExists',
  'domain',
  'min',
  'max',
  'start',
  'dcRangeSize',
  'blockSize',
  'threshold',
];
const ALTER_KEYS: readonly string[] = ['dcRangeSize', 'blockSize', 'threshold'];

/**
 * Checks a sequence name: 1 to 48 letters, digits or `_`, starting with a letter (it becomes a
 * Cassandra partition key and a CLI argument, so it stays plain).
 * @throws {InvalidNameError} if the name breaks the rule.
 */
export function validateSequenceName(name: unknown): asserts name is string {
  if (!isValidName('sequence', name)) throw new InvalidNameError('sequence', name);
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
  const dcRangeSize =
    options.dcRangeSize === undefined
      ? minBigInt(SEQUENCE_DEFAULTS.dcRangeSize, max - min + 1n)
      : integerOption('dcRangeSize', options.dcRangeSize, 1n, max - min + 1n);
  const blockSize =
    options.blockSize === undefined
      ? Math.min(SEQUENCE_DEFAULTS.blockSize, blockSizeCap(dcRangeSize))
      : blockSizeOption(options.blockSize, dcRangeSize);
  const threshold =
    options.threshold === undefined
      ? SEQUENCE_DEFAULTS.threshold
      : thresholdOption(options.threshold);

  return Object.freeze({
    name,
    domain: options.max === undefined ? preset : 'custom',
    min,
    max,
    start,
    dcRangeSize,
    blockSize,
    threshold,
  });
}

/**
 * Validates the changes of `alter` against the sequence's current settings and normalises them
 * (bigint DC range size, only the keys given).
 * @throws {InvalidOptionError} naming the first option that is unknown, unchangeable or out of
 * range, or `changes` if nothing would change.
 */
export function validateChanges(
  changes: AlterSequenceOptions,
  current: SequenceSettings,
): SequenceChanges {
  checkKeys(changes, ALTER_KEYS);
  const given = ALTER_KEYS.filter((key) => (changes as Record<string, unknown>)[key] !== undefined);
  if (given.length === 0) {
    throw new InvalidOptionError(
      'changes',
      'nothing',
      'at least one of dcRangeSize, blockSize, threshold',
    );
  }
  const dcRangeSize =
    changes.dcRangeSize === undefined
      ? undefined
      : integerOption('dcRangeSize', changes.dcRangeSize, 1n, current.max - current.min + 1n);
  const blockSize =
    changes.blockSize === undefined
      ? undefined
      : blockSizeOption(changes.blockSize, dcRangeSize ?? current.dcRangeSize);
  if (blockSize === undefined && dcRangeSize !== undefined && current.blockSize > dcRangeSize) {
    throw new InvalidOptionError(
      'dcRangeSize',
      dcRangeSize,
      `an integer from ${current.blockSize} (the block size) to ${current.max - current.min + 1n}, or lower blockSize too`,
    );
  }
  const threshold =
    changes.threshold === undefined ? undefined : thresholdOption(changes.threshold);
  return Object.freeze({
    ...(dcRangeSize === undefined ? {} : { dcRangeSize }),
    ...(blockSize === undefined ? {} : { blockSize }),
    ...(threshold === undefined ? {} : { threshold }),
  });
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
  const cap = s.domain === 'custom' ? MAX_INT63 : DOMAIN_MAX[s.domain];
  if (s.max > cap) broken(`max ${s.max} exceeds ${cap} (domain ${s.domain})`);
  if (s.start < s.min || s.start > s.max) {
    broken(`start ${s.start} is not within [${s.min}, ${s.max}]`);
  }
  if (s.dcRangeSize < 1n || s.dcRangeSize > s.max - s.min + 1n) {
    broken(`dcRangeSize ${s.dcRangeSize} is not within [1, ${s.max - s.min + 1n}]`);
  }
  if (
    !Number.isSafeInteger(s.blockSize) ||
    s.blockSize < 1 ||
    s.blockSize > blockSizeCap(s.dcRangeSize)
  ) {
    broken(`blockSize ${s.blockSize} is not an integer within [1, ${blockSizeCap(s.dcRangeSize)}]`);
  }
  if (!(s.threshold > 0 && s.threshold < 1)) {
    broken(`threshold ${s.threshold} is not strictly between 0 and 1`);
  }
}

function checkKeys(options: object, allowed: readonly string[]): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('options', options, 'an object');
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new InvalidOptionError(
        key,
        (options as Record<string, unknown>)[key],
        `one of the options ${allowed.join(', ')}`,
      );
    }
  }
}

function integerOption(option: string, value: unknown, low: bigint, high: bigint): bigint {
  const allowed = `an integer from ${low} to ${high} (a number up to 2^53-1, or a bigint)`;
  let result: bigint;
  if (typeof value === 'bigint') result = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) result = BigInt(value);
  else throw new InvalidOptionError(option, value, allowed);
  if (result < low || result > high) throw new InvalidOptionError(option, value, allowed);
  return result;
}

function blockSizeOption(value: unknown, dcRangeSize: bigint): number {
  const cap = blockSizeCap(dcRangeSize);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > cap) {
    throw new InvalidOptionError(
      'blockSize',
      value,
      `an integer from 1 to ${cap} (at most dcRangeSize and ${MAX_BLOCK_SIZE})`,
    );
  }
  return value;
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
