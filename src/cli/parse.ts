/**
 * Parsers of the CLI's option values. Syntax errors are commander's `InvalidArgumentError` or an
 * {@link InvalidOptionError} naming the option (both usage errors, exit code 1); ranges are
 * checked by the library, whose errors name the setting.
 */

import { InvalidArgumentError } from 'commander';

import { InvalidOptionError } from '../errors.js';
import { CLAIM_INTERVAL_RANGE, MAX_AUTONOMY_SECONDS } from '../options.js';
import { MAX_REPLICATION_FACTOR } from '../schema.js';

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

/**
 * Digits with an optional fraction, as integers are read: `Number()` alone would also take
 * `0x10` (16), `1e3` and `0b1`, which no option here is meant to read.
 */
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

/** A duration in seconds, at least 0 (`2`, `0.5`). */
export function parseSeconds(value: string): number {
  const parsed = parseDecimal(value);
  if (parsed < 0) throw new InvalidArgumentError('Expected a number of seconds, at least 0.');
  return parsed;
}

const DURATION = /^(\d+(?:\.\d+)?|\.\d+)(s|m|h|d)$/;
const SECONDS_PER_UNIT: Readonly<Record<string, number>> = Object.freeze({
  s: 1,
  m: 60,
  h: 3_600,
  d: 86_400,
});

/**
 * A duration above 0 with its unit (`90s`, `30m`, `1.5h`, `1d`), in seconds.
 * @throws {InvalidOptionError} (option `option`) for anything else, a bare number included: is
 *   `30` seconds or minutes?
 */
export function parseDuration(value: string, option: string): number {
  const match = DURATION.exec(value.trim());
  const seconds = match === null ? NaN : Number(match[1]) * SECONDS_PER_UNIT[match[2]!]!;
  if (!(seconds > 0)) {
    throw new InvalidOptionError(
      option,
      value,
      'a duration above 0: a number followed by s, m, h or d, e.g. 90s, 30m, 2h, 1d',
    );
  }
  return seconds;
}

/**
 * `--claim-interval`: a duration (`2s`, `500ms` is written `0.5s`) in whole milliseconds, from
 * 10 ms to 1 h; refused as typed, not as rounded.
 */
export function parseClaimInterval(value: string): number {
  const { min, max } = CLAIM_INTERVAL_RANGE;
  const ms = Math.round(parseDuration(value, 'claimIntervalMs') * 1_000);
  if (ms < min || ms > max) {
    throw new InvalidOptionError('claimIntervalMs', value, 'a duration from 0.01s to 1h');
  }
  return ms;
}

/**
 * `--autonomy`: a duration (`24h`, `90m`) in whole seconds, from 1 s to 365 d, or `0` for fixed
 * DC ranges. A duration that rounds to 0 s is refused: it would be stored as "no target".
 */
export function parseAutonomy(value: string): number {
  if (value.trim() === '0') return 0;
  const seconds = Math.round(parseDuration(value, 'autonomySeconds'));
  if (seconds < 1 || seconds > MAX_AUTONOMY_SECONDS) {
    throw new InvalidOptionError(
      'autonomySeconds',
      value,
      'a duration from 1s to 365d, or 0 for fixed DC ranges',
    );
  }
  return seconds;
}

/**
 * The value of a yes/no environment variable (`IDGEN_SSL=true`); commander only sees whether a
 * boolean flag's variable is set, so `IDGEN_SSL=false` would otherwise turn TLS on. Empty is no.
 * @throws {InvalidOptionError} (option `option`) for any other value.
 */
export function parseSwitch(value: string, option: string): boolean {
  const normalized = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
  if (['false', '0', 'no', 'off', ''].includes(normalized)) return false;
  throw new InvalidOptionError(option, value, 'true or false (or 1/0, yes/no, on/off)');
}

/**
 * A replication map `dc1:3,dc2:3` as `{ dc1: 3, dc2: 3 }`. Factors must be integers; their
 * range and the DC names are checked against the cluster by `initSchema`.
 * @throws {InvalidOptionError} (option `replication`) for anything else, or a map naming no DC.
 */
export function parseReplication(value: string): Record<string, number> {
  // The factor's range is checked here too, so that the message names the flag's syntax and
  // what was typed, not the map the library receives.
  const allowed = `one or more DC:factor pairs separated by commas, each DC once, each factor from 1 to ${MAX_REPLICATION_FACTOR}, e.g. dc1:3,dc2:3,dc3:3`;
  const map: Record<string, number> = {};
  const pairs = value
    .split(',')
    .map((pair) => pair.trim())
    .filter((pair) => pair !== '');
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

/**
 * `--first-ranges`: DC names separated by commas (`dc1,dc2,dc3`), each trimmed. Whether each is
 * a DC name, and named once, is checked by the library (option `firstRanges`).
 * @throws {InvalidOptionError} (option `firstRanges`) for an empty entry (`dc1,,dc2`, a comma at
 *   either end) or no DC at all.
 */
export function parseFirstRanges(value: string): string[] {
  const dcs = value.split(',').map((dc) => dc.trim());
  if (dcs.some((dc) => dc === '')) {
    throw new InvalidOptionError(
      'firstRanges',
      value,
      'one or more DC names separated by commas, none empty, e.g. dc1,dc2,dc3',
    );
  }
  return dcs;
}

/** A comma-separated list, entries trimmed, empty ones dropped. */
export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
