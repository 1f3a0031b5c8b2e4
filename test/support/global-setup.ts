/**
 * Vitest global setup of the integration tests: finds or starts a real multi-DC Cassandra.
 *
 * Which cluster: the one named in IDGEN_CASSANDRA (`dc1=10.0.0.5,dc2=10.1.0.5`); else, with
 * IDGEN_TEST_CLUSTER=containers, a cluster of containers (needs a Docker engine that can pull
 * the Cassandra image); else the local cluster manager (Maven Central jars). Only the local
 * manager supports faults (partition, pause, kill).
 *
 * The local cluster takes the shape the tests need whatever a previous command left: at least
 * 3 nodes per DC (one of them hangs or pauses in the fault tests) unless IDGEN_NODES_PER_DC says
 * otherwise, and the Paxos variant of IDGEN_PAXOS, else the one it runs, else v2.
 */
import type { TestProject } from 'vitest/node';
import * as manager from '../../scripts/cluster/manager.js';
import {
  DEFAULT_TOPOLOGY,
  describeTopology,
  nodeSpecs,
  parseClusterSpec,
  testTopology,
} from '../../scripts/cluster/topology.js';
import { readNodeSettings, settingsProblems } from '../../scripts/cluster/settings.js';
import type { Topology } from '../../scripts/cluster/topology.js';
import { startContainerCluster } from './containers.js';
import type { ClusterInfo } from './cluster.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const spec = process.env['IDGEN_CASSANDRA'];
  let info: ClusterInfo;
  let teardown: () => Promise<void> = async () => undefined;

  const withNodes = (dcs: Record<string, string[]>) =>
    Object.entries(dcs).flatMap(([dc, hosts]) =>
      hosts.map((address, i) => ({ name: `${dc}-${i + 1}`, dc, address })),
    );
  if (spec) {
    const dcs = parseClusterSpec(spec);
    const nodesPerDc = Math.min(...Object.values(dcs).map((hosts) => hosts.length));
    info = {
      source: 'env',
      dcs,
      faults: false,
      nodesPerDc,
      paxos: 'unknown',
      nodes: withNodes(dcs),
    };
  } else if (testClusterKind() === 'containers') {
    const containers = await startContainerCluster(DEFAULT_TOPOLOGY.dcs);
    info = {
      source: 'testcontainers',
      dcs: containers.dcs,
      faults: false,
      nodesPerDc: 1,
      paxos: 'unknown',
      nodes: withNodes(containers.dcs),
    };
    teardown = containers.stop;
  } else {
    const topology = testTopology(manager.hasCluster() ? manager.currentTopology() : undefined);
    // Judged by the processes, not a CQL probe that a loaded machine can time out.
    const wasUp =
      manager.hasCluster() && (await manager.status()).every((s) => s.state === 'running');
    // `up` restarts or recreates what differs; the nodes themselves then confirm the settings.
    await manager.up(topology, (line) => console.error(`[cluster] ${line}`));
    await requireSettings(topology);
    info = {
      source: 'local',
      dcs: manager.contactPointsByDc(),
      faults: (await manager.partitionUnsupported()) === undefined,
      nodesPerDc: topology.nodesPerDc,
      paxos: topology.paxos,
      nodes: nodeSpecs(topology).map(({ name, dc, address }) => ({ name, dc, address })),
    };
    console.error(`[cluster] ${describeTopology(topology)}`);
    teardown = async () => {
      await manager.heal(manager.currentTopology(), { verify: false });
      if (!wasUp && !process.env['IDGEN_KEEP_CLUSTER']) await manager.down();
    };
  }
  if (process.env['IDGEN_REQUIRE_FAULTS'] && !info.faults) {
    await teardown();
    throw new Error(
      `IDGEN_REQUIRE_FAULTS is set but the ${info.source} cluster cannot inject faults; the partition, pause and kill tests need the local cluster manager running as root.`,
    );
  }
  console.error(
    `[cluster] ${info.source} cluster with DCs ${Object.keys(info.dcs).join(', ')} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  project.provide('cassandra', info);
  return teardown;
}

/**
 * Fails the run unless every node of the local cluster runs the Paxos variant IDGEN_PAXOS asks
 * for and a durable commitlog, as read from each node itself.
 */
async function requireSettings(topology: Topology): Promise<void> {
  const expected = { paxos: topology.paxos, commitlogSync: topology.commitlog };
  const problems = settingsProblems(await readNodeSettings(nodeSpecs(topology)), expected);
  if (problems.length > 0) {
    throw new Error(
      `The local cluster does not run what the tests ask for (IDGEN_PAXOS=${topology.paxos}, commitlog_sync ${topology.commitlog}): ${problems.join('; ')}. Restart it with "npm run cluster -- up --paxos ${topology.paxos}", or set IDGEN_PAXOS to what it runs.`,
    );
  }
}

/** `IDGEN_TEST_CLUSTER`: `local` (the default) or `containers`. */
function testClusterKind(): 'local' | 'containers' {
  const kind = process.env['IDGEN_TEST_CLUSTER'] ?? 'local';
  if (kind !== 'local' && kind !== 'containers') {
    throw new Error(`IDGEN_TEST_CLUSTER must be local or containers; got "${kind}".`);
  }
  return kind;
}
