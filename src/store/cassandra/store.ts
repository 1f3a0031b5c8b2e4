/**
 * The Cassandra adapter of the storage port: the protocol's methods, each one or two statements,
 * and the admin reads, which no ID depends on. Statements name their keyspace, so the client may
 * be shared. The DC-level methods accept only the client's own local DC: a LOCAL_SERIAL round
 * coordinated elsewhere would use another DC's quorum for the same partition.
 */

import cassandra from 'cassandra-driver';

import { SequenceNotFoundError } from '../../errors.js';
import { granteesOf } from '../../names.js';
import { ascending } from '../../order.js';
import {
  byGrantNumber,
  checkDcStateWrite,
  checkGrant,
  USAGE_CAUSES,
  zeroUsageCounts,
  type CasOutcome,
  type DcStamp,
  type DcState,
  type DcUsageCounts,
  type FirstGrant,
  type Grant,
  type GrantFound,
  type GrantsOverview,
  type GrantView,
  type IdStore,
  type NodeSettings,
  type OverviewReading,
  type SequenceSettings,
  type SizeSettings,
  type StoredSettings,
  type TableSettings,
  type UsageCause,
  type UsageDeltas,
} from '../port.js';
import { describeDriverError } from './errors.js';
import { NEVER_RETRY, requestOptions } from './request-options.js';
import {
  GLOBAL,
  parseDcState,
  parseFoundGrant,
  parseFoundSettings,
  parseFoundState,
  parseGrant,
  parseSettings,
  replicaDcsOf,
  columnsOf,
  toBigInt,
  toText,
} from './rows.js';
import { CassandraSession, checkDc, mutatedGrantBatch } from './session.js';
import { GRANT_BATCH, STATEMENTS, type StatementName } from './statements.js';

export type { CassandraStoreOptions } from './session.js';

export class CassandraStore extends CassandraSession implements IdStore {
  async createSequence(
    settings: SequenceSettings,
    op: string,
    firstGrants: readonly FirstGrant[] = [],
  ): Promise<CasOutcome<StoredSettings>> {
    const params = [
      settings.name,
      settings.domain,
      this.long(settings.min),
      this.long(settings.max),
      this.long(settings.start),
      ...this.sizeParams(settings),
      op,
      op, // the incarnation: this create's op, which alters replace in settings_op only
      this.long(firstGrants.at(-1)?.grant.max ?? settings.start - 1n),
    ];
    const operation = 'create sequence';
    // The first grants go in one conditional batch with the create (one partition).
    const outcome =
      firstGrants.length === 0
        ? await this.cas('createSequence', operation, params)
        : await this.casBatch(
            [
              { query: 'createSequence', params },
              ...firstGrants.map(({ grantee, grant }) => {
                checkDc(grantee);
                return {
                  query: 'createFirstGrant' as const,
                  params: [settings.name, grantee, this.long(grant.min), this.long(grant.max)],
                };
              }),
            ],
            STATEMENTS.createSequence,
            operation,
          );
    return outcome.kind === 'rejected'
      ? { kind: 'rejected', found: parseFoundSettings(outcome.rows) }
      : outcome;
  }

  async readSequence(
    name: string,
    reading: 'local' | 'serial' = 'local',
  ): Promise<StoredSettings | undefined> {
    const statement = reading === 'serial' ? 'readSequenceSerial' : 'readSequence';
    const row = await this.readRow(statement, [name], 'read sequence');
    return row && parseSettings(row);
  }

  async listSequences(): Promise<readonly SequenceSettings[]> {
    const sequences: SequenceSettings[] = [];
    await this.readEach('listSequences', [], 'list sequences', (row) =>
      sequences.push(parseSettings(row).settings),
    );
    return sequences.sort((a, b) => ascending(a.name, b.name));
  }

  async alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>> {
    const params = [...this.sizeParams(sizes), op, name, expectedOp];
    const outcome = await this.cas('alterSequence', 'alter sequence', params);
    if (outcome.kind !== 'rejected') return outcome;
    // A rejected UPDATE returns only its condition's columns: read the rest at SERIAL (maybe a
    // later alter's; `op` is the round's).
    const found = outcome.rows[0]?.get('settings_op') as unknown;
    if (typeof found !== 'string') return { kind: 'rejected', found: undefined };
    const stored = await this.readSequence(name, 'serial');
    return {
      kind: 'rejected',
      found: stored && { settings: stored.settings, op: found, incarnation: stored.incarnation },
    };
  }

  async readReplicaDcs(): Promise<readonly string[] | undefined> {
    const row = await this.readRow('replicaDcs', [this.keyspace], 'read the keyspace replication');
    const replication = row?.get('replication') as Record<string, string> | undefined;
    return replication === undefined ? undefined : replicaDcsOf(replication);
  }

  async readGrants(sequence: string, dc: string): Promise<GrantView> {
    checkDc(dc);
    // Grant first, then GLOBAL, which covers it (design.md, "Granting a DC range").
    const latestRow = await this.readRow('readLatestGrant', [sequence, dc], 'read grants');
    const globalRow = await this.readRow('readGlobal', [sequence], 'read grants');
    if (globalRow === undefined) throw new SequenceNotFoundError(sequence, this.keyspace);
    return {
      globalLast: columnsOf(sequence, globalRow)('last_integer', toBigInt),
      latest: latestRow && parseGrant(sequence, latestRow),
    };
  }

  async readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined> {
    checkDc(dc);
    // Every page: a DC whose state was lost may have many grants.
    const found = await this.readGrantRows('readGrantsLocal', sequence, dc);
    return found && { globalLast: found.globalLast, latest: found.grants.get(dc)?.at(-1) };
  }

  async grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>> {
    checkDc(dc);
    checkGrant(grant);
    const [global, insert] = GRANT_BATCH.statements;
    const outcome = await this.casBatch(
      [
        { query: global, params: [this.long(grant.max), sequence, this.long(expectedGlobalLast)] },
        {
          query: insert,
          params: [sequence, dc, grant.number, this.long(grant.min), this.long(grant.max)],
        },
      ],
      mutatedGrantBatch(),
      'grant a DC range',
    );
    return outcome.kind === 'rejected'
      ? { kind: 'rejected', found: parseFoundGrant(sequence, dc, grant.number, outcome.rows) }
      : outcome;
  }

  async readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    this.checkLocalDc(dc);
    return (await this.readDcStates('readDcState', sequence, [dc], 'read DC state')).get(dc);
  }

  async readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined> {
    this.checkLocalDc(dc);
    const operation = 'read DC state (plain)';
    return (await this.readDcStates('readDcStateLocal', sequence, [dc], operation)).get(dc);
  }

  async writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>> {
    this.checkLocalDc(dc);
    checkDcStateWrite(expected, next);
    const columns = [
      this.long(next.lastInteger),
      this.long(next.reservedMin),
      this.long(next.reservedMax),
      next.reservedGrant,
      this.long(next.preloadedMin),
      this.long(next.preloadedMax),
      next.installedGrant,
      this.long(BigInt(next.version)),
      next.op,
    ];
    // The incarnation goes with the row's first write only: an update leaves it as it is.
    const outcome =
      expected === undefined
        ? await this.cas('createDcState', 'write DC state', [
            sequence,
            dc,
            ...columns,
            next.incarnation ?? null,
          ])
        : await this.cas('updateDcState', 'write DC state', [
            ...columns,
            sequence,
            dc,
            this.long(BigInt(expected.version)),
            expected.op,
          ]);
    return outcome.kind === 'rejected'
      ? { kind: 'rejected', found: parseFoundState(sequence, outcome.rows) }
      : outcome;
  }

  async readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>> {
    for (const dc of grantees) checkDc(dc);
    return this.readDcStates('dcStateOverview', sequence, grantees, 'read DC states');
  }

  async addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void> {
    // Not idempotent: the driver never resends it; the caller decides.
    await Promise.all(
      USAGE_CAUSES.filter((cause) => (deltas[cause] ?? 0) > 0).map((cause) => {
        const params = [this.long(BigInt(deltas[cause] ?? 0)), sequence, dc, cause];
        return this.run('addDcUsage', params, 'add to usage counters', true);
      }),
    );
  }

  async readGrantsOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<GrantsOverview | undefined> {
    const statement = reading === 'consistent' ? 'grantsConsistent' : 'grantsOverview';
    return this.readGrantRows(statement, sequence);
  }

  async readDcStatesOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<ReadonlyMap<string, DcState>> {
    const [overview, stored] = await Promise.all([
      this.readGrantsOverview(sequence),
      this.readSequence(sequence),
    ]);
    if (overview === undefined) return new Map();
    // Every shard of every DC of the cluster too: a state without a grant is what check must see.
    const clusterDcs = new Set(this.client.hosts?.values().map((host) => host.datacenter));
    const clusterGrantees = [...clusterDcs].flatMap((dc) =>
      typeof dc === 'string' ? granteesOf(dc, stored?.settings.shards ?? 1) : [],
    );
    const dcs = [...new Set([...overview.grants.keys(), ...clusterGrantees])]
      .filter((dc) => typeof dc === 'string' && dc !== '' && dc !== GLOBAL)
      .sort();
    const statement = reading === 'consistent' ? 'dcStateConsistent' : 'dcStateOverview';
    return this.readDcStates(statement, sequence, dcs, 'read DC states overview');
  }

  async readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts>> {
    const usage = new Map<string, Record<UsageCause, bigint>>();
    await this.readEach('readDcUsage', [sequence], 'read usage counters', (row) => {
      const dc = row.get('dc') as unknown;
      const cause = USAGE_CAUSES.find((c) => c === row.get('cause'));
      if (typeof dc !== 'string' || cause === undefined) return;
      const counts = usage.get(dc) ?? zeroUsageCounts();
      counts[cause] = toBigInt(row.get('ids')) ?? 0n;
      usage.set(dc, counts);
    });
    return usage;
  }

  async probeSerial(): Promise<void> {
    await this.run('probeSerial', [], 'probe SERIAL');
  }

  async readNodeSettings(): Promise<readonly NodeSettings[]> {
    const hosts = this.client.hosts.values().filter((host) => host.datacenter === this.localDc);
    return Promise.all(hosts.map((host) => this.readSettingsOf(host)));
  }

  /** GLOBAL and each DC's grants (ascending) in the rows read; undefined without GLOBAL. */
  private async readGrantRows(
    statement: 'readGrantsLocal' | 'grantsOverview' | 'grantsConsistent',
    sequence: string,
    dc?: string,
  ): Promise<GrantsOverview | undefined> {
    let globalLast: bigint | undefined;
    const grants = new Map<string, Grant[]>();
    const params = dc === undefined ? [sequence] : [sequence, dc];
    const operation = dc === undefined ? 'read grants overview' : 'read grants locally';
    await this.readEach(statement, params, operation, (row) => {
      const rowDc = row.get('dc') as unknown;
      if (rowDc === GLOBAL) {
        globalLast = columnsOf(sequence, row)('last_integer', toBigInt);
      } else if (typeof rowDc === 'string') {
        grants.set(rowDc, [...(grants.get(rowDc) ?? []), parseGrant(sequence, row)]);
      }
    });
    // Clustering order is newest first.
    for (const history of grants.values()) history.sort(byGrantNumber);
    return globalLast === undefined ? undefined : { globalLast, grants };
  }

  /** One read per DC; a DC without a row is left out. */
  private async readDcStates(
    statement: StatementName,
    sequence: string,
    dcs: readonly string[],
    operation: string,
  ): Promise<Map<string, DcState>> {
    const rows = await Promise.all(
      dcs.map((dc) => this.readRow(statement, [sequence, dc], operation)),
    );
    return new Map(
      dcs.flatMap((dc, i) => (rows[i] ? [[dc, parseDcState(sequence, rows[i])] as const] : [])),
    );
  }

  /** In the order createSequence and alterSequence both bind them. */
  private sizeParams(sizes: SizeSettings): unknown[] {
    return [
      this.long(sizes.dcRangeSize),
      sizes.blockSize,
      sizes.threshold,
      sizes.maxBlockSize,
      sizes.claimIntervalMs,
      this.long(sizes.maxDcRangeSize),
      this.long(BigInt(sizes.autonomySeconds)),
      sizes.shards,
    ];
  }

  /** Asked of the node itself (virtual tables answer for their coordinator); keeps a failure. */
  private async readSettingsOf(host: cassandra.Host): Promise<NodeSettings> {
    const ask = (name: StatementName, params: unknown[]) => {
      const statement = STATEMENTS[name];
      return this.client.execute(statement.cql, params, {
        ...requestOptions(statement, false, this.requestTimeoutMs),
        host,
        retry: NEVER_RETRY, // a retry would go to another node and answer for that one
      });
    };
    const node = {
      host: host.address,
      dc: host.datacenter,
      version: typeof host.cassandraVersion === 'string' ? host.cassandraVersion : undefined,
    };
    try {
      const [settings, properties, tables] = await Promise.all([
        ask('nodeSettings', []).then(nameValues),
        ask('nodeProperties', []).then(nameValues),
        ask('nodeTables', [this.keyspace]).then(tableSettings),
      ]);
      const commitlogSync = settings.get('commitlog_sync');
      const paxosVariant = settings.get('paxos_variant');
      return { ...node, commitlogSync, paxosVariant, settings, properties, tables };
    } catch (error) {
      const [settings, properties] = [new Map<string, string>(), new Map<string, string>()];
      const none = { commitlogSync: undefined, paxosVariant: undefined, settings, properties };
      return { ...node, ...none, tables: new Map(), error: describeDriverError(error) };
    }
  }
}

function nameValues(result: cassandra.types.ResultSet): Map<string, string> {
  const values = new Map<string, string>();
  for (const row of result.rows) {
    const name = toText(row.get('name'));
    const value = toText(row.get('value'));
    if (name !== undefined && value !== undefined) values.set(name, value);
  }
  return values;
}

function tableSettings(result: cassandra.types.ResultSet): Map<string, TableSettings> {
  const tables = new Map<string, TableSettings>();
  for (const row of result.rows) {
    const table = toText(row.get('table_name'));
    const gcGrace = row.get('gc_grace_seconds') as unknown;
    const ttl = row.get('default_time_to_live') as unknown;
    if (table !== undefined && typeof gcGrace === 'number' && typeof ttl === 'number') {
      tables.set(table, { gcGraceSeconds: gcGrace, defaultTtlSeconds: ttl });
    }
  }
  return tables;
}
