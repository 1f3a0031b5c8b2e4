/**
 * What integration tests use of the cluster the global setup found: contact points per DC,
 * a fresh keyspace per test file, and faults (local cluster manager only).
 */
import { randomBytes } from 'node:crypto';
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, inject } from 'vitest';
import * as manager from '../../scripts/cluster/manager.js';
import { initSchema, waitForSchemaAgreement } from '../../src/schema.js';

export interface ClusterInfo {
  readonly source: 'env' | 'testcontainers' | 'local';
  /** Contact points per DC. */
  readonly dcs: Readonly<Record<string, readonly string[]>>;
  /** Whether partition/pause/kill can be injected (the local cluster manager, as root). */
  readonly faults: boolean;
  /** Nodes per DC (the fewest, for a cluster named in IDGEN_CASSANDRA). */
  readonly nodesPerDc: number;
  /** The Paxos variant the nodes run; unknown for clusters the tests did not start. */
  readonly paxos: 'v1' | 'v2' | 'unknown';
  readonly nodes: readonly {
    readonly name: string;
    readonly dc: string;
    readonly address: string;
  }[];
}

declare module 'vitest' {
  export interface ProvidedContext {
    cassandra: ClusterInfo;
  }
}

export function clusterInfo(): ClusterInfo {
  return inject('cassandra');
}

export function dcNames(): string[] {
  return Object.keys(clusterInfo().dcs).sort();
}

export function contactPoints(dc: string): string[] {
  const points = clusterInfo().dcs[dc];
  if (!points) throw new Error(`No DC "${dc}" in the test cluster (${dcNames().join(', ')}).`);
  return [...points];
}

/** A DC-local driver client, as a service in that DC would have. */
export function newClient(dc: string, keyspace?: string): cassandra.Client {
  return new cassandra.Client({
    contactPoints: contactPoints(dc),
    localDataCenter: dc,
    ...(keyspace ? { keyspace } : {}),
    socketOptions: { connectTimeout: 5000, readTimeout: 15000 },
  });
}

export interface TestKeyspace {
  readonly name: string;
  readonly dcs: string[];
  readonly replication: Readonly<Record<string, number>>;
  contactPoints(dc: string): string[];
  /** What `connect()`, `openAdmin()` and `initSchema()` take to reach it from `dc`. */
  connection(dc?: string): { contactPoints: string[]; localDataCenter: string; keyspace: string };
  /** Cached, DC-local; closed by drop(). */
  client(dc: string): Promise<cassandra.Client>;
  /**
   * Closes the clients. On the local cluster the keyspace stays: Cassandra 5.0.8 can lose a
   * node's schema thread ("Unknown CF" in MigrationStage, then a lasting schema disagreement)
   * when a keyspace is dropped while replicas still receive its mutations, which the fault tests'
   * hints and cross-DC commits make likely. `npm run cluster -- destroy` removes them all.
   */
  drop(): Promise<void>;
}

/**
 * A keyspace named `<prefix>_<random>` (NetworkTopologyStrategy with as many replicas per DC as
 * the DC has nodes, at most 3), not created yet.
 */
function testKeyspace(prefix: string): TestKeyspace {
  if (!/^[a-z][a-z0-9_]{0,30}$/.test(prefix)) throw new Error(`Bad keyspace prefix "${prefix}".`);
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const dcs = dcNames();
  const factor = Math.min(3, clusterInfo().nodesPerDc);
  const replication = Object.fromEntries(dcs.map((dc) => [dc, factor]));
  const clients = new Map<string, Promise<cassandra.Client>>();
  const client = (dc: string) => {
    let c = clients.get(dc);
    if (!c) {
      const created = newClient(dc);
      c = created.connect().then(() => created);
      clients.set(dc, c);
    }
    return c;
  };
  return {
    name,
    dcs,
    replication,
    contactPoints,
    connection: (dc = dcs[0]!) => ({
      contactPoints: contactPoints(dc),
      localDataCenter: dc,
      keyspace: name,
    }),
    client,
    drop: async () => {
      try {
        if (clusterInfo().source !== 'local') {
          await (await client(dcs[0]!)).execute(`DROP KEYSPACE IF EXISTS ${name}`);
        }
      } finally {
        await Promise.all([...clients.values()].map(async (c) => (await c).shutdown()));
      }
    },
  };
}

/** Creates `ks` without tables and waits until every node has it. */
async function createKeyspace(ks: TestKeyspace): Promise<void> {
  const admin = await ks.client(ks.dcs[0]!);
  const factors = Object.entries(ks.replication)
    .map(([dc, factor]) => `'${dc}': ${factor}`)
    .join(', ');
  await admin.execute(
    `CREATE KEYSPACE ${ks.name} WITH replication = {'class': 'NetworkTopologyStrategy', ${factors}}`,
  );
  await waitForSchemaAgreement(admin);
}

/** Creates an empty keyspace named `<prefix>_<random>` (see {@link withKeyspace}). */
export async function createTestKeyspace(prefix: string): Promise<TestKeyspace> {
  const ks = testKeyspace(prefix);
  await createKeyspace(ks);
  return ks;
}

/**
 * A keyspace `<prefix>_<random>` of the calling test file or describe block: created before its
 * tests (`create`: with the idgen tables, by `initSchema()` from the first DC; `empty`; or
 * `nothing`, for tests that create it themselves) and dropped after them (see
 * {@link TestKeyspace.drop}). Its name is known at once; it exists from the first test on.
 */
export function withKeyspace(
  prefix: string,
  { create = 'tables' }: { readonly create?: 'tables' | 'empty' | 'nothing' } = {},
): TestKeyspace {
  const ks = testKeyspace(prefix);
  beforeAll(async () => {
    if (create === 'nothing') return;
    await createKeyspace(ks);
    if (create === 'tables') await initSchema({ ...ks.connection(), replication: ks.replication });
  });
  afterAll(() => ks.drop());
  return ks;
}

/** Fault injection through the local cluster manager; tests that need it run only there. */
export const faults = {
  partition: (dc: string) => manager.partition(dc),
  /** Cuts one node (e.g. `dc1-2`) off from every other node. */
  partitionNode: (node: string) => manager.partition(node),
  /** Hides a DC's nodes from this host's clients (heal removes it with the partitions). */
  cutClients: (dc: string) => manager.cutClients(dc),
  linearizabilityViolations: () => manager.linearizabilityViolations(),
  heal: () => manager.heal(),
  pause: (node: string) => manager.pause(node),
  resume: (node: string) => manager.resume(node),
  kill: (node: string) => manager.kill(node),
  start: (node: string) => manager.start(node),
  /** Restarts one node with `commitlog_sync: periodic` or `batch` (about a minute). */
  restartWithCommitlog: (node: string, commitlog: 'batch' | 'periodic') =>
    manager.restartWithCommitlog(node, commitlog),
};
