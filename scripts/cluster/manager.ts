/**
 * The local multi-DC Cassandra cluster: start, stop, status and node faults (pause, kill).
 * Partitions live in partitions.ts, a node's process in nodes.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import cassandra from 'cassandra-driver';
import { waitForSchemaAgreement } from '../../src/schema.js';
import {
  checkPrerequisites,
  COMMITLOG_COMPRESSION,
  installCassandra,
  writeNodeConfig,
} from './install.js';
import {
  assertPortsFree,
  currentTopology,
  launch,
  logLines,
  portOpen,
  processState,
  PROBE_KEYSPACE,
  readPid,
  requireRunning,
  runsAsOsUser,
  signal,
  stopNode,
  waitFor,
  waitForCql,
  CQL_START_TIMEOUT_MS,
  withClient,
} from './nodes.js';
import type { Log, NodeState } from './nodes.js';
import { heal, isCut, partitionedTargets } from './partitions.js';
import { CQL_PORT, ClusterError, clusterDir, findNode, nodeSpecs } from './topology.js';
import type { NodeSpec, Topology } from './topology.js';

export { currentTopology, logFile, logLines, processState, serialWorks } from './nodes.js';
export type { NodeState } from './nodes.js';
export {
  cutClients,
  heal,
  isCut,
  partition,
  partitionedTargets,
  partitionUnsupported,
  waitHealed,
} from './partitions.js';

export interface NodeStatus {
  readonly node: NodeSpec;
  readonly state: NodeState;
  readonly cql: boolean;
  /** Cut off by a partition of its DC or of itself. */
  readonly partitioned: boolean;
  /** Resident memory of its JVM, in MiB; undefined when it does not run. */
  readonly rssMiB: number | undefined;
}

/** Contact points per DC, e.g. `{ dc1: ['127.0.0.1'], … }`. */
export function contactPointsByDc(
  topology: Topology = currentTopology(),
): Record<string, string[]> {
  const byDc: Record<string, string[]> = {};
  for (const node of nodeSpecs(topology)) (byDc[node.dc] ??= []).push(node.address);
  return byDc;
}

/**
 * Installs Cassandra if needed, starts every node that is not running, and returns once every
 * node accepts CQL and sees every other node up. Safe to run twice. A running node whose Paxos
 * variant, commitlog setting or OS user differs from `topology` is restarted with it, one node at
 * a time (data kept). The seeds start together, then every other node alone: nine JVMs started
 * at once overload a small machine until gossip times out.
 */
export async function up(topology: Topology, log: Log): Promise<NodeStatus[]> {
  const recorded = path.join(clusterDir(), 'topology.json');
  await checkPrerequisites();
  if (fs.existsSync(recorded)) {
    // This local cluster does no bootstrap or decommission: another shape is a new cluster.
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
  fs.writeFileSync(recorded, JSON.stringify(topology));

  // A run killed mid-test may have left a partition behind; a fresh `up` starts whole.
  await heal(topology, { verify: false });
  const specs = nodeSpecs(topology);
  const seeds = seedsOf(specs);
  for (const node of specs) if (processState(node) === 'paused') await signal(node, 'SIGCONT');

  // Running nodes with another configuration: a rolling restart, one node at a time.
  for (const node of specs) {
    if (processState(node) !== 'running') continue;
    const why = await restartReason(node, topology);
    if (why === undefined) continue;
    log(`restarting ${node.name}: ${why}`);
    await stopNode(node);
    await startNode(node, topology);
  }

  const toStart = specs.filter(
    (s) => processState(s) === 'stopped' || processState(s) === 'absent',
  );
  for (const node of toStart) await assertPortsFree(node);
  const seedsFirst = toStart.filter((s) => seeds.includes(s.address));
  const others = toStart.filter((s) => !seeds.includes(s.address));
  for (const node of seedsFirst) {
    writeNodeConfig(node, seeds, topology);
    await launch(node);
  }
  await Promise.all(seedsFirst.map((node) => waitForCql(node)));
  for (const node of others) {
    log(`starting ${node.name}`);
    await startNode(node, topology);
  }
  await waitForClusterUp(topology, log);
  return status(topology);
}

/** The first node of each DC: the seeds every node gossips with first. */
function seedsOf(specs: readonly NodeSpec[]): string[] {
  return specs.filter((s) => s.name.endsWith('-1')).map((s) => s.address);
}

/** Writes a stopped node's configuration, launches it and waits until it accepts CQL. */
async function startNode(node: NodeSpec, topology: Topology, cqlTimeoutMs?: number): Promise<void> {
  writeNodeConfig(node, seedsOf(nodeSpecs(topology)), topology);
  await launch(node);
  await waitForCql(node, cqlTimeoutMs);
}

/** Why a running node must restart to run `topology`, or undefined if it runs it already. */
async function restartReason(node: NodeSpec, topology: Topology): Promise<string | undefined> {
  const yaml = path.join(node.dir, 'conf', 'cassandra.yaml');
  const config = fs.existsSync(yaml) ? fs.readFileSync(yaml, 'utf8') : '';
  if (!config.includes(`paxos_variant: ${topology.paxos}\n`)) {
    return `Paxos ${topology.paxos} requested`;
  }
  if (!config.includes(`commitlog_sync: ${topology.commitlog}\n`)) {
    return `commitlog_sync ${topology.commitlog} requested`;
  }
  if (config.includes(COMMITLOG_COMPRESSION) !== (topology.commitlog === 'periodic')) {
    return 'commitlog compression to match commitlog_sync';
  }
  if (process.getuid?.() === 0 && !(await runsAsOsUser(node))) {
    return `it must run as OS user ${node.osUser}`;
  }
  return undefined;
}

export async function status(topology: Topology = currentTopology()): Promise<NodeStatus[]> {
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

/** Whether a cluster was ever set up here (its topology is recorded). */
export function hasCluster(): boolean {
  return fs.existsSync(path.join(clusterDir(), 'topology.json'));
}

/** The node JVM's resident memory, from /proc; undefined when it does not run. */
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
export async function down(topology: Topology = currentTopology()): Promise<void> {
  await heal(topology, { verify: false });
  await Promise.all(nodeSpecs(topology).map((node) => stopNode(node)));
}

/** Stops every node and deletes the cluster's data (the installed jars stay cached). */
export async function destroy(topology: Topology = currentTopology()): Promise<void> {
  await down(topology);
  fs.rmSync(clusterDir(), { recursive: true, force: true });
}

/** SIGSTOP: the node stops answering but keeps its connections, like a long GC pause. */
export async function pause(name: string): Promise<void> {
  const node = findNode(nodeSpecs(currentTopology()), name);
  requireRunning(node);
  await signal(node, 'SIGSTOP');
}

export async function resume(name: string): Promise<void> {
  const node = findNode(nodeSpecs(currentTopology()), name);
  if (processState(node) !== 'paused') throw new ClusterError(`Node ${node.name} is not paused.`);
  await signal(node, 'SIGCONT');
}

/** SIGKILL: a crash, no drain. */
export async function kill(name: string): Promise<void> {
  await killNodes([name]);
}

/** SIGKILLs several nodes at the same instant, as a crash of a rack or a DC (not a power loss). */
export async function killNodes(names: readonly string[]): Promise<void> {
  const specs = nodeSpecs(currentTopology());
  const nodes = names.map((name) => findNode(specs, name));
  for (const node of nodes) requireRunning(node);
  await Promise.all(nodes.map((node) => signal(node, 'SIGKILL')));
  for (const node of nodes) {
    await waitFor(() => processState(node) === 'stopped', 30_000, `${node.name} to exit`);
  }
}

/** Starts one stopped node and waits until the cluster sees it up again. */
export async function start(name: string): Promise<void> {
  await startNodes([name]);
}

/**
 * Starts stopped nodes one after another, then waits until every node sees every other up.
 * `cqlTimeoutMs`: how long each may take to accept CQL. With `waitForCluster: false` it returns
 * once each accepts CQL, and the caller waits with {@link waitForClusterUp}.
 */
export async function startNodes(
  names: readonly string[],
  cqlTimeoutMs = CQL_START_TIMEOUT_MS,
  options: { waitForCluster: boolean } = { waitForCluster: true },
): Promise<void> {
  const topology = currentTopology();
  const specs = nodeSpecs(topology);
  const nodes = names.map((name) => findNode(specs, name));
  for (const node of nodes) {
    if (processState(node) === 'absent') {
      throw new ClusterError(`Node ${node.name} was never created; run "npm run cluster -- up".`);
    }
  }
  for (const node of nodes) {
    if (processState(node) !== 'stopped') continue;
    await assertPortsFree(node);
    await startNode(node, topology, cqlTimeoutMs);
  }
  if (options.waitForCluster) await waitForClusterUp(topology);
}

/**
 * The lines every node's system.log holds about linearizability violations (the nodes run with
 * `paxos_on_linearizability_violations: log`). Cassandra checks only with Paxos v2, and only for
 * keys a Paxos repair has covered: an empty list is weaker evidence under Paxos v1.
 */
export function linearizabilityViolations(topology: Topology = currentTopology()): string[] {
  return nodeSpecs(topology).flatMap((node) =>
    logLines(node, /Linearizability violation/).map((line) => `${node.name}: ${line}`),
  );
}

/** Nodes whose schema version differs from most nodes' (a lost schema thread needs a restart). */
async function schemaStragglers(specs: readonly NodeSpec[]): Promise<NodeSpec[]> {
  const versions = await Promise.all(
    specs.map(async (node) =>
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

/** Every node, as coordinator, writes at ALL to a keyspace replicated on every node. */
export async function waitForClusterUp(
  topology: Topology = currentTopology(),
  log: Log = () => undefined,
): Promise<void> {
  const specs = nodeSpecs(topology);
  for (const node of await schemaStragglers(specs)) {
    log(`restarting ${node.name}: its schema disagrees with the other nodes'`);
    await stopNode(node);
    await startNode(node, topology);
  }
  const first = specs[0]!;
  const replication = [...new Set(specs.map((s) => s.dc))]
    .map((dc) => `'${dc}': ${topology.nodesPerDc}`)
    .join(', ');
  await waitFor(
    () =>
      withClient(first, async (client) => {
        await client.execute(
          `CREATE KEYSPACE IF NOT EXISTS ${PROBE_KEYSPACE} WITH replication = {'class': 'NetworkTopologyStrategy', ${replication}}`,
        );
        await client.execute(
          `CREATE TABLE IF NOT EXISTS ${PROBE_KEYSPACE}.probe (k int PRIMARY KEY, v int)`,
        );
        await waitForSchemaAgreement(client);
        return true;
      }).catch(() => false),
    180_000,
    'the probe keyspace to reach every node',
  );
  for (const node of specs) {
    await waitFor(
      () =>
        withClient(node, async (client) => {
          await client.execute(`INSERT INTO ${PROBE_KEYSPACE}.probe (k, v) VALUES (0, 0)`, [], {
            consistency: cassandra.types.consistencies.all,
          });
          return true;
        }).catch(() => false),
      180_000,
      `${node.name} to see every node up`,
    );
  }
}
