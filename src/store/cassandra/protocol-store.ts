/** The allocator's half of the Cassandra store: each method one or two statements. */

import { SequenceNotFoundError } from '../../errors.js';
import { ascending } from '../../order.js';
import type {
  CasOutcome,
  DcStamp,
  DcState,
  FirstGrant,
  Grant,
  GrantFound,
  GrantView,
  ProtocolStore,
  SequenceSettings,
  SizeSettings,
  StoredSettings,
  UsageDeltas,
} from '../port.js';
import { USAGE_CAUSES } from '../port.js';
import {
  GLOBAL,
  parseDcState,
  parseFoundGrant,
  parseFoundSettings,
  parseFoundState,
  parseGrant,
  parseSettings,
  replicaDcsOf,
  required,
  toBigInt,
} from './rows.js';
import { CassandraSession, checkDc, mutatedGrantBatch } from './session.js';
import { GRANT_BATCH, STATEMENTS } from './statements.js';

/**
 * {@link ProtocolStore} on Cassandra. Statements name their keyspace, so the client may be
 * shared. The DC-level methods accept only the client's own local DC: a LOCAL_SERIAL round
 * coordinated elsewhere would use another DC's quorum for the same partition.
 */
export class CassandraProtocolStore extends CassandraSession implements ProtocolStore {
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
    // Grant first, GLOBAL second, so GLOBAL covers the grant read (design.md, "Granting a DC
    // range").
    const latestRow = await this.readRow('readLatestGrant', [sequence, dc], 'read grants');
    const globalRow = await this.readRow('readGlobal', [sequence], 'read grants');
    if (globalRow === undefined) throw new SequenceNotFoundError(sequence, this.keyspace);
    return {
      globalLast: required(sequence, globalRow, 'last_integer', toBigInt),
      latest: latestRow && parseGrant(sequence, latestRow),
    };
  }

  async readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined> {
    checkDc(dc);
    let globalLast: bigint | undefined;
    let latest: Grant | undefined;
    // Every page: a DC whose state was lost may have many grants.
    await this.readEach('readGrantsLocal', [sequence, dc], 'read grants locally', (row) => {
      if (row.get('dc') === GLOBAL) {
        globalLast = required(sequence, row, 'last_integer', toBigInt);
      } else {
        const grant = parseGrant(sequence, row);
        if (latest === undefined || grant.number > latest.number) latest = grant;
      }
    });
    return globalLast === undefined ? undefined : { globalLast, latest };
  }

  async grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>> {
    checkDc(dc);
    if (!Number.isInteger(grant.number) || grant.number < 1 || grant.max < grant.min) {
      throw new RangeError(
        `grantRange: grant ${grant.number} [${grant.min}, ${grant.max}] must be numbered 1, 2, … with min <= max`,
      );
    }
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
      STATEMENTS[global],
      'grant a DC range',
    );
    return outcome.kind === 'rejected'
      ? { kind: 'rejected', found: parseFoundGrant(sequence, dc, grant.number, outcome.rows) }
      : outcome;
  }

  async readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    this.checkLocalDc(dc);
    return this.readDcStateBy('readDcState', sequence, dc, 'read DC state');
  }

  async readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined> {
    this.checkLocalDc(dc);
    return this.readDcStateBy('readDcStateLocal', sequence, dc, 'read DC state (plain)');
  }

  async writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>> {
    this.checkLocalDc(dc);
    if (next.version !== (expected?.version ?? 0) + 1) {
      throw new RangeError(
        `writeDcState: version must grow by one (expected ${expected?.version ?? 0}, next ${next.version})`,
      );
    }
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
    const operation = 'add to usage counters';
    // Not idempotent: the driver never resends it; the caller decides.
    await Promise.all(
      USAGE_CAUSES.filter((cause) => (deltas[cause] ?? 0) > 0).map((cause) => {
        const params = [this.long(BigInt(deltas[cause] ?? 0)), sequence, dc, cause];
        return this.run('addDcUsage', params, operation, true);
      }),
    );
  }

  /** The states of `dcs` found by `statement`, one read each; a DC without a row is left out. */
  protected async readDcStates(
    statement: 'dcStateOverview' | 'dcStateConsistent',
    sequence: string,
    dcs: readonly string[],
    operation: string,
  ): Promise<Map<string, DcState>> {
    const found = await Promise.all(
      dcs.map(async (dc) => [dc, await this.readDcStateBy(statement, sequence, dc, operation)]),
    );
    return new Map(found.filter((entry): entry is [string, DcState] => entry[1] !== undefined));
  }

  private async readDcStateBy(
    statement: 'readDcState' | 'readDcStateLocal' | 'dcStateOverview' | 'dcStateConsistent',
    sequence: string,
    dc: string,
    operation: string,
  ): Promise<DcState | undefined> {
    const row = await this.readRow(statement, [sequence, dc], operation);
    return row && parseDcState(sequence, row);
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
}
