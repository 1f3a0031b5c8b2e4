/**
 * Preflight and check through the library against the real cluster: every node of every DC
 * asked through a client of its own DC, compared with what each node says of itself; the idgen
 * tables' gc_grace_seconds and default TTL read from each node's schema; initSchema's check; check on consistent
 * reads of healthy rows; the SERIAL probe on its own partition.
 */
import cassandra from 'cassandra-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  connect,
  initSchema,
  InvalidOptionError,
  openAdmin,
  preflight,
  type Admin,
  type NodeCheck,
} from '../../src/index.js';
import { openClientInDc } from '../../src/store/cassandra/driver-client.js';
import { newClient, withKeyspace } from '../support/cluster.js';

const ks = withKeyspace('preflight', { create: 'empty' });
/** What each node reports of itself: commitlog_sync, paxos_state_purging, release_version. */
const truth = new Map<
  string,
  { dc: string; commitlogSync: string; purging: string; version: string }
>();
let unsafe = false;
let admin: Admin;

beforeAll(async () => {
  for (const dc of ks.dcs) {
    const client = newClient(dc);
    await client.connect();
    try {
      for (const host of client.hosts.values().filter((h) => h.datacenter === dc)) {
        const settings = await client.execute(
          "SELECT name, value FROM system_views.settings WHERE name IN ('commitlog_sync', 'paxos_state_purging')",
          [],
          { host },
        );
        const local = await client.execute('SELECT release_version FROM system.local', [], {
          host,
        });
        const value = (name: string) =>
          String(settings.rows.find((row) => row['name'] === name)?.['value']);
        truth.set(host.address, {
          dc,
          commitlogSync: value('commitlog_sync'),
          purging: value('paxos_state_purging'),
          version: String(local.first()['release_version']),
        });
      }
    } finally {
      await client.shutdown();
    }
  }
  unsafe = [...truth.values()].some((node) => node.commitlogSync === 'periodic');
  const result = await initSchema({
    ...ks.connection(),
    replication: ks.replication,
    allowUnsafeCluster: unsafe,
  });
  expect(result.preflight?.verdict ?? 'skipped').toBe(unsafe ? 'skipped' : 'safe');
  admin = await openAdmin(ks.connection());
}, 300_000);

afterAll(async () => {
  await admin?.close();
});

describe('preflight', () => {
  it('asks every node of every DC, each through its own DC, and reports what it says', async () => {
    for (const dc of ks.dcs) {
      // From any DC the same nodes, the same answers.
      const report = await preflight(ks.connection(dc));
      expect(report.dc).toBe(dc);
      expect(report.nodes.map((n) => n.host).sort()).toEqual([...truth.keys()].sort());
      for (const node of report.nodes) {
        const self = truth.get(node.host)!;
        expect(node).toMatchObject({ dc: self.dc, checked: true, version: self.version });
        const sync = node.checks.find((c) => c.check === 'commitlog-sync');
        expect(sync).toMatchObject({ value: self.commitlogSync });
      }
      expect(report.verdict).toBe(unsafe ? 'unsafe' : 'safe');
    }
  });

  it("reads the idgen tables' gc_grace_seconds from each node's schema", async () => {
    const client = newClient(ks.dcs[0]!);
    await client.connect();
    try {
      await client.execute(`ALTER TABLE ${ks.name}.idgen_dc_state WITH gc_grace_seconds = 60`);
      const lifetime = (await admin.preflight()).nodes.map(
        (node) => node.checks.find((c) => c.check === 'paxos-state-lifetime') as NodeCheck,
      );
      for (const check of lifetime) {
        // legacy purging (the default) keeps Paxos state max(3 h, gc_grace_seconds): still safe;
        // gc_grace purging would forget it after 60 s.
        if (check.value === 'legacy') {
          expect(check).toMatchObject({ status: 'ok' });
          expect(check.message).toContain('idgen_dc_state 10800 s');
          expect(check.message).toContain('idgen_grants 864000 s');
        } else if (check.value?.startsWith('gc_grace') === true) {
          expect(check.status).toBe('unsafe');
        }
      }
    } finally {
      await client.execute(`ALTER TABLE ${ks.name}.idgen_dc_state WITH gc_grace_seconds = 864000`);
      await client.shutdown();
    }
  });

  it("refuses idgen tables whose rows expire, read from each node's schema", async () => {
    const client = newClient(ks.dcs[0]!);
    await client.connect();
    try {
      await client.execute(`ALTER TABLE ${ks.name}.idgen_grants WITH default_time_to_live = 86400`);
      const report = await admin.preflight();
      expect(report.verdict).toBe('unsafe');
      for (const node of report.nodes) {
        expect(node.checks.find((c) => c.check === 'table-ttl')).toMatchObject({
          status: 'unsafe',
          value: 'idgen_grants 86400',
        });
      }
    } finally {
      await client.execute(`ALTER TABLE ${ks.name}.idgen_grants WITH default_time_to_live = 0`);
      await client.shutdown();
    }
    const after = await admin.preflight();
    for (const node of after.nodes) {
      expect(node.checks.find((c) => c.check === 'table-ttl')?.status).toBe('ok');
    }
  });

  it('opens a client in another DC with the same options, and names the DCs it knows otherwise', async () => {
    const client = newClient(ks.dcs[0]!);
    await client.connect();
    try {
      const other = ks.dcs.at(-1)!;
      const remote = await openClientInDc(client, other);
      try {
        const host = remote.hosts.values().find((h) => h.datacenter === other)!;
        const result = await remote.execute('SELECT data_center FROM system.local', [], { host });
        expect(result.first()['data_center']).toBe(other);
      } finally {
        await remote.shutdown();
      }
      await expect(openClientInDc(client, 'nowhere')).rejects.toBeInstanceOf(InvalidOptionError);
    } finally {
      await client.shutdown();
    }
  });
});

describe('check and status on the cluster', () => {
  it('checks healthy rows on consistent reads: ok, nothing unverified', async () => {
    const ids = await connect(ks.connection());
    try {
      await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
      for (let i = 0; i < 25; i++) await ids.sequence('orders').next();
    } finally {
      await ids.close();
    }
    for (const dc of ks.dcs) {
      const from = await openAdmin(ks.connection(dc));
      try {
        const result = await from.check('orders');
        expect(result).toMatchObject({ verdict: 'ok', violations: [], unverified: [] });
        expect(result.snapshot.states.get(ks.dcs[0]!)?.lastInteger).toBe(25n);
      } finally {
        await from.close();
      }
    }
  });

  it('probes SERIAL without a Paxos round on any sequence', async () => {
    const client = newClient(ks.dcs[0]!);
    await client.connect();
    try {
      const before = await client.execute(`SELECT sequence FROM ${ks.name}.idgen_grants`, [], {
        consistency: cassandra.types.consistencies.all,
      });
      const probe = await admin.probeSerial();
      expect(probe).toMatchObject({ reachable: true, error: undefined });
      // The probe's partition holds no row: nothing was written anywhere.
      const after = await client.execute(`SELECT sequence FROM ${ks.name}.idgen_grants`, [], {
        consistency: cassandra.types.consistencies.all,
      });
      expect(after.rowLength).toBe(before.rowLength);
      const report = await admin.status({ sampleMs: 0 });
      expect(report.serial.reachable).toBe(true);
      expect(report.nodeSafety).toMatchObject({ dc: ks.dcs[0], error: undefined });
      expect(report.nodeSafety.problems.length > 0).toBe(
        [...truth.values()].some((n) => n.dc === ks.dcs[0] && n.commitlogSync === 'periodic'),
      );
    } finally {
      await client.shutdown();
    }
  });
});
