/**
 * The durability watch and the claim gate (src/admin/durability-watch.ts, DcAllocator.claimBlock)
 * on the in-memory store: a node of the DC turning unsafe stops new block claims from the DC while
 * the IDs held are still served, and claims resume once it is safe again.
 */
import { EventEmitter } from 'node:events';

import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';

import { DurabilityWatch } from '../../src/admin/durability-watch.js';
import { SYSTEM_CLOCK } from '../../src/allocator/clock.js';
import { IdGen, type IdGenOptions } from '../../src/connect.js';
import { InvalidOptionError, UnsafeClusterError } from '../../src/errors.js';
import { MemoryStore, type MemoryNode } from '../../src/store/memory.js';
import {
  INFO,
  KEYSPACE,
  capturingLogger,
  draw,
  drawUntilError,
  expectUnique,
  settle,
} from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

const EVERY_MS = 60_000;
const ERROR = 50;

/** Two nodes in dc1, one in dc2 running periodic (another DC's node is not this watch's). */
function cluster(): MemoryStore {
  return new MemoryStore({
    keyspace: KEYSPACE,
    nodeSettings: [
      { host: 'a:9042', dc: 'dc1' },
      { host: 'b:9042', dc: 'dc1' },
      { host: 'c:9042', dc: 'dc2', commitlogSync: 'periodic' },
    ],
  });
}

function setNode(store: MemoryStore, host: string, change: Partial<MemoryNode>): void {
  const index = store.nodes.findIndex((node) => node.host === host);
  store.nodes[index] = { ...store.nodes[index]!, ...change };
}

async function drawing(options: Partial<IdGenOptions> = {}) {
  const store = cluster();
  const { logger, records } = capturingLogger();
  const ids = new IdGen({
    ...{ store, dc: 'dc1', keyspace: KEYSPACE, logger, durabilityCheckMs: EVERY_MS },
    ...options,
  });
  await ids.createSequence('orders', { dcRangeSize: 10_000, blockSize: 10 });
  const orders = ids.sequence('orders');
  return { store, ids, orders, records };
}

/** Past one check interval, and the check it starts. */
async function nextCheck(): Promise<void> {
  await vi.advanceTimersByTimeAsync(EVERY_MS);
  await settle();
}

describe('the claim gate', () => {
  itOnFakeClock(
    'claims no block while a node of the DC is unsafe, serves what it holds, resumes once safe',
    async () => {
      const { store, ids, orders, records } = await drawing();
      const before = await draw(orders, 3);
      await settle(); // a preload, if any, lands before the node turns
      setNode(store, 'b:9042', { commitlogSync: 'periodic' });
      await nextCheck();
      const claims = store.calls.writeDcState;

      const { ids: held, error } = await drawUntilError(orders, 500);
      expect(held.length).toBeGreaterThan(0); // the rest of the blocks it holds
      expect(error).toBeInstanceOf(UnsafeClusterError);
      expect((error as UnsafeClusterError).problems).toEqual([
        expect.stringMatching(
          /^commitlog_sync periodic on b:9042 \(dc1\): .*commitlog_sync: batch/,
        ),
      ]);
      expect((error as Error).message).toContain('{ allowUnsafeCluster: true }');
      await expect(orders.next()).rejects.toBeInstanceOf(UnsafeClusterError);
      expect(store.calls.writeDcState).toBe(claims);

      const logged = records.filter((r) => r.level === ERROR);
      expect(logged).toHaveLength(1);
      expect(logged[0]!.msg).toMatch(
        /^unsafe node settings in dc1: commitlog_sync periodic on b:9042 \(dc1\): .*set commitlog_sync: batch.*no block is claimed from dc1 until it is fixed/,
      );

      setNode(store, 'b:9042', { commitlogSync: 'batch' });
      await nextCheck();
      const after = await draw(orders, 15);
      expect(store.calls.writeDcState).toBeGreaterThan(claims);
      expectUnique([...before, ...held, ...after]);
      expect(records.filter((r) => r.level === INFO).map((r) => r.msg)).toContain(
        'the nodes of dc1 are safe again; blocks are claimed from it again',
      );
      await ids.close();
    },
  );

  itOnFakeClock('refuses the first claim when a node is unsafe at start', async () => {
    const { store, ids, orders } = await drawing();
    setNode(store, 'a:9042', { settings: new Map([['commit_failure_policy', 'ignore']]) });
    const late = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE });
    await expect(late.sequence('orders').next()).rejects.toBeInstanceOf(UnsafeClusterError);
    expect(store.calls.writeDcState).toBe(0);
    await Promise.all([late.close(), orders.close(), ids.close()]);
  });

  itOnFakeClock('lets claims go on with allowUnsafeCluster, and still logs once', async () => {
    const { store, ids, orders, records } = await drawing({ allowUnsafeCluster: true });
    setNode(store, 'b:9042', { commitlogSync: 'periodic' });
    await nextCheck();
    await nextCheck();
    expectUnique(await draw(orders, 50));
    const logged = records.filter((r) => r.level === ERROR);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.msg).toContain('allowUnsafeCluster is set, so blocks are still claimed');
    await ids.close();
  });

  itOnFakeClock('keeps a node unsafe while its settings cannot be read', async () => {
    const { store, ids, orders } = await drawing();
    setNode(store, 'b:9042', { commitlogSync: 'periodic' });
    await nextCheck();
    setNode(store, 'b:9042', { commitlogSync: 'batch', error: 'did not answer' });
    await nextCheck();
    const { error } = await drawUntilError(orders, 500);
    expect(error).toBeInstanceOf(UnsafeClusterError);
    await ids.close();
  });

  it('refuses bad options, naming them', () => {
    const store = cluster();
    const base = { store, dc: 'dc1', keyspace: KEYSPACE };
    expect(() => new IdGen({ ...base, durabilityCheckMs: 0 })).toThrow(InvalidOptionError);
    expect(() => new IdGen({ ...base, durabilityCheckMs: 0 })).toThrow(/durabilityCheckMs/);
    expect(() => new IdGen({ ...base, allowUnsafeCluster: 'yes' as unknown as boolean })).toThrow(
      /allowUnsafeCluster/,
    );
  });
});

describe('the durability watch', () => {
  it('checks again when a node comes up or joins', async () => {
    const store = cluster();
    const watch = new DurabilityWatch({
      ...{ store, dc: 'dc1', clock: SYSTEM_CLOCK, logger: undefined },
      ...{ everyMs: 3_600_000, allowUnsafe: false },
    });
    const events = new EventEmitter();
    watch.follow(events);
    watch.start();
    await watch.admit();
    setNode(store, 'a:9042', { commitlogSync: 'periodic' });
    events.emit('hostUp');
    await settle();
    await expect(watch.admit()).rejects.toBeInstanceOf(UnsafeClusterError);
    setNode(store, 'a:9042', { commitlogSync: 'group' });
    events.emit('hostAdd');
    await settle();
    await watch.admit();
    await watch.close();
    expect(events.listenerCount('hostUp') + events.listenerCount('hostAdd')).toBe(0);
  });

  itOnFakeClock('sets idgen_dc_unsafe_nodes at each check', async () => {
    const registry = new Registry();
    const { store, ids } = await drawing({ metrics: { registry, runwayIntervalMs: 0 } });
    const gauge = async () => {
      const metric = registry.getSingleMetric('idgen_dc_unsafe_nodes');
      const { values } = (await metric!.get()) as { values: { value: number }[] };
      return values.map((v) => v.value);
    };
    await settle();
    expect(await gauge()).toEqual([0]);
    setNode(store, 'a:9042', { commitlogSync: 'periodic' });
    setNode(store, 'b:9042', { commitlogSync: 'periodic' });
    await nextCheck();
    expect(await gauge()).toEqual([2]);
    await ids.close();
  });
});

describe('close()', () => {
  it('stops serving at once, even while a check of the nodes is in flight', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reads = 0;
    const store = cluster();
    const read = store.readNodeSettings.bind(store);
    // The first check answers; the next ones hang until released.
    store.readNodeSettings = async () => {
      if (reads++ > 0) await held;
      return read();
    };
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, durabilityCheckMs: 1 });
    await ids.createSequence('orders', { dcRangeSize: 10_000, blockSize: 10 });
    const orders = ids.sequence('orders');
    await draw(orders, 3);
    while (reads < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const closing = ids.close();
    expect(() => orders.tryNext()).toThrow(expect.objectContaining({ code: 'IDGEN_CLOSED' }));
    release();
    await closing;
  });
});
