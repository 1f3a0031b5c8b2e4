/** The local multi-DC cluster: a fresh keyspace per run, a DC-local client per DC, an admin. */
import { randomBytes } from 'node:crypto';
import os from 'node:os';

import cassandra from 'cassandra-driver';

import {
  connect,
  initSchema,
  type ConnectOptions,
  type CreateSequenceOptions,
  type IdGen,
} from '../../src/index.js';
import * as manager from '../cluster/manager.js';
import type { MachineInfo, Log } from './results.js';
import { waitForSchemaAgreement } from '../../src/schema.js';

/** Replicas per DC of a production keyspace: a quorum survives one node down. */
const PRODUCTION_RF = 3;

/** Uses the running cluster, else starts it (`up` leaves running nodes alone). */
export async function ensureCluster(log: Log): Promise<Record<string, string[]>> {
  const topology = manager.currentTopology();
  const nodes = await manager.status(topology);
  const down = nodes.filter((n) => n.state !== 'running' || !n.cql || n.partitioned);
  if (down.length > 0) {
    const partitioned = down.filter((n) => n.partitioned).map((n) => n.node.dc);
    if (partitioned.length > 0) {
      throw new Error(
        `DC ${[...new Set(partitioned)].join(', ')} is partitioned; run "npm run cluster -- heal" first.`,
      );
    }
    log(`cluster: ${down.map((n) => `${n.node.name} ${n.state}`).join(', ')}; starting it`);
    await manager.up(topology, log);
  }
  return manager.contactPointsByDc(topology);
}

/** A benchmark keyspace on the cluster, with what the phases need; {@link close} drops it. */
export class BenchCluster {
  private constructor(
    readonly keyspace: string,
    readonly replication: Readonly<Record<string, number>>,
    readonly contactPoints: Readonly<Record<string, readonly string[]>>,
    private readonly clients: ReadonlyMap<string, cassandra.Client>,
    private readonly admin: IdGen,
  ) {}

  get dcs(): string[] {
    return Object.keys(this.contactPoints).sort();
  }

  /** Creates keyspace `bench_<random>`, RF 3 per DC where the DC has the nodes. */
  static async open(contactPoints: Record<string, string[]>, log: Log): Promise<BenchCluster> {
    const keyspace = `bench_${randomBytes(4).toString('hex')}`;
    const dcs = Object.keys(contactPoints).sort();
    const first = dcs[0]!;
    const replication = Object.fromEntries(
      dcs.map((dc) => [dc, Math.min(PRODUCTION_RF, contactPoints[dc]!.length)]),
    );
    log(`keyspace ${keyspace} (${dcs.map((dc) => `${dc}:${replication[dc]}`).join(', ')})`);
    const inFirst = { contactPoints: contactPoints[first]!, localDataCenter: first, keyspace };
    await initSchema({ ...inFirst, replication });
    const clients = new Map<string, cassandra.Client>();
    let admin: IdGen | undefined;
    try {
      for (const dc of dcs) {
        const client = new cassandra.Client({
          contactPoints: contactPoints[dc]!,
          localDataCenter: dc,
          queryOptions: { prepare: true },
          socketOptions: { connectTimeout: 5_000, readTimeout: 12_000 },
        });
        clients.set(dc, client);
        await client.connect();
      }
      const client = clients.get(first)!;
      await client.execute(
        `CREATE TABLE IF NOT EXISTS "${keyspace}".naive_counter (k text PRIMARY KEY, v bigint)`,
      );
      await waitForSchemaAgreement(client);
      admin = await connect(inFirst);
      return new BenchCluster(keyspace, replication, contactPoints, clients, admin);
    } catch (error) {
      await Promise.allSettled([...clients.values()].map((c) => c.shutdown()));
      await admin?.close();
      throw error;
    }
  }

  client(dc: string): cassandra.Client {
    const client = this.clients.get(dc);
    if (client === undefined) throw new Error(`no DC "${dc}" (DCs: ${this.dcs.join(', ')})`);
    return client;
  }

  connectOptions(dc: string): ConnectOptions {
    const contactPoints = [...this.contactPoints[dc]!];
    return { contactPoints, localDataCenter: dc, keyspace: this.keyspace };
  }

  async createSequence(name: string, options: CreateSequenceOptions): Promise<void> {
    await this.admin.createSequence(name, options);
  }

  async cassandraVersions(): Promise<Record<string, string>> {
    const versions: Record<string, string> = {};
    for (const dc of this.dcs) {
      const result = await this.client(dc).execute('SELECT release_version FROM system.local');
      versions[dc] = String(result.first()?.get('release_version') ?? 'unknown');
    }
    return versions;
  }

  /** Drops the keyspace and shuts every client down. Never throws. */
  async close(log: Log): Promise<void> {
    await this.admin.close().catch(() => undefined);
    try {
      const client = this.client(this.dcs[0]!);
      await client.execute(`DROP KEYSPACE IF EXISTS "${this.keyspace}"`, [], {
        readTimeout: 60_000,
      });
      log(`keyspace ${this.keyspace} dropped`);
    } catch (error) {
      log(`could not drop keyspace ${this.keyspace}: ${String(error)}`);
    }
    await Promise.allSettled([...this.clients.values()].map((c) => c.shutdown()));
  }
}

export function machineInfo(
  cassandraVersions: Record<string, string>,
  loadAverage: readonly number[],
): MachineInfo {
  const cpus = os.cpus();
  const topology = manager.currentTopology();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    cassandra: cassandraVersions,
    topology:
      `${topology.dcs} DCs × ${topology.nodesPerDc} node${topology.nodesPerDc === 1 ? '' : 's'}, ` +
      `Paxos ${topology.paxos}, commitlog_sync ${topology.commitlog}, all on this machine`,
    loadAverage: loadAverage.map((l) => Math.round(l * 100) / 100),
  };
}
