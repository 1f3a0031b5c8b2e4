/**
 * The protocol's CQL: every statement with its consistency, on one screen (docs/design.md,
 * "Statements and their consistency"). `$grants`, `$dc_state` and `$dc_usage` become the
 * keyspace-qualified tables.
 */

import cassandra from 'cassandra-driver';

import type { StoreLevel } from '../port.js';

const CL = cassandra.types.consistencies;

export interface Statement {
  readonly cql: string;
  /** The read's level, or a conditional write's commit level. */
  readonly consistency: cassandra.types.consistencies;
  /** A conditional write's Paxos level. */
  readonly serial?: cassandra.types.consistencies;
  /** The level a failure is reported at. */
  readonly level: StoreLevel;
  /** All rows in one page: each page is a query (a Paxos round) of its own. */
  readonly onePage?: true;
}

export const SETTINGS =
  'sequence, domain, min_id, max_id, start_id, dc_range_size, block_size, threshold, max_block_size, claim_interval_ms, max_dc_range_size, autonomy_seconds, shards, settings_op, incarnation';
const GRANT = 'dc, grant_number, grant_min, grant_max';
const GRANT_ROW = 'dc, grant_number, last_integer, grant_min, grant_max';
export const DC_STATE =
  'last_integer, reserved_min, reserved_max, reserved_grant, preloaded_min, preloaded_max, installed_grant, version, op, incarnation';

/** Conditions every DC-state row meets (see `updateDcState`). */
const EVERY_STATE_ROW = [
  'last_integer',
  'reserved_min',
  'reserved_max',
  'preloaded_min',
  'preloaded_max',
]
  .map((column) => `AND ${column} >= -9223372036854775808`)
  .concat(['reserved_grant', 'installed_grant'].map((column) => `AND ${column} >= -2147483648`))
  .join(' ');

/** A partition no sequence can have (names are `[A-Za-z0-9_]`). */
export const SERIAL_PROBE_PARTITION = '~serial-probe';

// prettier-ignore
export const STATEMENTS = {
  // ── settings + GLOBAL row (dc 'GLOBAL', grant_number 0) in one statement
  createSequence: { cql: `INSERT INTO $grants (${SETTINGS}, dc, grant_number, last_integer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'GLOBAL', 0, ?) IF NOT EXISTS`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  // a grantee's grant 1, in one conditional batch with createSequence
  createFirstGrant: { cql: `INSERT INTO $grants (sequence, dc, grant_number, grant_min, grant_max) VALUES (?, ?, 1, ?, ?)`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  alterSequence:  { cql: `UPDATE $grants SET dc_range_size = ?, block_size = ?, threshold = ?, max_block_size = ?, claim_interval_ms = ?, max_dc_range_size = ?, autonomy_seconds = ?, shards = ?, settings_op = ? WHERE sequence = ? IF settings_op = ?`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  // last_integer too: Cassandra refuses a clustering restriction with only static columns
  readSequence:   { cql: `SELECT ${SETTINGS}, last_integer FROM $grants WHERE sequence = ? AND dc = 'GLOBAL' AND grant_number = 0`,
                    consistency: CL.localQuorum, level: 'local' },
  readSequenceSerial: { cql: `SELECT ${SETTINGS}, last_integer FROM $grants WHERE sequence = ? AND dc = 'GLOBAL' AND grant_number = 0`,
                    consistency: CL.serial, level: 'serial' },
  listSequences:  { cql: `SELECT DISTINCT ${SETTINGS} FROM $grants`,
                    consistency: CL.localQuorum, level: 'local' },
  // ── grant level: SERIAL only. readGrants = readLatestGrant, THEN readGlobal (design.md: this order matters)
  readLatestGrant:{ cql: `SELECT ${GRANT} FROM $grants WHERE sequence = ? AND dc = ? LIMIT 1`,
                    consistency: CL.serial, level: 'serial' },
  readGlobal:     { cql: `SELECT last_integer FROM $grants WHERE sequence = ? AND dc = 'GLOBAL' AND grant_number = 0`,
                    consistency: CL.serial, level: 'serial' },
  // grantRange is the conditional batch of these two statements: one partition, both conditions must hold
  grantGlobal:    { cql: `UPDATE $grants SET last_integer = ? WHERE sequence = ? AND dc = 'GLOBAL' AND grant_number = 0 IF last_integer = ?`,
                    consistency: CL.quorum, serial: CL.serial, level: 'serial' },
  grantInsert:    { cql: `INSERT INTO $grants (sequence, dc, grant_number, grant_min, grant_max) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS`,
                    consistency: CL.quorum, serial: CL.serial, level: 'serial' },
  // plain, one query, so one snapshot (design.md, "A DC's first range, granted at creation")
  readGrantsLocal:{ cql: `SELECT ${GRANT_ROW} FROM $grants WHERE sequence = ? AND dc IN ('GLOBAL', ?)`,
                    consistency: CL.localQuorum, level: 'local' },
  probeSerial:    { cql: `SELECT last_integer FROM $grants WHERE sequence = '${SERIAL_PROBE_PARTITION}'`,
                    consistency: CL.serial, level: 'serial' },
  // ── DC level: LOCAL_SERIAL only, from the DC itself. Conditional on version AND op, so a rejection returns both
  readDcState:    { cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.localSerial, level: 'local_serial' },
  readDcStateLocal: { cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.localQuorum, level: 'local' },
  createDcState:  { cql: `INSERT INTO $dc_state (sequence, dc, ${DC_STATE}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
                    consistency: CL.localQuorum, serial: CL.localSerial, level: 'local_serial' },
  // The conditions after `op` always hold: they make a rejection return the whole state found.
  updateDcState:  { cql: `UPDATE $dc_state SET last_integer = ?, reserved_min = ?, reserved_max = ?, reserved_grant = ?, preloaded_min = ?, preloaded_max = ?, installed_grant = ?, version = ?, op = ? WHERE sequence = ? AND dc = ? IF version = ? AND op = ? ${EVERY_STATE_ROW}`,
                    consistency: CL.localQuorum, serial: CL.localSerial, level: 'local_serial' },
  // ── status / check: local (LOCAL_QUORUM, may lag) or consistent (SERIAL; EACH_QUORUM includes each DC's quorum)
  grantsOverview: { cql: `SELECT ${GRANT_ROW} FROM $grants WHERE sequence = ?`,
                    consistency: CL.localQuorum, level: 'local' },
  grantsConsistent: { cql: `SELECT ${GRANT_ROW} FROM $grants WHERE sequence = ?`,
                    consistency: CL.serial, level: 'serial', onePage: true },
  dcStateOverview:{ cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.localQuorum, level: 'local' },
  dcStateConsistent: { cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.eachQuorum, level: 'local' },
  // ── usage counters, outside the protocol; a counter write is never resent
  addDcUsage:     { cql: `UPDATE $dc_usage SET ids = ids + ? WHERE sequence = ? AND dc = ? AND cause = ?`,
                    consistency: CL.localOne, level: 'local' },
  readDcUsage:    { cql: `SELECT dc, cause, ids FROM $dc_usage WHERE sequence = ?`,
                    consistency: CL.localOne, level: 'local', onePage: true },
  // ── a node's own settings, asked of each node; admin/preflight.ts says why each matters
  nodeSettings:   { cql: `SELECT name, value FROM system_views.settings WHERE name IN ('commitlog_sync', 'commitlog_sync_period', 'commitlog_sync_group_window', 'commit_failure_policy', 'paxos_variant', 'paxos_state_purging', 'paxos_on_linearizability_violations', 'paxos_repair_enabled', 'skip_paxos_repair_on_topology_change')`,
                    consistency: CL.localOne, level: 'local' },
  nodeProperties: { cql: `SELECT name, value FROM system_views.system_properties WHERE name IN ('cassandra.unsafe.disable-serial-reads-linearizability', 'cassandra.commitlog.ignorereplayerrors')`,
                    consistency: CL.localOne, level: 'local' },
  nodeTables:     { cql: `SELECT table_name, gc_grace_seconds, default_time_to_live FROM system_schema.tables WHERE keyspace_name = ? AND table_name IN ('idgen_grants', 'idgen_dc_state')`,
                    consistency: CL.localOne, level: 'local' },
  replicaDcs:     { cql: `SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`,
                    consistency: CL.localOne, level: 'local' },
} as const satisfies Record<string, Statement>;

export type StatementName = keyof typeof STATEMENTS;

/** The conditional batch of a grant: GLOBAL moves from G to G' and the grant row is inserted. */
export const GRANT_BATCH = {
  statements: ['grantGlobal', 'grantInsert'],
  consistency: CL.quorum,
  serial: CL.serial,
  level: 'serial',
} as const satisfies Required<Omit<Statement, 'cql' | 'onePage'>> & {
  readonly statements: readonly StatementName[];
};

/** The consistency's CQL name (`localQuorum` is LOCAL_QUORUM), for messages. */
export function levelOf(consistency: cassandra.types.consistencies): string {
  const name = Object.entries(CL).find(([, value]) => value === consistency)?.[0];
  return name?.replace(/[A-Z]/g, '_$&').toUpperCase() ?? `consistency ${consistency}`;
}
