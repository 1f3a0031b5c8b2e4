/** Upgrading tables created by an older release: the columns added since, added once. */
import { readFileSync } from 'node:fs';

import type cassandra from 'cassandra-driver';
import { describe, expect, it, vi } from 'vitest';

import { StoreUnavailableError } from '../../src/errors.js';
import {
  describeVersions,
  missingColumns,
  replicationDifferences,
  schemaFile,
  waitForSchemaAgreement,
} from '../../src/schema.js';
import { itOnFakeClock } from '../support/fake-clock.js';

const GRANTS =
  'CREATE TABLE IF NOT EXISTS "ks".idgen_grants ( sequence text, dc text, grant_number int, ' +
  'block_size int static, max_block_size int static, max_dc_range_size bigint static, ' +
  'last_integer bigint, PRIMARY KEY ((sequence), dc, grant_number) ) ' +
  'WITH CLUSTERING ORDER BY (dc ASC, grant_number DESC)';

describe('missingColumns', () => {
  it('adds the columns an existing table lacks, static ones as static, and nothing else', () => {
    const existing = new Set(['sequence', 'dc', 'grant_number', 'block_size', 'last_integer']);
    expect(missingColumns(GRANTS, 'ks', existing)).toEqual([
      'ALTER TABLE "ks".idgen_grants ADD max_block_size int static',
      'ALTER TABLE "ks".idgen_grants ADD max_dc_range_size bigint static',
    ]);
  });

  it('adds nothing to a table that has every column (running init again changes nothing)', () => {
    const all = new Set([
      'sequence',
      'dc',
      'grant_number',
      'block_size',
      'max_block_size',
      'max_dc_range_size',
      'last_integer',
    ]);
    expect(missingColumns(GRANTS, 'ks', all)).toEqual([]);
  });

  it('knows the settings columns of schema.cql added for sizes that follow the load, shards and incarnations', () => {
    const cql = readFileSync(schemaFile(), 'utf8').replace(/--.*$/gm, '');
    const grants = cql
      .split(';')
      .map((statement) => statement.replace(/\s+/g, ' ').trim())
      .find((statement) => statement.includes('idgen_grants ('))!
      .replace('EXISTS idgen_grants', 'EXISTS "ks".idgen_grants');
    const before = new Set([
      'sequence',
      'dc',
      'grant_number',
      'domain',
      'min_id',
      'max_id',
      'start_id',
      'dc_range_size',
      'block_size',
      'threshold',
      'settings_op',
      'last_integer',
      'grant_min',
      'grant_max',
    ]);
    expect(missingColumns(grants, 'ks', before)).toEqual([
      'ALTER TABLE "ks".idgen_grants ADD max_block_size int static',
      'ALTER TABLE "ks".idgen_grants ADD claim_interval_ms int static',
      'ALTER TABLE "ks".idgen_grants ADD max_dc_range_size bigint static',
      'ALTER TABLE "ks".idgen_grants ADD autonomy_seconds bigint static',
      'ALTER TABLE "ks".idgen_grants ADD shards int static',
      'ALTER TABLE "ks".idgen_grants ADD incarnation text static',
    ]);
    const states = cql
      .split(';')
      .map((statement) => statement.replace(/\s+/g, ' ').trim())
      .find((statement) => statement.includes('idgen_dc_state ('))!
      .replace('EXISTS idgen_dc_state', 'EXISTS "ks".idgen_dc_state');
    const statesBefore = new Set(
      'sequence dc last_integer reserved_min reserved_max reserved_grant preloaded_min preloaded_max installed_grant version op'.split(
        ' ',
      ),
    );
    expect(missingColumns(states, 'ks', statesBefore)).toEqual([
      'ALTER TABLE "ks".idgen_dc_state ADD incarnation text',
    ]);
  });
});

describe('replicationDifferences', () => {
  it('names each DC whose factor differs, is missing from the keyspace, or was not asked', () => {
    expect(replicationDifferences({ dc1: 3, dc2: 3, dc3: 3 }, { dc1: 3 })).toEqual([
      'dc2 none (asked 3)',
      'dc3 none (asked 3)',
    ]);
    expect(replicationDifferences({ dc1: 1 }, { dc2: 3, dc1: 3 })).toEqual([
      'dc1 3 (asked 1)',
      'dc2 3 (asked none)',
    ]);
    expect(replicationDifferences({ dc1: 3, dc2: 3 }, { dc2: 3, dc1: 3 })).toEqual([]);
  });
});

describe('waitForSchemaAgreement', () => {
  /** A client whose nodes agree once `agreeAfterMs` of (fake) time have passed. */
  function clientAgreeingAfter(agreeAfterMs: number): cassandra.Client {
    const start = Date.now();
    const metadata = { checkSchemaAgreement: async () => Date.now() - start >= agreeAfterMs };
    const execute = async (query: string) => ({
      rows: query.includes('system.local')
        ? [{ rpc_address: '127.0.0.1', schema_version: '33fe3230-f17a' }]
        : [{ peer: '127.0.2.3', schema_version: '5c4e675f-1573' }],
    });
    return { metadata, execute } as unknown as cassandra.Client;
  }

  itOnFakeClock(
    "waits out a missed push caught up by Cassandra's periodic pull (60 s by default)",
    async () => {
      const waiting = waitForSchemaAgreement(clientAgreeingAfter(75_000));
      await vi.advanceTimersByTimeAsync(76_000);
      await expect(waiting).resolves.toBeUndefined();
    },
  );

  itOnFakeClock('gives up with StoreUnavailableError when the nodes never agree', async () => {
    const waiting = waitForSchemaAgreement(clientAgreeingAfter(Infinity));
    const failed = expect(waiting).rejects.toBeInstanceOf(StoreUnavailableError);
    await vi.advanceTimersByTimeAsync(121_000);
    await failed;
  });

  itOnFakeClock('names the version each node holds when they never agree', async () => {
    const waiting = waitForSchemaAgreement(clientAgreeingAfter(Infinity));
    const failed = expect(waiting).rejects.toThrow(
      /127\.0\.0\.1 at 33fe3230, 127\.0\.2\.3 at 5c4e675f/,
    );
    await vi.advanceTimersByTimeAsync(121_000);
    await failed;
  });
});

describe('describeVersions', () => {
  it('groups nodes by version, the most common first', () => {
    expect(
      describeVersions([
        ['a', 'v2'],
        ['b', 'v1'],
        ['c', 'v1'],
      ]),
    ).toBe('b and 1 other at v1, a at v2');
  });
});
