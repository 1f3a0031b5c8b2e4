/** Creating the keyspace and the tables of schema.cql; running it again changes nothing. */

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import cassandra from 'cassandra-driver';

import { checkLogger, type Logger } from './logger.js';
import {
  SCHEMA_CHANGE_TIMEOUT_MS,
  checkConnectionKeys,
  openClient,
  type ConnectionOptions,
} from './store/cassandra/driver-client.js';
import { describeDriverError } from './store/cassandra/errors.js';
import { InvalidOptionError, StoreUnavailableError, UnsafeClusterError } from './errors.js';
import { adminOver } from './admin/open.js';
import type { PreflightReport } from './admin/preflight.js';
import { isValidName } from './names.js';
import { checkBooleanOption, everyKeyOf, validateName } from './options.js';

export type InitSchemaOptions = ConnectionOptions & {
  /** Factor per DC (`{ dc1: 3, dc2: 3 }`) of a new keyspace; an existing one keeps its own. */
  replication: Readonly<Record<string, number>>;
  /** @default silent */
  logger?: Logger;
  /** Skip the preflight that refuses a cluster able to hand out IDs twice. @default false */
  allowUnsafeCluster?: boolean;
};

const INIT_SCHEMA_KEYS = everyKeyOf<Omit<InitSchemaOptions, keyof ConnectionOptions>>()([
  'replication',
  'logger',
  'allowUnsafeCluster',
]);

export interface InitSchemaResult {
  readonly keyspace: string;
  readonly keyspaceCreated: boolean;
  /** Factor per DC of the keyspace as it now is. */
  readonly replication: Readonly<Record<string, number>>;
  /** Where an existing keyspace's replication differs from the one asked: `dc2 none (asked 3)`. */
  readonly replicationDiffers: readonly string[];
  readonly tables: readonly string[];
  /** Undefined with `allowUnsafeCluster`. */
  readonly preflight: PreflightReport | undefined;
}

export const MAX_REPLICATION_FACTOR = 10;
/** Two rounds of Cassandra's schema pull (60 s each), which a node that missed a push awaits. */
const SCHEMA_AGREEMENT_TIMEOUT_MS = 120_000;
const SCHEMA_AGREEMENT_POLL_MS = 500;

/**
 * Creates the keyspace (NetworkTopologyStrategy) and the idgen tables if missing, after a
 * preflight, then waits for schema agreement.
 * @throws {@link InvalidNameError} or {@link InvalidOptionError} for bad options.
 * @throws {@link StoreUnavailableError} when Cassandra is unreachable or disagrees for 120 s.
 * @throws {@link UnsafeClusterError} when a node runs an unsafe setting (nothing is created).
 */
export async function initSchema(options: InitSchemaOptions): Promise<InitSchemaResult> {
  checkConnectionKeys(options, INIT_SCHEMA_KEYS);
  checkBooleanOption('allowUnsafeCluster', options.allowUnsafeCluster);
  checkLogger('logger', options.logger);
  const { keyspace } = options;
  validateName('keyspace', keyspace);
  const replication = validateReplication(options.replication);
  const statements = tableStatements(await readFile(schemaFile(), 'utf8'), keyspace);
  const logger = options.logger?.child({ keyspace });

  const opened = await openClient(options);
  const { client } = opened;
  try {
    const known = new Set(client.hosts.values().map((host) => host.datacenter));
    const unknown = Object.keys(replication).filter((dc) => !known.has(dc));
    if (unknown.length > 0) {
      throw new InvalidOptionError(
        'replication',
        JSON.stringify(options.replication),
        `datacenters of this cluster only: ${[...known].sort().join(', ')} (unknown: ${unknown.join(', ')})`,
      );
    }

    let report: PreflightReport | undefined;
    if (options.allowUnsafeCluster !== true) {
      const admin = adminOver({ ...opened, ownsClient: false }, keyspace, options.requestTimeoutMs);
      report = await admin.preflight().finally(() => admin.close());
      if (report.verdict === 'unsafe') {
        throw new UnsafeClusterError(report.problems, '{ allowUnsafeCluster: true }');
      }
      if (report.verdict === 'incomplete') {
        logger?.warn({ unchecked: report.unchecked }, 'preflight could not check every node');
      }
    }
    const existing = client.metadata.keyspaces[keyspace] as
      { strategy?: string; strategyOptions?: Record<string, string> } | undefined;
    if (existing !== undefined && !/(^|\.)NetworkTopologyStrategy$/.test(existing.strategy ?? '')) {
      throw new InvalidOptionError(
        'keyspace',
        keyspace,
        `a keyspace with NetworkTopologyStrategy; this one exists with ${existing.strategy ?? 'another strategy'}: change it ("ALTER KEYSPACE ${keyspace} WITH replication = {'class': 'NetworkTopologyStrategy', ...}", then a full repair) or name another keyspace`,
      );
    }
    const current =
      existing === undefined ? { ...replication } : replicationOf(existing.strategyOptions);
    const differs = replicationDifferences(replication, current);
    if (existing !== undefined) {
      const raw = JSON.stringify(existing.strategyOptions ?? {});
      logger?.info({ strategy: existing.strategy, replication: raw }, 'keyspace exists; unchanged');
      if (differs.length > 0) logger?.warn({ differs }, 'keyspace exists with other replication');
    }

    const factors = Object.entries(replication).map(([dc, factor]) => `'${dc}': ${factor}`);
    const keyspaceStatement = `CREATE KEYSPACE IF NOT EXISTS "${keyspace}" WITH replication = {'class': 'NetworkTopologyStrategy', ${factors.join(', ')}}`;
    for (const statement of [keyspaceStatement, ...statements]) {
      await ddl(client, statement, options.requestTimeoutMs);
    }
    await waitForSchemaAgreement(client);
    logger?.info({ tables: statements.length }, 'schema ready');
    return {
      keyspace,
      keyspaceCreated: existing === undefined,
      replication: current,
      replicationDiffers: differs,
      tables: statements.map((statement) => /\.(\w+) \(/.exec(statement)?.[1] ?? statement),
      preflight: report,
    };
  } finally {
    if (opened.ownsClient) await client.shutdown().catch(() => undefined);
  }
}

function validateReplication(value: unknown): Readonly<Record<string, number>> {
  const allowed = `a non-empty map of datacenter name to an integer replication factor from 1 to ${MAX_REPLICATION_FACTOR}, e.g. { dc1: 3, dc2: 3 }`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidOptionError('replication', value, allowed);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const isFactor = (factor: unknown) =>
    Number.isInteger(factor) &&
    (factor as number) >= 1 &&
    (factor as number) <= MAX_REPLICATION_FACTOR;
  if (
    entries.length === 0 ||
    !entries.every(([dc, f]) => isValidName('datacenter', dc) && isFactor(f))
  ) {
    throw new InvalidOptionError('replication', JSON.stringify(value), allowed);
  }
  return value as Readonly<Record<string, number>>;
}

export function replicationDifferences(
  asked: Readonly<Record<string, number>>,
  existing: Readonly<Record<string, number>>,
): string[] {
  const dcs = [...new Set([...Object.keys(asked), ...Object.keys(existing)])].sort();
  return dcs
    .filter((dc) => asked[dc] !== existing[dc])
    .map((dc) => `${dc} ${existing[dc] ?? 'none'} (asked ${asked[dc] ?? 'none'})`);
}

/** The driver's keyspace `strategyOptions` as factors per DC. */
function replicationOf(strategyOptions: Record<string, string> = {}): Record<string, number> {
  const factors = Object.entries(strategyOptions).filter(([, factor]) => /^\d+$/.test(factor));
  return Object.fromEntries(factors.map(([dc, factor]) => [dc, Number(factor)]));
}

/** schema.cql at the package root, above `src/` or `dist/src/`. */
function schemaFile(): string {
  for (const relative of ['../schema.cql', '../../schema.cql']) {
    const candidate = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(
    `schema.cql is missing from the idgen-cass package (looked next to ${fileURLToPath(import.meta.url)}); reinstall the package.`,
  );
}

/** schema.cql's `CREATE TABLE` statements, qualified with the keyspace. */
function tableStatements(cql: string, keyspace: string): string[] {
  const withoutComments = cql.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(--|\/\/).*$/gm, '');
  return withoutComments
    .split(';')
    .map((statement) => statement.replace(/\s+/g, ' ').trim())
    .filter((statement) => statement !== '')
    .map((statement) => {
      const qualified = statement.replace(
        /^CREATE TABLE IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*) /i,
        (_match, table: string) => `CREATE TABLE IF NOT EXISTS "${keyspace}".${table} `,
      );
      if (qualified === statement) {
        throw new Error(
          `schema.cql: expected only "CREATE TABLE IF NOT EXISTS <table> (…)", got: ${statement}`,
        );
      }
      return qualified;
    });
}

async function ddl(
  client: cassandra.Client,
  statement: string,
  requestTimeoutMs: number | undefined,
): Promise<void> {
  try {
    const readTimeout = Math.max(SCHEMA_CHANGE_TIMEOUT_MS, requestTimeoutMs ?? 0);
    await client.execute(statement, [], { readTimeout });
  } catch (error) {
    const { NoHostAvailableError, OperationTimedOutError } = cassandra.errors;
    if (error instanceof NoHostAvailableError || error instanceof OperationTimedOutError) {
      throw new StoreUnavailableError('local', 'init schema', describeDriverError(error), {
        cause: error,
      });
    }
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`Cassandra refused a schema statement (${statement}): ${message}`, {
      cause: error,
    });
  }
}

/** Waits until every node reports the same schema version. */
export async function waitForSchemaAgreement(client: cassandra.Client): Promise<void> {
  // checkSchemaAgreement is missing from the driver's typings.
  const metadata = client.metadata as unknown as { checkSchemaAgreement(): Promise<boolean> };
  const deadline = Date.now() + SCHEMA_AGREEMENT_TIMEOUT_MS;
  for (;;) {
    if (await metadata.checkSchemaAgreement()) return;
    if (Date.now() >= deadline) {
      const versions = await schemaVersions(client).catch(() => 'versions unknown');
      throw new StoreUnavailableError(
        'local',
        'init schema',
        `the nodes did not agree on the schema within ${SCHEMA_AGREEMENT_TIMEOUT_MS / 1000} s (${versions}); a node at another version may be down or may have missed the change`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, SCHEMA_AGREEMENT_POLL_MS));
  }
}

async function schemaVersions(client: cassandra.Client): Promise<string> {
  const local = await client.execute('SELECT rpc_address, schema_version FROM system.local');
  const peers = await client.execute('SELECT peer, schema_version FROM system.peers');
  const version = (address: string) => (row: cassandra.types.Row) =>
    [String(row[address]), String(row['schema_version'])] as const;
  return describeVersions([
    ...local.rows.map(version('rpc_address')),
    ...peers.rows.map(version('peer')),
  ]);
}

/** E.g. "127.0.0.1 and 7 others at 33fe3230, …", the most common version first. */
export function describeVersions(nodes: readonly (readonly [string, string])[]): string {
  const byVersion = new Map<string, string[]>();
  for (const [address, version] of nodes) {
    byVersion.set(version, [...(byVersion.get(version) ?? []), address]);
  }
  return [...byVersion]
    .sort((a, b) => b[1].length - a[1].length)
    .map(([version, addresses]) => {
      const n = addresses.length - 1;
      const others = n === 0 ? '' : ` and ${n} other${n === 1 ? '' : 's'}`;
      return `${addresses[0]}${others} at ${version.slice(0, 8)}`;
    })
    .join(', ');
}
