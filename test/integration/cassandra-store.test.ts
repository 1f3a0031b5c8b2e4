/**
 * CassandraStore against the real multi-DC cluster: the store contract, then what only Cassandra
 * can show (schema creation, SERIAL visibility across DCs, DC-local state, error mapping).
 */
import { createRequire } from 'node:module';

import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openClient } from '../../src/store/cassandra/driver-client.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { IdGenError, SequenceRecreatedError, StoreUnavailableError } from '../../src/errors.js';
import { initSchema } from '../../src/schema.js';
import { CassandraStore } from '../../src/store/cassandra/store.js';
import type { DcState, SequenceSettings } from '../../src/store/port.js';
import { describeStoreContract } from '../contract/store-contract.js';
import { clusterInfo, createTestKeyspace, faults, newClient } from '../support/cluster.js';
import type { TestKeyspace } from '../support/cluster.js';

let ks: TestKeyspace;
let sequenceCount = 0;

beforeAll(async () => {
  ks = await createTestKeyspace('store');
  await initSchema({
    contactPoints: ks.contactPoints('dc1'),
    localDataCenter: 'dc1',
    keyspace: ks.name,
    replication: ks.replication,
  });
});

afterAll(async () => {
  await ks?.drop();
});

/** A store over the keyspace's cached DC-local client (shared, so the store does not own it). */
async function storeIn(dc: string): Promise<CassandraStore> {
  return new CassandraStore(await ks.client(dc), ks.name, { ownsClient: false });
}

function settings(overrides: Partial<SequenceSettings> = {}): SequenceSettings {
  sequenceCount += 1;
  return {
    name: `seq_${sequenceCount}`,
    domain: 'int63',
    min: 1n,
    max: 2n ** 63n - 1n,
    start: 1n,
    dcRangeSize: 1_000n,
    blockSize: 100,
    threshold: 0.5,
    maxBlockSize: 100,
    claimIntervalMs: 2_000,
    maxDcRangeSize: 1_000n,
    autonomySeconds: 0,
    shards: 1,
    ...overrides,
  };
}

function firstState(min: bigint, max: bigint, op: string): DcState {
  return {
    lastInteger: min - 1n,
    reservedMin: min,
    reservedMax: max,
    reservedGrant: 1,
    preloadedMin: min,
    preloadedMax: max,
    installedGrant: 1,
    version: 1,
    op,
  };
}

async function keyspaceExists(name: string): Promise<boolean> {
  const client = await ks.client('dc1');
  const result = await client.execute(
    'SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?',
    [name],
    { prepare: true },
  );
  return result.rowLength > 0;
}

describeStoreContract('CassandraStore', async () => {
  const store = await storeIn('dc1');
  return {
    store,
    dc: 'dc1',
    otherDc: 'dc2',
    seedDcState: async (sequence, dc, state) => {
      const client = await ks.client(dc);
      await client.execute(
        `INSERT INTO "${ks.name}".idgen_dc_state (sequence, dc, last_integer, reserved_min, reserved_max, reserved_grant, preloaded_min, preloaded_max, installed_grant, version, op) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
        [
          sequence,
          dc,
          long(state.lastInteger),
          long(state.reservedMin),
          long(state.reservedMax),
          state.reservedGrant,
          long(state.preloadedMin),
          long(state.preloadedMax),
          state.installedGrant,
          long(BigInt(state.version)),
          state.op,
        ],
        {
          prepare: true,
          consistency: cassandra.types.consistencies.localQuorum,
          serialConsistency: cassandra.types.consistencies.localSerial,
        },
      );
    },
    cleanup: async () => store.close(),
  };
});

function long(value: bigint): cassandra.types.Long {
  return cassandra.types.Long.fromString(value.toString());
}

describe('initSchema', () => {
  it('creates the tables with the settings as static columns, and a second run is a no-op', async () => {
    const client = await ks.client('dc1');
    const columns = await client.execute(
      'SELECT table_name, column_name, kind, type, position, clustering_order FROM system_schema.columns WHERE keyspace_name = ?',
      [ks.name],
      { prepare: true },
    );
    const kinds = new Map(
      columns.rows.map((row) => [
        `${row['table_name']}.${row['column_name']}`,
        `${row['kind']} ${row['type']}`,
      ]),
    );
    const clustering = new Map(
      columns.rows
        .filter((row) => row['kind'] === 'clustering')
        .map((row) => [
          `${row['table_name']}.${row['column_name']}`,
          `${row['position']} ${row['clustering_order']}`,
        ]),
    );
    expect(kinds.get('idgen_grants.sequence')).toBe('partition_key text');
    expect(kinds.get('idgen_grants.dc')).toBe('clustering text');
    expect(kinds.get('idgen_grants.grant_number')).toBe('clustering int');
    // A DC's grants newest first, so `dc = ? LIMIT 1` reads its latest.
    expect(Object.fromEntries(clustering)).toEqual({
      'idgen_grants.dc': '0 asc',
      'idgen_grants.grant_number': '1 desc',
      'idgen_dc_usage.dc': '0 asc',
      'idgen_dc_usage.cause': '1 asc',
    });
    // One partition per sequence, a counter per DC and cause.
    expect(kinds.get('idgen_dc_usage.sequence')).toBe('partition_key text');
    expect(kinds.get('idgen_dc_usage.ids')).toBe('regular counter');
    expect(kinds.get('idgen_grants.max_id')).toBe('static bigint');
    expect(kinds.get('idgen_grants.threshold')).toBe('static double');
    expect(kinds.get('idgen_grants.last_integer')).toBe('regular bigint');
    expect(kinds.get('idgen_dc_state.dc')).toBe('partition_key text');
    expect(kinds.get('idgen_dc_state.installed_grant')).toBe('regular int');
    expect(kinds.get('idgen_dc_state.op')).toBe('regular text');
    // A bigint, so that a DC's writes never overflow the version.
    expect(kinds.get('idgen_dc_state.version')).toBe('regular bigint');
    expect(kinds.get('idgen_grants.settings_op')).toBe('static text');

    const store = await storeIn('dc1');
    const seq = settings();
    expect(await store.createSequence(seq, 'op')).toEqual({ kind: 'applied' });
    await initSchema({
      contactPoints: ks.contactPoints('dc2'),
      localDataCenter: 'dc2',
      keyspace: ks.name,
      replication: ks.replication,
    });
    expect((await store.readSequence(seq.name))?.settings).toEqual(seq);
  });

  it.each([
    ['an empty map', {}],
    ['a factor of 0', { dc1: 0 }],
    ['a fractional factor', { dc1: 1.5 }],
    ['a factor above 10', { dc1: 11 }],
    ['a quote in a DC name', { "dc1'": 1 }],
    ['a DC the cluster does not have', { dc1: 1, dc9: 1 }],
  ])('refuses %s with IDGEN_INVALID_OPTION and creates nothing', async (_label, replication) => {
    const keyspace = `${ks.name}_bad`;
    await expect(
      initSchema({
        contactPoints: ks.contactPoints('dc1'),
        localDataCenter: 'dc1',
        keyspace,
        replication: replication as Record<string, number>,
      }),
    ).rejects.toMatchObject({ code: 'IDGEN_INVALID_OPTION', option: 'replication' });
    expect(await keyspaceExists(keyspace)).toBe(false);
  });

  it("names how an existing keyspace's replication differs from the one asked, and leaves it", async () => {
    const asked = { dc1: 1 };
    const result = await initSchema({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      keyspace: ks.name,
      replication: asked,
    });
    expect(result.keyspaceCreated).toBe(false);
    expect(result.replication).toEqual(ks.replication);
    const expected = Object.entries(ks.replication)
      .filter(([dc, factor]) => asked[dc as keyof typeof asked] !== factor)
      .map(([dc, factor]) => `${dc} ${factor} (asked ${dc === 'dc1' ? 1 : 'none'})`);
    expect(expected.length).toBeGreaterThan(0);
    expect(result.replicationDiffers).toEqual(expected);
    const same = await initSchema({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      keyspace: ks.name,
      replication: ks.replication,
    });
    expect(same.replicationDiffers).toEqual([]);
  });

  it('refuses an existing keyspace without NetworkTopologyStrategy, creating no table in it', async () => {
    const keyspace = `${ks.name}_simple`;
    const client = await ks.client('dc1');
    await client.execute(
      `CREATE KEYSPACE ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}`,
    );
    try {
      await expect(
        initSchema({
          contactPoints: ks.contactPoints('dc1'),
          localDataCenter: 'dc1',
          keyspace,
          replication: ks.replication,
        }),
      ).rejects.toMatchObject({
        code: 'IDGEN_INVALID_OPTION',
        option: 'keyspace',
        message: expect.stringContaining('exists with org.apache.cassandra.locator.SimpleStrategy'),
      });
      const tables = await client.execute(
        'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?',
        [keyspace],
        { prepare: true },
      );
      expect(tables.rows).toEqual([]);
    } finally {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
    }
  });

  it('refuses a bad keyspace name before connecting', async () => {
    await expect(
      initSchema({
        contactPoints: ['127.0.0.1'],
        localDataCenter: 'dc1',
        keyspace: 'bad-name',
        replication: { dc1: 1 },
      }),
    ).rejects.toMatchObject({ code: 'IDGEN_INVALID_NAME' });
  });
});

describe('CassandraStore on the cluster', () => {
  it('reads at SERIAL, from dc1, a grant just made from dc2 and dc3', async () => {
    const [dc1, dc2, dc3] = await Promise.all([storeIn('dc1'), storeIn('dc2'), storeIn('dc3')]);
    const seq = settings({ start: 1_000n });
    expect(await dc1.createSequence(seq, 'op')).toEqual({ kind: 'applied' });

    expect(
      await dc2.grantRange(seq.name, 'dc2', 999n, { number: 1, min: 1_000n, max: 1_999n }),
    ).toEqual({
      kind: 'applied',
    });
    expect(await dc1.readGrants(seq.name, 'dc2')).toEqual({
      globalLast: 1_999n,
      latest: { number: 1, min: 1_000n, max: 1_999n },
    });

    expect(
      await dc3.grantRange(seq.name, 'dc3', 1_999n, { number: 1, min: 2_000n, max: 2_999n }),
    ).toEqual({
      kind: 'applied',
    });
    // The stale expectation loses: GLOBAL moved on.
    expect(
      await dc2.grantRange(seq.name, 'dc2', 1_999n, { number: 2, min: 2_000n, max: 2_999n }),
    ).toEqual({ kind: 'rejected', found: { globalLast: 2_999n, grant: undefined } });
    expect(await dc1.readGrants(seq.name, 'dc3')).toEqual({
      globalLast: 2_999n,
      latest: { number: 1, min: 2_000n, max: 2_999n },
    });
    expect(await dc1.readGrants(seq.name, 'dc1')).toEqual({
      globalLast: 2_999n,
      latest: undefined,
    });
  });

  it('writes each DC state from its own DC, and refuses another DC at LOCAL_SERIAL', async () => {
    const [dc1, dc2, dc3] = await Promise.all([storeIn('dc1'), storeIn('dc2'), storeIn('dc3')]);
    const seq = settings();
    await dc1.createSequence(seq, 'op');
    await dc1.grantRange(seq.name, 'dc1', 0n, { number: 1, min: 1n, max: 1_000n });
    await dc2.grantRange(seq.name, 'dc2', 1_000n, { number: 1, min: 1_001n, max: 2_000n });

    const state1 = firstState(1n, 1_000n, 'op-dc1');
    const state2 = firstState(1_001n, 2_000n, 'op-dc2');
    expect(await dc1.writeDcState(seq.name, 'dc1', undefined, state1)).toEqual({
      kind: 'applied',
    });
    expect(await dc2.writeDcState(seq.name, 'dc2', undefined, state2)).toEqual({
      kind: 'applied',
    });
    expect(await dc1.writeDcState(seq.name, 'dc1', undefined, state1)).toEqual({
      kind: 'rejected',
      found: state1,
    });

    const claimed = { ...state1, lastInteger: 100n, version: 2, op: 'claim-1' };
    const stamp1 = { version: 1, op: 'op-dc1' };
    expect(await dc1.writeDcState(seq.name, 'dc1', stamp1, claimed)).toEqual({ kind: 'applied' });
    expect(await dc1.writeDcState(seq.name, 'dc1', stamp1, { ...claimed, op: 'late' })).toEqual({
      kind: 'rejected',
      found: claimed, // the whole state: a claim that lost goes on from it
    });
    expect(await dc1.readDcState(seq.name, 'dc1')).toEqual(claimed);
    expect(await dc2.readDcState(seq.name, 'dc2')).toEqual(state2);
    expect(await dc3.readDcState(seq.name, 'dc3')).toBeUndefined();

    await expect(dc1.readDcState(seq.name, 'dc2')).rejects.toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      option: 'dc',
    });
    await expect(
      dc1.writeDcState(seq.name, 'dc2', { version: 1, op: 'op-dc2' }, { ...state2, version: 2 }),
    ).rejects.toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
    });
    await expect(dc1.readGrants(seq.name, 'GLOBAL')).rejects.toMatchObject({
      code: 'IDGEN_INVALID_NAME',
    });

    // The overview is a plain read; the LOCAL_QUORUM commits in dc1 and dc2 reach dc3 eventually.
    await expect
      .poll(async () => (await dc3.readDcStatesOverview(seq.name)).size, { timeout: 10_000 })
      .toBe(2);
    // So do the grants' commits (at QUORUM: possibly none of dc1's replicas yet).
    await expect
      .poll(async () => (await dc1.readGrantsOverview(seq.name))?.grants.size, { timeout: 10_000 })
      .toBe(2);
    const overview = await dc1.readGrantsOverview(seq.name, 'consistent');
    expect(overview?.globalLast).toBe(2_000n);
    expect([...(overview?.grants.keys() ?? [])].sort()).toEqual(['dc1', 'dc2']);
    expect(overview?.grants.get('dc2')).toEqual([{ number: 1, min: 1_001n, max: 2_000n }]);
  });

  it("takes a shard's state from the shard's DC only, and keeps each shard's grants a chain of its own", async () => {
    const [dc1, dc2] = await Promise.all([storeIn('dc1'), storeIn('dc2')]);
    const seq = settings({ shards: 4 });
    expect(await dc1.createSequence(seq, 'op')).toEqual({ kind: 'applied' });
    expect((await dc2.readSequence(seq.name, 'serial'))?.settings.shards).toBe(4);
    expect(await dc1.grantRange(seq.name, 'dc1', 0n, { number: 1, min: 1n, max: 1_000n })).toEqual({
      kind: 'applied',
    });
    // Shard 3 of dc1 starts its own chain at grant 1, on the same GLOBAL.
    expect(
      await dc1.grantRange(seq.name, 'dc1/3', 1_000n, { number: 1, min: 1_001n, max: 2_000n }),
    ).toEqual({ kind: 'applied' });
    expect(await dc2.readGrants(seq.name, 'dc1/3')).toEqual({
      globalLast: 2_000n,
      latest: { number: 1, min: 1_001n, max: 2_000n },
    });
    expect((await dc1.readGrants(seq.name, 'dc1')).latest).toEqual({
      number: 1,
      min: 1n,
      max: 1_000n,
    });

    const shardState = firstState(1_001n, 2_000n, 'op-shard3');
    expect(await dc1.writeDcState(seq.name, 'dc1/3', undefined, shardState)).toEqual({
      kind: 'applied',
    });
    expect(await dc1.readDcState(seq.name, 'dc1/3')).toEqual(shardState);
    expect(await dc1.readDcState(seq.name, 'dc1')).toBeUndefined();
    // A shard of dc1 is dc1's: LOCAL_SERIAL from dc2 would be a Paxos of dc2's replicas only.
    await expect(dc2.readDcState(seq.name, 'dc1/3')).rejects.toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      option: 'dc',
    });
    await expect(
      dc2.writeDcState(
        seq.name,
        'dc1/3',
        { version: 1, op: 'op-shard3' },
        {
          ...shardState,
          version: 2,
        },
      ),
    ).rejects.toMatchObject({ code: 'IDGEN_INVALID_OPTION' });
    // Shard 0 has one name only, its DC's.
    await expect(dc1.readDcState(seq.name, 'dc1/0')).rejects.toMatchObject({
      code: 'IDGEN_INVALID_NAME',
    });
    // The overview is a plain read (LOCAL_ONE); the grants' commits (at QUORUM) reach every
    // replica of dc1 eventually.
    await expect
      .poll(
        async () => [...((await dc1.readGrantsOverview(seq.name))?.grants.keys() ?? [])].sort(),
        {
          timeout: 10_000,
        },
      )
      .toEqual(['dc1', 'dc1/3']);
  });

  it("reads every shard's state in the overview, one without a grant included (what check must see)", async () => {
    const [dc1, dc2] = await Promise.all([storeIn('dc1'), storeIn('dc2')]);
    const seq = settings({ shards: 4 });
    expect(await dc1.createSequence(seq, 'op')).toEqual({ kind: 'applied' });
    // A state of dc2's shard 2 with no grant behind it (as after rows went back): an invariant
    // broken, which only a read that names dc2/2 finds.
    const orphan = firstState(1n, 1_000n, 'op-orphan');
    expect(await dc2.writeDcState(seq.name, 'dc2/2', undefined, orphan)).toEqual({
      kind: 'applied',
    });
    for (const reading of ['local', 'consistent'] as const) {
      await expect
        .poll(async () => (await dc1.readDcStatesOverview(seq.name, reading)).get('dc2/2'), {
          timeout: 10_000,
        })
        .toEqual(orphan);
    }
  });

  it('works on a client of another copy of cassandra-driver (whose own Long the encoder checks for)', async () => {
    // A second instance of the driver's modules, as a service's own copy of the package is.
    const require = createRequire(import.meta.url);
    const loaded = Object.keys(require.cache).filter((path) =>
      /[\\/]node_modules[\\/](cassandra-driver|long)[\\/]/.test(path),
    );
    const saved = loaded.map((path) => [path, require.cache[path]] as const);
    for (const path of loaded) Reflect.deleteProperty(require.cache, path);
    const other = require('cassandra-driver') as typeof cassandra;
    for (const [path, module] of saved) require.cache[path] = module;
    expect(other.types.Long).not.toBe(cassandra.types.Long);
    const client = new other.Client({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
    });
    const store = new CassandraStore(client, ks.name, { ownsClient: true });
    try {
      await client.connect();
      const seq = settings();
      expect(await store.createSequence(seq, 'op')).toEqual({ kind: 'applied' });
      expect(await store.readSequence(seq.name)).toEqual({
        settings: seq,
        op: 'op',
        incarnation: 'op',
      });
      const grant = { number: 1, min: 1n, max: 1_000n };
      expect(await store.grantRange(seq.name, 'dc1', 0n, grant)).toEqual({ kind: 'applied' });
      expect(
        await store.writeDcState(seq.name, 'dc1', undefined, firstState(1n, 1_000n, 'o')),
      ).toEqual({ kind: 'applied' });
    } finally {
      await store.close();
    }
  });

  it('works on a shared client that decodes bigint natively', async () => {
    const client = new cassandra.Client({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      encoding: { useBigIntAsLong: true },
    });
    const store = new CassandraStore(client, ks.name, { ownsClient: true });
    try {
      await client.connect();
      const seq = settings({ start: 2n ** 62n, domain: 'custom', max: 2n ** 62n + 10_000n });
      expect(await store.createSequence(seq, 'op')).toEqual({ kind: 'applied' });
      expect(await store.readSequence(seq.name)).toEqual({
        settings: seq,
        op: 'op',
        incarnation: 'op',
      });
      const grant = { number: 1, min: 2n ** 62n, max: 2n ** 62n + 999n };
      expect(await store.grantRange(seq.name, 'dc1', 2n ** 62n - 1n, grant)).toEqual({
        kind: 'applied',
      });
      expect(await store.readGrants(seq.name, 'dc1')).toEqual({
        globalLast: grant.max,
        latest: grant,
      });
    } finally {
      await store.close();
    }
  });

  it('refuses a sequence whose rows were deleted by hand and seeded again: seed while its state rows remain, a process on a row of the earlier one', async () => {
    const name = settings().name;
    const opened: IdGen[] = [];
    const processIn = async (dc: string) => {
      const ids = new IdGen({ store: await storeIn(dc), dc, keyspace: ks.name });
      opened.push(ids);
      return ids;
    };
    try {
      const fixed = { dcRangeSize: 1_000, blockSize: 100, threshold: 0.5 };
      await (await processIn('dc1')).createSequence(name, fixed);
      const stored = await (await storeIn('dc1')).readSequence(name, 'serial');
      expect(stored?.incarnation).toMatch(/^create:/);
      const before: number[] = [];
      for (const dc of ['dc1', 'dc2']) {
        const seq = (await processIn(dc)).sequence(name);
        for (let i = 0; i < 10; i++) before.push(await seq.next());
      }
      expect(new Set(before).size).toBe(20);
      // Each state row carries the incarnation of the process that opened it.
      expect((await (await storeIn('dc1')).readDcState(name, 'dc1'))?.incarnation).toBe(
        stored?.incarnation,
      );
      // The grants partition deleted by hand, as the docs say never to; the state rows stay.
      await (
        await ks.client('dc1')
      ).execute(`DELETE FROM "${ks.name}".idgen_grants WHERE sequence = ?`, [name], {
        prepare: true,
        consistency: cassandra.types.consistencies.all,
      });
      // Seen from dc1: its own row and dc2's, once dc2's has reached dc1's replicas. A refused
      // seed writes nothing, so it is tried again until then.
      const seedError = async () => {
        const error = await (await processIn('dc1')).createSequence(name, fixed).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(SequenceRecreatedError);
        return (error as Error).message;
      };
      await expect
        .poll(seedError, { timeout: 10_000, interval: 200 })
        .toMatch(/but state rows of one do \(dc1, dc2\); nothing was written/);
      expect(await (await storeIn('dc1')).readSequence(name, 'serial')).toBeUndefined();
      // A create that does not look (an older release's) goes through; this release's processes
      // then refuse the rows the earlier sequence left, and hand out nothing.
      expect(
        await (await storeIn('dc1')).createSequence(stored!.settings, 'create:older-release'),
      ).toEqual({ kind: 'applied' });
      for (const dc of ['dc1', 'dc2']) {
        await expect((await processIn(dc)).sequence(name).next()).rejects.toMatchObject({
          code: 'IDGEN_SEQUENCE_RECREATED',
          message: expect.stringMatching(
            new RegExp(`state row of "${dc}" \\(version \\d+\\) was written for another`),
          ),
        });
      }
    } finally {
      await Promise.all(opened.map((ids) => ids.close()));
    }
  });

  it('reports a missing sequence and missing tables as typed errors', async () => {
    const store = await storeIn('dc1');
    await expect(store.readGrants('never_created', 'dc1')).rejects.toMatchObject({
      code: 'IDGEN_SEQUENCE_NOT_FOUND',
    });
    expect(await store.readSequence('never_created')).toBeUndefined();
    expect(await store.readGrantsOverview('never_created')).toBeUndefined();
    expect(
      await store.alterSequence(
        'never_created',
        'op',
        {
          dcRangeSize: 10n,
          blockSize: 10,
          threshold: 0.5,
          maxBlockSize: 10,
          claimIntervalMs: 2_000,
          maxDcRangeSize: 10n,
          autonomySeconds: 0,
          shards: 1,
        },
        'op2',
      ),
    ).toEqual({ kind: 'rejected', found: undefined });

    const elsewhere = new CassandraStore(await ks.client('dc1'), 'system_auth', {
      ownsClient: false,
    });
    await expect(elsewhere.readSequence('x')).rejects.toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      option: 'keyspace',
    });
  });
});

describe('openClient', () => {
  it('names the datacenters when localDataCenter is unknown', async () => {
    await expect(
      openClient({ contactPoints: ks.contactPoints('dc1'), localDataCenter: 'dc9' }),
    ).rejects.toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      option: 'localDataCenter',
      allowed: `one of: ${ks.dcs.join(', ')}`,
    });
  });

  it('requires contact points and a local datacenter', async () => {
    await expect(openClient({ contactPoints: [], localDataCenter: 'dc1' })).rejects.toMatchObject({
      option: 'contactPoints',
    });
    await expect(openClient({ contactPoints: ks.contactPoints('dc1') })).rejects.toMatchObject({
      option: 'localDataCenter',
    });
  });

  it('maps unreachable contact points to IDGEN_STORE_UNAVAILABLE naming them', async () => {
    const error: unknown = await openClient({
      contactPoints: ['127.0.0.1:1'],
      localDataCenter: 'dc1',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ level: 'local', code: 'IDGEN_STORE_UNAVAILABLE' });
    expect((error as Error).message).toContain('127.0.0.1:1');
  });

  it('adopts a DC-aware client without owning it, and refuses one that uses other DCs', async () => {
    const shared = await ks.client('dc2');
    const opened = await openClient({ client: shared });
    expect(opened).toMatchObject({ ownsClient: false, localDataCenter: 'dc2' });

    const roundRobin = new cassandra.Client({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      policies: { loadBalancing: new cassandra.policies.loadBalancing.RoundRobinPolicy() },
    });
    try {
      await expect(openClient({ client: roundRobin })).rejects.toMatchObject({
        code: 'IDGEN_INVALID_OPTION',
        option: 'client',
      });
    } finally {
      await roundRobin.shutdown();
    }
  });
});

describe('clients passed in by the user', () => {
  const { ExecutionProfile, policies } = cassandra;
  const foreignClients: [string, () => cassandra.Client, RegExp][] = [
    [
      'a default execution profile that routes to another DC',
      () =>
        new cassandra.Client({
          contactPoints: ks.contactPoints('dc1'),
          localDataCenter: 'dc1',
          profiles: [
            new ExecutionProfile('default', {
              loadBalancing: new policies.loadBalancing.DCAwareRoundRobinPolicy('dc2'),
            }),
          ],
        }),
      /localDataCenter is .+dc1.+ but whose default execution profile routes with DCAwareRoundRobinPolicy to .+dc2/,
    ],
    [
      'a default execution profile with a round-robin policy over every DC',
      () =>
        new cassandra.Client({
          contactPoints: ks.contactPoints('dc1'),
          localDataCenter: 'dc1',
          profiles: [
            new ExecutionProfile('default', {
              loadBalancing: new policies.loadBalancing.RoundRobinPolicy(),
            }),
          ],
        }),
      /default execution profile routes with RoundRobinPolicy, which is not local to one datacenter/,
    ],
  ];

  it.each(foreignClients)(
    'refuses %s, naming the profile and the policy',
    async (_label, make, message) => {
      const client = make();
      try {
        const error: unknown = await openClient({ client }).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'IDGEN_INVALID_OPTION', option: 'client' });
        expect((error as Error).message).toMatch(message);
      } finally {
        await client.shutdown();
      }
    },
  );

  it('sends every statement with its own options, whatever the client defaults to', async () => {
    // A client whose defaults would resend, speculate and time out early.
    const client = new cassandra.Client({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      queryOptions: { isIdempotent: true, consistency: cassandra.types.consistencies.one },
      socketOptions: { readTimeout: 500 },
      policies: {
        speculativeExecution: new policies.speculativeExecution.ConstantSpeculativeExecutionPolicy(
          1,
          3,
        ),
      },
    });
    const sent: cassandra.QueryOptions[] = [];
    const execute = client.execute.bind(client);
    client.execute = ((query: string, params: unknown, options: cassandra.QueryOptions) => {
      sent.push(options);
      return execute(query, params as never, options);
    }) as typeof client.execute;
    try {
      await client.connect();
      const store = new CassandraStore(client, ks.name, { ownsClient: false });
      const seq = settings();
      expect(await store.createSequence(seq, 'op')).toEqual({ kind: 'applied' });
      await store.readDcState(seq.name, 'dc1');
      expect(sent.length).toBeGreaterThanOrEqual(2);
      for (const options of sent) {
        expect(options).toMatchObject({ prepare: true });
        expect(options.readTimeout).toBeGreaterThan(1_000);
        expect(typeof options.consistency).toBe('number');
      }
      // The conditional write is never resent by the driver, nor sent speculatively.
      expect(sent[0]).toMatchObject({ isIdempotent: false });
      expect(sent[0]?.retry).toBeInstanceOf(policies.retry.FallthroughRetryPolicy);
      // A read may go to another coordinator.
      expect(sent.at(-1)).toMatchObject({ isIdempotent: true });
    } finally {
      await client.shutdown();
    }
  });
});

describe.runIf(clusterInfo().faults)('CassandraStore in a partitioned DC', () => {
  afterAll(async () => {
    await faults.heal();
  });

  it('fails SERIAL with StoreUnavailableError(serial) in dc3 and keeps its LOCAL_SERIAL state', async () => {
    const dc3Client = newClient('dc3');
    const dc3 = new CassandraStore(dc3Client, ks.name, { ownsClient: true });
    try {
      const dc1 = await storeIn('dc1');
      const seq = settings();
      await dc1.createSequence(seq, 'op');
      await dc3.grantRange(seq.name, 'dc3', 0n, { number: 1, min: 1n, max: 1_000n });
      await dc3.writeDcState(seq.name, 'dc3', undefined, firstState(1n, 1_000n, 'before'));

      await faults.partition('dc3');

      const serialRead = await dc3.readGrants(seq.name, 'dc3').catch((e: unknown) => e);
      expect(serialRead).toBeInstanceOf(StoreUnavailableError);
      expect(serialRead).toMatchObject({ level: 'serial' });
      // A grant either fails outright or times out with an unknown outcome; never "applied".
      const grant = await dc3
        .grantRange(seq.name, 'dc3', 1_000n, { number: 2, min: 1_001n, max: 2_000n })
        .catch((e: unknown) => e);
      if (grant instanceof IdGenError) expect(grant).toMatchObject({ level: 'serial' });
      else expect(grant).toMatchObject({ kind: 'unknown' });

      // LOCAL_SERIAL in dc3 goes on.
      const next = { ...firstState(1n, 1_000n, 'during'), lastInteger: 100n, version: 2 };
      expect(await dc3.writeDcState(seq.name, 'dc3', { version: 1, op: 'before' }, next)).toEqual({
        kind: 'applied',
      });
      expect(await dc3.readDcState(seq.name, 'dc3')).toEqual(next);
      // The majority side keeps SERIAL.
      expect((await dc1.readGrants(seq.name, 'dc3')).latest?.number).toBeGreaterThanOrEqual(1);

      await faults.heal();
      const healed = await dc1.readGrants(seq.name, 'dc3');
      expect(healed.globalLast === 1_000n || healed.globalLast === 2_000n).toBe(true);
    } finally {
      await dc3.close();
    }
  });
});
