/**
 * Proves the test cluster is a real multi-DC Cassandra whose LWTs behave as the allocator
 * needs, including during a DC partition.
 */
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTopology } from '../../scripts/cluster/nodes.js';
import { findNode, nodeSpecs } from '../../scripts/cluster/topology.js';
import { clusterInfo, faults, newClient, withKeyspace } from '../support/cluster.js';

const { consistencies } = cassandra.types;
const ks = withKeyspace('smoke', { create: 'empty' });

beforeAll(async () => {
  const c = await ks.client('dc1');
  await c.execute(`CREATE TABLE ${ks.name}.kv (p text, r text, v int, PRIMARY KEY ((p), r))`);
});

/** A conditional write at the given serial level; true if applied. */
async function cas(
  dc: string,
  p: string,
  expected: number | null,
  next: number,
  serial: 'serial' | 'localSerial',
  host?: cassandra.Host,
) {
  const client = await ks.client(dc);
  const query =
    expected === null
      ? `INSERT INTO ${ks.name}.kv (p, r, v) VALUES (?, 'x', ?) IF NOT EXISTS`
      : `UPDATE ${ks.name}.kv SET v = ? WHERE p = ? AND r = 'x' IF v = ?`;
  const params = expected === null ? [p, next] : [next, p, expected];
  const result = await client.execute(query, params, {
    prepare: true,
    consistency: serial === 'serial' ? consistencies.quorum : consistencies.localQuorum,
    serialConsistency: consistencies[serial],
    ...(host === undefined ? {} : { host }),
  });
  return result.wasApplied();
}

/**
 * {@link cas} until it applies or `ms` pass. A CAS that timed out may have applied, so each
 * timeout is settled by a read at the same serial level through the same host: `next` found
 * means ours applied (nothing else writes `p`), `expected` found means retry. Paxos v1 can time
 * out a round through a node that has just rejoined while it catches up on the commit it missed
 * (seen once in CI after a heal); the node must coordinate again within `ms`, not at once.
 */
async function casEventually(
  dc: string,
  p: string,
  expected: number,
  next: number,
  serial: 'serial' | 'localSerial',
  host: cassandra.Host | undefined,
  ms = 30_000,
): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await cas(dc, p, expected, next, serial, host);
    } catch (error) {
      if (Date.now() > until) throw error;
      console.log(
        `cluster-smoke: CAS on ${p} via ${host?.address ?? dc} failed (${String(error)})`,
      );
    }
    const found = await readSerial(dc, p, serial, host).catch(() => undefined);
    if (found === next) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** `p`'s value read at a serial level through `host` (or any host of `dc`). */
async function readSerial(
  dc: string,
  p: string,
  serial: 'serial' | 'localSerial',
  host: cassandra.Host | undefined,
): Promise<number | undefined> {
  const client = await ks.client(dc);
  const result = await client.execute(`SELECT v FROM ${ks.name}.kv WHERE p = ? AND r = 'x'`, [p], {
    prepare: true,
    consistency: consistencies[serial],
    ...(host === undefined ? {} : { host }),
  });
  return (result.first()?.['v'] as number | null | undefined) ?? undefined;
}

describe('the test cluster', () => {
  it('has three DCs, all of whose nodes are up', async () => {
    expect(ks.dcs.length).toBeGreaterThanOrEqual(3);
    for (const dc of ks.dcs) {
      const client = newClient(dc);
      try {
        await client.connect();
        const hosts = client.hosts.values();
        expect(new Set(hosts.map((h) => h.datacenter))).toEqual(new Set(ks.dcs));
        expect(hosts.every((h) => h.isUp())).toBe(true);
        // A write at ALL needs every replica (one per DC) to be seen up by this coordinator.
        await client.execute(`INSERT INTO ${ks.name}.kv (p, r, v) VALUES ('all', ?, 1)`, [dc], {
          prepare: true,
          consistency: consistencies.all,
        });
      } finally {
        await client.shutdown();
      }
    }
  });

  it('applies a conditional batch over two rows of one partition at SERIAL once', async () => {
    const client = await ks.client('dc1');
    await client.execute(
      `INSERT INTO ${ks.name}.kv (p, r, v) VALUES ('seq', 'GLOBAL', 100) IF NOT EXISTS`,
      [],
      {
        prepare: true,
        consistency: consistencies.quorum,
        serialConsistency: consistencies.serial,
      },
    );
    const batch = [
      {
        query: `UPDATE ${ks.name}.kv SET v = 200 WHERE p = 'seq' AND r = 'GLOBAL' IF v = 100`,
        params: [],
      },
      {
        query: `INSERT INTO ${ks.name}.kv (p, r, v) VALUES ('seq', 'dc1', 200) IF NOT EXISTS`,
        params: [],
      },
    ];
    const options = {
      prepare: true,
      consistency: consistencies.quorum,
      serialConsistency: consistencies.serial,
    };
    const first = await client.batch(batch, options);
    expect(first.wasApplied()).toBe(true);
    const second = await client.batch(batch, options);
    expect(second.wasApplied()).toBe(false);
    const current = new Map(
      second.rows.map((row) => [String(row['r']), row['v'] as number | null]),
    );
    expect(current.get('GLOBAL')).toBe(200);
  });

  it('runs a compare-and-set at LOCAL_SERIAL from each DC', async () => {
    for (const dc of ks.dcs) {
      const p = `local-${dc}`;
      expect(await cas(dc, p, null, 1, 'localSerial')).toBe(true);
      expect(await cas(dc, p, 1, 2, 'localSerial')).toBe(true);
      expect(await cas(dc, p, 1, 3, 'localSerial')).toBe(false);
    }
  });
});

describe.runIf(clusterInfo().faults)('a partitioned DC', () => {
  afterAll(async () => {
    await faults.heal();
  });

  it('loses SERIAL, keeps LOCAL_SERIAL, and gets SERIAL back after heal', async () => {
    expect(await cas('dc1', 'serial-p', null, 1, 'serial')).toBe(true);
    expect(await cas('dc3', 'local-p3', null, 1, 'localSerial')).toBe(true);

    await faults.partition('dc3');
    await expect(cas('dc3', 'serial-p', 1, 2, 'serial')).rejects.toThrow();
    expect(await cas('dc3', 'local-p3', 1, 2, 'localSerial')).toBe(true);
    // The majority side (dc1 + dc2) still has a SERIAL quorum; on a crowded machine a round may
    // still time out while the coordinator waits on the cut DC's replicas, so it is retried.
    expect(await casEventually('dc1', 'serial-p', 1, 2, 'serial', undefined)).toBe(true);

    // After heal the nodes take a while to hold each other for up again (as for a node below).
    await faults.heal();
    expect(await casEventually('dc3', 'serial-p', 2, 3, 'serial', undefined)).toBe(true);
  });
});

describe.runIf(clusterInfo().faults && clusterInfo().nodesPerDc >= 3)('a partitioned node', () => {
  afterAll(async () => {
    await faults.heal();
  });

  it('loses LOCAL_SERIAL as coordinator while the rest of its DC keeps a quorum, and rejoins', async () => {
    const specs = nodeSpecs(currentTopology());
    const client = await ks.client('dc1');
    const hostOf = (name: string) => {
      const { address } = findNode(specs, name);
      const host = client.hosts.values().find((h) => h.address.startsWith(`${address}:`));
      if (host === undefined) throw new Error(`the dc1 client does not know ${name}`);
      return host;
    };
    const cut = hostOf('dc1-3');
    const sibling = hostOf('dc1-1');
    expect(await cas('dc1', 'node-p', null, 1, 'localSerial', cut)).toBe(true);

    // The cut is verified by its effect on the node itself, not on whichever node of its DC a
    // client would pick as coordinator.
    await faults.partitionNode('dc1-3');
    await expect(cas('dc1', 'node-p', 1, 2, 'localSerial', cut)).rejects.toThrow();
    expect(await casEventually('dc1', 'node-p', 1, 2, 'localSerial', sibling)).toBe(true);

    // After heal every node holds every other for up again, and the node coordinates again.
    await faults.heal();
    expect(await casEventually('dc1', 'node-p', 2, 3, 'localSerial', cut)).toBe(true);
    expect(await readSerial('dc1', 'node-p', 'localSerial', sibling)).toBe(3);
  });
});
