/**
 * Strings by UTF-16 code units (as a bare `sort()`), bigints by value. Not `localeCompare`: its
 * order depends on the machine's locale, and listings must come out the same everywhere.
 */
export function ascending<T extends string | bigint>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
