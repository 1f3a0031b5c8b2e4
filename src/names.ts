/**
 * The naming rule of each kind of name, with the message that states it: sequence names are
 * stored as values and shown in commands; keyspace names are CQL identifiers (used quoted, so
 * case-sensitive); datacenter names are the snitch's, and embed in CQL replication maps.
 * `InvalidNameError` (errors.ts) states the rule of the kind it is about.
 */

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

/** Whether `value` follows the rule for `kind`. */
export function isValidName(kind: NameKind, value: unknown): value is string {
  return typeof value === 'string' && NAME_RULES[kind].pattern.test(value);
}
