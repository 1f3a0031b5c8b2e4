/**
 * Vitest global setup of the integration tests: finds or starts a real multi-DC Cassandra.
 *
 * Order: a cluster named in IDGEN_CASSANDRA (`dc1=10.0.0.5,dc2=10.1.0.5`); else a cluster of
 * `cassandra:5.0` containers when a Docker engine answers; else the local cluster manager
 * (Maven Central jars). Only the local manager supports faults (partition, pause, kill).
 */
import type { TestProject } from 'vitest/node';
import * as manager from '../../scripts/cluster/manager.js';
import { DEFAULT_TOPOLOGY, parseClusterSpec } from '../../scripts/cluster/topology.js';
import { startContainerCluster, dockerAnswers } from './containers.js';
import type { ClusterInfo } from './cluster.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const spec = process.env['IDGEN_CASSANDRA'];
  let info: ClusterInfo;
  let teardown: () => Promise<void> = async () => undefined;

  if (spec) {
    info = { source: 'env', dcs: parseClusterSpec(spec), faults: false };
  } else if (await dockerAnswers()) {
    const containers = await startContainerCluster(DEFAULT_TOPOLOGY.dcs);
    info = { source: 'testcontainers', dcs: containers.dcs, faults: false };
    teardown = containers.stop;
  } else {
    // Judged by the processes, not a CQL probe that a loaded machine can time out.
    const wasUp = (await manager.status()).every((s) => s.state === 'running');
    await manager.up(DEFAULT_TOPOLOGY, (line) => console.error(`[cluster] ${line}`));
    info = {
      source: 'local',
      dcs: manager.contactPointsByDc(),
      faults: (await manager.partitionUnsupported()) === undefined,
    };
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
