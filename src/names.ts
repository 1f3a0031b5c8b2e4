/** The naming rule of each kind of name, with the message that states it. */

export type NameKind = 'sequence' | 'keyspace' | 'datacenter';

export const NAME_RULES: Readonly<
  Record<NameKind, { readonly pattern: RegExp; readonly rule: string }>
> = Object.freeze({
  sequence: {
    pattern: /^[A-Za-z][A-Za-z0-9_]{0,47}$/,
    rule: 'use 1 to 48 letters, digits or "_", starting with a letter',
  },
  keyspace: {
    pattern: /^[A-Za-z][A-Za-z0-9_]{0,47}$/,
    rule: 'use 1 to 48 letters, digits or "_", starting with a letter (Cassandra\'s rule for keyspaces); it is case-sensitive',
  },
  datacenter: {
    pattern: /^(?!GLOBAL$)[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
    rule: 'use the name the snitch gives the datacenter (`nodetool status`): 1 to 64 letters, digits, "_", "." or "-", starting with a letter or digit, and not "GLOBAL", which names the high-water mark row',
  },
});

export function isValidName(kind: NameKind, value: unknown): value is string {
  return typeof value === 'string' && NAME_RULES[kind].pattern.test(value);
}

/** The most shards per DC: each costs a SERIAL grant per range; a few dozen cover any fleet. */
export const MAX_SHARDS = 256;

/** Shard `shard` of `dc`: `dc` for shard 0 (an unsharded sequence's rows), else `dc/shard`. */
export function granteeName(dc: string, shard: number): string {
  return shard === 0 ? dc : `${dc}/${shard}`;
}

export function granteesOf(dc: string, shards: number): string[] {
  return Array.from({ length: shards }, (_, k) => granteeName(dc, k));
}

/** `dc/1` … `dc/255`, without leading zeros. */
const SHARD_SUFFIX = /\/([1-9][0-9]{0,2})$/;

/** The DC of a grantee (a DC, or its shard `dc/k`); undefined if `name` is neither. */
export function dcOfGrantee(name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  const suffix = SHARD_SUFFIX.exec(name);
  if (suffix !== null && Number(suffix[1]) >= MAX_SHARDS) return undefined;
  const dc = suffix === null ? name : name.slice(0, suffix.index);
  return isValidName('datacenter', dc) ? dc : undefined;
}
