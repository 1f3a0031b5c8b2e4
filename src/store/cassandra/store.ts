/**
 * The Cassandra adapter of the storage port; executes statements.ts with request-options.ts.
 * Every statement carries its own execution options, so nothing of a user's client (retry policy,
 * speculative execution, idempotence, timeout, consistency) reaches the protocol: conditional
 * writes are never resent by the driver, and every DC-state statement is checked to have been
 * coordinated in its DC.
 */

import cassandra from 'cassandra-driver';

import { localDataCenterOf, routingPolicyOf } from './client-routing.js';
import { encodesBigIntAsLong } from './driver-client.js';
import {
  IdGenError,
  InvalidNameError,
  InvalidOptionError,
  InvariantError,
  SequenceNotFoundError,
} from '../../errors.js';
import { mutated } from '../../mutations.js';
import { dcOfGrantee, granteesOf } from '../../names.js';
import { validateName } from '../../options.js';
import { AvoidStalledCoordinatorsPolicy, StalledCoordinators } from './stalled-coordinators.js';
import { ascending } from '../../order.js';
import { mapFailure } from './errors.js';
import { readNodeSettingsOf } from './node-settings.js';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  requestOptions,
  retryReadsOnceElsewhere,
} from './request-options.js';
import {
  GLOBAL,
  replicaDcsOf,
  parseDcState,
  parseFoundGrant,
  parseFoundSettings,
  parseFoundState,
  parseGrant,
  parseSettings,
  required,
  toBigInt,
} from './rows.js';
import { GRANT_BATCH, STATEMENTS, type Statement, type StatementName } from './statements.js';
import type {
  CasOutcome,
  DcStamp,
  DcState,
  FirstGrant,
  Grant,
  GrantFound,
  GrantsOverview,
  GrantView,
  IdStore,
  NodeSettings,
  OverviewReading,
  SequenceSettings,
  SizeSettings,
  StoredSettings,
  DcUsageCounts,
  UsageCause,
  UsageDeltas,
} from '../port.js';
import { USAGE_CAUSES, zeroUsageCounts } from '../port.js';

const CL = cassandra.types.consistencies;

/** Options of {@link CassandraStore}. */
export interface CassandraStoreOptions {
  readonly ownsClient: boolean;
  /** Timeout of each request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number | undefined;
}

/**
 * {@link IdStore} on Cassandra. Statements name their keyspace, so the client may be shared.
 * The DC-level methods accept only the client's own local DC: a LOCAL_SERIAL round coordinated
 * elsewhere would use another DC's quorum for the same partition.
 */
export class CassandraStore implements IdStore {
  private readonly cql: Readonly<Record<StatementName, string>>;
  private readonly localDc: string;
  private readonly long: (value: bigint) => bigint | string;
  private readonly requestTimeoutMs: number;
  /** Coordinators that let a request time out, tried last by a client we built. */
  private readonly stalled: StalledCoordinators;
  private readonly retryReads: cassandra.policies.retry.RetryPolicy;

  /**
   * @param client a client whose load balancing is DC-aware (see `openClient`).
   * @param keyspace the keyspace holding `idgen_grants` and `idgen_dc_state` (case-sensitive).
   * @param options `ownsClient`: `close()` shuts the client down; `requestTimeoutMs`.
   * @throws {@link InvalidNameError} for a bad keyspace name.
   * @throws {@link InvalidOptionError} when the client has no local datacenter.
   */
  constructor(
    private readonly client: cassandra.Client,
    private readonly keyspace: string,
    private readonly options: CassandraStoreOptions,
  ) {
    validateName('keyspace', keyspace);
    const localDc = localDataCenterOf(client);
    if (localDc === undefined) {
      throw new InvalidOptionError(
        'client',
        'a Client without a local datacenter',
        'a Client with a DC-aware load-balancing policy (set its "localDataCenter" option)',
      );
    }
    this.localDc = localDc;
    this.long = bigintEncoder(client);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const policy = routingPolicyOf(client);
    this.stalled =
      policy instanceof AvoidStalledCoordinatorsPolicy ? policy.stalled : new StalledCoordinators();
    this.retryReads = retryReadsOnceElsewhere((error) => this.stalled.markTimedOut(error));
    const tables: Record<string, string> = {
      $grants: `"${keyspace}".idgen_grants`,
      $dc_state: `"${keyspace}".idgen_dc_state`,
      $dc_usage: `"${keyspace}".idgen_dc_usage`,
    };
    const entries = Object.entries(STATEMENTS).map(([name, statement]) => [
      name,
      statement.cql.replace(/\$grants|\$dc_state|\$dc_usage/g, (table) => tables[table] ?? table),
    ]);
    this.cql = Object.freeze(Object.fromEntries(entries) as Record<StatementName, string>);
  }

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
      this.long(settings.dcRangeSize),
      settings.blockSize,
      settings.threshold,
      settings.maxBlockSize,
      settings.claimIntervalMs,
      this.long(settings.maxDcRangeSize),
      this.long(BigInt(settings.autonomySeconds)),
      settings.shards,
      op,
      op, // the incarnation: this create's op, which alters replace in settings_op only
      this.long(firstGrants.at(-1)?.grant.max ?? settings.start - 1n),
    ];
    const outcome =
      firstGrants.length === 0
        ? await this.cas('createSequence', 'create sequence', params)
        : await this.createWithGrants(settings.name, params, firstGrants);
    return outcome.kind === 'rejected'
      ? { kind: 'rejected', found: parseFoundSettings(outcome.rows) }
      : outcome;
  }

  async readSequence(
    name: string,
    reading: 'local' | 'serial' = 'local',
  ): Promise<StoredSettings | undefined> {
    const statement = reading === 'serial' ? 'readSequenceSerial' : 'readSequence';
    const result = await this.read(statement, [name], 'read sequence');
    const row = result.first() as cassandra.types.Row | null;
    return row === null ? undefined : parseSettings(row);
  }

  async listSequences(): Promise<readonly SequenceSettings[]> {
    const result = await this.read('listSequences', [], 'list sequences');
    const sequences: SequenceSettings[] = [];
    try {
      for await (const row of result) sequences.push(parseSettings(row).settings); // every page
    } catch (error) {
      throw this.failure(error, 'listSequences', 'list sequences'); // a later page failed
    }
    return sequences.sort((a, b) => ascending(a.name, b.name));
  }

  async alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>> {
    const outcome = await this.cas('alterSequence', 'alter sequence', [
      this.long(sizes.dcRangeSize),
      sizes.blockSize,
      sizes.threshold,
      sizes.maxBlockSize,
      sizes.claimIntervalMs,
      this.long(sizes.maxDcRangeSize),
      this.long(BigInt(sizes.autonomySeconds)),
      sizes.shards,
      op,
      name,
      expectedOp,
    ]);
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

  async readGrants(sequence: string, dc: string): Promise<GrantView> {
    checkDc(dc);
    // Grant first, GLOBAL second, so GLOBAL covers the grant read (design.md, "Granting a DC
    // range").
    const latestRow = (
      await this.read('readLatestGrant', [sequence, dc], 'read grants')
    ).first() as cassandra.types.Row | null;
    const globalRow = (
      await this.read('readGlobal', [sequence], 'read grants')
    ).first() as cassandra.types.Row | null;
    if (globalRow === null) throw new SequenceNotFoundError(sequence, this.keyspace);
    return {
      globalLast: required(sequence, globalRow, 'last_integer', toBigInt),
      latest: latestRow === null ? undefined : parseGrant(sequence, latestRow),
    };
  }

  async readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined> {
    checkDc(dc);
    const statement = 'readGrantsLocal';
    const result = await this.read(statement, [sequence, dc], 'read grants locally');
    let globalLast: bigint | undefined;
    let latest: Grant | undefined;
    try {
      for await (const row of result) {
        // every page: a DC whose state was lost may have many grants
        if (row.get('dc') === GLOBAL) {
          globalLast = required(sequence, row, 'last_integer', toBigInt);
        } else {
          const grant = parseGrant(sequence, row);
          if (latest === undefined || grant.number > latest.number) latest = grant;
        }
      }
    } catch (error) {
      throw this.failure(error, statement, 'read grants locally');
    }
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
    const queries = [
      {
        query: this.cql[global],
        params: [this.long(grant.max), sequence, this.long(expectedGlobalLast)],
      },
      {
        query: this.cql[insert],
        params: [sequence, dc, grant.number, this.long(grant.min), this.long(grant.max)],
      },
    ];
    let result: cassandra.types.ResultSet;
    try {
      result = await this.client.batch(queries, {
        ...requestOptions(mutatedGrantBatch(), true, this.requestTimeoutMs),
        logged: true,
      });
    } catch (error) {
      this.stalled.markTimedOut(error);
      return this.casFailure(error, STATEMENTS[global], 'grant a DC range');
    }
    if (result.wasApplied()) return APPLIED;
    return { kind: 'rejected', found: parseFoundGrant(sequence, dc, grant.number, result.rows) };
  }

  async readGrantsOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<GrantsOverview | undefined> {
    const statement = reading === 'consistent' ? 'grantsConsistent' : 'grantsOverview';
    const result = await this.read(statement, [sequence], 'read grants overview');
    let globalLast: bigint | undefined;
    const grants = new Map<string, Grant[]>();
    try {
      for await (const row of result) {
        // fetches every page: the history grows by one row per grant
        const rowDc = row.get('dc') as unknown;
        if (rowDc === GLOBAL) {
          globalLast = required(sequence, row, 'last_integer', toBigInt);
        } else if (typeof rowDc === 'string') {
          const history = grants.get(rowDc) ?? [];
          history.push(parseGrant(sequence, row));
          grants.set(rowDc, history);
        }
      }
    } catch (error) {
      throw this.failure(error, statement, 'read grants overview'); // a malformed row, or a later page failed
    }
    if (globalLast === undefined) return undefined;
    // Clustering order is newest first; the overview is ascending.
    for (const history of grants.values()) history.sort((a, b) => a.number - b.number);
    return { globalLast, grants };
  }

  readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    return this.readOneDcState('readDcState', sequence, dc, 'read DC state');
  }

  readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined> {
    return this.readOneDcState('readDcStateLocal', sequence, dc, 'read DC state (plain)');
  }

  /** `dc`'s state by `statement` (at LOCAL_SERIAL, or plain), undefined if there is no row. */
  private async readOneDcState(
    statement: 'readDcState' | 'readDcStateLocal',
    sequence: string,
    dc: string,
    label: string,
  ): Promise<DcState | undefined> {
    this.checkLocalDc(dc);
    const result = await this.read(statement, [sequence, dc], label);
    const row = result.first() as cassandra.types.Row | null;
    return row === null ? undefined : parseDcState(sequence, row);
  }

  async probeSerial(): Promise<void> {
    await this.read('probeSerial', [], 'probe SERIAL');
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
    const rows = await Promise.all(
      grantees.map(async (dc) => {
        checkDc(dc);
        const result = await this.read('dcStateOverview', [sequence, dc], 'read DC states');
        return [dc, result.first() as cassandra.types.Row | null] as const;
      }),
    );
    const states = new Map<string, DcState>();
    for (const [dc, row] of rows) if (row !== null) states.set(dc, parseDcState(sequence, row));
    return states;
  }

  async readDcStatesOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<ReadonlyMap<string, DcState>> {
    const statement = reading === 'consistent' ? 'dcStateConsistent' : 'dcStateOverview';
    const [overview, stored] = await Promise.all([
      this.readGrantsOverview(sequence),
      this.readSequence(sequence),
    ]);
    const states = new Map<string, DcState>();
    if (overview === undefined) return states;
    // Every grantee with a grant, plus every shard of every DC of the cluster: a state without a
    // grant (or whose grant this read does not see yet) is exactly what a check must get to see.
    const shards = stored?.settings.shards ?? 1;
    const clusterDcs = this.client.hosts?.values().map((host) => host.datacenter) ?? [];
    const clusterGrantees = [...new Set(clusterDcs)].flatMap((dc) =>
      typeof dc === 'string' ? granteesOf(dc, shards) : [],
    );
    const dcs = [...new Set([...overview.grants.keys(), ...clusterGrantees])]
      .filter((dc) => typeof dc === 'string' && dc !== '' && dc !== GLOBAL)
      .sort();
    const rows = await Promise.all(
      dcs.map(async (dc) => {
        const result = await this.read(statement, [sequence, dc], 'read DC states overview');
        return [dc, result.first() as cassandra.types.Row | null] as const;
      }),
    );
    for (const [dc, row] of rows) {
      if (row !== null) states.set(dc, parseDcState(sequence, row));
    }
    return states;
  }

  async addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void> {
    const statement = STATEMENTS.addDcUsage;
    const increments = USAGE_CAUSES.flatMap((cause) => {
      const delta = deltas[cause] ?? 0;
      return delta > 0 ? [[cause, delta] as const] : [];
    });
    await Promise.all(
      increments.map(async ([cause, delta]) => {
        try {
          // Not idempotent: the driver never resends it; the caller decides.
          await this.execute(
            'addDcUsage',
            statement,
            [this.long(BigInt(delta)), sequence, dc, cause],
            'add to usage counters',
            true,
          );
        } catch (error) {
          throw this.failure(error, 'addDcUsage', 'add to usage counters');
        }
      }),
    );
  }

  async readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts> | undefined> {
    let result: cassandra.types.ResultSet;
    try {
      result = await this.execute(
        'readDcUsage',
        STATEMENTS.readDcUsage,
        [sequence],
        'read usage counters',
        false,
      );
    } catch (error) {
      // A keyspace set up before the counters existed: `idgen-cass init` adds the table.
      if (isMissingTable(error)) return undefined;
      throw this.failure(error, 'readDcUsage', 'read usage counters');
    }
    const usage = new Map<string, Record<UsageCause, bigint>>();
    for (const row of result.rows) {
      const dc = row.get('dc') as unknown;
      const cause = USAGE_CAUSES.find((c) => c === row.get('cause'));
      if (typeof dc !== 'string' || cause === undefined) continue;
      const counts = usage.get(dc) ?? zeroUsageCounts();
      counts[cause] = toBigInt(row.get('ids')) ?? 0n;
      usage.set(dc, counts);
    }
    return usage;
  }

  async readNodeSettings(): Promise<readonly NodeSettings[]> {
    const hosts = this.client.hosts.values().filter((host) => host.datacenter === this.localDc);
    return Promise.all(
      hosts.map((host) =>
        readNodeSettingsOf(this.client, host, this.keyspace, this.requestTimeoutMs),
      ),
    );
  }

  async readReplicaDcs(): Promise<readonly string[] | undefined> {
    const result = await this.read('replicaDcs', [this.keyspace], 'read the keyspace replication');
    const replication = result.first()?.get('replication') as Record<string, string> | undefined;
    return replication === undefined ? undefined : replicaDcsOf(replication);
  }

  async close(): Promise<void> {
    if (this.options.ownsClient) await this.client.shutdown();
  }

  private async read(name: StatementName, params: unknown[], operation: string) {
    const statement = mutatedStatement(name, STATEMENTS[name]);
    try {
      return await this.execute(name, statement, params, operation, false);
    } catch (error) {
      throw this.failure(error, name, operation);
    }
  }

  /** Runs a conditional statement once; rejected outcomes keep the rows the round returned. */
  private async cas(
    name: StatementName,
    operation: string,
    params: unknown[],
  ): Promise<
    | { readonly kind: 'applied' }
    | { readonly kind: 'rejected'; readonly rows: readonly cassandra.types.Row[] }
    | { readonly kind: 'unknown'; readonly cause: unknown }
  > {
    const statement = mutatedStatement(name, STATEMENTS[name]);
    let result: cassandra.types.ResultSet;
    try {
      result = await this.execute(name, statement, params, operation, true);
    } catch (error) {
      return this.casFailure(error, statement, operation);
    }
    return result.wasApplied() ? APPLIED : { kind: 'rejected', rows: result.rows };
  }

  /** The create statement and the first grants, as one conditional batch at SERIAL. */
  private async createWithGrants(
    sequence: string,
    params: unknown[],
    firstGrants: readonly FirstGrant[],
  ): Promise<
    | { readonly kind: 'applied' }
    | { readonly kind: 'rejected'; readonly rows: readonly cassandra.types.Row[] }
    | { readonly kind: 'unknown'; readonly cause: unknown }
  > {
    const statement = mutatedStatement('createSequence', STATEMENTS.createSequence);
    const queries = [
      { query: this.cql.createSequence, params },
      ...firstGrants.map(({ grantee, grant }) => {
        checkDc(grantee);
        return {
          query: this.cql.createFirstGrant,
          params: [sequence, grantee, this.long(grant.min), this.long(grant.max)],
        };
      }),
    ];
    let result: cassandra.types.ResultSet;
    try {
      result = await this.client.batch(queries, {
        ...requestOptions(statement, true, this.requestTimeoutMs),
        logged: true,
      });
    } catch (error) {
      this.stalled.markTimedOut(error);
      return this.casFailure(error, statement, 'create sequence');
    }
    return result.wasApplied() ? APPLIED : { kind: 'rejected', rows: result.rows };
  }

  /**
   * Sends `statement` once and refuses a LOCAL_SERIAL result coordinated outside the local DC.
   * Failures are thrown for the caller to map: a read throws them, a conditional write's failure
   * is an unknown outcome.
   */
  private async execute(
    name: StatementName,
    statement: Statement,
    params: unknown[],
    operation: string,
    conditional: boolean,
  ): Promise<cassandra.types.ResultSet> {
    let result: cassandra.types.ResultSet;
    try {
      result = await this.client.execute(
        this.cql[name],
        params,
        requestOptions(statement, conditional, this.requestTimeoutMs, this.retryReads),
      );
    } catch (error) {
      this.stalled.markTimedOut(error);
      throw error;
    }
    if (statement.level === 'local_serial') this.checkCoordinator(result, operation);
    return result;
  }

  private casFailure(
    error: unknown,
    statement: Statement,
    operation: string,
  ): { readonly kind: 'unknown'; readonly cause: unknown } {
    const mapped = mapFailure(error, statement, operation, this.context());
    if (mapped instanceof Error) throw mapped;
    return mapped;
  }

  private failure(error: unknown, name: StatementName, operation: string): Error {
    if (error instanceof IdGenError) return error; // e.g. a malformed row
    const mapped = mapFailure(error, STATEMENTS[name], operation, this.context());
    return mapped instanceof Error
      ? mapped
      : new Error(`Cassandra failed ${operation}`, { cause: error });
  }

  private context() {
    return { keyspace: this.keyspace, localDc: this.localDc };
  }

  /**
   * A LOCAL_SERIAL statement coordinated outside the local DC ran Paxos on another DC's replicas:
   * refuse it (catches a load-balancing policy that misreports its distances).
   */
  private checkCoordinator(result: cassandra.types.ResultSet, operation: string): void {
    const queried = result.info.queriedHost as unknown;
    const host = typeof queried === 'string' ? this.client.hosts.get(queried) : undefined;
    if (host !== undefined && host.datacenter !== this.localDc) {
      throw new InvariantError(
        '(all)',
        `${operation} at LOCAL_SERIAL was coordinated by ${host.address} in DC "${host.datacenter}", not in the local DC "${this.localDc}"; the client's load balancing sends statements outside its DC`,
      );
    }
  }

  /** LOCAL_SERIAL on a DC's state partition is only linearizable from that DC's own coordinators. */
  private checkLocalDc(dc: string): void {
    checkDc(dc);
    // A shard `dc1/3` is dc1's: its state partition, like dc1's own, takes LOCAL_SERIAL from dc1 only.
    if (dcOfGrantee(dc) !== this.localDc) {
      throw new InvalidOptionError(
        'dc',
        dc,
        `the client's local datacenter "${this.localDc}" or a shard of it: a DC's state is read and written at LOCAL_SERIAL from that DC only`,
      );
    }
  }
}

const APPLIED = Object.freeze({ kind: 'applied' as const });

let dcStateWrites = 0;

/**
 * A statement as a negative control changes it (mutations.ts); the statement itself otherwise.
 * Never active outside tests.
 */
function mutatedStatement(name: StatementName, statement: Statement): Statement {
  if ((name === 'updateDcState' || name === 'createDcState') && mutated('dc-state-at-serial-too')) {
    return ++dcStateWrites % 2 === 0 ? { ...statement, serial: CL.serial } : statement;
  }
  if ((name === 'readLatestGrant' || name === 'readGlobal') && mutated('grants-read-at-quorum')) {
    return { ...statement, consistency: CL.quorum };
  }
  if ((name === 'readLatestGrant' || name === 'readGlobal') && mutated('grants-at-local-serial')) {
    return { ...statement, consistency: CL.localSerial };
  }
  return statement;
}

/** The grant batch as a negative control changes it; GRANT_BATCH itself otherwise. */
function mutatedGrantBatch(): { readonly consistency: number; readonly serial: number } {
  if (mutated('grants-at-local-serial')) {
    return { ...GRANT_BATCH, consistency: CL.localQuorum, serial: CL.localSerial };
  }
  return GRANT_BATCH;
}

/** A grantee: a DC's name, or a shard's (`dc1/3`). */
function checkDc(dc: string): void {
  if (dcOfGrantee(dc) === undefined) throw new InvalidNameError('datacenter', dc);
}

/**
 * bigint as the client encodes CQL bigint: decimal text, or a JS bigint under
 * `encoding.useBigIntAsLong`. Not a `Long` of ours: another copy of the driver checks
 * `instanceof` its own `Long`.
 */
function bigintEncoder(client: cassandra.Client): (value: bigint) => bigint | string {
  return encodesBigIntAsLong(client) ? (value) => value : (value) => value.toString();
}

/** Cassandra's answer to a statement on a table the keyspace does not have. */
function isMissingTable(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === cassandra.types.responseErrorCodes.invalid &&
    /unconfigured table|table .* does not exist/i.test(error.message)
  );
}
