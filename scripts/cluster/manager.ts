/** The local multi-DC Cassandra cluster: start, stop, status and node faults (pause, kill). */
import fs from 'node:fs';
import path from 'node:path';
import cassandra from 'cassandra-driver';
import { waitForSchemaAgreement } from '../../src/schema.js';
import { CassandraStore } from '../../src/store/cassandra/store.js';
import {
  COMMITLOG_COMPRESSION,
  checkPrerequisites,
  installCassandra,
  writeNodeConfig,
} from './install.js';
import {
  PROBE_KEYSPACE,
  assertPortsFree,
  currentTopology,
  hasCluster,
  launch,
  logLines,
  portOpen,
  processState,
  readPid,
  requireRunning,
  runsAsOsUser,
  seesEveryNodeUp,
  signal,
  stopNode,
  topologyFile,
  waitFor,
  waitForCql,
  withClient,
  works,
} from './nodes.js';
import type { Log } from './nodes.js';
import { heal, isCut, partitionedTargets } from './partitions.js';
import { CQL_PORT, ClusterError, clusterDir, findNode, nodeSpecs } from './topology.js';
import type { CommitlogSync, NodeSpec, Topology } from './topology.js';

export { currentTopology, hasCluster, logLines, processState } from './nodes.js';
export { cutClients, heal, partition, partitionUnsupported, waitHealed } from './partitions.js';

export type NodeStatus = Awaited<ReturnType<typeof status>>[number];

export function contactPointsByDc(topology = currentTopology()): Record<string, string[]> {
  const byDc: Record<string, string[]> = {};
  for (const node of nodeSpecs(topology)) (byDc[node.dc] ??= []).push(node.address);
  return byDc;
}

/** A store on `dc`'s nodes, to read the rows back as the library sees them. */
export async function openStore(keyspace: string, dc: string, topology = currentTopology()) {
  const client = new cassandra.Client({
    contactPoints: contactPointsByDc(topology)[dc] ?? [],
    localDataCenter: dc,
    socketOptions: { readTimeout: 30_000 },
  });
  await client.connect();
  return new CassandraStore(client, keyspace, { ownsClient: true });
}

/**
 * Starts every node not running (installing Cassandra if needed) and restarts, one at a time, a
 * node configured otherwise; returns once every node sees every other up. Only the seeds start
 * together: nine JVMs started at once overload a small machine until gossip times out.
 */
export async function up(topology: Topology, log: Log) {
  await checkPrerequisites();
  if (hasCluster()) {
    // No bootstrap or decommission here: another shape is a new cluster.
    const existing = currentTopology();
    if (existing.dcs !== topology.dcs || existing.nodesPerDc !== topology.nodesPerDc) {
      log(
        `the local cluster has ${existing.dcs} DCs × ${existing.nodesPerDc} nodes; recreating it with ${topology.dcs} DCs × ${topology.nodesPerDc} nodes (its data is dropped)`,
      );
      await destroy(existing);
    }
  }
  await installCassandra(log);
  fs.mkdirSync(clusterDir(), { recursive: true });
  fs.writeFileSync(topologyFile(), JSON.stringify(topology));

  // A run killed mid-test may have left a partition behind.
  await heal(topology, { verify: false });
  const specs = nodeSpecs(topology);
  for (const node of specs) if (processState(node) === 'paused') await signal(node, 'SIGCONT');
  for (const node of specs) {
    const why = await restartReason(node, topology);
    if (why !== undefined) await restart(node, topology, why, log);
  }

  const toStart = specs.filter((s) => ['stopped', 'absent'].includes(processState(s)));
  for (const node of toStart) await assertPortsFree(node);
  const seeds = seedsOf(specs);
  const seedsFirst = toStart.filter((s) => seeds.includes(s.address));
  for (const node of seedsFirst) {
    writeNodeConfig(node, seeds, topology);
    await launch(node);
  }
  await Promise.all(seedsFirst.map((node) => waitForCql(node)));
  for (const node of toStart.filter((s) => !seeds.includes(s.address))) {
    log(`starting ${node.name}`);
    await startNode(node, topology);
  }
  await waitForClusterUp(topology, log);
  return status(topology);
}

function seedsOf(specs: readonly NodeSpec[]): string[] {
  return specs.filter((s) => s.name.endsWith('-1')).map((s) => s.address);
}

async function startNode(node: NodeSpec, topology: Topology, cqlTimeoutMs?: number) {
  writeNodeConfig(node, seedsOf(nodeSpecs(topology)), topology);
  await launch(node);
  await waitForCql(node, cqlTimeoutMs);
}

async function restart(node: NodeSpec, topology: Topology, why: string, log: Log) {
  log(`restarting ${node.name}: ${why}`);
  await stopNode(node);
  await startNode(node, topology);
}

/** Why a running node must restart to run `topology`; undefined if it runs it, or runs not. */
async function restartReason(node: NodeSpec, topology: Topology): Promise<string | undefined> {
  if (processState(node) !== 'running') return undefined;
  const yaml = path.join(node.dir, 'conf', 'cassandra.yaml');
  const config = fs.existsSync(yaml) ? fs.readFileSync(yaml, 'utf8') : '';
  const { paxos, commitlog } = topology;
  if (!config.includes(`paxos_variant: ${paxos}\n`)) return `Paxos ${paxos} requested`;
  if (!config.includes(`commitlog_sync: ${commitlog}\n`))
    return `commitlog_sync ${commitlog} requested`;
  if (config.includes(COMMITLOG_COMPRESSION) !== (commitlog === 'periodic'))
    return 'commitlog compression to match commitlog_sync';
  const root = process.getuid?.() === 0;
  return root && !(await runsAsOsUser(node)) ? `it must run as OS user ${node.osUser}` : undefined;
}

export async function status(topology = currentTopology()) {
  const cut = await partitionedTargets();
  return Promise.all(
    nodeSpecs(topology).map(async (node) => ({
      node,
      state: processState(node),
      cql: await portOpen(node.address, CQL_PORT),
      partitioned: isCut(node, cut),
      rssMiB: residentMiB(node),
    })),
  );
}

function residentMiB(node: NodeSpec): number | undefined {
  const pid = readPid(node);
  if (pid === undefined || processState(node) === 'stopped') return undefined;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** Stops every node (SIGTERM, then SIGKILL after a minute); data is kept. */
export async function down(topology = currentTopology()): Promise<void> {
  await heal(topology, { verify: false });
  await Promise.all(nodeSpecs(topology).map((node) => stopNode(node)));
}

export async function destroy(topology = currentTopology()): Promise<void> {
  await down(topology);
  fs.rmSync(clusterDir(), { recursive: true, force: true });
}

const nodeNamed = (name: string) => findNode(nodeSpecs(currentTopology()), name);

/** SIGSTOP: the node stops answering but keeps its connections, like a long GC pause. */
export async function pause(name: string): Promise<void> {
  const node = nodeNamed(name);
  requireRunning(node);
  await signal(node, 'SIGSTOP');
}

export async function resume(name: string): Promise<void> {
  const node = nodeNamed(name);
  if (processState(node) !== 'paused') throw new ClusterError(`Node ${node.name} is not paused.`);
  await signal(node, 'SIGCONT');
}

export const kill = (name: string): Promise<void> => killNodes([name]);

/** SIGKILLs several nodes at the same instant, as a crash of a rack or a DC (not a power loss). */
export async function killNodes(names: readonly string[]): Promise<void> {
  const nodes = names.map(nodeNamed);
  for (const node of nodes) requireRunning(node);
  await Promise.all(nodes.map((node) => signal(node, 'SIGKILL')));
  for (const node of nodes) {
    await waitFor(() => processState(node) === 'stopped', 30_000, `${node.name} to exit`);
  }
}

export const start = (name: string): Promise<void> => startNodes([name]);

export async function startNodes(
  names: readonly string[],
  cqlTimeoutMs?: number,
  options = { waitForCluster: true },
): Promise<void> {
  const topology = currentTopology();
  const nodes = names.map(nodeNamed);
  const absent = nodes.find((node) => processState(node) === 'absent');
  if (absent)
    throw new ClusterError(`Node ${absent.name} was never created; run "npm run cluster -- up".`);
  for (const node of nodes) {
    if (processState(node) !== 'stopped') continue;
    await assertPortsFree(node);
    await startNode(node, topology, cqlTimeoutMs);
  }
  if (options.waitForCluster) await waitForClusterUp(topology);
}

/** Restarts node `name` with another `commitlog_sync` than the cluster's, until the next `up`. */
export async function restartWithCommitlog(name: string, commitlog: CommitlogSync): Promise<void> {
  const topology = currentTopology();
  const node = nodeNamed(name);
  requireRunning(node);
  await stopNode(node);
  await startNode(node, { ...topology, commitlog });
  await waitForClusterUp(topology);
}

/** Cassandra checks linearizability under Paxos v2 only: an empty list says less under v1. */
export function linearizabilityViolations(topology = currentTopology()): string[] {
  return nodeSpecs(topology).flatMap((node) =>
    logLines(node, /Linearizability violation/).map((line) => `${node.name}: ${line}`),
  );
}

/** Nodes whose schema version differs from most nodes' (a lost schema thread needs a restart). */
async function schemaStragglers(specs: readonly NodeSpec[]): Promise<NodeSpec[]> {
  const versions = await Promise.all(
    specs.map((node) =>
      withClient(node, async (client) => {
        const row = (await client.execute('SELECT schema_version FROM system.local')).first();
        return String(row?.['schema_version'] ?? '');
      }).catch(() => ''),
    ),
  );
  const counts = new Map<string, number>();
  for (const v of versions) if (v !== '') counts.set(v, (counts.get(v) ?? 0) + 1);
  const majority = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  return specs.filter((_, i) => versions[i] !== '' && versions[i] !== majority);
}

/** Waits until every node, as coordinator, writes at ALL to a keyspace on every node. */
export async function waitForClusterUp(
  topology = currentTopology(),
  log: Log = () => undefined,
): Promise<void> {
  const specs = nodeSpecs(topology);
  for (const node of await schemaStragglers(specs))
    await restart(node, topology, "its schema disagrees with the other nodes'", log);
  const replication = [...new Set(specs.map((s) => s.dc))]
    .map((dc) => `'${dc}': ${topology.nodesPerDc}`)
    .join(', ');
  const createProbe = async (client: cassandra.Client) => {
    await client.execute(
      `CREATE KEYSPACE IF NOT EXISTS ${PROBE_KEYSPACE} WITH replication = {'class': 'NetworkTopologyStrategy', ${replication}}`,
    );
    await client.execute(
      `CREATE TABLE IF NOT EXISTS ${PROBE_KEYSPACE}.probe (k int PRIMARY KEY, v int)`,
    );
    await waitForSchemaAgreement(client);
  };
  await waitFor(
    () => works(specs[0]!, createProbe),
    180_000,
    'the probe keyspace to reach every node',
  );
  for (const node of specs) {
    await waitFor(() => seesEveryNodeUp(node), 180_000, `${node.name} to see every node up`);
  }
}
