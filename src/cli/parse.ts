/** Parsers of the CLI's option values (exit 1); ranges are the library's, but a duration's. */
import { InvalidArgumentError } from 'commander';
import { InvalidOptionError } from '../errors.js';
import { CLAIM_INTERVAL_RANGE, MAX_AUTONOMY_SECONDS } from '../settings/model.js';
import { MAX_REPLICATION_FACTOR } from '../schema.js';
import { MAX_TIMER_MS } from '../timers.js';

const INTEGER = /^-?\d+(_\d+)*$/;

/** An integer of any size; `_` may group digits (`1_000_000`). */
export function parseBigInt(value: string): bigint {
  const trimmed = value.trim();
  if (!INTEGER.test(trimmed)) {
    throw new InvalidArgumentError('Expected an integer, e.g. 1000000 or 1_000_000.');
  }
  return BigInt(trimmed.replace(/_/g, ''));
}

/** An integer that fits a JavaScript number (block sizes, counts). */
export function parseInteger(value: string): number {
  const parsed = parseBigInt(value);
  if (parsed > BigInt(Number.MAX_SAFE_INTEGER) || parsed < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new InvalidArgumentError(`Expected an integer of at most ${Number.MAX_SAFE_INTEGER}.`);
  }
  return Number(parsed);
}

/** `Number()` alone would also take `0x10`, `1e3` and `0b1`. */
const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)$/;

/** A decimal number (`0.5`, `.75`). */
export function parseDecimal(value: string): number {
  const trimmed = value.trim();
  const parsed = Number(trimmed);
  if (!DECIMAL.test(trimmed) || !Number.isFinite(parsed)) {
    throw new InvalidArgumentError('Expected a number, e.g. 0.5.');
  }
  return parsed;
}

/** A number and its unit: a bare number is refused (seconds or milliseconds?), but a 0 taken. */
const DURATION = /^(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d)$/;

/** Longest first. */
const MS_PER_UNIT = Object.freeze({ d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 });

/** The longest duration one Node timer holds, in whole days: 24d. */
const TIMER_MAX_MS = Math.floor(MAX_TIMER_MS / MS_PER_UNIT.d) * MS_PER_UNIT.d;

/** How one time option is read: `option` as errors name it, bounds in `unit`, what 0 means. */
export interface DurationRule {
  readonly option: string;
  readonly unit: 'ms' | 's';
  readonly min: number;
  readonly max?: number;
  /** What 0 means; without it 0 is refused. */
  readonly zero?: string;
}

/**
 * `value` in `rule.unit`, rounded, then checked against the bounds.
 * @throws {InvalidOptionError} naming `rule.option`.
 */
export function parseDuration(value: string, rule: DurationRule): number {
  const { unit, min, max = Infinity, zero } = rule;
  const trimmed = value.trim();
  const match = DURATION.exec(trimmed);
  const ms =
    trimmed === '0'
      ? 0
      : match && Number(match[1]) * MS_PER_UNIT[match[2] as keyof typeof MS_PER_UNIT];
  if (ms === 0 && zero !== undefined) return 0;
  const converted = ms === null ? NaN : Math.round(ms / MS_PER_UNIT[unit]);
  if (!(converted >= min && converted <= max)) {
    throw new InvalidOptionError(rule.option, value, allowedDurations(rule));
  }
  return converted;
}

export function durationParser(rule: DurationRule): (value: string) => number {
  return (value) => parseDuration(value, rule);
}

/** A duration in milliseconds that one timer holds. */
export function timerParser(option: string, zero?: string): (value: string) => number {
  return durationParser({ option, unit: 'ms', min: 1, max: TIMER_MAX_MS, ...(zero && { zero }) });
}

function allowedDurations({ unit, min, max, zero }: DurationRule): string {
  const low = typedDuration(min * MS_PER_UNIT[unit]);
  const bounds =
    max === undefined
      ? `of at least ${low}`
      : `from ${low} to ${typedDuration(max * MS_PER_UNIT[unit])}`;
  return (
    `a duration ${bounds} with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m)` +
    (zero === undefined ? '' : `, or 0 for ${zero}`)
  );
}

/** Milliseconds in their largest whole unit (`30m`, `1500ms`). */
export function typedDuration(ms: number): string {
  for (const [unit, size] of Object.entries(MS_PER_UNIT)) {
    if (ms !== 0 && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

export const parseClaimInterval = durationParser({
  option: 'claimIntervalMs',
  unit: 'ms',
  min: CLAIM_INTERVAL_RANGE.min,
  max: CLAIM_INTERVAL_RANGE.max,
});

export const parseAutonomy = durationParser({
  option: 'autonomySeconds',
  unit: 's',
  min: 1,
  max: MAX_AUTONOMY_SECONDS,
  zero: 'fixed DC ranges',
});

/**
 * A yes/no variable (`IDGEN_SSL=false`; empty is no): commander only sees whether it is set.
 * @throws {InvalidOptionError} naming `option`.
 */
export function parseSwitch(value: string, option: string): boolean {
  const normalized = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
  if (['false', '0', 'no', 'off', ''].includes(normalized)) return false;
  throw new InvalidOptionError(option, value, 'true or false (or 1/0, yes/no, on/off)');
}

/**
 * `dc1:3,dc2:3` as `{ dc1: 3, dc2: 3 }`; factors checked here so the message shows what was typed.
 * @throws {InvalidOptionError} naming `replication`.
 */
export function parseReplication(value: string): Record<string, number> {
  const allowed = `one or more DC:factor pairs separated by commas, each DC once, each factor from 1 to ${MAX_REPLICATION_FACTOR}, e.g. dc1:3,dc2:3,dc3:3`;
  const map: Record<string, number> = {};
  const pairs = parseList(value);
  if (pairs.length === 0) throw new InvalidOptionError('replication', value, allowed);
  for (const pair of pairs) {
    const match = /^([^:\s]+):(\d+)$/.exec(pair);
    const factor = match === null ? 0 : Number(match[2]);
    if (
      match === null ||
      Object.hasOwn(map, match[1]!) ||
      factor < 1 ||
      factor > MAX_REPLICATION_FACTOR
    ) {
      throw new InvalidOptionError('replication', value, allowed);
    }
    map[match[1]!] = factor;
  }
  return map;
}

/** A comma-separated list, entries trimmed, empty ones dropped. */
export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
