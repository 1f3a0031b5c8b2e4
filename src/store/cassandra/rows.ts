/** The idgen tables' rows as the port's types; a malformed one is an {@link InvariantError}. */

import cassandra from 'cassandra-driver';

import { InvariantError } from '../../errors.js';
import { ascending } from '../../order.js';
import type { DcState, DomainName, Grant, GrantFound, StoredSettings } from '../port.js';

/** The clustering key of the GLOBAL row; no DC may be named like it. */
export const GLOBAL = 'GLOBAL';
const DOMAINS: readonly DomainName[] = ['int32', 'safe53', 'int63', 'custom'];

type Row = cassandra.types.Row;

export function parseSettings(row: Row): StoredSettings {
  const name = toText(row.get('sequence'));
  if (name === undefined) {
    throw new InvariantError('(unnamed)', 'settings row without a sequence name');
  }
  const column = columnsOf(name, row);
  const domain = column('domain', toText);
  if (!(DOMAINS as readonly string[]).includes(domain)) {
    throw new InvariantError(name, `unknown domain ${JSON.stringify(domain)}`);
  }
  return {
    settings: {
      name,
      domain: domain as DomainName,
      min: column('min_id', toBigInt),
      max: column('max_id', toBigInt),
      start: column('start_id', toBigInt),
      dcRangeSize: column('dc_range_size', toBigInt),
      blockSize: column('block_size', toNumber),
      threshold: column('threshold', toNumber),
      maxBlockSize: column('max_block_size', toNumber),
      claimIntervalMs: column('claim_interval_ms', toNumber),
      maxDcRangeSize: column('max_dc_range_size', toBigInt),
      autonomySeconds: column('autonomy_seconds', toSafeNumber),
      shards: column('shards', toNumber),
    },
    op: column('settings_op', toText),
    incarnation: toText(row.get('incarnation')),
  };
}

export function parseGrant(sequence: string, row: Row): Grant {
  const column = columnsOf(sequence, row);
  return {
    number: column('grant_number', toNumber),
    min: column('grant_min', toBigInt),
    max: column('grant_max', toBigInt),
  };
}

export function parseDcState(sequence: string, row: Row): DcState {
  const column = columnsOf(sequence, row);
  // Absent in a rejected update's found state.
  const incarnation = toText(row.get('incarnation'));
  return {
    ...(incarnation === undefined ? {} : { incarnation }),
    lastInteger: column('last_integer', toBigInt),
    reservedMin: column('reserved_min', toBigInt),
    reservedMax: column('reserved_max', toBigInt),
    reservedGrant: column('reserved_grant', toNumber),
    preloadedMin: column('preloaded_min', toBigInt),
    preloadedMax: column('preloaded_max', toBigInt),
    installedGrant: column('installed_grant', toNumber),
    version: column('version', toSafeNumber),
    op: column('op', toText),
  };
}

/** The state a rejected DC-state write returns (statements.ts), or undefined for no row. */
export function parseFoundState(sequence: string, rows: readonly Row[]): DcState | undefined {
  const version: unknown = rows[0]?.get('version');
  return version === null || version === undefined ? undefined : parseDcState(sequence, rows[0]!);
}

export function parseFoundGrant(
  sequence: string,
  dc: string,
  number: number,
  rows: readonly Row[],
): GrantFound {
  let globalLast: bigint | undefined;
  let grant: Grant | undefined;
  for (const row of rows) {
    const rowDc = row.get('dc') as unknown;
    if (rowDc === GLOBAL) {
      globalLast = toBigInt(row.get('last_integer'));
    } else if (rowDc === dc && toNumber(row.get('grant_number')) === number) {
      grant = parseGrant(sequence, row);
    }
  }
  return { globalLast, grant };
}

export function parseFoundSettings(rows: readonly Row[]): StoredSettings | undefined {
  const row = rows[0];
  if (row === undefined || toText(row.get('settings_op')) === undefined) return undefined;
  return parseSettings(row);
}

/** A reader of `row`'s columns that throws {@link InvariantError} for a missing one. */
export function columnsOf(sequence: string, row: Row) {
  return <T>(column: string, convert: (value: unknown) => T | undefined): T => {
    const value = convert(row.get(column));
    if (value === undefined) {
      throw new InvariantError(
        sequence,
        `column ${column} is missing or malformed in a stored row`,
      );
    }
    return value;
  };
}

export function toBigInt(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value; // a client with encoding.useBigIntAsLong
  if (cassandra.types.Long.isLong(value)) return BigInt(value.toString());
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return undefined;
}

/** A CQL bigint as a number, if it is one from 0 to 2^53 - 1. */
function toSafeNumber(value: unknown): number | undefined {
  const n = toBigInt(value);
  return n !== undefined && n >= 0n && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : undefined;
}

function toNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function toText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The DCs of a replication map with a factor above 0 (`3/1` counts 3), sorted; undefined unless
 * NetworkTopologyStrategy.
 */
export function replicaDcsOf(replication: Readonly<Record<string, string>>): string[] | undefined {
  if (!/(^|\.)NetworkTopologyStrategy$/.test(replication['class'] ?? '')) return undefined;
  return Object.entries(replication)
    .filter(([key, factor]) => key !== 'class' && Number.parseInt(factor, 10) > 0)
    .map(([dc]) => dc)
    .sort(ascending);
}
