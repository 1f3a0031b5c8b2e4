/**
 * A multi-DC Cassandra of containers, for machines with a Docker engine: the image pinned to the
 * version the local manager runs, one node per DC, started one at a time, with the durable
 * commitlog the allocator's safety argument needs.
 */
import { GenericContainer, Network, Wait, getContainerRuntimeClient } from 'testcontainers';
import type { StartedTestContainer } from 'testcontainers';
import { CASSANDRA_VERSION } from '../../scripts/cluster/topology.js';

export const CASSANDRA_IMAGE = `cassandra:${CASSANDRA_VERSION}`;

/**
 * The image's entrypoint configures cassandra.yaml from the environment only when its first
 * argument is `cassandra`: edit the commitlog setting first, then hand over to it. `batch`
 * syncs before acknowledging (the image's default, periodic, loses acknowledged writes on a
 * crash), and `commitlog_sync_period` must then be absent. `auto_bootstrap: false`, as on the
 * local cluster: a new cluster has nothing to stream, and a bootstrapping node that has not heard
 * from the seed within the shortened ring delay exits ("Unable to contact any seeds").
 *
 * The node listens on its address in the shared network, found by its own alias there: the
 * entrypoint would take the container's first address, and testcontainers starts a container on
 * Docker's default bridge before it joins the network, so that first address is one no seed and
 * no peer uses ("Unable to gossip with any peers").
 */
function nodeCommand(alias: string): string[] {
  return [
    'bash',
    '-c',
    `CASSANDRA_LISTEN_ADDRESS="$(getent hosts ${alias} | awk '{ print $1; exit }')" && test -n "$CASSANDRA_LISTEN_ADDRESS" && export CASSANDRA_LISTEN_ADDRESS && sed -i -e 's/^commitlog_sync: .*/commitlog_sync: batch/' -e '/^commitlog_sync_period:/d' -e '/^auto_bootstrap:/d' /etc/cassandra/cassandra.yaml && echo 'auto_bootstrap: false' >> /etc/cassandra/cassandra.yaml && exec docker-entrypoint.sh cassandra -f`,
  ];
}

export async function dockerAnswers(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * One container per DC on a shared network. The seed starts first, then each other node alone
 * (two nodes bootstrapping at once can fail to join), each with its own token; the cluster is
 * ready when every node is Up and Normal. Contact points are the containers' network addresses,
 * which the host reaches directly on Linux.
 */
export async function startContainerCluster(
  dcCount: number,
): Promise<{ dcs: Record<string, string[]>; stop: () => Promise<void> }> {
  const network = await new Network().start();
  const containers: StartedTestContainer[] = [];
  const alias = (i: number) => `cassandra-dc${i + 1}`;
  const tokens = Array.from({ length: dcCount }, (_, i) =>
    (-(2n ** 63n) + (2n ** 64n * BigInt(i)) / BigInt(dcCount)).toString(),
  );
  const create = (i: number) =>
    new GenericContainer(CASSANDRA_IMAGE)
      .withNetwork(network)
      .withNetworkAliases(alias(i))
      .withEnvironment({
        CASSANDRA_CLUSTER_NAME: 'idgen-cass-test',
        CASSANDRA_SEEDS: alias(0),
        CASSANDRA_DC: `dc${i + 1}`,
        CASSANDRA_RACK: 'rack1',
        CASSANDRA_ENDPOINT_SNITCH: 'GossipingPropertyFileSnitch',
        CASSANDRA_NUM_TOKENS: '1',
        MAX_HEAP_SIZE: '512M',
        HEAP_NEWSIZE: '128M',
        JVM_EXTRA_OPTS: `-Dcassandra.initial_token=${tokens[i]} -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000`,
      })
      .withCommand(nodeCommand(alias(i)))
      .withWaitStrategy(Wait.forLogMessage(/Starting listening for CQL clients/))
      .withStartupTimeout(300_000)
      .start();
  for (let i = 0; i < dcCount; i++) containers.push(await create(i));
  await waitUntilNormal(containers[0]!, dcCount);
  const dcs: Record<string, string[]> = {};
  containers.forEach((c, i) => (dcs[`dc${i + 1}`] = [c.getIpAddress(network.getName())]));
  return {
    dcs,
    stop: async () => {
      await Promise.all(containers.map((c) => c.stop()));
      await network.stop();
    },
  };
}

/** Polls `nodetool status` on `seed` until `count` nodes are Up and Normal (UN). */
async function waitUntilNormal(seed: StartedTestContainer, count: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const { output } = await seed.exec(['nodetool', 'status']);
    const normal = output.split('\n').filter((line) => line.startsWith('UN ')).length;
    if (normal >= count) return;
    if (Date.now() > deadline) {
      throw new Error(
        `only ${normal} of ${count} Cassandra containers are Up and Normal after 300 s:\n${output}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
}
