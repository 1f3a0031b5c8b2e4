/**
 * The Cassandra adapter of the storage port: every CQL statement of the protocol, with its
 * consistency, in one table (docs/design.md, "Statements and their consistency").
 *
 * `idgen_grants` partitions are touched only at SERIAL, `idgen_dc_state` partitions only at
 * LOCAL_SERIAL and only from their own DC; the rest are plain reads for settings and status.
 */

import cassandra from 'cassandra-driver';

import { describeDriverError, encodesBigIntAsLong, localDataCenterOf } from '../connection.js';
import {
  IdGenError,
  InvalidNameError,
  InvalidOptionError,
  InvariantError,
  SequenceNotFoundError,
  StoreUnavailableError,
} from '../errors.js';
import type {
  CasOutcome,
  DcState,
  DomainName,
  Grant,
  GrantsOverview,
  GrantView,
  IdStore,
  SequenceChanges,
  SequenceSettings,
  StoreLevel,
} from './port.js';

const CL = cassandra.types.consistencies;

/** One statement of the protocol. `$grants` and `$dc_state` become keyspace-qualified tables. */
interface Statement {
  readonly cql: string;
  /** Regular consistency: the read's level, or the Paxos commit level of a conditional write. */
  readonly consistency: cassandra.types.consistencies;
  /** Serial consistency of a conditional write (its Paxos level); absent for reads. */
  readonly serial?: cassandra.types.consistencies;
  /** The level a failure of this statement is reported at. */
  readonly level: StoreLevel;
}

const SETTINGS = 'sequence, domain, min_id, max_id, start_id, dc_range_size, block_size, threshold';
const GRANT = 'dc, grant_number, grant_min, grant_max';
const GRANT_ROW = 'dc, grant_number, last_integer, grant_min, grant_max';
const DC_STATE =
  'last_integer, reserved_min, reserved_max, reserved_grant, preloaded_min, preloaded_max, installed_grant, version, op';

// prettier-ignore
const STATEMENTS = {
  // ── settings + GLOBAL row (dc 'GLOBAL', grant_number 0): one statement, so a sequence never exists without its high-water mark
  createSequence: { cql: `INSERT INTO $grants (${SETTINGS}, dc, grant_number, last_integer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'GLOBAL', 0, ?) IF NOT EXISTS`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  // settings are static columns: Cassandra refuses an UPDATE of only static columns that names the clustering key, so IF EXISTS tests the static row
  alterSequence:  { cql: `UPDATE $grants SET dc_range_size = ?, block_size = ?, threshold = ? WHERE sequence = ? IF EXISTS`,
                    consistency: CL.eachQuorum, serial: CL.serial, level: 'serial' },
  readSequence:   { cql: `SELECT DISTINCT ${SETTINGS} FROM $grants WHERE sequence = ?`,
                    consistency: CL.localQuorum, level: 'local' },
  listSequences:  { cql: `SELECT DISTINCT ${SETTINGS} FROM $grants`,
                    consistency: CL.localQuorum, level: 'local' },
  // ── grant level: SERIAL only. readGrants = readLatestGrant, THEN readGlobal (design.md: this order matters)
  readLatestGrant:{ cql: `SELECT ${GRANT} FROM $grants WHERE sequence = ? AND dc = ? LIMIT 1`,
                    consistency: CL.serial, level: 'serial' },
  readGlobal:     { cql: `SELECT last_integer FROM $grants WHERE sequence = ? AND dc = 'GLOBAL' AND grant_number = 0`,
                    consistency: CL.serial, level: 'serial' },
  // grantRange = BEGIN BATCH grantGlobal; grantInsert APPLY BATCH (one partition, both conditions must hold)
  grantRange:     { cql: '(conditional batch of grantGlobal and grantInsert)',
                    consistency: CL.quorum, serial: CL.serial, level: 'serial' },
  grantGlobal:    { cql: `UPDATE $grants SET last_integer = ? WHERE sequence = ? AND dc = 'GLOBAL' AND grant_number = 0 IF last_integer = ?`,
                    consistency: CL.quorum, serial: CL.serial, level: 'serial' },
  grantInsert:    { cql: `INSERT INTO $grants (sequence, dc, grant_number, grant_min, grant_max) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS`,
                    consistency: CL.quorum, serial: CL.serial, level: 'serial' },
  // ── DC level: LOCAL_SERIAL only, from the DC itself
  readDcState:    { cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.localSerial, level: 'local_serial' },
  createDcState:  { cql: `INSERT INTO $dc_state (sequence, dc, ${DC_STATE}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
                    consistency: CL.localQuorum, serial: CL.localSerial, level: 'local_serial' },
  updateDcState:  { cql: `UPDATE $dc_state SET last_integer = ?, reserved_min = ?, reserved_max = ?, reserved_grant = ?, preloaded_min = ?, preloaded_max = ?, installed_grant = ?, version = ?, op = ? WHERE sequence = ? AND dc = ? IF version = ?`,
                    consistency: CL.localQuorum, serial: CL.localSerial, level: 'local_serial' },
  // ── status / check: plain reads, may lag. The whole partition: GLOBAL and every grant, newest first per DC
  grantsOverview: { cql: `SELECT ${GRANT_ROW} FROM $grants WHERE sequence = ?`,
                    consistency: CL.localOne, level: 'local' },
  dcStateOverview:{ cql: `SELECT ${DC_STATE} FROM $dc_state WHERE sequence = ? AND dc = ?`,
                    consistency: CL.localOne, level: 'local' },
} as const satisfies Record<string, Statement>;

type StatementName = keyof typeof STATEMENTS;

/** The clustering key of the GLOBAL row; no DC may be named like it. */
const GLOBAL = 'GLOBAL';
const KEYSPACE_NAME = /^[A-Za-z][A-Za-z0-9_]{0,47}$/;
const DOMAINS: readonly DomainName[] = ['int32', 'safe53', 'int63', 'custom'];

/**
 * {@link IdStore} on Cassandra. Statements name their keyspace, so the client may be shared.
 * The DC-level methods accept only the client's own local DC: a LOCAL_SERIAL round coordinated
 * elsewhere would use another DC's quorum for the same partition.
 */
export class CassandraStore implements IdStore {
  private readonly cql: Readonly<Record<StatementName, string>>;
  private readonly localDc: string;
  private readonly long: (value: bigint) => bigint | cassandra.types.Long;

  /**
   * @param client a client whose load balancing is DC-aware (see `openClient`).
   * @param keyspace the keyspace holding `idgen_grants` and `idgen_dc_state` (case-sensitive).
   * @param options `ownsClient`: `close()` shuts the client down.
   * @throws {@link InvalidNameError} for a bad keyspace name.
   * @throws {@link InvalidOptionError} when the client has no local datacenter.
   */
  constructor(
    private readonly client: cassandra.Client,
    private readonly keyspace: string,
    private readonly options: { readonly ownsClient: boolean },
  ) {
    if (typeof keyspace !== 'string' || !KEYSPACE_NAME.test(keyspace)) {
      throw new InvalidNameError('keyspace', keyspace);
    }
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
    const tables: Record<string, string> = {
      $grants: `"${keyspace}".idgen_grants`,
      $dc_state: `"${keyspace}".idgen_dc_state`,
    };
    const entries = Object.entries(STATEMENTS).map(([name, statement]) => [
      name,
      statement.cql.replace(/\$grants|\$dc_state/g, (table) => tables[table] ?? table),
    ]);
    this.cql = Object.freeze(Object.fromEntries(entries) as Record<StatementName, string>);
  }

  async createSequence(settings: SequenceSettings): Promise<boolean> {
    const outcome = await this.cas(
      'createSequence',
      [
        settings.name,
        settings.domain,
        this.long(settings.min),
        this.long(settings.max),
        this.long(settings.start),
        this.long(settings.dcRangeSize),
        settings.blockSize,
        settings.threshold,
        this.long(settings.start - 1n),
      ],
      'create sequence',
    );
    return this.settle(outcome, 'create sequence');
  }

  async readSequence(name: string): Promise<SequenceSettings | undefined> {
    const result = await this.read('readSequence', [name], 'read sequence');
    const row = result.first() as cassandra.types.Row | null;
    return row === null ? undefined : parseSettings(row);
  }

  async listSequences(): Promise<readonly SequenceSettings[]> {
    const result = await this.read('listSequences', [], 'list sequences');
    const sequences: SequenceSettings[] = [];
    try {
      for await (const row of result) sequences.push(parseSettings(row)); // fetches every page
    } catch (error) {
      if (error instanceof IdGenError) throw error; // a malformed row
      throw this.failure(error, 'listSequences', 'list sequences'); // a later page failed
    }
    return sequences.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async alterSequence(name: string, changes: SequenceChanges): Promise<boolean> {
    const { dcRangeSize, blockSize, threshold } = changes;
    if (dcRangeSize === undefined && blockSize === undefined && threshold === undefined) {
      return (await this.readSequence(name)) !== undefined; // nothing to write
    }
    const unset = cassandra.types.unset;
    const outcome = await this.cas(
      'alterSequence',
      [
        dcRangeSize === undefined ? unset : this.long(dcRangeSize),
        blockSize ?? unset,
        threshold ?? unset,
        name,
      ],
      'alter sequence',
    );
    return this.settle(outcome, 'alter sequence');
  }

  async readGrants(sequence: string, dc: string): Promise<GrantView> {
    checkDc(dc);
    // The DC's latest grant first, GLOBAL second: GLOBAL only grows and every grant is at or below
    // it, so GLOBAL read later covers the grant read earlier; a grant of this DC that slips in
    // between makes our later insert of the same number fail (design.md, "Granting a DC range").
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

  async grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome> {
    checkDc(dc);
    if (!Number.isInteger(grant.number) || grant.number < 1 || grant.max < grant.min) {
      throw new RangeError(
        `grantRange: grant ${grant.number} [${grant.min}, ${grant.max}] must be numbered 1, 2, … with min <= max`,
      );
    }
    const global = {
      query: this.cql.grantGlobal,
      params: [this.long(grant.max), sequence, this.long(expectedGlobalLast)],
    };
    const dcRow = {
      query: this.cql.grantInsert,
      params: [sequence, dc, grant.number, this.long(grant.min), this.long(grant.max)],
    };
    const statement = STATEMENTS.grantRange;
    try {
      const result = await this.client.batch([global, dcRow], {
        prepare: true,
        consistency: statement.consistency,
        serialConsistency: statement.serial,
      });
      return result.wasApplied() ? APPLIED : REJECTED;
    } catch (error) {
      return this.casFailure(error, 'grantRange', 'grant a DC range');
    }
  }

  async readGrantsOverview(sequence: string): Promise<GrantsOverview | undefined> {
    const result = await this.read('grantsOverview', [sequence], 'read grants overview');
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
      if (error instanceof IdGenError) throw error; // a malformed row
      throw this.failure(error, 'grantsOverview', 'read grants overview'); // a later page failed
    }
    if (globalLast === undefined) return undefined;
    // Rows come newest first within a DC (clustering order); the overview lists them ascending.
    for (const history of grants.values()) history.sort((a, b) => a.number - b.number);
    return { globalLast, grants };
  }

  async readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    this.checkLocalDc(dc);
    const result = await this.read('readDcState', [sequence, dc], 'read DC state');
    const row = result.first() as cassandra.types.Row | null;
    return row === null ? undefined : parseDcState(sequence, row);
  }

  async writeDcState(
    sequence: string,
    dc: string,
    expectedVersion: number,
    next: DcState,
  ): Promise<CasOutcome> {
    this.checkLocalDc(dc);
    if (
      !Number.isInteger(expectedVersion) ||
      expectedVersion < 0 ||
      next.version !== expectedVersion + 1
    ) {
      throw new RangeError(
        `writeDcState: version must grow by one (expected ${expectedVersion}, next ${next.version})`,
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
      next.version,
      next.op,
    ];
    return expectedVersion === 0
      ? this.cas('createDcState', [sequence, dc, ...columns], 'write DC state')
      : this.cas('updateDcState', [...columns, sequence, dc, expectedVersion], 'write DC state');
  }

  async readDcStatesOverview(sequence: string): Promise<ReadonlyMap<string, DcState>> {
    const overview = await this.readGrantsOverview(sequence);
    const states = new Map<string, DcState>();
    if (overview === undefined) return states;
    // Every DC with a grant, plus every DC of the cluster: a state without a grant is exactly
    // what a check must get to see.
    const clusterDcs = this.client.hosts?.values().map((host) => host.datacenter) ?? [];
    const dcs = [...new Set([...overview.grants.keys(), ...clusterDcs])]
      .filter((dc) => typeof dc === 'string' && dc !== '' && dc !== GLOBAL)
      .sort();
    const rows = await Promise.all(
      dcs.map(async (dc) => {
        const result = await this.read(
          'dcStateOverview',
          [sequence, dc],
          'read DC states overview',
        );
        return [dc, result.first() as cassandra.types.Row | null] as const;
      }),
    );
    for (const [dc, row] of rows) {
      if (row !== null) states.set(dc, parseDcState(sequence, row));
    }
    return states;
  }

  async close(): Promise<void> {
    if (this.options.ownsClient) await this.client.shutdown();
  }

  // ── execution ──────────────────────────────────────────────────────────────────────────

  private async read(name: StatementName, params: unknown[], operation: string) {
    const statement: Statement = STATEMENTS[name];
    try {
      return await this.client.execute(this.cql[name], params, {
        prepare: true,
        consistency: statement.consistency,
      });
    } catch (error) {
      throw this.failure(error, name, operation);
    }
  }

  private async cas(
    name: StatementName,
    params: unknown[],
    operation: string,
  ): Promise<CasOutcome> {
    const statement: Statement = STATEMENTS[name];
    try {
      const result = await this.client.execute(this.cql[name], params, {
        prepare: true,
        consistency: statement.consistency,
        ...(statement.serial === undefined ? {} : { serialConsistency: statement.serial }),
      });
      return result.wasApplied() ? APPLIED : REJECTED;
    } catch (error) {
      return this.casFailure(error, name, operation);
    }
  }

  private casFailure(error: unknown, name: StatementName, operation: string): CasOutcome {
    const failure = this.failure(error, name, operation);
    if (failure === UNKNOWN) return UNKNOWN;
    throw failure;
  }

  /** The yes/no of a settings write; its unknown outcome cannot be expressed as a boolean. */
  private settle(outcome: CasOutcome, operation: string): boolean {
    if (outcome.kind === 'unknown') {
      throw new StoreUnavailableError(
        'serial',
        operation,
        'the conditional write timed out (CAS timeout) and may or may not have been applied; read the sequence to see which before trying again',
      );
    }
    return outcome.kind === 'applied';
  }

  /**
   * The one place driver errors are mapped. Returns {@link UNKNOWN} for a timed-out conditional
   * write, whose outcome only a re-read at the same serial level can tell, and otherwise the
   * error to throw.
   *
   * An `Unavailable` answer is reported as {@link StoreUnavailableError}; callers never assume
   * from it that nothing was written, they re-read before using anything (design.md, rule 4).
   */
  private failure(error: unknown, name: StatementName, operation: string): Error | typeof UNKNOWN {
    const statement: Statement = STATEMENTS[name];
    const conditional = statement.serial !== undefined;
    const { errors, types } = cassandra;
    const codes = types.responseErrorCodes;
    const unavailable = (detail: string) =>
      new StoreUnavailableError(statement.level, operation, detail, { cause: error });

    if (error instanceof errors.ResponseError) {
      const timeout = error.code === codes.writeTimeout || error.code === codes.readTimeout;
      // A write failure during Paxos may follow an accepted proposal: as unknown as a timeout.
      if (conditional && (timeout || error.code === codes.writeFailure)) return UNKNOWN;
      if (timeout) return unavailable(`${levelOf(statement)} read timed out: ${error.message}`);
      if (error.code === codes.unavailableException) {
        return unavailable(`not enough replicas alive: ${error.message}`);
      }
      if (
        error.code === codes.invalid &&
        /unconfigured table|does not exist/i.test(error.message)
      ) {
        return new InvalidOptionError(
          'keyspace',
          this.keyspace,
          'a keyspace that holds the idgen tables (create them with initSchema or "idgen-cass init")',
        );
      }
    }
    if (error instanceof errors.OperationTimedOutError) {
      if (conditional) return UNKNOWN;
      return unavailable(`no answer within the client's read timeout: ${error.message}`);
    }
    if (error instanceof errors.NoHostAvailableError) {
      return unavailable(
        `no host of DC "${this.localDc}" could run it (${describeDriverError(error)})`,
      );
    }
    const message = error instanceof Error ? error.message : String(error);
    return new Error(`Cassandra failed ${operation} (${name}): ${message}`, { cause: error });
  }

  /** LOCAL_SERIAL on a DC's state partition is only linearizable from that DC's own coordinators. */
  private checkLocalDc(dc: string): void {
    checkDc(dc);
    if (dc !== this.localDc) {
      throw new InvalidOptionError(
        'dc',
        dc,
        `the client's local datacenter "${this.localDc}": a DC's state is read and written at LOCAL_SERIAL from that DC only`,
      );
    }
  }
}

const APPLIED: CasOutcome = Object.freeze({ kind: 'applied' });
const REJECTED: CasOutcome = Object.freeze({ kind: 'rejected' });
const UNKNOWN = Object.freeze({ kind: 'unknown' }) satisfies CasOutcome;

function levelOf(statement: Statement): string {
  // The driver's consistencies object has no reverse mapping at runtime.
  const names: Partial<Record<number, string>> = {
    [CL.serial]: 'SERIAL',
    [CL.localSerial]: 'LOCAL_SERIAL',
    [CL.localQuorum]: 'LOCAL_QUORUM',
    [CL.localOne]: 'LOCAL_ONE',
  };
  return names[statement.consistency] ?? `consistency ${statement.consistency}`;
}

function checkDc(dc: string): void {
  if (typeof dc !== 'string' || dc === '' || dc === GLOBAL)
    throw new InvalidNameError('datacenter', dc);
}

// ── row parsing: Long → bigint, missing columns → InvariantError ─────────────────────────

function parseSettings(row: cassandra.types.Row): SequenceSettings {
  const name = toText(row.get('sequence'));
  if (name === undefined)
    throw new InvariantError('(unnamed)', 'settings row without a sequence name');
  const domain = required(name, row, 'domain', toText);
  if (!(DOMAINS as readonly string[]).includes(domain)) {
    throw new InvariantError(name, `unknown domain ${JSON.stringify(domain)}`);
  }
  return {
    name,
    domain: domain as DomainName,
    min: required(name, row, 'min_id', toBigInt),
    max: required(name, row, 'max_id', toBigInt),
    start: required(name, row, 'start_id', toBigInt),
    dcRangeSize: required(name, row, 'dc_range_size', toBigInt),
    blockSize: required(name, row, 'block_size', toNumber),
    threshold: required(name, row, 'threshold', toNumber),
  };
}

function parseGrant(sequence: string, row: cassandra.types.Row): Grant {
  return {
    number: required(sequence, row, 'grant_number', toNumber),
    min: required(sequence, row, 'grant_min', toBigInt),
    max: required(sequence, row, 'grant_max', toBigInt),
  };
}

function parseDcState(sequence: string, row: cassandra.types.Row): DcState {
  return {
    lastInteger: required(sequence, row, 'last_integer', toBigInt),
    reservedMin: required(sequence, row, 'reserved_min', toBigInt),
    reservedMax: required(sequence, row, 'reserved_max', toBigInt),
    reservedGrant: required(sequence, row, 'reserved_grant', toNumber),
    preloadedMin: required(sequence, row, 'preloaded_min', toBigInt),
    preloadedMax: required(sequence, row, 'preloaded_max', toBigInt),
    installedGrant: required(sequence, row, 'installed_grant', toNumber),
    version: required(sequence, row, 'version', toNumber),
    op: required(sequence, row, 'op', toText),
  };
}

function required<T>(
  sequence: string,
  row: cassandra.types.Row,
  column: string,
  convert: (value: unknown) => T | undefined,
): T {
  const value = convert(row.get(column));
  if (value === undefined) {
    throw new InvariantError(sequence, `column ${column} is missing or malformed in a stored row`);
  }
  return value;
}

function toBigInt(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value; // a client with encoding.useBigIntAsLong
  if (cassandra.types.Long.isLong(value)) return BigInt(value.toString());
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return undefined;
}

function toNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function toText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * bigint as the client encodes CQL bigint: a driver `Long` by default, a JS bigint when the client
 * was built with `encoding.useBigIntAsLong` (each encoder refuses the other's type).
 */
function bigintEncoder(client: cassandra.Client): (value: bigint) => bigint | cassandra.types.Long {
  return encodesBigIntAsLong(client)
    ? (value) => value
    : (value) => cassandra.types.Long.fromString(value.toString());
}
