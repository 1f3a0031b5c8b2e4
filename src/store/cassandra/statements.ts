/**
 * The protocol's CQL: every statement with its consistency, on one screen (docs/design.md,
 * "Statements and their consistency").
 *
 * `idgen_grants` partitions are written only at SERIAL (and read there but for one plain read of
 * committed grant rows), `idgen_dc_state` partitions only at
 * LOCAL_SERIAL and only from their own DC; the rest are plain reads for settings and status, and
 * the usage counters. `$grants`, `$dc_state` and `$dc_usage` become the keyspace-qualified tables.
 */

import cassandra from 'cassandra-driver';

import type { StoreLevel } from '../port.js';

const CL = cassandra.types.consistencies;

/** One statement of the protocol. */
export interface Statement {
  readonly cql: string;
  /** Regular consistency: the read's level, or the Paxos commit level of a conditional write. */
  readonly consistency: cassandra.types.consistencies;
  /** Serial consistency of a conditional write (its Paxos level); absent for reads. */
  readonly serial?: cassandra.types.consistencies;
  /** The level a failure of this statement is reported at. */
  readonly level: StoreLevel;
  /**
   * A read whose rows must all come in one page: each page of a read is a query of its own (of
   * a SERIAL read, a Paxos round of its own), so pages can show the partition at different
   * moments, and some callers read only the first.
   */
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

/** The partition `probeSerial` reads: no sequence can have this name (names are `[A-Za-z0-9_]`). */
export const SERIAL_PROBE_PARTITION = '~serial-probe';

// prettier-ignore
export const STATEMENTS = {
  // ── settings + GLOBAL row (dc 'GLOBAL', grant_number 0): one statement, so a sequence never exists without its high-water mark
  createSequence: { cql: `INSERT INTO $grants (${SETTINGS}, dc, grant_number, last_integer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'GLOBAL', 0, ?) IF NOT EXISTS`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  // grant 1 of a grantee, written with createSequence in one conditional batch (one partition) when the sequence is created with first ranges
  createFirstGrant: { cql: `INSERT INTO $grants (sequence, dc, grant_number, grant_min, grant_max) VALUES (?, ?, 1, ?, ?)`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  // conditional on the op of the settings read, so two alters never combine unchecked; the settings are static columns
  alterSequence:  { cql: `UPDATE $grants SET dc_range_size = ?, block_size = ?, threshold = ?, max_block_size = ?, claim_interval_ms = ?, max_dc_range_size = ?, autonomy_seconds = ?, shards = ?, settings_op = ? WHERE sequence = ? IF settings_op = ?`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  // the GLOBAL row's last_integer is selected too: Cassandra refuses a clustering restriction with only static columns
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
  // a plain read, no Paxos round, of a DC's grants and GLOBAL in one query (so one replica's rows are one snapshot): committed grant rows never change (a DC's first range, granted at creation)
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
  // The conditions after `op` hold on every state row (no column is ever null): they are there
  // because a rejected write returns the columns named in its conditions, so it returns the whole
  // state the round found, and a claim that lost its race goes on from it without a read.
  updateDcState:  { cql: `UPDATE $dc_state SET last_integer = ?, reserved_min = ?, reserved_max = ?, reserved_grant = ?, preloaded_min = ?, preloaded_max = ?, installed_grant = ?, version = ?, op = ? WHERE sequence = ? AND dc = ? IF version = ? AND op = ? ${EVERY_STATE_ROW}`,
                    consistency: CL.localQuorum, serial: CL.localSerial, level: 'local_serial' },
  // ── status / check. Local: plain reads at LOCAL_QUORUM, which work inside a partition (the settings read
  //    before them needs a local quorum anyway) and see what the local DC committed (a create's or a grant's
  //    EACH_QUORUM, a claim's LOCAL_QUORUM); other DCs' rows may lag.
  //    Consistent (check): grants at SERIAL; a DC's state at EACH_QUORUM, which includes that DC's own quorum
  grantsOverview: { cql: `SELECT ${GRANT_ROW} FROM $grants WHERE sequence = ?`,
                    consistency: CL.localQuorum, level: 'local' },
  grantsConsistent: { cql: `SELECT ${GRANT_ROW} FROM $grants WHERE sequence = ?`,
                    consistency: CL.serial, level: 'serial', onePage: true },
  dcStateOverview:{ cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.localQuorum, level: 'local' },
  dcStateConsistent: { cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.eachQuorum, level: 'local' },
  // ── usage counters: plain counter writes and reads, outside the protocol (no ID depends on them);
  //    a counter write is never resent (a resend after a timeout would count twice)
  addDcUsage:     { cql: `UPDATE $dc_usage SET ids = ids + ? WHERE sequence = ? AND dc = ? AND cause = ?`,
                    consistency: CL.localOne, level: 'local' },
  readDcUsage:    { cql: `SELECT dc, cause, ids FROM $dc_usage WHERE sequence = ?`,
                    consistency: CL.localOne, level: 'local', onePage: true },
  // ── a node's own settings, asked of each node (virtual and schema tables answer for their coordinator only); admin/preflight.ts says why each matters
  nodeSettings:   { cql: `SELECT name, value FROM system_views.settings WHERE name IN ('commitlog_sync', 'commitlog_sync_period', 'commitlog_sync_group_window', 'commit_failure_policy', 'paxos_variant', 'paxos_state_purging', 'paxos_on_linearizability_violations', 'paxos_repair_enabled', 'skip_paxos_repair_on_topology_change')`,
                    consistency: CL.localOne, level: 'local' },
  nodeProperties: { cql: `SELECT name, value FROM system_views.system_properties WHERE name IN ('cassandra.unsafe.disable-serial-reads-linearizability', 'cassandra.commitlog.ignorereplayerrors')`,
                    consistency: CL.localOne, level: 'local' },
  nodeTables:     { cql: `SELECT table_name, gc_grace_seconds, default_time_to_live FROM system_schema.tables WHERE keyspace_name = ? AND table_name IN ('idgen_grants', 'idgen_dc_state')`,
                    consistency: CL.localOne, level: 'local' },
  // the keyspace's replication map (its class and, under NetworkTopologyStrategy, a factor per DC): the DCs a new sequence grants first ranges to unless told
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
} as const satisfies {
  readonly statements: readonly StatementName[];
  readonly consistency: cassandra.types.consistencies;
  readonly serial: cassandra.types.consistencies;
  readonly level: StoreLevel;
};

/** The consistency's CQL name, for messages (the driver's enum has no reverse mapping). */
export function levelOf(consistency: cassandra.types.consistencies): string {
  const names: Partial<Record<number, string>> = {
    [CL.serial]: 'SERIAL',
    [CL.localSerial]: 'LOCAL_SERIAL',
    [CL.localQuorum]: 'LOCAL_QUORUM',
    [CL.localOne]: 'LOCAL_ONE',
    [CL.eachQuorum]: 'EACH_QUORUM',
    [CL.quorum]: 'QUORUM',
  };
  return names[consistency] ?? `consistency ${consistency}`;
}
