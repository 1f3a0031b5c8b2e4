/** initSchema's pure parts: replication differences and waiting for schema agreement. */
import type cassandra from 'cassandra-driver';
import { describe, expect, it, vi } from 'vitest';

import { StoreUnavailableError } from '../../src/errors.js';
import {
  describeVersions,
  replicationDifferences,
  waitForSchemaAgreement,
} from '../../src/schema.js';
import { itOnFakeClock } from '../support/fake-clock.js';

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
