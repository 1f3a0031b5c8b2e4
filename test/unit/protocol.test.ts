/**
 * The DC protocol through Sequence handles over one MemoryStore: CAS outcomes, races between
 * processes and DCs, partitions, exhaustion and rows that break invariants.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

import { SERIAL_ATTEMPTS } from '../../src/allocator/dc-claims.js';
import { MAX_CAS_ATTEMPTS } from '../../src/allocator/dc-context.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import {
  ContentionError,
  DeadlineError,
  InvariantError,
  SequenceExhaustedError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { DcState } from '../../src/store/port.js';
import {
  INFO,
  KEYSPACE,
  WARN,
  capturingLogger,
  dcState,
  draw,
  drawUntilError,
  expectStrictlyIncreasing,
  expectFirstRangesOfTwoDcs,
  expectUnique,
  processIn,
  range,
  settle,
  withSequence,
  writes,
} from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';
import { Random } from '../../scripts/torture/random.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('CAS timeouts at LOCAL_SERIAL (block claims)', () => {
  it('recognises its own applied claim by op and uses the block', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1);
    store.faults.push({ op: 'writeDcState', effect: 'unknown-applied' });
    expect(await draw(seq, 15)).toEqual(range(2, 16));
    expect(seq.stats()).toMatchObject({ casUnknown: 1, blocksClaimed: 2, wasted: 0 });
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(20n);
  });

  it('retries a claim that was not applied, without a gap', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1);
    const before = store.calls.writeDcState;
    store.faults.push({ op: 'writeDcState', effect: 'unknown-not-applied' });
    expect(await draw(seq, 15)).toEqual(range(2, 16));
    expect(store.calls.writeDcState).toBe(before + 2);
    expect(seq.stats()).toMatchObject({ casUnknown: 1, blocksClaimed: 2, wasted: 0 });
  });

  it('uses its own claim that a retry’s round committed after a re-read missed it (Paxos v1)', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1);
    // The claim of [11, 20] is accepted by one replica and times out; the re-read's quorum misses
    // it, and the retry's prepare commits it before finding its own condition false.
    store.faults.push({ op: 'writeDcState', effect: 'in-flight', completesOn: 'write' });
    expect(await draw(seq, 25)).toEqual(range(2, 26));
    expect(seq.stats()).toMatchObject({ casUnknown: 1, blocksClaimed: 3, wasted: 0 });
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(30n);
  });

  it('uses its own opening claim that the retry’s round committed (Paxos v1), with no gap', async () => {
    const { store, ids } = await withSequence({
      dcRangeSize: 100,
      blockSize: 10,
      threshold: 0.9,
      firstRanges: ['dc1'],
    });
    // The opening `IF NOT EXISTS` of [1, 10] times out; the re-read finds no state; the retry's
    // round commits the first insert, then finds the row there.
    store.faults.push({ op: 'writeDcState', effect: 'in-flight', completesOn: 'write' });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 15)).toEqual(range(1, 15));
    expect(seq.stats()).toMatchObject({ casUnknown: 1, wasted: 0, serialReads: 0 });
  });

  it('abandons a claim it cannot confirm because another process wrote after it', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const a = ids.sequence('orders');
    const b = processIn(store).sequence('orders');
    expect(await a.next()).toBe(1);
    let bId: number | undefined;
    // A's claim of [11, 20] applies, then B claims [21, 30] before A can re-read.
    store.faults.push({
      op: 'writeDcState',
      effect: 'unknown-applied',
      onHit: async () => {
        bId = await b.next();
      },
    });
    const aIds = await draw(a, 10);
    expect(bId).toBe(21);
    expect(aIds).toEqual([...range(2, 10), 31]);
    expect(a.stats()).toMatchObject({ casUnknown: 1, wasted: 10, blocksClaimed: 2 });
    expectUnique([...aIds, ...(await draw(b, 9))]);
  });
});

describe('CAS timeouts at SERIAL (grants) and in installs', () => {
  it('recognises its own applied grant by the grant row and installs it', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    store.faults.push({ op: 'grantRange', effect: 'unknown-applied' });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 3)).toEqual([1, 2, 3]);
    expect(store.grantLog).toHaveLength(1);
    expect(store.calls.grantRange).toBe(1);
    expect(seq.stats()).toMatchObject({ casUnknown: 1, rangesGranted: 1 });
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      reservedMin: 1n,
      reservedMax: 100n,
      installedGrant: 1,
    });
  });

  it('retries a grant that was not applied, and never installs an unconfirmed one', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    store.faults.push({ op: 'grantRange', effect: 'unknown-not-applied' });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1);
    expect(store.calls.grantRange).toBe(2);
    expect(store.grantLog.map((g) => g.grant)).toEqual([{ number: 1, min: 1n, max: 100n }]);
    expect(seq.stats()).toMatchObject({ casUnknown: 1, rangesGranted: 1 });
  });

  it.each(['unknown-applied', 'unknown-not-applied'] as const)(
    'resolves an install with outcome %s by re-reading the DC state',
    async (effect) => {
      const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
      store.faults.push({ op: 'writeDcState', effect }); // the first write installs grant 1
      const seq = ids.sequence('orders');
      expect(await draw(seq, 2)).toEqual([1, 2]);
      expect(store.grantLog).toHaveLength(1);
      expect(await store.readDcState('orders', 'dc1')).toMatchObject({
        installedGrant: 1,
        lastInteger: 10n,
        version: 2,
      });
    },
  );

  it('installs a confirmed grant whose requester died, instead of asking for another', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    // Every install attempt fails (a failed write is an unknown outcome: re-read, then retry).
    store.faults.push({ op: 'writeDcState', effect: 'unavailable', times: Infinity });
    await expect(ids.sequence('orders').next({ timeoutMs: 100 })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(store.grantLog).toHaveLength(1);
    expect(await store.readDcState('orders', 'dc1')).toBeUndefined();
    await ids.close(); // the requester dies: its claim stops retrying
    store.faults.length = 0;

    const other = processIn(store).sequence('orders');
    expect(await other.next()).toBe(1);
    expect(store.grantLog).toHaveLength(1);
    expect(other.stats().rangesGranted).toBe(0);
  });

  it('rides out a failed install: a failure is an unknown outcome, re-read and retried', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    store.faults.push({ op: 'writeDcState', effect: 'unavailable' });
    expect(await ids.sequence('orders').next()).toBe(1);
    expect(store.grantLog).toHaveLength(1);
  });

  it('rides out one SERIAL failure when the DC needs a range', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    // The first batch fails, and so do the read of the grants that would say what it did and
    // the next round's read.
    store.faults.push({ op: 'grantRange', effect: 'unavailable', times: 1 });
    store.faults.push({ op: 'readGrants', effect: 'unavailable', times: 2 });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1);
    expect(store.calls.grantRange).toBe(2);
    expect(store.grantLog).toHaveLength(1);
    // The failure is recorded, but never reached the caller.
    expect(seq.stats().errors).toBe(1);
    expect(seq.stats().lastError).toBeInstanceOf(StoreUnavailableError);
  });

  itOnFakeClock(
    'reports SERIAL as unavailable when every grant attempt times out until the deadline',
    async () => {
      const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
      store.faults.push({ op: 'grantRange', effect: 'unknown-not-applied', times: Infinity });
      const pending = ids
        .sequence('orders')
        .next()
        .catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(9_000);
      expect(store.calls.grantRange).toBeGreaterThan(MAX_CAS_ATTEMPTS * SERIAL_ATTEMPTS);
      await vi.advanceTimersByTimeAsync(1_001); // the call's 10 s deadline
      const error = await pending;
      expect(error).toBeInstanceOf(SerialUnavailableError);
      expect(error).toMatchObject({ sequence: 'orders', dc: 'dc1', dcRemaining: 0n });
      expect((error as Error).cause).toBeInstanceOf(StoreUnavailableError);
      expect(store.grantLog).toHaveLength(0);
      const closing = ids.close();
      await vi.advanceTimersByTimeAsync(5_000);
      await closing;
    },
  );
});

describe('races', () => {
  it('makes the loser of a claim race retry after the winner, with no duplicate', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const a = ids.sequence('orders');
    const b = processIn(store).sequence('orders');
    expect(await a.next()).toBe(1);
    let release!: () => void;
    let bId: number | undefined;
    store.faults.push({
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
      // While A's claim (expecting the version it read) waits, B claims.
      onHit: () => void b.next().then((id) => ((bId = id), release())),
    });
    const aIds = await draw(a, 10);
    expect(bId).toBe(11);
    expect(aIds).toEqual([...range(2, 10), 21]);
    expect(a.stats()).toMatchObject({ casRejections: 1, wasted: 0 });
  });

  it('keeps IDs unique and increasing per process with two processes in one DC', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 50, blockSize: 5, threshold: 0.5 });
    const handles = [ids.sequence('orders'), processIn(store).sequence('orders')];
    const perProcess = await Promise.all(handles.map((h) => draw(h, 300)));
    for (const got of perProcess) expectStrictlyIncreasing(got);
    expectUnique(perProcess.flat());
    const rejections = handles.reduce((sum, h) => sum + h.stats().casRejections, 0);
    expect(rejections).toBeGreaterThan(0);
  });

  it('keeps IDs unique and inside their DC’s grants with many DCs sharing one store', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 30, blockSize: 4, threshold: 0.5 });
    const dcs = ['dc1', 'dc2', 'dc3'];
    const handles = dcs.flatMap((dc) => [
      { dc, seq: (dc === 'dc1' ? ids : processIn(store, dc)).sequence('orders') },
      { dc, seq: processIn(store, dc).sequence('orders') },
    ]);
    const results = await Promise.all(
      handles.map(async ({ dc, seq }) => ({ dc, got: await draw(seq, 150) })),
    );
    expectUnique(results.flatMap((r) => r.got));
    for (const { dc, got } of results) {
      expectStrictlyIncreasing(got);
      const grants = store.grantLog.filter((g) => g.dc === dc).map((g) => g.grant);
      for (const id of got) {
        const inGrant = grants.some((g) => BigInt(id) >= g.min && BigInt(id) <= g.max);
        if (!inGrant) expect.fail(`${dc} handed out ${id}, outside its grants`);
      }
    }
    // Grants are disjoint and end at GLOBAL.
    const all = store.grantLog.map((g) => g.grant).sort((x, y) => (x.min < y.min ? -1 : 1));
    for (let i = 1; i < all.length; i++) expect(all[i]!.min).toBeGreaterThan(all[i - 1]!.max);
    expect((await store.readGrants('orders', 'dc1')).globalLast).toBe(all.at(-1)!.max);
    // The store keeps every DC's grants: a chain 1, 2, 3… per DC, in the order they were made.
    const overview = await store.readGrantsOverview('orders');
    for (const dc of dcs) {
      const history = overview?.grants.get(dc) ?? [];
      expect(history).toEqual(store.grantLog.filter((g) => g.dc === dc).map((g) => g.grant));
      expect(history.map((g) => g.number)).toEqual(history.map((_, i) => i + 1));
    }
  });
});

/**
 * A DC cut off from SERIAL serves its local ranges, fails the call that needs a new one with
 * SerialUnavailableError, and once SERIAL answers again claims its next block before any caller
 * waits. Returns the failed call's error and the captured log for the caller's assertions.
 * Runs on the caller's fake clock.
 */
async function cutOffFromSerialAndBack() {
  const { logger, records } = capturingLogger();
  const { store } = await withSequence({ dcRangeSize: 20, blockSize: 5, threshold: 0.5 });
  const seq = processIn(store, 'dc1', logger).sequence('orders');
  expect(await seq.next()).toBe(1); // grant 1 = [1, 20]

  store.faults.push({ op: 'readGrants', effect: 'unavailable', times: Infinity });
  const got = [1];
  for (let i = 0; i < 19; i++) {
    got.push(await seq.next());
    await vi.advanceTimersByTimeAsync(3_000); // background retries keep failing
  }
  expect(got).toEqual(range(1, 20));
  const errors = seq.stats().errors;
  const lastError = seq.stats().lastError;

  // The claim keeps trying SERIAL, pausing in between; the call waits up to its deadline.
  const pending = seq.next().catch((e: unknown) => e);
  await vi.advanceTimersByTimeAsync(10_001);
  const error = await pending;
  expect(seq.tryNext()).toBeUndefined();

  store.faults.length = 0;
  const waits = seq.stats().waits;
  await vi.advanceTimersByTimeAsync(31_000); // the background retry gets grant 2
  await settle();
  expect(
    records.some((r) => r.level === INFO && r.msg === 'requesting DC ranges works again'),
  ).toBe(true);
  // ...and the block claim that failed for want of it runs again: no wait.
  expect(seq.stats().remaining).toBe(5);
  expect(await seq.next()).toBe(21);
  expect(seq.stats().waits).toBe(waits);
  return { error, errors, lastError, records };
}

describe('first ranges granted at creation', () => {
  const options = { max: 10_000, dcRangeSize: 100, blockSize: 10, shards: 2 } as const;

  it('writes grant 1 of every shard of the listed DCs with the sequence; their processes start on them without SERIAL', async () => {
    const { store } = await withSequence({ ...options, firstRanges: ['dc1', 'dc2'] });
    await expectFirstRangesOfTwoDcs(store);
    store.resetCalls();
    // Four processes per DC start at once, each on one of its DC's two shards, and take one
    // block each: at most 40 of a shard's 100 IDs, below the threshold that asks for grant 2.
    const starters = ['dc1', 'dc2'].flatMap((dc) =>
      Array.from({ length: 4 }, () => ({ dc, seq: processIn(store, dc).sequence('orders') })),
    );
    const firsts = await Promise.all(starters.map(({ seq }) => draw(seq, 3)));
    expectUnique(firsts.flat());
    starters.forEach(({ dc }, i) => {
      const low = dc === 'dc1' ? 1 : 201;
      for (const id of firsts[i]!) expect(id).toSatisfy((n: number) => n >= low && n < low + 200);
    });
    expect(store.calls).toMatchObject({ grantRange: 0, readGrants: 0 });
    expect(store.calls.readGrantsLocal).toBeGreaterThan(0);
  });

  it('lets a listed DC with no state start and draw its first ranges while cut off from SERIAL', async () => {
    const { store } = await withSequence({ ...options, firstRanges: ['dc1', 'dc2'] });
    // dc1 reaches no other DC: every read and write at SERIAL fails from here on.
    store.faults.push({ op: 'readGrants', effect: 'unavailable', times: Infinity });
    store.faults.push({ op: 'grantRange', effect: 'unavailable', times: Infinity });
    const starters = Array.from({ length: 2 }, () => processIn(store, 'dc1').sequence('orders'));
    const drawn = (await Promise.all(starters.map((seq) => draw(seq, 40)))).flat();
    expectUnique(drawn);
    // dc1's two shards hold [1, 100] and [101, 200]: every ID came from them.
    for (const id of drawn) expect(id).toSatisfy((n: number) => n >= 1 && n <= 200);
  });

  it('lets a DC not listed ask for its first range at SERIAL, above the first ranges', async () => {
    const { store } = await withSequence({ ...options, firstRanges: ['dc1', 'dc2'] });
    const ids = await draw(processIn(store, 'dc3').sequence('orders'), 3);
    expect(ids[0]).toBeGreaterThan(400);
    expect(store.calls.grantRange).toBeGreaterThan(0);
  });

  it('falls back to the grants at SERIAL when the plain read fails, and installs the same grant 1', async () => {
    const { store } = await withSequence({ ...options, shards: 1, firstRanges: ['dc1'] });
    store.readGrantsLocal = () =>
      Promise.reject(new StoreUnavailableError('local', 'read grants locally', 'injected'));
    store.resetCalls();
    expect(await draw(processIn(store).sequence('orders'), 3)).toEqual([1, 2, 3]);
    // Its first batch found grant 1; the read at SERIAL showed it is the latest.
    expect(store.calls).toMatchObject({ grantRange: 1, readGrants: 1 });
  });
});

describe('a DC cut off from SERIAL', () => {
  itOnFakeClock(
    'serves its local ranges, logs once, fails with SerialUnavailableError, and recovers',
    async () => {
      const { error, errors, lastError, records } = await cutOffFromSerialAndBack();
      const rangeWarnings = records.filter(
        (r) => r.level === WARN && r.msg.startsWith('requesting a DC range failed'),
      );
      expect(rangeWarnings).toHaveLength(1);
      expect(rangeWarnings[0]).toMatchObject({ sequence: 'orders', dc: 'dc1' });
      expect(errors).toBeGreaterThan(3);
      // The last failure is a background range retry, or the background claim at 18 that found
      // the reserved range spent; either way SERIAL is what failed.
      const serialFailure =
        lastError instanceof SerialUnavailableError ? lastError.cause : lastError;
      expect(serialFailure).toBeInstanceOf(StoreUnavailableError);
      expect(serialFailure).toMatchObject({ level: 'serial' });
      expect(error).toBeInstanceOf(SerialUnavailableError);
      expect(error).toMatchObject({
        code: 'IDGEN_SERIAL_UNAVAILABLE',
        sequence: 'orders',
        dc: 'dc1',
        dcRemaining: 0n,
      });
    },
  );

  itOnFakeClock(
    'claims its next block once the range comes, whatever the retry pauses drawn',
    async () => {
      // When the range was installed while the claim that failed for want of it was pausing, the
      // claim ended at the end of its pause (its window had passed), and no claim followed: the
      // process held no IDs until a caller waited. That took some draws of the pauses: 3 of these
      // 150 (seeds 22, 90 and 127) before the fix.
      const failed: number[] = [];
      for (let seed = 1; seed <= 150; seed++) {
        const random = new Random(seed);
        const spy = vi.spyOn(Math, 'random').mockImplementation(() => random.next());
        vi.useFakeTimers(); // a fresh clock per seed: no timer of an earlier seed's process fires
        try {
          await cutOffFromSerialAndBack();
        } catch {
          failed.push(seed);
        } finally {
          spy.mockRestore();
        }
      }
      expect(failed).toEqual([]);
    },
  );
});

describe('exhaustion', () => {
  it('ends exactly at the int32 maximum, then SequenceExhaustedError', async () => {
    const max = 2 ** 31 - 1;
    const { store, ids } = await withSequence({
      domain: 'int32',
      start: max - 24,
      dcRangeSize: 10,
      blockSize: 4,
    });
    const seq = ids.sequence('orders');
    const { ids: got, error } = await drawUntilError(seq);
    expect(got).toEqual(range(max - 24, max));
    expect(error).toBeInstanceOf(SequenceExhaustedError);
    expect(error).toMatchObject({
      code: 'IDGEN_SEQUENCE_EXHAUSTED',
      sequence: 'orders',
      max: BigInt(max),
      globalLast: BigInt(max),
    });
    expect(store.grantLog.map((g) => g.grant.max - g.grant.min + 1n)).toEqual([10n, 10n, 5n]);

    // Exhaustion is final: no further SERIAL round trips.
    const serialReads = store.calls.readGrants;
    await expect(seq.next()).rejects.toBeInstanceOf(SequenceExhaustedError);
    expect(seq.tryNext()).toBeUndefined();
    await settle();
    expect(store.calls.readGrants).toBe(serialReads);
  });

  it('shares a tiny domain between DCs without losing or repeating an ID', async () => {
    const { store, ids } = await withSequence({ min: 1, max: 25, dcRangeSize: 4, blockSize: 2 });
    const handles = [ids.sequence('orders'), processIn(store, 'dc2').sequence('orders')];
    const results = await Promise.all(handles.map((h) => drawUntilError(h)));
    const all = results.flatMap((r) => r.ids);
    expect([...all].sort((a, b) => a - b)).toEqual(range(1, 25));
    for (const r of results) expect(r.error).toBeInstanceOf(SequenceExhaustedError);
  });

  it('keeps serving the DC’s ranges after a background request found the domain spent', async () => {
    const { logger, records } = capturingLogger();
    const { store } = await withSequence({ min: 1, max: 30, dcRangeSize: 20, blockSize: 5 });
    const seq = processIn(store, 'dc1', logger).sequence('orders');
    expect(await seq.next()).toBe(1); // dc1 gets [1, 20]
    expect(await processIn(store, 'dc2').sequence('orders').next()).toBe(21); // dc2 [21, 30]
    const { ids: got, error } = await drawUntilError(seq);
    expect(got).toEqual(range(2, 20));
    expect(error).toBeInstanceOf(SequenceExhaustedError);
    expect(records.filter((r) => r.msg.startsWith('the sequence is exhausted'))).toHaveLength(1);
  });
});

describe('rows that break invariants', () => {
  const cases: [string, Partial<DcState>][] = [
    [
      'reserved_min above reserved_max',
      { reservedMin: 50n, reservedMax: 40n, preloadedMin: 50n, preloadedMax: 40n },
    ],
    ['last_integer below reserved_min - 1', { lastInteger: -1n }],
    ['last_integer above reserved_max', { lastInteger: 101n }],
    ['a reserved range outside the domain', { reservedMax: 2_000n, preloadedMax: 2_000n }],
    ['installed grant two ahead of reserved', { installedGrant: 3 }],
    ['no preloaded range, yet preloaded differs', { preloadedMin: 5n }],
    [
      'a preloaded range overlapping reserved',
      { installedGrant: 2, preloadedMin: 50n, preloadedMax: 150n },
    ],
  ];

  it.each(cases)('refuses a DC state with %s and writes nothing', async (_label, broken) => {
    const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 100, blockSize: 10 });
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    const row = dcState(broken);
    store.seedDcState('orders', 'dc1', row);
    const before = writes(store);
    const error = await ids
      .sequence('orders')
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvariantError);
    expect(error).toMatchObject({ code: 'IDGEN_INVARIANT_BROKEN', sequence: 'orders' });
    expect(writes(store)).toEqual(before);
  });

  it('refuses a grant that ends above GLOBAL', async () => {
    const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 100, blockSize: 10 });
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.writeDcState('orders', 'dc1', undefined, dcState({ lastInteger: 100n }));
    // A grant for dc2 that moves GLOBAL backwards: only a broken writer could do this.
    await store.grantRange('orders', 'dc2', 100n, { number: 1, min: 5n, max: 50n });
    const before = writes(store);
    await expect(ids.sequence('orders').next()).rejects.toThrow(/above GLOBAL last_integer 50/);
    expect(writes(store)).toEqual(before);
  });

  it('refuses a grant above GLOBAL that the round of a first batch found, and installs nothing', async () => {
    const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 100, blockSize: 10 });
    // dc1 has no state: its first batch goes without reading, and its round finds these rows.
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.grantRange('orders', 'dc2', 100n, { number: 1, min: 5n, max: 50n });
    // The plain read of the grants (next test) has not seen them yet.
    store.readGrantsLocal = async () => undefined;
    await expect(ids.sequence('orders').next()).rejects.toThrow(/above GLOBAL last_integer 50/);
    expect(store.grantLog).toHaveLength(2);
    expect(await store.readDcState('orders', 'dc1')).toBeUndefined();
  });

  it('refuses a grant 1 above GLOBAL that the plain read of a DC with no state shows, and installs nothing', async () => {
    const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 100, blockSize: 10 });
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.grantRange('orders', 'dc2', 100n, { number: 1, min: 5n, max: 50n });
    store.resetCalls();
    await expect(ids.sequence('orders').next()).rejects.toThrow(
      /grant 1 ends at 100, above GLOBAL last_integer 50/,
    );
    expect(store.calls).toMatchObject({ readGrantsLocal: 1, grantRange: 0, writeDcState: 0 });
    expect(await store.readDcState('orders', 'dc1')).toBeUndefined();
  });

  it.each([
    ['the same bounds as its own first batch', 100n],
    ['other bounds than its own first batch', 60n],
  ])(
    'refuses to install grant 1 again when the DC has no state but later grants (%s)',
    async (_, firstMax) => {
      const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 100, blockSize: 10 });
      // dc1's state row is gone (lost writes), its grants 1 to 3 are not: grant 1 is no range to
      // serve from again. Its first batch without reads is rejected and finds grant 1.
      let globalLast = 0n;
      for (const number of [1, 2, 3]) {
        const max = number === 1 ? firstMax : globalLast + 100n;
        await store.grantRange('orders', 'dc1', globalLast, { number, min: globalLast + 1n, max });
        globalLast = max;
      }
      await expect(ids.sequence('orders').next()).rejects.toThrow(
        /grant 3 exists but only grant 0 is installed/,
      );
      expect(store.grantLog).toHaveLength(3);
      expect(await store.readDcState('orders', 'dc1')).toBeUndefined();
    },
  );

  it('refuses a latest grant older than the installed one', async () => {
    const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 10, blockSize: 10 });
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 10n });
    const spent = dcState({
      lastInteger: 10n,
      reservedMax: 10n,
      preloadedMax: 10n,
      reservedGrant: 2,
      installedGrant: 2,
    });
    await store.writeDcState('orders', 'dc1', undefined, spent);
    const before = writes(store);
    await expect(ids.sequence('orders').next()).rejects.toThrow(
      /latest grant 1 is older than installed grant 2/,
    );
    expect(writes(store)).toEqual(before);
  });

  it('refuses a DC state holding IDs above GLOBAL', async () => {
    const { store, ids } = await withSequence({ max: 1_000, dcRangeSize: 50, blockSize: 10 });
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 50n });
    await store.writeDcState('orders', 'dc1', undefined, dcState({ lastInteger: 100n }));
    const before = writes(store);
    await expect(ids.sequence('orders').next()).rejects.toBeInstanceOf(InvariantError);
    expect(writes(store)).toEqual(before);
  });

  it('refuses stored settings that break the rules, before any write', async () => {
    const store = new MemoryStore();
    await store.createSequence(
      {
        name: 'orders',
        domain: 'custom',
        min: 1n,
        max: 1_000n,
        start: 1n,
        dcRangeSize: 10n,
        blockSize: 20,
        threshold: 0.5,
        maxBlockSize: 20,
        claimIntervalMs: 2_000,
        maxDcRangeSize: 10n,
        autonomySeconds: 0,
        shards: 1,
      },
      'created',
    );
    await expect(processIn(store).sequence('orders').next()).rejects.toThrow(
      /maxBlockSize 20 is not an integer from 1 to 10 /,
    );
    expect(writes(store)).toEqual({ grantRange: 0, writeDcState: 0 });
  });

  it('stops allocating, and drops the IDs it holds, when the DC row moved back', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 6)).toEqual(range(1, 6)); // [1, 10] in use, [11, 20] preloaded
    await settle();
    const state = (await store.readDcState('orders', 'dc1'))!;
    expect(state.lastInteger).toBe(20n);
    // Lost writes move last_integer back: the next claim would get [11, 20] a second time.
    await store.writeDcState(
      'orders',
      'dc1',
      { version: state.version, op: state.op },
      { ...state, lastInteger: 10n, version: state.version + 1, op: 'reset' },
    );
    const got = await draw(seq, 9); // 7..15; at 15 the background claim reads the state
    await settle();
    expect(got).toEqual(range(7, 15));
    // It saw last_integer 10 below the 20 this process claimed: 16..20 may be claimed again.
    await expect(seq.next()).rejects.toBeInstanceOf(StateRolledBackError);
    expect(() => seq.tryNext()).toThrow(StateRolledBackError);
    expect(seq.stats().lastError?.message).toMatch(/last_integer 10, below 20/);
    await seq.close();
    // Nothing was given back from the dropped block.
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(10n);
  });

  it('drops, with the rollback as the error, a block whose claim lands after the rows were found gone back', async () => {
    const { store } = await withSequence({
      dcRangeSize: 100,
      blockSize: 10,
      maxBlockSize: 10,
      threshold: 0.5,
    });
    // From now on the grant level reads as if dc1's grants were lost: no latest grant.
    let grantsLost = false;
    const readGrants = store.readGrants.bind(store);
    store.readGrants = async (sequence, dc) => {
      const view = await readGrants(sequence, dc);
      return grantsLost ? { ...view, latest: undefined } : view;
    };
    const seq = processIn(store).sequence('orders');
    expect(await draw(seq, 125)).toEqual(range(1, 125)); // grant 2 = [101, 200] reserved
    await settle();
    // Draws until the fault pushed last has been hit: its call waits.
    const drawUntilHeld = async () => {
      for (let i = 0; i < 40 && store.faults.length > 0; i++) {
        await seq.next();
        await settle();
      }
      expect(store.faults).toHaveLength(0);
    };
    // The next range request waits in its read of the grants, then a block claim in its write;
    // then the read answers, showing the grants gone back, and the write lands after it.
    grantsLost = true;
    let answerRead!: () => void;
    let answerWrite!: () => void;
    const readHeld = new Promise<void>((resolve) => (answerRead = resolve));
    const writeHeld = new Promise<void>((resolve) => (answerWrite = resolve));
    store.faults.push({ op: 'readGrants', effect: 'delay', until: readHeld });
    await drawUntilHeld();
    store.faults.push({ op: 'writeDcState', effect: 'delay', until: writeHeld });
    await drawUntilHeld();
    const dropped = seq.stats().remaining;
    answerRead();
    await settle();
    answerWrite();
    await settle();
    // The claim ends with the rollback, not with an assertion about the block arriving.
    expect(seq.stats().lastError).toBeInstanceOf(StateRolledBackError);
    await expect(seq.next()).rejects.toBeInstanceOf(StateRolledBackError);
    // What it held when the rollback was seen, and the block that came after.
    expect(seq.stats().waste.dropped).toBe(dropped + 10);
  });

  it('stops allocating when the DC row loses versions (a crash with periodic commitlog)', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 12)).toEqual(range(1, 12));
    await settle();
    store.rollBackDcState('orders', 'dc1', 2);
    const error = await drawUntilError(seq);
    expect(error.error).toBeInstanceOf(StateRolledBackError);
    expect(error.error).toMatchObject({ code: 'IDGEN_STATE_ROLLED_BACK', dc: 'dc1' });
    // A second process that never saw the lost writes cannot tell: only durable commits help.
    expect(Math.max(...error.ids)).toBeLessThanOrEqual(30);
  });

  it('stops a handle opened after another one of the process saw rows that went back since', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const first = ids.sequence('orders');
    const drawn = await draw(first, 25);
    await settle();
    await first.close(); // gives back what it did not hand out
    store.rollBackDcState('orders', 'dc1', 2); // its last claim and its give-back are lost
    // The next handle of this process has not read the rows yet, but the process has.
    const next = ids.sequence('orders');
    const after = await drawUntilError(next);
    expect(after.error).toBeInstanceOf(StateRolledBackError);
    expect(after.ids.filter((id) => drawn.includes(id))).toEqual([]);
  });
});

describe('contention', () => {
  // Behaviour changed: lost races are retried for as long as the call waits, not a fixed 12
  // times, and the call that runs out of time gets DeadlineError (cause: the contention).
  itOnFakeClock(
    'retries lost claim races until the call’s deadline, then rejects with DeadlineError',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 100,
        blockSize: 10,
        threshold: 0.9,
      });
      const seq = ids.sequence('orders');
      expect(await seq.next()).toBe(1);
      store.faults.push({ op: 'writeDcState', effect: 'rejected', times: Infinity });
      const before = store.calls.writeDcState;
      // The background claim at 90% of the block loses every race; next() then joins it.
      expect(await draw(seq, 9)).toEqual(range(2, 10));
      let settled = false;
      const pending = seq
        .next()
        .catch((e: unknown) => e)
        .finally(() => (settled = true));
      await vi.advanceTimersByTimeAsync(9_900);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(101);
      const error = await pending;
      expect(error).toBeInstanceOf(DeadlineError);
      expect(error).toMatchObject({ code: 'IDGEN_DEADLINE_EXCEEDED', timeoutMs: 10_000 });
      expect((error as DeadlineError).cause).toBeInstanceOf(ContentionError);
      expect((error as DeadlineError).cause).toMatchObject({ operation: 'claim a block' });
      // Far more than a fixed count of attempts: one claim, backing off up to 100 ms.
      expect(store.calls.writeDcState - before).toBeGreaterThan(8 * MAX_CAS_ATTEMPTS);
      store.faults.length = 0;
      const after = seq.next();
      await vi.advanceTimersByTimeAsync(200); // the claim's backoff, at most 100 ms
      expect(await after).toBe(11);
      await ids.close();
    },
  );

  itOnFakeClock(
    'retries lost grant races until the call’s deadline, then rejects with DeadlineError',
    async () => {
      const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
      store.faults.push({ op: 'grantRange', effect: 'rejected', times: Infinity });
      let grantsAtFailure = 0;
      const pending = ids
        .sequence('orders')
        .next()
        .catch((e: unknown) => {
          grantsAtFailure = store.calls.grantRange;
          return e;
        });
      await vi.advanceTimersByTimeAsync(10_001);
      const error = await pending;
      expect(error).toMatchObject({ code: 'IDGEN_DEADLINE_EXCEEDED' });
      expect((error as DeadlineError).cause).toMatchObject({
        code: 'IDGEN_CONTENTION',
        operation: 'grant a DC range',
      });
      expect(grantsAtFailure).toBeGreaterThan(MAX_CAS_ATTEMPTS);
      const closing = ids.close();
      await vi.advanceTimersByTimeAsync(5_000);
      await closing;
    },
  );

  itOnFakeClock(
    'serves 16 processes of one DC drawing at once with no error, unique IDs',
    async () => {
      const { store } = await withSequence({ dcRangeSize: 1_000, blockSize: 1, threshold: 0.5 });
      const processes = Array.from({ length: 16 }, () => processIn(store, 'dc1'));
      const drawing = Promise.all(processes.map((p) => draw(p.sequence('orders'), 40)));
      const errors: unknown[] = [];
      drawing.catch((e: unknown) => errors.push(e));
      await vi.advanceTimersByTimeAsync(9_000);
      expect(errors).toEqual([]);
      const all = (await drawing).flat();
      expect(all).toHaveLength(640);
      expectUnique(all);
      const rejections = processes.reduce(
        (sum, p) => sum + p.sequence('orders').stats().casRejections,
        0,
      );
      expect(rejections).toBeGreaterThan(MAX_CAS_ATTEMPTS);
      await Promise.all(processes.map((p) => p.close()));
    },
  );

  itOnFakeClock('starts no claim retry after callTimeoutMs when a pause ends past it', async () => {
    // The longest pauses: the 8th attempt's pause of 2 s starts at about 7.5 s and ends past
    // the deadline of 9 s, with no attempt in flight at the deadline.
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, callTimeoutMs: 9_000 });
    await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 5)).toEqual(range(1, 5)); // the preload starts at 5
    store.faults.push({ op: 'writeDcState', effect: 'unavailable', times: Infinity });
    await vi.advanceTimersByTimeAsync(9_000);
    const tried = store.calls.writeDcState;
    expect(tried).toBeGreaterThan(MAX_CAS_ATTEMPTS);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(store.calls.writeDcState).toBe(tried);
    await ids.close();
  });

  itOnFakeClock(
    'stops a preload nobody waits for after callTimeoutMs against a store that keeps failing',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 100,
        blockSize: 10,
        threshold: 0.5,
      });
      const seq = ids.sequence('orders');
      expect(await draw(seq, 5)).toEqual(range(1, 5)); // the preload starts at 5
      store.faults.push({ op: 'writeDcState', effect: 'unavailable', times: Infinity });
      // A claim attempt under way at the deadline may finish (its unknown outcomes are re-read,
      // up to MAX_CAS_ATTEMPTS writes with backoffs of at most 100 ms each); none starts after it.
      await vi.advanceTimersByTimeAsync(10_000 + MAX_CAS_ATTEMPTS * 100 + 100);
      const tried = store.calls.writeDcState;
      await vi.advanceTimersByTimeAsync(60_000);
      expect(store.calls.writeDcState).toBe(tried);
      // The IDs held are still served; the call that needs more starts a new claim.
      expect(await draw(seq, 5)).toEqual(range(6, 10));
      store.faults.length = 0;
      const next = seq.next();
      await vi.advanceTimersByTimeAsync(100);
      expect(await next).toBe(11);
      await ids.close();
    },
  );
});
