/** Settings rows as Cassandra returns them. */
import type cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import { parseSettings, replicaDcsOf } from '../../src/store/cassandra/rows.js';

function row(values: Record<string, unknown>): cassandra.types.Row {
  return { get: (column: string) => values[column] ?? null } as unknown as cassandra.types.Row;
}

const ROW = {
  sequence: 'orders',
  domain: 'int32',
  min_id: 1n,
  max_id: 2_147_483_647n,
  start_id: 1n,
  dc_range_size: 100_000n,
  block_size: 1_000,
  threshold: 0.5,
  max_block_size: 50_000,
  claim_interval_ms: 5_000,
  max_dc_range_size: 10_000_000n,
  autonomy_seconds: 86_400n,
  shards: 16,
  settings_op: 'op-1',
};

describe('parseSettings', () => {
  it('reads every settings column', () => {
    expect(parseSettings(row(ROW)).settings).toMatchObject({
      dcRangeSize: 100_000n,
      blockSize: 1_000,
      maxBlockSize: 50_000,
      claimIntervalMs: 5_000,
      maxDcRangeSize: 10_000_000n,
      autonomySeconds: 86_400,
      shards: 16,
    });
  });

  it('refuses a row that lacks a setting', () => {
    expect(() => parseSettings(row({ ...ROW, shards: undefined }))).toThrow(
      /column shards is missing or malformed/,
    );
  });
});

describe('replicaDcsOf', () => {
  const NTS = 'org.apache.cassandra.locator.NetworkTopologyStrategy';

  it('names the DCs of a NetworkTopologyStrategy keyspace with replicas, sorted', () => {
    expect(replicaDcsOf({ class: NTS, dc3: '3', dc1: '3', dc2: '3/1', old_dc: '0' })).toEqual([
      'dc1',
      'dc2',
      'dc3',
    ]);
  });

  it('names none under SimpleStrategy, where the map holds a factor and no DC', () => {
    expect(
      replicaDcsOf({
        class: 'org.apache.cassandra.locator.SimpleStrategy',
        replication_factor: '3',
      }),
    ).toBeUndefined();
  });
});
