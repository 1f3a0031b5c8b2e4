/**
 * The Cassandra adapter of the storage port: protocol-store.ts and the admin reads, which no ID
 * depends on. Node settings are asked of each node: virtual tables answer for their coordinator.
 */

import cassandra from 'cassandra-driver';

import { granteesOf } from '../../names.js';
import {
  USAGE_CAUSES,
  zeroUsageCounts,
  type DcState,
  type DcUsageCounts,
  type Grant,
  type GrantsOverview,
  type IdStore,
  type NodeSettings,
  type OverviewReading,
  type TableSettings,
  type UsageCause,
} from '../port.js';
import { CassandraProtocolStore } from './protocol-store.js';
import { describeDriverError } from './errors.js';
import { NEVER_RETRY, requestOptions } from './request-options.js';
import { GLOBAL, parseGrant, required, toBigInt, toText } from './rows.js';
import { STATEMENTS } from './statements.js';

export type { CassandraStoreOptions } from './session.js';

export class CassandraStore extends CassandraProtocolStore implements IdStore {
  async readGrantsOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<GrantsOverview | undefined> {
    const statement = reading === 'consistent' ? 'grantsConsistent' : 'grantsOverview';
    let globalLast: bigint | undefined;
    const grants = new Map<string, Grant[]>();
    await this.readEach(statement, [sequence], 'read grants overview', (row) => {
      const rowDc = row.get('dc') as unknown;
      if (rowDc === GLOBAL) {
        globalLast = required(sequence, row, 'last_integer', toBigInt);
      } else if (typeof rowDc === 'string') {
        const history = grants.get(rowDc) ?? [];
        history.push(parseGrant(sequence, row));
        grants.set(rowDc, history);
      }
    });
    if (globalLast === undefined) return undefined;
    // Clustering order is newest first; the overview is ascending.
    for (const history of grants.values()) history.sort((a, b) => a.number - b.number);
    return { globalLast, grants };
  }

  async readDcStatesOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<ReadonlyMap<string, DcState>> {
    const [overview, stored] = await Promise.all([
      this.readGrantsOverview(sequence),
      this.readSequence(sequence),
    ]);
    if (overview === undefined) return new Map();
    // Every shard of every DC of the cluster too: a state without a grant is what check must see.
    const clusterDcs = new Set(this.client.hosts?.values().map((host) => host.datacenter));
    const clusterGrantees = [...clusterDcs].flatMap((dc) =>
      typeof dc === 'string' ? granteesOf(dc, stored?.settings.shards ?? 1) : [],
    );
    const dcs = [...new Set([...overview.grants.keys(), ...clusterGrantees])]
      .filter((dc) => typeof dc === 'string' && dc !== '' && dc !== GLOBAL)
      .sort();
    const statement = reading === 'consistent' ? 'dcStateConsistent' : 'dcStateOverview';
    return this.readDcStates(statement, sequence, dcs, 'read DC states overview');
  }

  async readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts>> {
    const usage = new Map<string, Record<UsageCause, bigint>>();
    await this.readEach('readDcUsage', [sequence], 'read usage counters', (row) => {
      const dc = row.get('dc') as unknown;
      const cause = USAGE_CAUSES.find((c) => c === row.get('cause'));
      if (typeof dc !== 'string' || cause === undefined) return;
      const counts = usage.get(dc) ?? zeroUsageCounts();
      counts[cause] = toBigInt(row.get('ids')) ?? 0n;
      usage.set(dc, counts);
    });
    return usage;
  }

  async probeSerial(): Promise<void> {
    await this.run('probeSerial', [], 'probe SERIAL');
  }

  async readNodeSettings(): Promise<readonly NodeSettings[]> {
    const hosts = this.client.hosts.values().filter((host) => host.datacenter === this.localDc);
    return Promise.all(hosts.map((host) => this.readSettingsOf(host)));
  }

  /** One node's settings, asked of the node itself; a failure is kept, not thrown. */
  private async readSettingsOf(host: cassandra.Host): Promise<NodeSettings> {
    const ask = (name: 'nodeSettings' | 'nodeProperties' | 'nodeTables', params: unknown[]) => {
      const statement = STATEMENTS[name];
      return this.client.execute(statement.cql, params, {
        ...requestOptions(statement, false, this.requestTimeoutMs),
        host,
        retry: NEVER_RETRY, // a retry would go to another node and answer for that one
      });
    };
    const base = {
      host: host.address,
      dc: host.datacenter,
      version: typeof host.cassandraVersion === 'string' ? host.cassandraVersion : undefined,
      commitlogSync: undefined,
      paxosVariant: undefined,
      settings: new Map<string, string>(),
      properties: new Map<string, string>(),
      tables: new Map<string, TableSettings>(),
    };
    try {
      const [settings, properties, tables] = await Promise.all([
        ask('nodeSettings', []).then(nameValues),
        ask('nodeProperties', []).then(nameValues),
        ask('nodeTables', [this.keyspace]),
      ]);
      const tableSettings = new Map<string, TableSettings>();
      for (const row of tables.rows) {
        const table = toText(row.get('table_name'));
        const gcGrace = row.get('gc_grace_seconds') as unknown;
        const ttl = row.get('default_time_to_live') as unknown;
        if (table !== undefined && typeof gcGrace === 'number' && typeof ttl === 'number') {
          tableSettings.set(table, { gcGraceSeconds: gcGrace, defaultTtlSeconds: ttl });
        }
      }
      return {
        ...base,
        commitlogSync: settings.get('commitlog_sync'),
        paxosVariant: settings.get('paxos_variant'),
        settings,
        properties,
        tables: tableSettings,
      };
    } catch (error) {
      return { ...base, error: describeDriverError(error) };
    }
  }
}

function nameValues(result: cassandra.types.ResultSet): Map<string, string> {
  const values = new Map<string, string>();
  for (const row of result.rows) {
    const name = toText(row.get('name'));
    const value = toText(row.get('value'));
    if (name !== undefined && value !== undefined) values.set(name, value);
  }
  return values;
}
