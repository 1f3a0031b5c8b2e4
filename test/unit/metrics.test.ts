/** Prometheus metrics of an allocator over the in-memory store (src/metrics/). */
import { Counter, Gauge, Registry, register } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';

import { IdGen } from '../../src/connect.js';
import { InvalidOptionError, StoreUnavailableError } from '../../src/errors.js';
import type { MetricsOptions } from '../../src/metrics/options.js';
import { metricsTable } from '../../src/metrics/table.js';
import { MemoryStore } from '../../src/store/memory.js';
import { KEYSPACE, draw, eachQuorumFails, settle } from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

/** One process in `dc` with metrics on `registry`; no polls unless `runwayIntervalMs` says so. */
function metered(
  store: MemoryStore,
  registry: Registry,
  options: Omit<MetricsOptions, 'registry'> = { runwayIntervalMs: 0 },
  dc = 'dc1',
): IdGen {
  return new IdGen({ store, dc, keyspace: KEYSPACE, metrics: { registry, ...options } });
}

async function withOrders(
  options: Omit<MetricsOptions, 'registry'> = { runwayIntervalMs: 0 },
): Promise<{ store: MemoryStore; registry: Registry; ids: IdGen }> {
  const store = new MemoryStore({ keyspace: KEYSPACE });
  const registry = new Registry();
  const ids = metered(store, registry, options);
  await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
  return { store, registry, ids };
}

/**
 * The value of `name` with exactly `labels` as the registry would expose it now (collect()
 * included); for a histogram, `name_count` and `name_sum` are read from its samples.
 */
async function valueOf(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const base = registry.getSingleMetric(name) ? name : name.replace(/_(count|sum)$/, '');
  const metric = registry.getSingleMetric(base);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  // Histograms name each sample (`_bucket`, `_count`, `_sum`); counters and gauges do not.
  const { values } = (await metric.get()) as {
    values: { value: number; labels: Record<string, unknown>; metricName?: string }[];
  };
  const wanted = Object.entries(labels);
  const found = values.find(
    (v) =>
      (v.metricName ?? base) === name &&
      Object.keys(v.labels).length === wanted.length &&
      wanted.every(([key, value]) => v.labels[key] === value),
  );
  return found?.value;
}

describe('metrics: nothing without the option', () => {
  itOnFakeClock('registers nothing and polls nothing without `metrics`', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE });
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    await draw(ids.sequence('orders'), 25);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(register.getMetricsAsArray()).toEqual([]);
    expect(store.calls.probeSerial).toBe(0);
    expect(store.calls.readDcStatesOverview).toBe(0);
    await ids.close();
  });
});

describe('metrics: counters from stats()', () => {
  it('move as IDs are drawn, and match stats()', async () => {
    const { registry, ids } = await withOrders();
    const orders = ids.sequence('orders');
    await draw(orders, 25);
    const sequence = { sequence: 'orders' };
    expect(await valueOf(registry, 'idgen_ids_issued_total', sequence)).toBe(25);
    const stats = orders.stats();
    expect(await valueOf(registry, 'idgen_ids_held', sequence)).toBe(stats.remaining);
    expect(await valueOf(registry, 'idgen_block_claims_total', sequence)).toBe(stats.blocksClaimed);
    expect(stats.blocksClaimed).toBeGreaterThanOrEqual(3);
    expect(await valueOf(registry, 'idgen_dc_grants_total', sequence)).toBe(1);
    expect(await valueOf(registry, 'idgen_waits_total', sequence)).toBe(stats.waits);
    expect(stats.waits).toBeGreaterThanOrEqual(1);

    // Scraped again: only the growth since the last scrape is added.
    await draw(orders, 5);
    expect(await valueOf(registry, 'idgen_ids_issued_total', sequence)).toBe(30);
    await ids.close();
  });

  it('observe every wait and every block claim in the histograms', async () => {
    const { registry, ids } = await withOrders();
    const orders = ids.sequence('orders');
    await draw(orders, 25);
    const stats = orders.stats();
    const sequence = { sequence: 'orders' };
    expect(await valueOf(registry, 'idgen_wait_duration_seconds_count', sequence)).toBe(
      stats.waits,
    );
    expect(await valueOf(registry, 'idgen_block_claim_duration_seconds_count', sequence)).toBe(
      stats.blocksClaimed,
    );
    expect(await valueOf(registry, 'idgen_dc_grant_duration_seconds_count', sequence)).toBe(1);
    expect(
      await valueOf(registry, 'idgen_wait_duration_seconds_sum', sequence),
    ).toBeGreaterThanOrEqual(0);
    await ids.close();
  });

  it('count IDs wasted by cause', async () => {
    const { registry, ids } = await withOrders();
    const orders = ids.sequence('orders');
    await draw(orders, 8);
    await orders.take(5); // the block's last 2 IDs are skipped
    expect(
      await valueOf(registry, 'idgen_ids_wasted_total', {
        sequence: 'orders',
        cause: 'takeSkipped',
      }),
    ).toBe(2);
    await ids.close();
  });

  it('count races lost to other processes', async () => {
    const { store, registry, ids } = await withOrders();
    await draw(ids.sequence('orders'), 1);
    store.faults.push({ op: 'writeDcState', effect: 'rejected' });
    await draw(ids.sequence('orders'), 20);
    expect(await valueOf(registry, 'idgen_cas_rejections_total', { sequence: 'orders' })).toBe(1);
    store.faults.push({ op: 'writeDcState', effect: 'unknown-applied' });
    await draw(ids.sequence('orders'), 20);
    expect(
      await valueOf(registry, 'idgen_cas_unknown_outcomes_total', { sequence: 'orders' }),
    ).toBe(1);
    await ids.close();
  });
});

describe('metrics: errors by code', () => {
  it('counts failed claims and failed calls by error code', async () => {
    const { store, registry, ids } = await withOrders();
    const orders = ids.sequence('orders');
    store.faults.push({ op: 'readDcState', effect: 'unavailable', times: Infinity });
    await expect(orders.next({ timeoutMs: 150 })).rejects.toBeInstanceOf(StoreUnavailableError);
    const code = 'IDGEN_STORE_UNAVAILABLE';
    const failedClaims = await valueOf(registry, 'idgen_errors_total', {
      sequence: 'orders',
      code,
    });
    expect(failedClaims).toBeGreaterThanOrEqual(1);
    expect(failedClaims).toBe(orders.stats().errors);
    expect(await valueOf(registry, 'idgen_call_errors_total', { sequence: 'orders', code })).toBe(
      1,
    );
    expect(
      await valueOf(registry, 'idgen_wait_duration_seconds_count', { sequence: 'orders' }),
    ).toBe(1);
    store.faults.length = 0;
    await ids.close();
  });
});

describe('metrics: runway poll', () => {
  itOnFakeClock('fills the DC gauges as status computes them, every runwayIntervalMs', async () => {
    const { store, registry, ids } = await withOrders({ runwayIntervalMs: 15_000 });
    const orders = ids.sequence('orders');
    await draw(orders, 15);
    await settle();
    // Fixed blocks of 10: the DC's range of 1,000 has handed out 10 per block claimed.
    const claimedAtFirstPoll = orders.stats().blocksClaimed * 10;
    expect(store.calls.probeSerial).toBe(0); // the first poll comes after one interval

    await vi.advanceTimersByTimeAsync(15_000);
    await settle();
    const dc1 = { sequence: 'orders', dc: 'dc1' };
    expect(await valueOf(registry, 'idgen_serial_reachable', { dc: 'dc1' })).toBe(1);
    expect(await valueOf(registry, 'idgen_dc_ids_left', dc1)).toBe(1_000 - claimedAtFirstPoll);
    // One read: no rate yet, so no runway either.
    expect(await valueOf(registry, 'idgen_dc_rate_ids_per_second', dc1)).toBeUndefined();

    await draw(orders, 300); // 300 more IDs claimed in dc1 within the next interval
    await settle();
    const claimed = orders.stats().blocksClaimed * 10;
    await vi.advanceTimersByTimeAsync(15_000);
    await settle();
    const left = 1_000 - claimed;
    const rate = (claimed - claimedAtFirstPoll) / 15;
    expect(await valueOf(registry, 'idgen_dc_ids_left', dc1)).toBe(left);
    expect(await valueOf(registry, 'idgen_dc_rate_ids_per_second', dc1)).toBeCloseTo(rate, 6);
    expect(await valueOf(registry, 'idgen_dc_runway_seconds', dc1)).toBeCloseTo(left / rate, 6);

    // Nothing drawn: rate 0, the runway is unbounded.
    await vi.advanceTimersByTimeAsync(15_000);
    await settle();
    expect(await valueOf(registry, 'idgen_dc_rate_ids_per_second', dc1)).toBe(0);
    expect(await valueOf(registry, 'idgen_dc_runway_seconds', dc1)).toBe(Infinity);
    expect(await registry.metrics()).toContain(
      'idgen_dc_runway_seconds{sequence="orders",dc="dc1"} +Inf',
    );
    await ids.close();
  });

  itOnFakeClock(
    'takes the DC gauges of a sequence off once its handles closed, until one reopens it',
    async () => {
      const { registry, ids } = await withOrders({ runwayIntervalMs: 15_000 });
      await ids.createSequence('events', { dcRangeSize: 1_000, blockSize: 10 });
      const orders = ids.sequence('orders');
      await draw(orders, 15);
      await draw(ids.sequence('events'), 5);
      for (let poll = 0; poll < 2; poll++) await vi.advanceTimersByTimeAsync(15_000);
      const dc1 = { sequence: 'orders', dc: 'dc1' };
      expect(await valueOf(registry, 'idgen_dc_runway_seconds', dc1)).toBeGreaterThan(0);
      await orders.close();
      await vi.advanceTimersByTimeAsync(15_000);
      // Its last runway would read as current (and keep a runway alert firing) while nobody polls.
      for (const name of [
        'idgen_dc_ids_left',
        'idgen_dc_rate_ids_per_second',
        'idgen_dc_runway_seconds',
      ]) {
        expect(await valueOf(registry, name, dc1), name).toBeUndefined();
      }
      const events = { sequence: 'events', dc: 'dc1' };
      expect(await valueOf(registry, 'idgen_dc_ids_left', events)).toBeDefined();
      await draw(ids.sequence('orders'), 1);
      await vi.advanceTimersByTimeAsync(15_000);
      expect(await valueOf(registry, 'idgen_dc_ids_left', dc1)).toBeDefined();
      await ids.close();
    },
  );

  itOnFakeClock(
    'sets SERIAL unreachable when the probe fails, and counts polls whose reads fail',
    async () => {
      const { store, registry, ids } = await withOrders({ runwayIntervalMs: 15_000 });
      await draw(ids.sequence('orders'), 5);
      await settle();
      const left = 1_000 - ids.sequence('orders').stats().blocksClaimed * 10;

      store.faults.push({ op: 'probeSerial', effect: 'unavailable', level: 'serial' });
      await vi.advanceTimersByTimeAsync(15_000);
      await settle();
      expect(await valueOf(registry, 'idgen_serial_reachable', { dc: 'dc1' })).toBe(0);
      expect(await valueOf(registry, 'idgen_runway_poll_failures_total')).toBe(0);
      expect(await valueOf(registry, 'idgen_dc_ids_left', { sequence: 'orders', dc: 'dc1' })).toBe(
        left,
      );

      // Both the EACH_QUORUM read of the states and the local one it falls back to fail.
      store.faults.push({ op: 'readDcStatesOverview', effect: 'unavailable', times: 2 });
      await vi.advanceTimersByTimeAsync(15_000);
      await settle();
      expect(await valueOf(registry, 'idgen_serial_reachable', { dc: 'dc1' })).toBe(1);
      expect(await valueOf(registry, 'idgen_runway_poll_failures_total')).toBe(1);
      // The gauges keep their last values.
      expect(await valueOf(registry, 'idgen_dc_ids_left', { sequence: 'orders', dc: 'dc1' })).toBe(
        left,
      );

      // A probe that never answers counts as unreachable after its timeout, and the poll goes on.
      store.faults.push({
        op: 'probeSerial',
        effect: 'delay',
        until: new Promise(() => undefined),
      });
      await vi.advanceTimersByTimeAsync(15_000 + 3_000);
      await settle();
      expect(await valueOf(registry, 'idgen_serial_reachable', { dc: 'dc1' })).toBe(0);
      await ids.close();
    },
  );

  itOnFakeClock(
    'sets no rate nor runway for a DC whose rows cannot be read current (a DC cut off)',
    async () => {
      const store = new MemoryStore({ keyspace: KEYSPACE });
      const registry = new Registry();
      const dc3 = metered(store, registry, { runwayIntervalMs: 0 }, 'dc3');
      await dc3.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
      await draw(dc3.sequence('orders'), 5);
      // A dc1 process sees dc3 cut off: the EACH_QUORUM read of the DC states fails.
      const dc1 = new IdGen({
        store: eachQuorumFails(store),
        dc: 'dc1',
        keyspace: KEYSPACE,
        metrics: { registry, runwayIntervalMs: 15_000 },
      });
      await draw(dc1.sequence('orders'), 5);
      for (let poll = 0; poll < 2; poll++) await vi.advanceTimersByTimeAsync(15_000);
      await settle();
      const labels = (dc: string) => ({ sequence: 'orders', dc });
      expect(await valueOf(registry, 'idgen_dc_runway_seconds', labels('dc1'))).toBe(Infinity);
      expect(await valueOf(registry, 'idgen_dc_ids_left', labels('dc3'))).toBeGreaterThan(0);
      // Unknown, not a rate of 0 read as an unbounded runway.
      expect(
        await valueOf(registry, 'idgen_dc_rate_ids_per_second', labels('dc3')),
      ).toBeUndefined();
      expect(await valueOf(registry, 'idgen_dc_runway_seconds', labels('dc3'))).toBeUndefined();
      await Promise.all([dc1.close(), dc3.close()]);
    },
  );

  itOnFakeClock('stops at close(); the metrics stay readable with the last counts', async () => {
    const { store, registry, ids } = await withOrders({ runwayIntervalMs: 15_000 });
    const orders = ids.sequence('orders');
    await draw(orders, 5);
    await vi.advanceTimersByTimeAsync(15_000);
    await settle();
    expect(store.calls.probeSerial).toBe(1);
    await draw(orders, 7); // drawn after the last scrape: counted at close
    await ids.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(store.calls.probeSerial).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    expect(await valueOf(registry, 'idgen_ids_issued_total', { sequence: 'orders' })).toBe(12);
    expect(await valueOf(registry, 'idgen_ids_held', { sequence: 'orders' })).toBe(0);
    expect(await valueOf(registry, 'idgen_serial_reachable', { dc: 'dc1' })).toBe(1);
  });
});

describe('metrics: registries', () => {
  it('lets several allocators share a registry; labels tell the sequences apart', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const registry = new Registry();
    const one = metered(store, registry);
    const two = metered(store, registry, { runwayIntervalMs: 0 }, 'dc2');
    await one.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    await one.createSequence('events', { dcRangeSize: 1_000, blockSize: 10 });
    await draw(one.sequence('orders'), 5);
    await draw(two.sequence('orders'), 7);
    await draw(two.sequence('events'), 3);
    expect(await valueOf(registry, 'idgen_ids_issued_total', { sequence: 'orders' })).toBe(12);
    expect(await valueOf(registry, 'idgen_ids_issued_total', { sequence: 'events' })).toBe(3);
    const held = () =>
      one.sequence('orders').stats().remaining + two.sequence('orders').stats().remaining;
    expect(await valueOf(registry, 'idgen_ids_held', { sequence: 'orders' })).toBe(held());
    expect(registry.getMetricsAsArray()).toHaveLength(metricsTable().length);
    await one.close();
    // The closed allocator's counts stay; the open one's go on.
    await draw(two.sequence('orders'), 1);
    expect(await valueOf(registry, 'idgen_ids_issued_total', { sequence: 'orders' })).toBe(13);
    expect(await valueOf(registry, 'idgen_ids_held', { sequence: 'orders' })).toBe(
      two.sequence('orders').stats().remaining,
    );
    await two.close();
  });

  it('fills a matching metric it found registered (by the user, or by another copy of the library)', async () => {
    const registry = new Registry();
    let theirs = 0;
    new Counter({
      name: 'idgen_ids_issued_total',
      help: 'registered first',
      labelNames: ['sequence'],
      registers: [registry],
      collect() {
        theirs++;
      },
    });
    new Gauge({
      name: 'idgen_ids_held',
      help: 'registered first',
      labelNames: ['sequence'],
      registers: [registry],
    });
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = metered(store, registry);
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    const orders = ids.sequence('orders');
    await draw(orders, 12);
    expect(await valueOf(registry, 'idgen_ids_issued_total', { sequence: 'orders' })).toBe(12);
    expect(await valueOf(registry, 'idgen_ids_held', { sequence: 'orders' })).toBe(
      orders.stats().remaining,
    );
    expect(theirs).toBe(1); // its own collect() still runs
    await ids.close();
  });

  it("uses prom-client's default registry when none is given", async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, metrics: {} });
    try {
      await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
      await draw(ids.sequence('orders'), 3);
      expect(await register.metrics()).toContain('idgen_ids_issued_total{sequence="orders"} 3');
    } finally {
      await ids.close();
      register.clear();
    }
  });

  it('refuses a registry where one of the names is another kind of metric, or has other labels', () => {
    const registry = new Registry();
    new Counter({ name: 'idgen_ids_held', help: 'not a gauge', registers: [registry] });
    const store = new MemoryStore({ keyspace: KEYSPACE });
    expect(() => metered(store, registry)).toThrow(InvalidOptionError);
    expect(() => metered(store, registry)).toThrow(/metrics\.registry/);
    const other = new Registry();
    new Gauge({
      name: 'idgen_ids_held',
      help: 'other labels',
      labelNames: ['dc'],
      registers: [other],
    });
    expect(() => metered(store, other)).toThrow(/labelled \[sequence\]/);
    // Refused before anything was registered.
    expect(registry.getMetricsAsArray()).toHaveLength(1);
    expect(other.getMetricsAsArray()).toHaveLength(1);
  });

  it('refuses bad options, naming them', () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const make = (metrics: unknown) =>
      new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, metrics: metrics as MetricsOptions });
    expect(() => make({ runwayIntervalMs: 500 })).toThrow(
      expect.objectContaining({ option: 'metrics.runwayIntervalMs', received: 500 }),
    );
    expect(() => make({ runwayIntervalMs: Infinity })).toThrow(InvalidOptionError);
    expect(() => make({ registry: {} })).toThrow(
      expect.objectContaining({ option: 'metrics.registry' }),
    );
    expect(() => make(null)).toThrow(expect.objectContaining({ option: 'metrics' }));
    // A misspelt key was ignored: the metrics went to prom-client's default registry.
    expect(() => make({ regsitry: new Registry() })).toThrow(
      expect.objectContaining({
        option: 'metrics.regsitry',
        message: expect.stringContaining(
          'one of the options metrics.registry, metrics.runwayIntervalMs',
        ) as unknown,
      }),
    );
  });
});
