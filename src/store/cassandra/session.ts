/**
 * How the Cassandra store sends statements.ts: each with its own execution options, only to
 * coordinators of the local DC, every LOCAL_SERIAL result checked again to come from there.
 */

import cassandra from 'cassandra-driver';

import {
  LocalDcPolicy,
  localDataCenterOf,
  localDcProfile,
  routingPolicyOf,
  runtimeOptionsOf,
} from './client-routing.js';
import { mapFailure, type UnknownOutcome } from './errors.js';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  requestOptions,
  retryReadsOnceElsewhere,
} from './request-options.js';
import { GRANT_BATCH, STATEMENTS, type Statement, type StatementName } from './statements.js';
import { StalledCoordinators } from './stalled-coordinators.js';
import { InvalidNameError, InvalidOptionError, InvariantError } from '../../errors.js';
import { mutated } from '../../mutations.js';
import { dcOfGrantee } from '../../names.js';
import { validateName } from '../../options.js';

const CL = cassandra.types.consistencies;

type Row = cassandra.types.Row;

/** A conditional write's outcome before parsing: a rejection keeps the rows the round returned. */
type RawOutcome =
  | { readonly kind: 'applied' }
  | { readonly kind: 'rejected'; readonly rows: readonly Row[] }
  | UnknownOutcome;

const APPLIED = Object.freeze({ kind: 'applied' as const });

/** How a conditional batch is sent and its failures classified. */
type BatchLevels = Omit<Statement, 'cql' | 'onePage'>;

export interface CassandraStoreOptions {
  /** `close()` shuts the client down. */
  readonly ownsClient: boolean;
  /** @default 5000 */
  readonly requestTimeoutMs?: number | undefined;
}

/** A client, a keyspace and the local DC, with the one way each kind of statement is sent. */
export class CassandraSession {
  protected readonly localDc: string;
  /** Decimal text, or a JS bigint under `useBigIntAsLong`; never our `Long` (another driver copy). */
  protected readonly long: (value: bigint) => bigint | string;
  protected readonly requestTimeoutMs: number;
  private readonly cql: Readonly<Record<StatementName, string>>;
  private readonly stalled: StalledCoordinators;
  private readonly retryReads: cassandra.policies.retry.RetryPolicy;
  private readonly localDcOnly: cassandra.ExecutionProfile;

  /** @throws {@link InvalidNameError} or {@link InvalidOptionError} (no local datacenter). */
  constructor(
    protected readonly client: cassandra.Client,
    protected readonly keyspace: string,
    private readonly options: CassandraStoreOptions,
  ) {
    validateName('keyspace', keyspace);
    const localDc = localDataCenterOf(client);
    const policy = routingPolicyOf(client);
    if (localDc === undefined || policy === undefined) {
      throw new InvalidOptionError(
        'client',
        'a Client without a local datacenter',
        'a Client with a DC-aware load-balancing policy (set its "localDataCenter" option)',
      );
    }
    this.localDc = localDc;
    this.long =
      runtimeOptionsOf(client)?.encoding?.useBigIntAsLong === true
        ? (value) => value
        : (value) => value.toString();
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.stalled = policy instanceof LocalDcPolicy ? policy.stalled : new StalledCoordinators();
    this.localDcOnly = localDcProfile(client, policy, localDc, this.stalled);
    this.retryReads = retryReadsOnceElsewhere((error) => this.stalled.markTimedOut(error));
    const entries = Object.entries(STATEMENTS).map(([name, statement]) => [
      name,
      statement.cql.replace(/\$(grants|dc_state|dc_usage)/g, `"${keyspace}".idgen_$1`),
    ]);
    this.cql = Object.freeze(Object.fromEntries(entries) as Record<StatementName, string>);
  }

  async close(): Promise<void> {
    if (this.options.ownsClient) await this.client.shutdown();
  }

  /** A statement other than a conditional write; `once`: never resent (a counter write). */
  protected async run(
    name: StatementName,
    params: unknown[],
    operation: string,
    once = false,
  ): Promise<cassandra.types.ResultSet> {
    try {
      return await this.execute(name, mutatedStatement(name), params, operation, once);
    } catch (error) {
      throw this.failure(error, STATEMENTS[name], operation);
    }
  }

  protected async readRow(
    name: StatementName,
    params: unknown[],
    operation: string,
  ): Promise<Row | undefined> {
    const result = await this.run(name, params, operation);
    return (result.first() as Row | null) ?? undefined;
  }

  /** Every row of a read, every page; a later page's failure and a malformed row are thrown. */
  protected async readEach(
    name: StatementName,
    params: unknown[],
    operation: string,
    each: (row: Row) => void,
  ): Promise<void> {
    const result = await this.run(name, params, operation);
    try {
      for await (const row of result) each(row);
    } catch (error) {
      throw this.failure(error, STATEMENTS[name], operation);
    }
  }

  protected cas(name: StatementName, operation: string, params: unknown[]): Promise<RawOutcome> {
    const statement = mutatedStatement(name);
    return this.conditional(statement, operation, () =>
      this.execute(name, statement, params, operation, true),
    );
  }

  protected casBatch(
    queries: readonly { readonly query: StatementName; readonly params: unknown[] }[],
    levels: BatchLevels,
    operation: string,
  ): Promise<RawOutcome> {
    return this.conditional(levels, operation, () =>
      this.client.batch(
        queries.map(({ query, params }) => ({ query: this.cql[query], params })),
        {
          ...requestOptions(levels, true, this.requestTimeoutMs),
          executionProfile: this.localDcOnly,
          logged: true,
        },
      ),
    );
  }

  /** LOCAL_SERIAL on a DC's state (or its shards') is linearizable from that DC only. */
  protected checkLocalDc(dc: string): void {
    checkDc(dc);
    if (dcOfGrantee(dc) !== this.localDc) {
      throw new InvalidOptionError(
        'dc',
        dc,
        `the client's local datacenter "${this.localDc}" or a shard of it: a DC's state is read and written at LOCAL_SERIAL from that DC only`,
      );
    }
  }

  private async execute(
    name: StatementName,
    statement: Statement,
    params: unknown[],
    operation: string,
    conditional: boolean,
  ): Promise<cassandra.types.ResultSet> {
    const result = await this.client.execute(this.cql[name], params, {
      ...requestOptions(statement, conditional, this.requestTimeoutMs, this.retryReads),
      executionProfile: this.localDcOnly,
    });
    if (statement.level === 'local_serial') this.checkCoordinator(result, operation);
    return result;
  }

  private failure(error: unknown, statement: Statement, operation: string): Error {
    this.stalled.markTimedOut(error);
    const mapped = mapFailure(error, statement, operation, this.context());
    return mapped instanceof Error
      ? mapped
      : new Error(`Cassandra failed ${operation}`, { cause: error });
  }

  /** A failed conditional write is an unknown outcome unless Cassandra refused it unexecuted. */
  private async conditional(
    statement: BatchLevels,
    operation: string,
    send: () => Promise<cassandra.types.ResultSet>,
  ): Promise<RawOutcome> {
    let result: cassandra.types.ResultSet;
    try {
      result = await send();
    } catch (error) {
      this.stalled.markTimedOut(error);
      const mapped = mapFailure(error, statement, operation, this.context());
      if (mapped instanceof Error) throw mapped;
      return mapped;
    }
    return result.wasApplied() ? APPLIED : { kind: 'rejected', rows: result.rows };
  }

  private context() {
    return { keyspace: this.keyspace, localDc: this.localDc };
  }

  /** Refuses a LOCAL_SERIAL result coordinated in another DC: a second line behind `localDcOnly`. */
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
}

/** A grantee: a DC's name, or a shard's (`dc1/3`). */
export function checkDc(dc: string): void {
  if (dcOfGrantee(dc) === undefined) throw new InvalidNameError('datacenter', dc);
}

let dcStateWrites = 0;

/** A statement as a negative control changes it (mutations.ts); the statement itself otherwise. */
function mutatedStatement(name: StatementName): Statement {
  const statement: Statement = STATEMENTS[name];
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
export function mutatedGrantBatch(): BatchLevels {
  if (mutated('grants-at-local-serial')) {
    return { ...GRANT_BATCH, consistency: CL.localQuorum, serial: CL.localSerial };
  }
  return GRANT_BATCH;
}
