/**
 * What a node says of its own settings, for the preflight (docs/design.md, "What the cluster must
 * guarantee"): `system_views.settings` and `system_properties` (virtual tables) and the idgen
 * tables' `gc_grace_seconds` and `default_time_to_live`, each asked of the node itself.
 */

import cassandra from 'cassandra-driver';

import { describeDriverError } from './errors.js';
import { NEVER_RETRY, requestOptions } from './request-options.js';
import { toText } from './rows.js';
import { STATEMENTS } from './statements.js';
import type { NodeSettings, TableSettings } from '../port.js';

/**
 * One node's settings, each table asked of the node itself; a failure is kept, not thrown.
 * @param keyspace the keyspace whose idgen tables' settings are read.
 */
export async function readNodeSettingsOf(
  client: cassandra.Client,
  host: cassandra.Host,
  keyspace: string,
  timeoutMs: number,
): Promise<NodeSettings> {
  const ask = async (name: 'nodeSettings' | 'nodeProperties' | 'nodeTables', params: unknown[]) => {
    // Virtual tables and the schema tables answer for their coordinator: pin the node.
    const statement = STATEMENTS[name];
    return client.execute(statement.cql, params, {
      ...requestOptions(statement, false, timeoutMs),
      host,
      retry: NEVER_RETRY, // a retry would go to another node and answer for that one
    });
  };
  const base = {
    host: host.address,
    dc: host.datacenter,
    version: typeof host.cassandraVersion === 'string' ? host.cassandraVersion : undefined,
  };
  try {
    const [settings, properties, tables] = await Promise.all([
      ask('nodeSettings', []).then(nameValues),
      ask('nodeProperties', []).then(nameValues),
      ask('nodeTables', [keyspace]),
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
    return {
      ...base,
      commitlogSync: undefined,
      paxosVariant: undefined,
      settings: new Map(),
      properties: new Map(),
      tables: new Map(),
      error: describeDriverError(error),
    };
  }
}

/** `name`/`value` rows of a virtual table as a map. */
function nameValues(result: cassandra.types.ResultSet): Map<string, string> {
  const values = new Map<string, string>();
  for (const row of result.rows) {
    const name = toText(row.get('name'));
    const value = toText(row.get('value'));
    if (name !== undefined && value !== undefined) values.set(name, value);
  }
  return values;
}
