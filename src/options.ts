/** The checks every entry point runs on its input first: option keys, flags, signals, names. */

import { InvalidNameError, InvalidOptionError } from './errors.js';
import { isValidName, type NameKind } from './names.js';

/** @throws {InvalidNameError} if `name` breaks the rule for its kind (names.ts). */
export function validateName(kind: NameKind, name: unknown): asserts name is string {
  if (!isValidName(kind, name)) throw new InvalidNameError(kind, name);
}

/** `keys`, checked at compile time to be exactly the keys of `T`: `everyKeyOf<T>()([...])`. */
export function everyKeyOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & (Exclude<keyof T, K[number]> extends never ? unknown : never),
  ): K => keys;
}

/** `value ?? fallback`. @throws {InvalidOptionError} unless ms ≥ 0 (> 0 if `positive`). */
export function milliseconds(
  option: string,
  value: unknown,
  fallback: number,
  positive = false,
): number {
  const ms = value ?? fallback;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || (positive && ms === 0)) {
    const least = positive ? ' above 0' : ', at least 0';
    throw new InvalidOptionError(option, ms, `a finite number of milliseconds${least}`);
  }
  return ms;
}

/** @throws {InvalidOptionError} naming `option` unless a boolean or absent (not `'false'`). */
export function checkBooleanOption(option: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new InvalidOptionError(option, value, 'true or false');
  }
}

/** `true` would fail later, in a timer callback nobody catches. @throws {InvalidOptionError} */
export function checkAbortSignal(option: string, value: unknown): void {
  const signal = value as Partial<AbortSignal> | null | undefined;
  if (
    value !== undefined &&
    (typeof signal !== 'object' ||
      signal === null ||
      typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function')
  ) {
    throw new InvalidOptionError(option, value, 'an AbortSignal');
  }
}

/** A misspelt option would otherwise be ignored for its default. @throws {InvalidOptionError} */
export function checkKeys(options: object, allowed: readonly string[], prefix = ''): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('options', options, 'an object');
  }
  const unknown = Object.keys(options).find((key) => !allowed.includes(key));
  if (unknown !== undefined) {
    throw new InvalidOptionError(
      prefix + unknown,
      undefined,
      `one of the options ${allowed.map((name) => prefix + name).join(', ')}`,
      'unknown-key',
    );
  }
}
