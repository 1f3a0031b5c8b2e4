/**
 * The one table of rules a sequence's settings keep, and {@link settle}, the one pass that
 * applies it: a rule bounds its field by checked fields above it, at their widest if left out.
 */

import { InvalidOptionError, InvariantError } from '../errors.js';
import { isValidName, MAX_SHARDS, NAME_RULES } from '../names.js';
import type { SequenceSettings } from '../store/port.js';
import {
  CLAIM_INTERVAL_RANGE,
  DOMAIN_MAX,
  MAX_AUTONOMY_SECONDS,
  MAX_BLOCK_SIZE,
  MAX_INT63,
} from './model.js';

export type Field = keyof SequenceSettings;

export type Draft = { -readonly [F in Field]?: SequenceSettings[F] };

/** What an ID option of the API takes besides its range (the CLI, taking digits, never says it). */
const ID_TYPES = 'a number up to 2^53-1, or a bigint';

/** From the fields above and, on an alter, the settings it changes. */
type Bound<T> = (s: Draft, current: SequenceSettings | undefined) => T;

/**
 * `id`: a bigint (given, also a safe integer); `count`: an integer number (`why`: where its bounds
 * come from); `share`: in (0, 1). `blames`: the field an alter blames when a value not given breaks
 * the rule.
 */
type Rule = { readonly field: Field } & (
  | { readonly kind: 'name' | 'domain' | 'share' }
  | { readonly kind: 'id'; readonly low: Bound<bigint>; readonly high: Bound<bigint> }
  | {
      readonly kind: 'count';
      readonly low: Bound<number>;
      readonly high: Bound<number>;
      readonly why: Bound<string>;
      readonly blames?: { readonly field: Field; readonly allowed: (value: unknown) => string };
    }
);

/** In the order settings are merged: a rule reads only fields above its own. */
export const RULES: readonly Rule[] = Object.freeze([
  { field: 'name', kind: 'name' },
  { field: 'domain', kind: 'domain' },
  { field: 'min', kind: 'id', low: () => 0n, high: (s) => domainCap(s.domain) },
  { field: 'max', kind: 'id', low: (s) => s.min ?? 0n, high: (s) => domainCap(s.domain) },
  { field: 'start', kind: 'id', low: (s) => s.min ?? 0n, high: (s) => s.max ?? MAX_INT63 },
  { field: 'dcRangeSize', kind: 'id', low: () => 1n, high: rangeCap },
  {
    field: 'maxBlockSize',
    kind: 'count',
    low: () => 1,
    high: blockCap,
    why: (s) => `at most ${valued(s, 'dcRangeSize')} and ${MAX_BLOCK_SIZE}`,
    blames: {
      field: 'dcRangeSize',
      allowed: (largest) =>
        `at least the largest block (maxBlockSize ${String(largest)}), or lower maxBlockSize too`,
    },
  },
  {
    field: 'blockSize',
    kind: 'count',
    low: () => 1,
    high: (s) => Math.min(s.maxBlockSize ?? MAX_BLOCK_SIZE, blockCap(s)),
    why: (s) =>
      `at most ${valued(s, 'maxBlockSize')}, ${valued(s, 'dcRangeSize')} and ${MAX_BLOCK_SIZE}`,
  },
  { field: 'threshold', kind: 'share' },
  {
    field: 'claimIntervalMs',
    kind: 'count',
    low: () => CLAIM_INTERVAL_RANGE.min,
    high: () => CLAIM_INTERVAL_RANGE.max,
    why: () => "milliseconds between a process's claims",
  },
  {
    field: 'autonomySeconds',
    kind: 'count',
    low: () => 0,
    high: () => MAX_AUTONOMY_SECONDS,
    why: () => 'seconds; 0 for fixed DC ranges',
  },
  { field: 'maxDcRangeSize', kind: 'id', low: (s) => s.dcRangeSize ?? 1n, high: rangeCap },
  {
    field: 'shards',
    kind: 'count',
    // Only grows: processes keep the shard they picked, and a shard its ranges.
    low: (_, current) => Math.max(1, current?.shards ?? 1),
    high: () => MAX_SHARDS,
    why: (_, current) =>
      current !== undefined && current.shards > 1
        ? `the sequence has ${current.shards} shards and their number only grows`
        : 'state partitions per DC',
  },
]);

/** `follows`: a field that takes another option's value when only that one is given. */
export interface Merge {
  readonly given: Readonly<Partial<Record<Field, unknown>>>;
  readonly follows?: Readonly<Partial<Record<Field, Field>>>;
  readonly base: (field: Field, s: Draft) => unknown;
  readonly current?: SequenceSettings;
}

/**
 * Merges settings in the order of {@link RULES}; ID bounds and DC range sizes come out as bigints.
 * @throws {InvalidOptionError} naming the option given that breaks a rule (or, on an alter, that
 * a stored value no longer fits: `blames`); {@link InvariantError} if a stored value breaks one.
 */
export function settle({ given, follows = {}, base, current }: Merge): Draft {
  const s: Draft = {};
  for (const rule of RULES) {
    const source = [rule.field, follows[rule.field]].find(
      (f) => f !== undefined && given[f] !== undefined,
    );
    const value = source === undefined ? base(rule.field, s) : given[source];
    if (value === undefined) continue;
    const checked = check(rule, value, source !== undefined, s, current);
    if (typeof checked === 'string') {
      if (source !== undefined) {
        const types = rule.kind === 'id' ? ID_TYPES : undefined;
        throw new InvalidOptionError(source, value, checked, 'value', types);
      }
      const blamed = rule.kind === 'count' ? rule.blames : undefined;
      if (blamed !== undefined && given[blamed.field] !== undefined) {
        throw new InvalidOptionError(blamed.field, given[blamed.field], blamed.allowed(value));
      }
      const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
      const sequence = s.name ?? String(value);
      throw new InvariantError(sequence, `settings: ${rule.field} ${shown} is not ${checked}`);
    }
    (s as Record<Field, unknown>)[rule.field] = checked.value;
  }
  return s;
}

/** `value` as the settings hold it, or what `rule` allows. */
function check(
  rule: Rule,
  value: unknown,
  given: boolean,
  s: Draft,
  current: SequenceSettings | undefined,
): { readonly value: unknown } | string {
  switch (rule.kind) {
    case 'name':
      return isValidName('sequence', value)
        ? { value }
        : `a sequence name (${NAME_RULES.sequence.rule})`;
    case 'domain':
      // `custom` is recorded for an explicit max, never given.
      return (typeof value === 'string' && Object.hasOwn(DOMAIN_MAX, value)) ||
        (!given && value === 'custom')
        ? { value }
        : `one of "int32", "safe53", "int63"${given ? '' : ', "custom"'}`;
    case 'share':
      return typeof value === 'number' && value > 0 && value < 1
        ? { value }
        : 'a number strictly between 0 and 1';
    case 'id': {
      const [low, high] = [rule.low(s, current), rule.high(s, current)];
      const id =
        typeof value === 'bigint'
          ? value
          : given && typeof value === 'number' && Number.isSafeInteger(value)
            ? BigInt(value)
            : undefined;
      return id !== undefined && id >= low && id <= high
        ? { value: id }
        : `an integer from ${low} to ${high}`;
    }
    case 'count': {
      const [low, high] = [rule.low(s, current), rule.high(s, current)];
      if (Number.isSafeInteger(value) && (value as number) >= low && (value as number) <= high) {
        return { value };
      }
      const kind = typeof value === 'bigint' ? 'a number (not a bigint)' : 'an integer';
      return `${kind} from ${low} to ${high} (${rule.why(s, current)})`;
    }
  }
}

function valued(s: Draft, field: Field): string {
  return s[field] === undefined ? field : `${field} (${String(s[field])})`;
}

/** The largest `max` of a domain; a custom domain's is a CQL bigint's. */
export function domainCap(domain: SequenceSettings['domain'] | undefined): bigint {
  return domain === undefined || domain === 'custom' ? MAX_INT63 : DOMAIN_MAX[domain];
}

/** The widest while `min` and `max` are unknown. */
export function domainSize(s: Draft): bigint {
  return (s.max ?? MAX_INT63) - (s.min ?? 0n) + 1n;
}

export function rangeCap(s: Draft): bigint {
  return minBigInt(domainSize(s), MAX_INT63);
}

/** A block is cut from one DC range. */
export function blockCap(s: Draft): number {
  const range = s.dcRangeSize ?? MAX_INT63;
  return range < BigInt(MAX_BLOCK_SIZE) ? Number(range) : MAX_BLOCK_SIZE;
}

export function minBigInt(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

export function maxBigInt(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
