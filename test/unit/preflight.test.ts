/**
 * Preflight (defect 7): each rule on one node's settings, the report over every DC (unsafe,
 * incomplete, safe), Admin.preflight over a MemoryStore whose nodes simulate unsafe settings and
 * unreachable DCs, and the warning status gives about the local DC's nodes.
 */
import { describe, expect, it } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import {
  checkNode,
  preflightReport,
  type NodeCheck,
  type PreflightCheckName,
} from '../../src/admin/preflight.js';
import { MemoryStore, type MemoryNode } from '../../src/store/memory.js';
import type { NodeSettings } from '../../src/store/port.js';
import { KEYSPACE, withSequence } from './fixtures.js';

/** A node's settings as the Cassandra store reads them, safe unless overridden. */
function node(overrides: Partial<NodeSettings> = {}): NodeSettings {
  const commitlogSync = 'commitlogSync' in overrides ? overrides.commitlogSync : 'batch';
  const paxosVariant = 'paxosVariant' in overrides ? overrides.paxosVariant : 'v2';
  return {
    host: '10.0.0.1:9042',
    dc: 'dc1',
    version: '5.0.8',
    settings: new Map([
      ['commit_failure_policy', 'stop'],
      ['paxos_state_purging', 'legacy'],
      ['paxos_repair_enabled', 'true'],
      ['skip_paxos_repair_on_topology_change', 'false'],
    ]),
    properties: new Map(),
    tables: new Map([
      ['idgen_grants', { gcGraceSeconds: 864_000, defaultTtlSeconds: 0 }],
      ['idgen_dc_state', { gcGraceSeconds: 864_000, defaultTtlSeconds: 0 }],
    ]),
    ...overrides,
    commitlogSync,
    paxosVariant,
  };
}

function checkOf(settings: NodeSettings, name: PreflightCheckName): NodeCheck {
  const found = checkNode(settings).find((c) => c.check === name);
  if (found === undefined) throw new Error(`no check ${name}`);
  return found;
}

function withSetting(name: string, value: string): NodeSettings {
  return node({ settings: new Map([...node().settings, [name, value]]) });
}

describe('checkNode', () => {
  it('passes a node with commitlog_sync batch and Paxos v2 on default tables', () => {
    const checks = checkNode(node());
    expect(checks.map((c) => c.check)).toEqual([
      'commitlog-sync',
      'commit-failure-policy',
      'paxos-variant',
      'serial-reads-linearizability',
      'paxos-state-lifetime',
      'table-ttl',
      'paxos-repair',
      'commitlog-replay',
    ]);
    expect(checks.filter((c) => c.status !== 'ok' && c.status !== 'info')).toEqual([]);
    expect(checkOf(node(), 'paxos-state-lifetime').message).toBe(
      'legacy: Paxos state kept idgen_grants 864000 s, idgen_dc_state 864000 s',
    );
  });

  it('accepts batch and group, and refuses periodic, naming the period', () => {
    expect(checkOf(node({ commitlogSync: 'group' }), 'commitlog-sync').status).toBe('ok');
    const periodic = node({
      commitlogSync: 'periodic',
      settings: new Map([['commitlog_sync_period', '10000ms']]),
    });
    expect(checkOf(periodic, 'commitlog-sync')).toMatchObject({
      status: 'unsafe',
      value: 'periodic',
    });
    expect(checkOf(periodic, 'commitlog-sync').message).toContain('periodic (every 10000ms)');
  });

  it('reports a commitlog setting the node did not report as unknown', () => {
    expect(checkOf(node({ commitlogSync: undefined }), 'commitlog-sync').status).toBe('unknown');
  });

  it('refuses commit_failure_policy: ignore', () => {
    expect(
      checkOf(withSetting('commit_failure_policy', 'ignore'), 'commit-failure-policy'),
    ).toMatchObject({
      status: 'unsafe',
      value: 'ignore',
    });
    expect(
      checkOf(withSetting('commit_failure_policy', 'die'), 'commit-failure-policy').status,
    ).toBe('ok');
  });

  it('reports the Paxos variant, and refuses the variants without linearizable reads', () => {
    expect(checkOf(node({ paxosVariant: 'v1' }), 'paxos-variant')).toMatchObject({
      status: 'info',
      value: 'v1',
    });
    for (const variant of [
      'v1_without_linearizable_reads_or_rejected_writes',
      'v2_without_linearizable_reads',
      'v2_without_linearizable_reads_or_rejected_writes',
    ]) {
      expect(checkOf(node({ paxosVariant: variant }), 'paxos-variant').status).toBe('unsafe');
    }
  });

  it('refuses the CASSANDRA-12126 opt-out property before 5.0, and warns on 5.0, which ignores it', () => {
    const properties = new Map([['cassandra.unsafe.disable-serial-reads-linearizability', 'TRUE']]);
    expect(
      checkOf(node({ properties, version: '4.0.11' }), 'serial-reads-linearizability').status,
    ).toBe('unsafe');
    expect(
      checkOf(node({ properties, version: undefined }), 'serial-reads-linearizability').status,
    ).toBe('unsafe');
    expect(checkOf(node({ properties }), 'serial-reads-linearizability').status).toBe('warning');
    const off = new Map([['cassandra.unsafe.disable-serial-reads-linearizability', 'false']]);
    expect(checkOf(node({ properties: off }), 'serial-reads-linearizability').status).toBe('ok');
  });

  it('keeps Paxos state at least 3 h: legacy purging floors the TTL, gc_grace purging does not', () => {
    const lowGc = new Map([
      ['idgen_grants', { gcGraceSeconds: 864_000, defaultTtlSeconds: 0 }],
      ['idgen_dc_state', { gcGraceSeconds: 60, defaultTtlSeconds: 0 }],
    ]);
    // legacy: TTL max(3 h, gc_grace_seconds), whatever the table says.
    const legacy = node({ tables: lowGc });
    expect(checkOf(legacy, 'paxos-state-lifetime')).toMatchObject({ status: 'ok' });
    expect(checkOf(legacy, 'paxos-state-lifetime').message).toContain('idgen_dc_state 10800 s');
    // gc_grace: state older than gc_grace_seconds is dropped, with no floor.
    const gcGrace = node({
      tables: lowGc,
      settings: new Map([['paxos_state_purging', 'gc_grace']]),
    });
    expect(checkOf(gcGrace, 'paxos-state-lifetime')).toMatchObject({
      status: 'unsafe',
      value: 'gc_grace (gc_grace_seconds: idgen_dc_state 60)',
    });
    const gcGraceLong = node({ settings: new Map([['paxos_state_purging', 'gc_grace']]) });
    expect(checkOf(gcGraceLong, 'paxos-state-lifetime').status).toBe('ok');
    const repaired = node({
      tables: lowGc,
      settings: new Map([['paxos_state_purging', 'repaired']]),
    });
    expect(checkOf(repaired, 'paxos-state-lifetime').status).toBe('ok');
    expect(checkOf(node({ tables: new Map() }), 'paxos-state-lifetime').status).toBe('info');
  });

  it('refuses idgen tables whose rows expire (a default TTL), naming each such table', () => {
    // A grant row is written once: with a default TTL it expires, and so do GLOBAL and the
    // settings if no grant or alter rewrites them, after which the sequence starts over.
    const expiring = node({
      tables: new Map([
        ['idgen_grants', { gcGraceSeconds: 864_000, defaultTtlSeconds: 86_400 }],
        ['idgen_dc_state', { gcGraceSeconds: 864_000, defaultTtlSeconds: 0 }],
      ]),
    });
    expect(checkOf(expiring, 'table-ttl')).toMatchObject({
      status: 'unsafe',
      value: 'idgen_grants 86400',
    });
    expect(checkOf(expiring, 'table-ttl').message).toContain('default_time_to_live = 0');
    expect(checkOf(node(), 'table-ttl')).toMatchObject({
      status: 'ok',
      message: 'no default TTL on idgen_grants, idgen_dc_state',
    });
    expect(checkOf(node({ tables: new Map() }), 'table-ttl').status).toBe('info');
    const report = preflightReport({
      keyspace: KEYSPACE,
      dc: 'dc1',
      at: new Date(),
      hosts: [{ address: expiring.host, dc: 'dc1' }],
      reads: [{ dc: 'dc1', nodes: [expiring] }],
    });
    expect(report.verdict).toBe('unsafe');
    expect(report.problems.join('\n')).toContain('idgen_grants 86400');
  });

  it('warns about Paxos v2 without paxos repair on topology changes, and about ignored replay errors', () => {
    expect(
      checkOf(withSetting('skip_paxos_repair_on_topology_change', 'true'), 'paxos-repair').status,
    ).toBe('warning');
    expect(checkOf(withSetting('paxos_repair_enabled', 'false'), 'paxos-repair').status).toBe(
      'warning',
    );
    const v1 = node({
      paxosVariant: 'v1',
      settings: new Map([['paxos_repair_enabled', 'false']]),
    });
    expect(checkOf(v1, 'paxos-repair').status).toBe('ok');
    const properties = new Map([['cassandra.commitlog.ignorereplayerrors', 'true']]);
    expect(checkOf(node({ properties }), 'commitlog-replay').status).toBe('warning');
  });
});

describe('preflightReport', () => {
  const at = new Date(0);
  const hosts = [
    { address: '10.0.0.1:9042', dc: 'dc1' },
    { address: '10.0.1.1:9042', dc: 'dc2' },
    { address: '10.0.1.2:9042', dc: 'dc2' },
    { address: '10.0.2.1:9042', dc: 'dc3' },
  ];
  const dc2a = node({ host: '10.0.1.1:9042', dc: 'dc2' });
  const dc2b = node({ host: '10.0.1.2:9042', dc: 'dc2' });

  it('is safe when every node of every DC was read and nothing is unsafe', () => {
    const report = preflightReport({
      keyspace: KEYSPACE,
      dc: 'dc1',
      at,
      hosts,
      reads: [
        { dc: 'dc1', nodes: [node()] },
        { dc: 'dc2', nodes: [dc2a, dc2b] },
        { dc: 'dc3', nodes: [node({ host: '10.0.2.1:9042', dc: 'dc3' })] },
      ],
    });
    expect(report).toMatchObject({ verdict: 'safe', problems: [], unchecked: [] });
    expect(report.nodes.map((n) => n.host)).toEqual(hosts.map((h) => h.address));
  });

  it('is unsafe when one node of another DC runs periodic, naming the node', () => {
    const report = preflightReport({
      keyspace: KEYSPACE,
      dc: 'dc1',
      at,
      hosts,
      reads: [
        { dc: 'dc1', nodes: [node()] },
        { dc: 'dc2', nodes: [dc2a, { ...dc2b, commitlogSync: 'periodic' }] },
        { dc: 'dc3', error: 'connect ECONNREFUSED' },
      ],
    });
    expect(report.verdict).toBe('unsafe');
    expect(report.problems).toEqual([
      'commitlog_sync periodic on 10.0.1.2:9042 (dc2): acknowledges writes before syncing them, so a crash loses acknowledged writes and Paxos state; set commitlog_sync: batch (or group)',
    ]);
    // Unreachable dc3 is still reported, as not checked.
    expect(report.unchecked).toEqual(['dc3 could not be reached: connect ECONNREFUSED']);
  });

  it('is incomplete, never safe, when a DC cannot be reached or a node not read', () => {
    const report = preflightReport({
      keyspace: KEYSPACE,
      dc: 'dc1',
      at,
      hosts,
      reads: [
        { dc: 'dc1', nodes: [node()] },
        { dc: 'dc2', nodes: [dc2a, { ...dc2b, error: 'no connection' }] },
        { dc: 'dc3', error: 'connect ECONNREFUSED' },
      ],
    });
    expect(report.verdict).toBe('incomplete');
    expect(report.unchecked).toEqual([
      '10.0.1.2:9042 (dc2) could not be read: no connection',
      'dc3 could not be reached: connect ECONNREFUSED',
    ]);
    expect(report.nodes.find((n) => n.dc === 'dc3')).toMatchObject({
      host: '10.0.2.1:9042',
      checked: false,
      checks: [],
    });
  });

  it("counts a known node missing from its DC's answer as not checked", () => {
    const report = preflightReport({
      keyspace: KEYSPACE,
      dc: 'dc1',
      at,
      hosts: hosts.slice(0, 3),
      reads: [
        { dc: 'dc1', nodes: [node()] },
        { dc: 'dc2', nodes: [dc2a] },
      ],
    });
    expect(report.verdict).toBe('incomplete');
    expect(report.unchecked).toEqual(['10.0.1.2:9042 (dc2) did not answer']);
  });
});

describe('Admin.preflight over a MemoryStore', () => {
  const nodes: MemoryNode[] = [
    { host: '10.0.0.1:9042', dc: 'dc1' },
    { host: '10.0.1.1:9042', dc: 'dc2', commitlogSync: 'periodic' },
    { host: '10.0.2.1:9042', dc: 'dc3' },
  ];
  const hosts = nodes.map((n) => ({ address: n.host, dc: n.dc, up: true }));

  it('asks every DC and finds the unsafe node', async () => {
    const store = new MemoryStore({ nodeSettings: nodes });
    const admin = new Admin({ store, dc: 'dc1', keyspace: KEYSPACE, hosts: () => hosts });
    const report = await admin.preflight();
    expect(report.verdict).toBe('unsafe');
    expect(report.problems[0]).toMatch(/^commitlog_sync periodic on 10\.0\.1\.1:9042 \(dc2\)/);
    expect(report.nodes.map((n) => [n.dc, n.checked])).toEqual([
      ['dc1', true],
      ['dc2', true],
      ['dc3', true],
    ]);
  });

  it('reports a DC it cannot reach as not checked', async () => {
    const store = new MemoryStore({ nodeSettings: nodes.filter((n) => n.dc !== 'dc2') });
    const admin = new Admin({
      store,
      dc: 'dc1',
      keyspace: KEYSPACE,
      hosts: () => hosts,
      nodeSettings: async (dc) => {
        if (dc === 'dc3') throw new Error('could not connect to contact points 10.0.2.1:9042');
        return (await store.readNodeSettings()).filter((n) => n.dc === dc);
      },
    });
    const report = await admin.preflight();
    expect(report.verdict).toBe('incomplete');
    expect(report.unchecked).toEqual([
      '10.0.1.1:9042 (dc2) did not answer',
      'dc3 could not be reached: could not connect to contact points 10.0.2.1:9042',
    ]);
  });

  it('lets a test change a node between preflights', async () => {
    const store = new MemoryStore({ nodeSettings: [{ host: '10.0.0.1:9042', dc: 'dc1' }] });
    const admin = new Admin({ store, dc: 'dc1', keyspace: KEYSPACE });
    expect((await admin.preflight()).verdict).toBe('safe');
    store.nodes[0] = { ...store.nodes[0]!, paxosVariant: 'v2_without_linearizable_reads' };
    expect((await admin.preflight()).verdict).toBe('unsafe');
  });
});

describe('status and the local DC nodes', () => {
  it('warns about an unsafe node of the local DC only (preflight checks the others)', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.close();
    store.nodes.splice(
      0,
      store.nodes.length,
      { host: '10.0.0.1:9042', dc: 'dc1', commitlogSync: 'periodic' },
      { host: '10.0.0.2:9042', dc: 'dc1' },
      { host: '10.0.1.1:9042', dc: 'dc2', commitlogSync: 'periodic' },
    );
    const report = await new Admin({ store, dc: 'dc1', keyspace: KEYSPACE }).status({
      sampleMs: 0,
    });
    expect(report.nodeSafety.dc).toBe('dc1');
    expect(report.nodeSafety.error).toBeUndefined();
    expect(report.nodeSafety.problems).toHaveLength(1);
    expect(report.nodeSafety.problems[0]).toMatch(
      /^commitlog_sync periodic on 10\.0\.0\.1:9042 \(dc1\): /,
    );
  });

  it('reports nodes it could not ask, and still gives the status', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.sequence('orders').next();
    store.faults.push({ op: 'readNodeSettings', effect: 'unavailable' });
    const report = await new Admin({ store, dc: 'dc1', keyspace: KEYSPACE }).status({
      sampleMs: 0,
    });
    expect(report.nodeSafety.problems).toEqual([]);
    expect(report.nodeSafety.error).toContain('injected fault');
    expect(report.sequences[0]?.dcs[0]?.left).toBe(90n);
    await ids.close();
  });

  it('is quiet on safe nodes', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.close();
    const report = await new Admin({ store, dc: 'dc1', keyspace: KEYSPACE }).status({
      sampleMs: 0,
    });
    expect(report.nodeSafety).toEqual({ dc: 'dc1', problems: [], error: undefined });
  });
});
