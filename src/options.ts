/** The checks every entry point runs on its input first: option keys, flags, signals, names. */

import { InvalidNameError, InvalidOptionError } from './errors.js';
import { isValidName, type NameKind } from './names.js';

/** @throws {InvalidNameError} if `name` breaks the rule for its kind (names.ts). */
export function validateName(kind: NameKind, name: unknown): asserts name is string {
  if (!isValidName(kind, name)) throw new InvalidNameError(kind, name);
}

/** @throws {InvalidNameError} if `name` breaks the rule for sequence names. */
export function validateSequenceName(name: unknown): asserts name is string {
  validateName('sequence', name);
}

/**
 * `keys`, checked at compile time to be exactly the keys of `T`, so an option added to `T` and
 * left out here is a type error. Called as `everyKeyOf<T>()([...])`.
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
 * Refuses a `signal` that is not AbortSignal-like (polyfills pass): `true` would fail later, in a
 * timer callback nobody catches.
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
