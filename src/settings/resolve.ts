/** A sequence's settings from a create, an alter or a stored row, each checked by `settle`. */

import { InvalidOptionError } from '../errors.js';
import { checkBooleanOption, checkKeys, everyKeyOf, validateName } from '../options.js';
import type { SequenceChanges, SequenceSettings, SizeSettings } from '../store/port.js';
import { DEFAULTS, defaultMaxDcRange } from './defaults.js';
import type { AlterSequenceOptions, CreateSequenceOptions } from './model.js';
import { maxBigInt, settle, type Field } from './rules.js';

/** The only settings `alter` can change. */
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

export function pickSizes(settings: SizeSettings): SizeSettings {
  return Object.fromEntries(SIZE_KEYS.map((key) => [key, settings[key]])) as SizeSettings;
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

/** Fixed blocks: `blockSize` given alone sets both. */
const FIXED_BLOCKS = Object.freeze({ maxBlockSize: 'blockSize' } as const);

/**
 * Validates `options` once and fills in the defaults.
 * @throws {InvalidNameError}; {@link InvalidOptionError} naming the first bad option.
 */
export function resolveSequenceSettings(
  name: string,
  options: CreateSequenceOptions = {},
): SequenceSettings {
  validateName('sequence', name);
  checkKeys(options, CREATE_KEYS);
  checkBooleanOption('ifNotExists', options.ifNotExists);
  const settings = settle({
    given: { ...options, name },
    follows: FIXED_BLOCKS,
    base: (field, s) =>
      field === 'name' ? undefined : DEFAULTS[field](s as SequenceSettings, options),
  }) as SequenceSettings;
  return Object.freeze({
    ...settings,
    domain: options.max === undefined ? settings.domain : 'custom',
  });
}

/** With the widest bounds, before any settings are read. @throws {InvalidOptionError} */
export function checkChanges(changes: AlterSequenceOptions): void {
  checkChangeKeys(changes);
  settle({ given: changes, base: () => undefined });
}

function checkChangeKeys(changes: AlterSequenceOptions): void {
  checkKeys(changes, SIZE_KEYS);
  if (SIZE_KEYS.every((key) => changes[key] === undefined)) {
    throw new InvalidOptionError('changes', 'nothing', `at least one of ${SIZE_KEYS.join(', ')}`);
  }
}

/**
 * Every key an alter changes (`blockSize` drags fixed blocks' `maxBlockSize`, `dcRangeSize` a
 * fixed `maxDcRangeSize`).
 * @throws {InvalidOptionError}; {@link InvariantError} if a stored setting left as is breaks a rule.
 */
export function validateChanges(
  changes: AlterSequenceOptions,
  current: SequenceSettings,
): SequenceChanges {
  checkChangeKeys(changes);
  const next = settle({
    given: changes,
    follows: current.maxBlockSize === current.blockSize ? FIXED_BLOCKS : {},
    base: (field, s) => alterBase(field, s as SequenceSettings, current),
    current,
  }) as SequenceSettings;
  const changed = SIZE_KEYS.filter(
    (key) => changes[key] !== undefined || next[key] !== current[key],
  );
  return Object.freeze(Object.fromEntries(changed.map((key) => [key, next[key]])));
}

/** A field not given keeps its stored value, unless a change drags it along. */
function alterBase(field: Field, s: SequenceSettings, current: SequenceSettings): unknown {
  if (field === 'blockSize') return Math.min(current.blockSize, s.maxBlockSize);
  if (field !== 'maxDcRangeSize') return current[field];
  if (current.autonomySeconds === 0 && s.autonomySeconds > 0) return defaultMaxDcRange(s);
  return current.maxDcRangeSize === current.dcRangeSize
    ? s.dcRangeSize
    : maxBigInt(current.maxDcRangeSize, s.dcRangeSize);
}

/** @throws {InvariantError} if stored settings break a rule; nothing may be allocated from them. */
export function validateStoredSettings(settings: SequenceSettings): void {
  settle({ given: {}, base: (field) => settings[field] });
}

/** Where an existing sequence's `min`, `max`, `start` differ from a create's: `start 1 (asked 5)`. */
export function idSpaceDifferences(
  options: CreateSequenceOptions,
  asked: SequenceSettings,
  existing: SequenceSettings,
): string[] {
  const given = { ...options, max: options.max ?? options.domain };
  return differences(['min', 'max', 'start'], given, asked, existing);
}

/** As above, for the sizes. */
export function sizeDifferences(
  options: CreateSequenceOptions,
  asked: SequenceSettings,
  existing: SequenceSettings,
): string[] {
  return differences(SIZE_KEYS, options, asked, existing);
}

function differences(
  fields: readonly Field[],
  given: Readonly<Partial<Record<Field, unknown>>>,
  asked: SequenceSettings,
  existing: SequenceSettings,
): string[] {
  return fields
    .filter(
      (field) => given[field] !== undefined && String(asked[field]) !== String(existing[field]),
    )
    .map((field) => `${field} ${String(existing[field])} (asked ${String(asked[field])})`);
}
