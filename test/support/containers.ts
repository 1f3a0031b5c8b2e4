/** A multi-DC Cassandra of `cassandra:5.0` containers, for machines with a Docker engine. */
import { GenericContainer, Network, Wait, getContainerRuntimeClient } from 'testcontainers';
import type { StartedTestContainer } from 'testcontainers';

export async function dockerAnswers(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * One container per DC on a shared network. The seed starts first; the others join with
 * distinct tokens. Contact points are the containers' network addresses, which the host
 * reaches directly on Linux.
 */
export async function startContainerCluster(
  dcCount: number,
): Promise<{ dcs: Record<string, string[]>; stop: () => Promise<void> }> {
  const network = await new Network().start();
  const containers: StartedTestContainer[] = [];
  const tokens = Array.from({ length: dcCount }, (_, i) =>
    (-(2n ** 63n) + (2n ** 64n * BigInt(i)) / BigInt(dcCount)).toString(),
  );
  const create = (i: number) =>
    new GenericContainer('cassandra:5.0')
      .withNetwork(network)
      .withNetworkAliases(`cassandra-dc${i + 1}`)
      .withEnvironment({
        CASSANDRA_CLUSTER_NAME: 'idgen-cass-test',
        CASSANDRA_SEEDS: 'cassandra-dc1',
        CASSANDRA_DC: `dc${i + 1}`,
        CASSANDRA_RACK: 'rack1',
        CASSANDRA_ENDPOINT_SNITCH: 'GossipingPropertyFileSnitch',
        CASSANDRA_NUM_TOKENS: '1',
        MAX_HEAP_SIZE: '512M',
        HEAP_NEWSIZE: '128M',
        JVM_EXTRA_OPTS: `-Dcassandra.initial_token=${tokens[i]} -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000`,
      })
      .withWaitStrategy(Wait.forLogMessage(/Starting listening for CQL clients/))
      .withStartupTimeout(300_000)
      .start();
  containers.push(await create(0));
  containers.push(
    ...(await Promise.all(Array.from({ length: dcCount - 1 }, (_, i) => create(i + 1)))),
  );
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
