import { afterEach, describe, expect, it, vi } from 'vitest';

import { DcAllocator } from '../../src/allocator/dc-allocator.js';
import { checkSequence } from '../../src/admin/check.js';
import { readSnapshot } from '../../src/admin/overview-reads.js';
import { sequenceStatus } from '../../src/admin/status.js';
import { USAGE_REPORT_MS } from '../../src/allocator/ledger.js';
import { SETTINGS_REFRESH_MS } from '../../src/allocator/held-settings.js';
import type { Sequence } from '../../src/allocator/sequence.js';
import { MOVE_AFTER_LOST_RACES } from '../../src/allocator/shards.js';
import {
  AbortedError,
  ClosedError,
  DeadlineError,
  DomainNeedsBigIntError,
  InvalidCountError,
  InvalidNameError,
  SequenceExhaustedError,
  SequenceNotFoundError,
  StoreUnavailableError,
} from '../../src/errors.js';
import { DC_CLAIMS_PER_SECOND } from '../../src/allocator/sizing.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { MemoryStore } from '../../src/store/memory.js';
import {
  KEYSPACE,
  draw,
  drawUntilError,
  expectStrictlyIncreasing,
  expectUnique,
  holdSecondClaim,
  processIn,
  range,
  settle,
  withSequence,
  writes,
} from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('Sequence: loading', () => {
  it('reads nothing until the first ID is asked for, then loads the settings once', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    store.resetCalls();
    const seq = ids.sequence('orders');
    expect(seq.state).toBe('idle');
    expect(store.calls.readSequence).toBe(0);
    expect(await draw(seq, 3)).toEqual([1, 2, 3]);
    expect(seq.state).toBe('ready');
    expect(store.calls.readSequence).toBe(1);
  });

  it('rejects with SequenceNotFoundError, then works once the sequence exists', async () => {
    const store = new MemoryStore();
    const ids = processIn(store);
    const seq = ids.sequence('later');
    const error = await seq.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SequenceNotFoundError);
    expect(error).toMatchObject({ sequence: 'later', keyspace: KEYSPACE });
    expect(seq.state).toBe('idle');
    await ids.createSequence('later', { dcRangeSize: 10, blockSize: 5 });
    expect(await seq.next()).toBe(1);
  });

  it('asks SERIAL before calling a sequence missing that a local read did not find', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 10, blockSize: 5 });
    // Every local read misses the create until a SERIAL read repairs it.
    store.faults.push({ op: 'readSequence', effect: 'missed-locally', times: Infinity });
    store.resetCalls();
    expect(await ids.sequence('orders').next()).toBe(1);
    expect(store.calls.readSequence).toBe(2);
    await ids.close();
  });

  it('calls a sequence missing when a local read did not find it and SERIAL is out of reach', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 10, blockSize: 5 });
    store.faults.push(
      { op: 'readSequence', effect: 'missed-locally' },
      { op: 'readSequence', effect: 'unavailable', level: 'serial' },
    );
    const error = await ids
      .sequence('orders')
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SequenceNotFoundError);
    await ids.close();
  });

  itOnFakeClock('keeps the settings it holds when a re-read misses the sequence', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 5 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 5)).toEqual(range(1, 5));
    await vi.advanceTimersByTimeAsync(11_000);
    store.faults.push({ op: 'readSequence', effect: 'missed-locally', times: Infinity });
    const more = await draw(seq, 20);
    expect(more).toEqual(range(6, 25));
    expect(seq.stats().errors).toBe(0);
    await ids.close();
  });

  it('refuses a domain beyond 2^53-1 for a number handle, and serves it as bigint', async () => {
    const { store, ids } = await withSequence({ domain: 'int63', start: 2n ** 60n }, 'wide');
    await ids.createSequence('custom_wide', { max: 2n ** 53n });
    await ids.createSequence('custom_safe', { max: 2n ** 53n - 1n, start: 2n ** 53n - 3n });
    const before = writes(store);
    const error = await ids
      .sequence('wide')
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainNeedsBigIntError);
    expect(error).toMatchObject({ sequence: 'wide', max: 2n ** 63n - 1n });
    await expect(ids.sequence('custom_wide').next()).rejects.toBeInstanceOf(DomainNeedsBigIntError);
    expect(writes(store)).toEqual(before);
    expect(await ids.sequence('wide', { bigint: true }).next()).toBe(2n ** 60n);
    expect(await draw(ids.sequence('custom_safe'), 3)).toEqual([
      Number.MAX_SAFE_INTEGER - 2,
      Number.MAX_SAFE_INTEGER - 1,
      Number.MAX_SAFE_INTEGER,
    ]);
  });

  it('validates the name synchronously', async () => {
    const { ids } = await withSequence({});
    expect(() => ids.sequence('no-dashes')).toThrow(InvalidNameError);
  });
});

describe('Sequence: process-level double buffering', () => {
  it('claims the next block in the background once threshold·blockSize is used', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1);
    await settle();
    expect(seq.stats()).toMatchObject({ remaining: 9, blocksClaimed: 1 });
    const claimsBefore = store.calls.writeDcState;

    expect([seq.tryNext(), seq.tryNext(), seq.tryNext()]).toEqual([2, 3, 4]);
    await settle();
    expect(store.calls.writeDcState).toBe(claimsBefore);
    expect(seq.stats().remaining).toBe(6);

    expect(seq.tryNext()).toBe(5); // 5 of 10 used: the threshold
    await settle();
    expect(store.calls.writeDcState).toBe(claimsBefore + 1);
    expect(seq.stats()).toMatchObject({ remaining: 15, blocksClaimed: 2 });

    // Past the threshold with a block preloaded: no further claim.
    expect([seq.tryNext(), seq.tryNext()]).toEqual([6, 7]);
    await settle();
    expect(seq.stats().blocksClaimed).toBe(2);
  });

  it('switches to the preloaded block without waiting', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    const got = [await seq.next()];
    for (let i = 0; i < 39; i++) {
      const id = seq.tryNext();
      expect(id).toBeDefined();
      got.push(id!);
      await settle();
    }
    expect(got).toEqual(range(1, 40));
    expect(seq.stats()).toMatchObject({ waits: 1, blocksClaimed: 5 });
  });

  it('returns undefined from tryNext when nothing is held, and starts the refill', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    store.resetCalls(); // the create's own read
    const seq = ids.sequence('orders');
    expect(seq.tryNext()).toBeUndefined();
    await settle();
    expect(store.calls.readSequence).toBe(1);
    expect(seq.tryNext()).toBe(1);
  });

  it('ready() claims a block so tryNext succeeds at once', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    await seq.ready();
    expect(seq.tryNext()).toBe(1);
    expect(seq.stats().waits).toBe(0);
  });
});

describe('Sequence: single flight', () => {
  it('serves 100 concurrent next() calls from one load, one grant and one claim', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100_000, blockSize: 1_000 });
    store.resetCalls();
    const seq = ids.sequence('orders');
    const got = await Promise.all(Array.from({ length: 100 }, () => seq.next()));
    expect([...got].sort((a, b) => a - b)).toEqual(range(1, 100));
    expect(store.calls).toMatchObject({
      readSequence: 1,
      readGrants: 0, // a DC with no state yet asks for its first range without reading first
      grantRange: 1,
      writeDcState: 2, // install the grant, claim the block
    });
    expect(seq.stats()).toMatchObject({ waits: 100, casRejections: 0, blocksClaimed: 1 });
  });

  it('never has two claims or two range requests in flight in one process', async () => {
    const claims = trackConcurrency(DcAllocator.prototype, 'claimBlock');
    // grantAndInstall is the body of one DC range request (ensureRange shares it).
    const ranges = trackConcurrency(DcAllocator.prototype, 'grantAndInstall');
    const store = new MemoryStore({ latencyMs: 1 });
    const ids = processIn(store);
    await ids.createSequence('orders', { dcRangeSize: 50, blockSize: 5, threshold: 0.5 });
    const seq = ids.sequence('orders');
    const got = await Promise.all(Array.from({ length: 400 }, () => seq.next()));
    expect([...got].sort((a, b) => a - b)).toEqual(range(1, 400));
    expect(claims.calls).toBeGreaterThanOrEqual(80);
    expect(claims.max).toBe(1);
    expect(ranges.calls).toBeGreaterThanOrEqual(8);
    expect(ranges.max).toBe(1);
    // A claim and a range install may still race each other on the DC state's version.
    expect(seq.stats().wasted).toBe(0);
  });

  it('hands out strictly increasing IDs in call order', async () => {
    const { ids } = await withSequence({ dcRangeSize: 30, blockSize: 4, threshold: 0.5 });
    const seq = ids.sequence('orders');
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 200 }, () => seq.next().then((id) => void order.push(id))),
    );
    expectStrictlyIncreasing(order);
    expect(order).toEqual(range(1, 200));
  });
});

describe('Sequence: the error a passed deadline reports', () => {
  itOnFakeClock(
    'names the deadline, not the failure an earlier claim gave up on after the store came back',
    async () => {
      const { store } = await withSequence({
        ...{ dcRangeSize: 1_000, blockSize: 10, maxBlockSize: 10, threshold: 0.5, shards: 1 },
      });
      const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, callTimeoutMs: 1_000 });
      const seq = ids.sequence('orders');
      expect(await draw(seq, 4)).toEqual([1, 2, 3, 4]);
      // The store goes away: the preload started at the 5th ID fails until its window ends.
      store.faults.push(
        { op: 'readDcStateLocal', effect: 'unavailable', times: Infinity },
        { op: 'readDcState', effect: 'unavailable', times: Infinity },
        { op: 'writeDcState', effect: 'unavailable', times: Infinity },
      );
      expect(seq.tryNext()).toBe(5);
      await vi.advanceTimersByTimeAsync(5_000);
      await settle();
      expect(seq.stats().lastError).toBeInstanceOf(StoreUnavailableError);
      // The store is back; the next claim is only slow (its write held).
      store.faults.splice(0);
      let reply!: () => void;
      store.faults.push({
        op: 'writeDcState',
        effect: 'delay',
        until: new Promise<void>((resolve) => (reply = resolve)),
      });
      for (let id = 6; id <= 10; id++) expect(seq.tryNext()).toBe(id);
      const call = seq.next({ timeoutMs: 100 }).catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(100);
      // Without the reset, IDGEN_STORE_UNAVAILABLE: an outage that had ended.
      expect(await call).toBeInstanceOf(DeadlineError);
      reply();
      await settle();
    },
  );
});

describe('Sequence: shards', () => {
  it("spreads a DC's processes over its shards, each claiming from its own state and grants", async () => {
    const { store } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 4 });
    const random = vi.spyOn(Math, 'random');
    const handles: Sequence<number>[] = [];
    for (const [dc, pick] of [
      ['dc1', 0.1],
      ['dc1', 0.3],
      ['dc1', 0.6],
      ['dc1', 0.9],
      ['dc2', 0.6],
    ] as const) {
      random.mockReturnValueOnce(pick); // the shard is the first random number a handle draws
      const seq = processIn(store, dc).sequence('orders');
      expect(seq.grantee).toBe(dc); // its DC until it has loaded the settings
      await seq.ready();
      handles.push(seq);
    }
    random.mockRestore();
    expect(handles.map((seq) => seq.grantee)).toEqual(['dc1', 'dc1/1', 'dc1/2', 'dc1/3', 'dc2/2']);

    const drawn = await Promise.all(handles.map((seq) => draw(seq, 35)));
    drawn.forEach(expectStrictlyIncreasing);
    expectUnique(drawn.flat());
    // Each handle's IDs lie in the grants of its own shard, which the protocol treats as a DC.
    const grants = (await store.readGrantsOverview('orders'))!.grants;
    handles.forEach((seq, i) => {
      const own = grants.get(seq.grantee) ?? [];
      for (const id of drawn[i]!) {
        expect(own.some((g) => g.min <= BigInt(id) && BigInt(id) <= g.max)).toBe(true);
      }
    });
    const states = await store.readDcStatesOverview('orders');
    expect([...states.keys()].sort()).toEqual(['dc1', 'dc1/1', 'dc1/2', 'dc1/3', 'dc2/2']);
    const snapshot = await readSnapshot(store, KEYSPACE, 'orders', 'dc1');
    expect(checkSequence(snapshot)).toEqual([]);
    expect(sequenceStatus(snapshot).dcs.map((dc) => dc.dc)).toEqual([
      'dc1',
      'dc1/1',
      'dc1/2',
      'dc1/3',
      'dc2/2',
    ]);
  });

  it('goes on from another shard of its DC once the domain and its own shard are spent, if that one lies above its IDs', async () => {
    const { store, ids } = await withSequence({
      max: 40,
      dcRangeSize: 10,
      blockSize: 5,
      threshold: 0.5,
      shards: 2,
    });
    const random = vi.spyOn(Math, 'random');
    random.mockReturnValueOnce(0.1); // shard dc1
    const a = ids.sequence('orders');
    const first = await draw(a, 6);
    await settle(); // dc1 holds [1, 10] and, preloaded, [11, 20]
    random.mockReturnValueOnce(0.9); // shard dc1/1
    const b = processIn(store).sequence('orders');
    const fromB = await draw(b, 1); // dc1/1: [21, 30], then [31, 40], the domain's end
    await settle();
    await b.close(); // gives back the rest of its block: dc1/1 holds IDs nobody serves now
    random.mockRestore();
    expect(a.grantee).toBe('dc1');
    const rest = await drawUntilError(a);
    expect(rest.error).toBeInstanceOf(SequenceExhaustedError);
    // Past 20 its shard was spent; dc1/1's ranges lie above, and it went on from there.
    expect(a.grantee).toBe('dc1/1');
    expect(a.stats().shardMoves).toBe(1);
    const fromA = [...first, ...rest.ids];
    expectStrictlyIncreasing(fromA);
    const all = [...fromA, ...fromB];
    expectUnique(all);
    // Every ID of the domain went to a caller, but for b's gaps.
    expect(all.length + b.stats().wasted).toBe(40);
  });

  itOnFakeClock('keeps a running handle on its shard after an alter adds shards', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 2 });
    const random = vi.spyOn(Math, 'random').mockReturnValueOnce(0.9);
    const seq = ids.sequence('orders');
    const before = await draw(seq, 10);
    expect(seq.grantee).toBe('dc1/1');
    await processIn(store, 'dc2').alterSequence('orders', { shards: 8 });
    store.resetCalls();
    await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
    const later = await draw(seq, 40); // its claims re-read the settings
    expect(store.calls.readSequence).toBeGreaterThan(0);
    expect(seq.grantee).toBe('dc1/1');
    expectStrictlyIncreasing([...before, ...later]);
    random.mockReturnValueOnce(0.9);
    const fresh = processIn(store).sequence('orders');
    await fresh.ready();
    expect(fresh.grantee).toBe('dc1/7'); // 0.9 of 8 shards
  });
});

describe('Sequence: moving to another shard before the first block', () => {
  it('goes on from another shard of its DC when it keeps losing races on its own', async () => {
    const { store } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 2 });
    const random = vi.spyOn(Math, 'random').mockReturnValueOnce(0.1); // shard 0 of 2
    const other = processIn(store).sequence('orders');
    await draw(other, 1);
    // From here other processes of the DC win every race on shard 0 (named as the DC is).
    store.faults.push({ op: 'writeDcState', effect: 'rejected', dc: 'dc1', times: Infinity });
    random.mockReturnValueOnce(0.1);
    const seq = processIn(store).sequence('orders');
    const ids = [];
    for (let i = 0; i < 15; i++) ids.push(await seq.next({ timeoutMs: 2_000 }));
    expect(seq.grantee).toBe('dc1/1');
    expectStrictlyIncreasing(ids);
    const grants = (await store.readGrantsOverview('orders'))!.grants.get('dc1/1') ?? [];
    expect(ids.every((id) => grants.some((g) => g.min <= BigInt(id) && BigInt(id) <= g.max))).toBe(
      true,
    );
    // Its stats count the races lost on shard 0 too.
    expect(seq.stats().casRejections).toBeGreaterThanOrEqual(MOVE_AFTER_LOST_RACES);
    expect(seq.stats().errors).toBe(0);
    expect(seq.stats().shardMoves).toBe(1);
    await seq.close();
  });

  it('reports what its claims wasted on the shard it leaves under that shard, not the next', async () => {
    const { store } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 2 });
    const random = vi.spyOn(Math, 'random').mockReturnValueOnce(0.1); // shard 0 of 2
    await draw(processIn(store).sequence('orders'), 1);
    // Its first write is applied but times out, and another process of shard 0 claims over it
    // before the re-read: its block [11, 20] is a gap. Every write after that loses a race.
    const third = processIn(store).sequence('orders');
    store.faults.push({
      op: 'writeDcState',
      effect: 'unknown-applied',
      dc: 'dc1',
      onHit: async () => {
        random.mockReturnValueOnce(0.1);
        await third.next();
        store.faults.push({ op: 'writeDcState', effect: 'rejected', dc: 'dc1', times: Infinity });
      },
    });
    random.mockReturnValueOnce(0.1);
    const seq = processIn(store).sequence('orders');
    await seq.next({ timeoutMs: 2_000 });
    expect(seq.grantee).toBe('dc1/1');
    expect(seq.stats()).toMatchObject({ shardMoves: 1, waste: { unknownOutcome: 10 } });
    await seq.close();
    const usage = (await store.readDcUsage('orders'))!;
    expect(usage.get('dc1')?.unknownOutcome).toBe(10n);
    expect(usage.get('dc1/1')).toMatchObject({ issued: 1n, unknownOutcome: 0n });
    await third.close();
  });

  it('stays while a write of its claim may have been committed unseen, so that no gap goes uncounted', async () => {
    const { store } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 2 });
    const random = vi.spyOn(Math, 'random').mockReturnValueOnce(0.1);
    await draw(processIn(store).sequence('orders'), 1);
    // Its first write times out unapplied (the re-read shows the state unmoved, so it may still
    // be committed by a later round); every write after it loses a race.
    store.faults.push(
      { op: 'writeDcState', effect: 'unknown-not-applied', dc: 'dc1' },
      { op: 'writeDcState', effect: 'rejected', dc: 'dc1', times: Infinity },
    );
    random.mockReturnValueOnce(0.1);
    const seq = processIn(store).sequence('orders');
    await expect(seq.next({ timeoutMs: 300 })).rejects.toBeInstanceOf(DeadlineError);
    expect(seq.grantee).toBe('dc1');
    expect(seq.stats().casRejections).toBeGreaterThan(MOVE_AFTER_LOST_RACES);
    expect(seq.stats().shardMoves).toBe(0);
    await seq.close();
  });

  it('stays on its shard once it handed out an ID, so that its IDs keep increasing', async () => {
    const { store } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 2 });
    vi.spyOn(Math, 'random').mockReturnValueOnce(0.9); // shard 1 of 2
    const seq = processIn(store).sequence('orders');
    const before = await draw(seq, 10);
    expect(seq.grantee).toBe('dc1/1');
    store.faults.push({ op: 'writeDcState', effect: 'rejected', dc: 'dc1/1', times: Infinity });
    const { error } = await drawUntilErrorWithin(seq, 300);
    expect(error).toBeInstanceOf(DeadlineError);
    expect(seq.grantee).toBe('dc1/1');
    expect(seq.stats().issued).toBeGreaterThanOrEqual(before.length);
    expect(seq.stats().shardMoves).toBe(0);
    await seq.close();
  });

  /**
   * A sequence of `shards` shards of which only shard `served` got a range (a process drew one ID
   * from it and closed), then dc1 cut off from SERIAL: no other shard can get one.
   */
  async function cutOffWithOneShardServed(shards: number, served: number): Promise<MemoryStore> {
    const { store } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards });
    vi.spyOn(Math, 'random').mockReturnValueOnce((served + 0.5) / shards);
    const first = processIn(store).sequence('orders');
    await draw(first, 1);
    expect(first.grantee).toBe(`dc1/${served}`);
    await first.close();
    store.faults.push(
      { op: 'grantRange', effect: 'unavailable', times: Infinity },
      { op: 'readGrants', effect: 'unavailable', times: Infinity },
    );
    return store;
  }

  it('goes on from another shard when its own holds no IDs and SERIAL cannot grant a range', async () => {
    const store = await cutOffWithOneShardServed(2, 1);
    vi.spyOn(Math, 'random').mockReturnValueOnce(0.1);
    const seq = processIn(store).sequence('orders');
    const id = await seq.next({ timeoutMs: 5_000 });
    expect(seq.grantee).toBe('dc1/1');
    expect(id).toBeGreaterThan(1);
    expect(seq.stats().shardMoves).toBe(1);
    await seq.close();
  });

  it('goes on from a shard seen to hold IDs, not a random one, when SERIAL cannot grant a range', async () => {
    // Shard 5 of 8 got a range before the DC was cut off; the others never did (as after an
    // alter that added shards).
    const store = await cutOffWithOneShardServed(8, 5);
    // Every random pick is the lowest: the handle starts on shard 0, and a random move from
    // shard k goes to shard k + 1, through four more empty shards before shard 5.
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const seq = processIn(store).sequence('orders');
    const id = await seq.next({ timeoutMs: 10_000 });
    expect(seq.grantee).toBe('dc1/5');
    expect(id).toBeGreaterThan(1);
    expect(seq.stats().shardMoves).toBe(1);
    await seq.close();
  });

  itOnFakeClock(
    'keeps the settings a take() re-read while the claim looked for another shard',
    async () => {
      const { store, ids: admin } = await withSequence({
        ...{ dcRangeSize: 1_000, blockSize: 10, maxBlockSize: 20, shards: 2, firstRanges: [] },
      });
      const random = vi.spyOn(Math, 'random').mockReturnValue(0.9); // shard 1 of 2
      const other = processIn(store);
      await draw(other.sequence('orders'), 1);
      expect(other.sequence('orders').grantee).toBe('dc1/1');
      // This handle starts on shard 0, which has no range, with SERIAL out of reach: its claim
      // moves, after reading shard 1's state (held here until the alter below was re-read).
      random.mockReturnValue(0.1);
      const seq = processIn(store).sequence('orders');
      store.faults.push(
        { op: 'readGrants', dc: 'dc1', effect: 'unavailable', times: Infinity },
        { op: 'grantRange', dc: 'dc1', effect: 'unavailable', times: Infinity },
      );
      let readShard1!: () => void;
      store.faults.push({
        op: 'readDcStateLocal',
        dc: 'dc1/1',
        effect: 'delay',
        until: new Promise<void>((resolve) => (readShard1 = resolve)),
      });
      const first = seq.next({ timeoutMs: Infinity });
      await vi.advanceTimersByTimeAsync(3_000);
      expect(seq.grantee).toBe('dc1');
      await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
      await admin.alterSequence('orders', { maxBlockSize: 50 });
      // take(40) re-reads the settings (10 s old), finds 40 within them, and waits for the claim.
      const taking = seq.take(40, { timeoutMs: Infinity });
      await settle();
      readShard1();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await first).toBeGreaterThan(0);
      expect(seq.grantee).toBe('dc1/1');
      // Without the settings re-read, both takes were refused: "an integer from 1 to 20".
      const run = await taking;
      expect(run.last - run.first).toBe(39);
      const again = await seq.take(40);
      expect(again.last - again.first).toBe(39);
    },
  );
});

describe('Sequence: DC-level double buffering', () => {
  it('grants the next DC range in the background once threshold of the reserved range is claimed', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 20, blockSize: 5, threshold: 0.5 });
    const seq = ids.sequence('orders');
    expect(await seq.next()).toBe(1); // grant 1 = [1, 20], block [1, 5]: 25% of the range
    await settle();
    expect(store.calls.grantRange).toBe(1);

    expect([seq.tryNext(), seq.tryNext()]).toEqual([2, 3]); // preload block [6, 10]: 50%
    await settle();
    expect(store.calls.grantRange).toBe(2);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      lastInteger: 10n,
      reservedMin: 1n,
      reservedMax: 20n,
      reservedGrant: 1,
      preloadedMin: 21n,
      preloadedMax: 40n,
      installedGrant: 2,
    });
    expect(seq.stats().rangesGranted).toBe(2);
  });

  it('switches from the reserved to the preloaded DC range, skipping other DCs’ grants', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 20, blockSize: 5, threshold: 0.9 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 12)).toEqual(range(1, 12));
    // dc2 takes the range right after dc1's first one.
    const dc2 = processIn(store, 'dc2').sequence('orders');
    expect(await dc2.next()).toBe(21);
    const got = await draw(seq, 20);
    expect(got).toEqual([...range(13, 20), ...range(41, 52)]);
    const state = await store.readDcState('orders', 'dc1');
    expect(state).toMatchObject({ reservedMin: 41n, reservedMax: 60n, reservedGrant: 2 });
    expect(store.grantLog.map((g) => [g.dc, g.grant.min, g.grant.max])).toEqual([
      ['dc1', 1n, 20n],
      ['dc2', 21n, 40n],
      ['dc1', 41n, 60n],
    ]);
  });
});

describe('Sequence: take()', () => {
  it('takes no ID held for a caller whose signal fired while it awaited', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    await seq.ready();
    const caller = new AbortController();
    // take() awaits the loaded settings before it takes: the caller goes meanwhile.
    const taking = seq.take(4, { signal: caller.signal }).catch((error: unknown) => error);
    caller.abort();
    expect(await taking).toBeInstanceOf(AbortedError);
    expect(seq.stats()).toMatchObject({ issued: 0, remaining: 10, wasted: 0 });
    expect(await seq.take(4)).toEqual({ first: 1, last: 4 });
  });

  it('returns contiguous runs', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    expect(await seq.take(4)).toEqual({ first: 1, last: 4 });
    expect(await seq.next()).toBe(5);
    expect(await seq.take(5)).toEqual({ first: 6, last: 10 });
    expect(await seq.take(10)).toEqual({ first: 11, last: 20 });
  });

  it('skips a short remainder, counts it as wasted, and stays increasing', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 7)).toEqual(range(1, 7));
    expect(await seq.take(5)).toEqual({ first: 11, last: 15 });
    expect(seq.stats().wasted).toBe(3);
    expect(await seq.next()).toBe(16);
  });

  it.each([0, -1, 11, 1.5, Number.NaN, '3' as unknown as number])(
    'refuses a count of %s with InvalidCountError and writes nothing',
    async (count) => {
      const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
      const error = await ids
        .sequence('orders')
        .take(count)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidCountError);
      expect(error).toMatchObject({ code: 'IDGEN_INVALID_COUNT', maxCount: 10, received: count });
      expect((error as Error).message).toContain('blockSize; raise it with alterSequence()');
      expect(writes(store)).toEqual({ grantRange: 0, writeDcState: 0 });
    },
  );

  it('takes bigint runs', async () => {
    const { ids } = await withSequence({ domain: 'int63', start: 2n ** 62n, blockSize: 100 });
    expect(await ids.sequence('orders', { bigint: true }).take(100)).toEqual({
      first: 2n ** 62n,
      last: 2n ** 62n + 99n,
    });
  });
});

describe('Sequence: stats()', () => {
  it('is a frozen snapshot with every counter', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    await seq.next();
    const stats = seq.stats();
    expect(Object.isFrozen(stats)).toBe(true);
    expect(stats).toEqual({
      issued: 1,
      remaining: 9,
      blocksClaimed: 1,
      blockSize: 10,
      drawRate: undefined, // one claim: no interval to measure yet
      dcRate: undefined, // DC states read within a second: not measured yet
      rangesGranted: 1,
      waits: 1,
      errors: 0,
      casRejections: 0,
      casUnknown: 0,
      wasted: 0,
      waste: {
        unknownOutcome: 0,
        takeSkipped: 0,
        notReturned: 0,
        dropped: 0,
        refused: 0,
        undelivered: 0,
      },
      lwtWrites: 3, // grant, install, claim
      serialReads: 0, // the first grant batch goes without reading the grants
      localSerialReads: 1, // claim (its plain read shows no state; the range request starts from the read at LOCAL_SERIAL); the claim after the install writes on a plain read
      shardMoves: 0, // one shard: nowhere to move
      lastError: undefined,
    });
    await seq.next();
    expect(stats.remaining).toBe(9);
  });

  it('counts IDs handed out, not those take() skipped or close() gave back', async () => {
    const { ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    const seq = ids.sequence('orders');
    await draw(seq, 7);
    expect(seq.tryNext()).toBe(8);
    await seq.take(5); // IDs 9 and 10 are skipped: the run comes from the next block
    await draw(seq, 3);
    expect(seq.stats()).toMatchObject({ issued: 16, waste: { takeSkipped: 2 } });
    await seq.close();
    expect(seq.stats()).toMatchObject({ issued: 16, remaining: 0 });
  });

  it('counts the IDs of a nextIds() call only once it ends: issued if it got them all, else undelivered', async () => {
    const { ids, store } = await withSequence({
      dcRangeSize: 1_000,
      blockSize: 10,
      maxBlockSize: 10,
    });
    const seq = ids.sequence('orders');
    expect(await seq.nextIds(3)).toEqual([1, 2, 3]);
    expect(seq.stats()).toMatchObject({ issued: 3, wasted: 0 });
    // The next claim ([11, 20]) goes through; the one after waits until released.
    const release = holdSecondClaim(store);
    const caller = new AbortController();
    const call = seq.nextIds(25, { signal: caller.signal }).catch((error: unknown) => error);
    await settle();
    // It took [4, 20] and waits for the block after: those 17 are neither issued nor wasted
    // yet, so that issued, which metrics and usage reports only add to, never goes down.
    expect(seq.stats()).toMatchObject({ issued: 3, remaining: 0, wasted: 0 });
    caller.abort();
    expect(await call).toBeInstanceOf(AbortedError);
    expect(seq.stats()).toMatchObject({ issued: 3, wasted: 17, waste: { undelivered: 17 } });
    release();
    // Never served again: the next IDs come from the next block.
    expect(await seq.nextIds(2)).toEqual([21, 22]);
    expect(seq.stats()).toMatchObject({ issued: 5, wasted: 17 });
  });

  it('with delivered, counts a nextIds() call once it settles: issued if true, else undelivered', async () => {
    const { ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    const seq = ids.sequence('orders');
    const outcomes: ((reached: boolean) => void)[] = [];
    const delivery = () => new Promise<boolean>((resolve) => outcomes.push(resolve));
    expect(await seq.nextIds(3, undefined, delivery())).toEqual([1, 2, 3]);
    expect(await seq.nextIds(2, undefined, delivery())).toEqual([4, 5]);
    // Returned, not yet delivered: neither issued nor wasted, so that issued never goes down.
    expect(seq.stats()).toMatchObject({ issued: 0, wasted: 0, remaining: 5 });
    outcomes[0]!(false);
    await settle();
    expect(seq.stats()).toMatchObject({ issued: 0, wasted: 3, waste: { undelivered: 3 } });
    outcomes[1]!(true);
    await settle();
    expect(seq.stats()).toMatchObject({ issued: 2, wasted: 3, waste: { undelivered: 3 } });
    // A delivery that rejects is no delivery.
    const failed = seq.nextIds(1, undefined, Promise.reject(new Error('no response')));
    expect(await failed).toEqual([6]);
    await settle();
    expect(seq.stats()).toMatchObject({ issued: 2, wasted: 4, waste: { undelivered: 4 } });
  });

  it('nextIds() beside next() callers: each ID once, each call increasing, every ID accounted for', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, maxBlockSize: 10 });
    const seq = ids.sequence('orders');
    // Calls for more than the IDs held wait for the next block before they take any, while
    // single IDs go on from the IDs held: both share the one claim in flight.
    const calls = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0 ? seq.nextIds(1 + ((i * 7) % 23)) : seq.next().then((id) => [id]),
    );
    const results = await Promise.all(calls);
    for (const run of results) expectStrictlyIncreasing(run);
    const all = results.flat();
    expectUnique(all);
    const stats = seq.stats();
    expect(stats).toMatchObject({ issued: all.length, wasted: 0 });
    expect(Math.max(...all) + stats.remaining).toBe(stats.blocksClaimed * 10);
  });
});

describe('Sequence: adaptive blocks', () => {
  /** Draws `perTick` IDs every 100 ms of fake time for `ms`; returns the block sizes claimed. */
  async function drawAtRate(seq: Sequence<number>, perTick: number, ms: number): Promise<number[]> {
    const sizes: number[] = [];
    let claimed = seq.stats().blocksClaimed;
    for (let t = 0; t < ms; t += 100) {
      await draw(seq, perTick);
      await vi.advanceTimersByTimeAsync(100);
      const stats = seq.stats();
      if (stats.blocksClaimed !== claimed) sizes.push(stats.blockSize);
      claimed = stats.blocksClaimed;
    }
    return sizes;
  }

  itOnFakeClock(
    'sizes blocks from the draw rate for one claim per interval, within [blockSize, maxBlockSize]',
    async () => {
      const { ids } = await withSequence({
        dcRangeSize: 10_000_000,
        blockSize: 100,
        maxBlockSize: 20_000,
        claimIntervalMs: 1_000,
      });
      const seq = ids.sequence('orders');
      // 1,000 IDs/s: blocks of about 1,000, one claim a second.
      const slow = await drawAtRate(seq, 100, 10_000);
      expect(slow.at(-1)).toBeGreaterThanOrEqual(700);
      expect(slow.at(-1)).toBeLessThanOrEqual(1_500);
      expect(slow.length).toBeLessThanOrEqual(20);
      // 10 times faster: blocks grow about tenfold.
      const fast = await drawAtRate(seq, 1_000, 10_000);
      expect(fast.at(-1)).toBeGreaterThanOrEqual(7_000);
      expect(fast.at(-1)).toBeLessThanOrEqual(15_000);
      expect(seq.stats().drawRate).toBeGreaterThan(5_000);
      // Faster than maxBlockSize per interval: bounded.
      const faster = await drawAtRate(seq, 5_000, 5_000);
      expect(Math.max(...faster)).toBe(20_000);
      // Slow again (1,000 IDs/s): back down within a few claims.
      const slower = await drawAtRate(seq, 100, 150_000);
      expect(Math.min(...slower)).toBeGreaterThanOrEqual(100);
      expect(slower.at(-1)).toBeLessThanOrEqual(2_000);
      await ids.close();
    },
  );

  /**
   * On the caller's fake clock, a sequence `orders` (blocks of 100 to 100,000, DC ranges of 10,000,000) on
   * a store whose every call takes 300 ms.
   */
  async function onSlowStore(claimIntervalMs: number) {
    const store = new MemoryStore({ keyspace: KEYSPACE, latencyMs: 300 });
    const ids = processIn(store);
    const created = ids.createSequence('orders', {
      dcRangeSize: 10_000_000,
      blockSize: 100,
      maxBlockSize: 100_000,
      claimIntervalMs,
    });
    // Four store calls of the create: the SERIAL read, the replica DCs, the state rows (none
    // left behind), the write.
    await vi.advanceTimersByTimeAsync(2_000);
    await created;
    return { ids, seq: ids.sequence('orders') };
  }

  itOnFakeClock(
    'sizes its blocks by its draws while it held IDs: a caller that spends each block at once gets blocks for its own rate',
    async () => {
      // A claim takes 600 ms (a read and a write of 300 ms each); the caller wants 100 IDs every
      // 10 ms (10,000 IDs/s). Sized by the rate the claims let through, blocks would grow from 100
      // about fourfold per claim (400, 1,600, 6,400, …).
      const { ids, seq } = await onSlowStore(1_000);
      for (let t = 0; t < 2_000; t += 10) {
        let done = false;
        void draw(seq, 100).then(() => (done = true));
        await vi.advanceTimersByTimeAsync(10);
        while (!done) await vi.advanceTimersByTimeAsync(10);
      }
      // Sized for 10,000 IDs/s, each block lasting two claims past its threshold (600 ms each, or
      // longer while they wait on one another): 48,000 or more. From the claims' own rate, blocks
      // reached 10,296 here.
      expect(seq.stats().blockSize).toBeGreaterThanOrEqual(40_000);
      const closing = ids.close();
      await vi.advanceTimersByTimeAsync(5_000);
      await closing;
    },
  );

  itOnFakeClock(
    'grows its blocks while calls wait for claims slower than a block lasts, until blocks outlast a claim',
    async () => {
      // Every store call takes 300 ms: a claim (a read and a write) takes 600 ms, and a caller
      // that wants 1,000 IDs/s empties a block of 100 in 100 ms. Sized for one claim per 100 ms
      // alone, a block would stay about as small and every block would end in a wait.
      const { ids, seq } = await onSlowStore(100);
      /** 100 IDs every 100 ms, or as soon after as they come. */
      const drawFor = async (ms: number) => {
        for (let t = 0; t < ms; t += 100) {
          let done = false;
          void draw(seq, 100).then(() => (done = true));
          await vi.advanceTimersByTimeAsync(100);
          while (!done) await vi.advanceTimersByTimeAsync(10);
        }
      };
      await drawFor(10_000);
      const waitsBefore = seq.stats().waits;
      await drawFor(5_000);
      expect(seq.stats().blockSize).toBeGreaterThanOrEqual(1_000);
      expect(seq.stats().waits - waitsBefore).toBeLessThanOrEqual(1);
      const closing = ids.close();
      await vi.advanceTimersByTimeAsync(5_000);
      await closing;
    },
  );

  itOnFakeClock(
    'sizes a slow process’s blocks by its DC’s rate too, so a DC’s claims do not grow with its processes',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 10_000_000,
        blockSize: 100,
        maxBlockSize: 100_000,
        claimIntervalMs: 1_000,
        shards: 1, // the DC's rate is read from its one state partition
      });
      const other = processIn(store);
      const fast = ids.sequence('orders');
      const slow = other.sequence('orders');
      // 20,000 IDs/s and 100 IDs/s in one DC: by its own rate the slow one asks for 100 a block.
      for (let t = 0; t < 20_000; t += 100) {
        await draw(fast, 2_000);
        await draw(slow, 10);
        await vi.advanceTimersByTimeAsync(100);
      }
      expect(slow.stats().dcRate).toBeGreaterThan(15_000);
      expect(slow.stats().blockSize).toBeGreaterThanOrEqual(15_000 / DC_CLAIMS_PER_SECOND);
      await Promise.all([ids.close(), other.close()]);
    },
  );

  it('asks for a larger block after each race its claim lost, so that it claims less often into a crowd', async () => {
    const { store } = await withSequence({
      dcRangeSize: 1_000_000,
      blockSize: 100,
      maxBlockSize: 100_000,
      shards: 1, // the races are faults on the DC's one state partition
    });
    await draw(processIn(store).sequence('orders'), 1);
    // Other processes of the DC win the next two races.
    store.faults.push({ op: 'writeDcState', effect: 'rejected', dc: 'dc1', times: 2 });
    const seq = processIn(store).sequence('orders');
    await seq.next();
    expect(seq.stats()).toMatchObject({ casRejections: 2, blocksClaimed: 1, blockSize: 400 });
    await seq.close();
  });

  itOnFakeClock(
    'keeps fixed blocks when maxBlockSize equals blockSize, whatever the rate',
    async () => {
      const { ids } = await withSequence({ dcRangeSize: 1_000_000, blockSize: 100 });
      const seq = ids.sequence('orders');
      const sizes = await drawAtRate(seq, 1_000, 3_000);
      expect(new Set(sizes)).toEqual(new Set([100]));
      await ids.close();
    },
  );

  it('serves a burst larger than the IDs held with one larger block, not a queue of small claims', async () => {
    const { store, ids } = await withSequence({
      dcRangeSize: 1_000_000,
      blockSize: 100,
      maxBlockSize: 50_000,
    });
    const seq = ids.sequence('orders');
    await seq.ready();
    store.resetCalls();
    const run = await seq.take(30_000);
    expect(run.last - run.first).toBe(29_999);
    expect(seq.stats().blockSize).toBeGreaterThanOrEqual(30_000);
    expect(store.calls.writeDcState).toBe(1);
    // 5,000 next() calls at once: one claim covers them all.
    store.resetCalls();
    const held = seq.stats().remaining;
    const burst = await Promise.all(range(1, held + 5_000).map(() => seq.next()));
    expectUnique(burst);
    expect(store.calls.writeDcState).toBeLessThanOrEqual(2);
    // The bound is maxBlockSize, and the message names the setting that raises it (blockSize,
    // the fixed size's, would only raise the least block).
    const error = await seq.take(50_001).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidCountError);
    expect(error).toMatchObject({ maxCount: 50_000, limitedBy: 'maxBlock' });
    expect((error as Error).message).toContain('maxBlockSize; raise it with alterSequence()');
    await ids.close();
  });

  itOnFakeClock(
    'sizes the block a waiting nextIds() claims for all the IDs the call lacks, not for one',
    async () => {
      // no time passes: no draw rate sizes the blocks, only the call's need
      const { store, ids } = await withSequence({
        dcRangeSize: 1_000_000,
        blockSize: 100,
        maxBlockSize: 50_000,
      });
      const seq = ids.sequence('orders');
      await seq.ready();
      store.resetCalls();
      const got = await seq.nextIds(30_000);
      expect(got).toHaveLength(30_000);
      expectUnique(got);
      expect(store.calls.writeDcState).toBe(1);
      expect(seq.stats().blockSize).toBeGreaterThanOrEqual(30_000 - 2 * 100);
      // Beyond the largest block, the call waits for several, each as large as allowed.
      store.resetCalls();
      const more = await seq.nextIds(120_000);
      expectUnique([...got, ...more]);
      expect(store.calls.writeDcState).toBeLessThanOrEqual(3);
      await ids.close();
    },
  );
});

describe('Sequence: DC ranges sized by autonomy', () => {
  /** Draws `perTick` IDs every 100 ms of fake time for `ms`. */
  async function drawFor(seq: Sequence<number>, perTick: number, ms: number): Promise<void> {
    for (let t = 0; t < ms; t += 100) {
      await draw(seq, perTick);
      await vi.advanceTimersByTimeAsync(100);
    }
  }
  const grantSizes = (store: MemoryStore) =>
    store.grantLog.map(({ grant: g }) => Number(g.max - g.min + 1n));

  itOnFakeClock(
    'grows grants with the DC rate so that the DC holds its autonomy target, within the bounds',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 1_000,
        maxDcRangeSize: 150_000,
        blockSize: 100,
        maxBlockSize: 1_000, // at most dcRangeSize
        autonomySeconds: 10,
      });
      const seq = ids.sequence('orders');
      await drawFor(seq, 100, 20_000); // 1,000 IDs/s: 10 s of it held at the low point is 10,000
      const slow = grantSizes(store);
      expect(slow[0]).toBe(1_000); // no rate measured yet
      // rate x autonomy / (1 - threshold) = 1,000 x 10 / 0.5
      expect(slow.at(-1)).toBeGreaterThanOrEqual(15_000);
      expect(slow.at(-1)).toBeLessThanOrEqual(25_000);
      expect(seq.stats().dcRate).toBeGreaterThan(800);
      await drawFor(seq, 500, 20_000); // 5,000 IDs/s: 100,000
      const fast = grantSizes(store).at(-1)!;
      expect(fast).toBeGreaterThanOrEqual(75_000);
      expect(fast).toBeLessThanOrEqual(125_000);
      await drawFor(seq, 2_000, 10_000); // 20,000 IDs/s would want 400,000: bounded
      expect(Math.max(...grantSizes(store))).toBe(150_000);
      await ids.close();
    },
    20_000,
  );

  itOnFakeClock(
    'takes at most an eighth of the IDs not granted yet, and never less than dcRangeSize',
    async () => {
      const { store, ids } = await withSequence({
        max: 200_000,
        dcRangeSize: 1_000,
        maxDcRangeSize: 100_000,
        blockSize: 100,
        autonomySeconds: 3_600,
      });
      const seq = ids.sequence('orders');
      await drawFor(seq, 100, 30_000);
      let granted = 0n;
      for (const { grant } of store.grantLog) {
        const size = grant.max - grant.min + 1n;
        const unGranted = 200_000n - granted;
        expect(size <= (unGranted / 8n > 1_000n ? unGranted / 8n : 1_000n)).toBe(true);
        granted = grant.max;
      }
      expect(Math.max(...grantSizes(store))).toBeGreaterThan(1_000);
      await ids.close();
    },
  );

  itOnFakeClock(
    'grants at least eight blocks when adaptive blocks grow to dcRangeSize, without a target',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 10_000,
        blockSize: 1_000,
        maxBlockSize: 10_000,
        claimIntervalMs: 1_000,
      });
      const seq = ids.sequence('orders');
      await drawFor(seq, 5_000, 10_000); // 50,000 IDs/s: blocks at their 10,000 maximum
      expect(seq.stats().blockSize).toBe(10_000);
      // Without the floor every block would need a grant of its own (a SERIAL write).
      expect(Math.max(...grantSizes(store))).toBe(80_000);
      expect(seq.stats().rangesGranted * 4).toBeLessThan(seq.stats().blocksClaimed);
      await ids.close();
    },
  );

  itOnFakeClock(
    'grants dcRangeSize exactly, whatever the rate, without an autonomy target',
    async () => {
      const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 100 });
      await drawFor(ids.sequence('orders'), 500, 10_000);
      expect(new Set(grantSizes(store))).toEqual(new Set([1_000]));
      await ids.close();
    },
  );
});

describe('Sequence: close()', () => {
  it('returns the unused tail, and the next process continues right after', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 3)).toEqual([1, 2, 3]);
    await seq.close();
    expect(seq.state).toBe('closed');
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(3n);
    expect(seq.stats()).toMatchObject({ wasted: 0, remaining: 0 });
    expect(await processIn(store).sequence('orders').next()).toBe(4);
  });

  it('returns the preloaded block together with the current tail', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 6)).toEqual(range(1, 6));
    await settle();
    expect(seq.stats().remaining).toBe(14);
    await seq.close();
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(6n);
    expect(seq.stats().wasted).toBe(0);
    expect(await processIn(store).sequence('orders').next()).toBe(7);
  });

  it('counts the IDs it held as dropped when the claim in flight at close() finds the rows gone back', async () => {
    const { store, ids } = await withSequence({
      dcRangeSize: 1_000,
      blockSize: 10,
      threshold: 0.5,
      shards: 1,
    });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 12)).toEqual(range(1, 12)); // [11, 20] current
    await settle();
    let open!: () => void;
    store.faults.push({
      op: 'readDcStateLocal',
      effect: 'delay',
      until: new Promise<void>((resolve) => (open = resolve)),
    });
    for (let i = 0; i < 4; i++) seq.tryNext(); // 16: past the threshold, the preload claim waits
    await settle();
    expect(seq.stats().remaining).toBe(4);
    const closing = seq.close();
    store.rollBackDcState('orders', 'dc1', 1); // the claim of [11, 20] is lost
    open();
    await closing;
    // Every ID of the two blocks is issued or wasted: the 4 held were dropped, not forgotten.
    expect(seq.stats()).toMatchObject({ issued: 16, wasted: 4, remaining: 0 });
    expect(seq.stats().waste).toMatchObject({ dropped: 4 });
  });

  it("counts the IDs it held as dropped, not as not returned, when close()'s give-back finds the rows gone back", async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 1 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 12)).toEqual(range(1, 12)); // [11, 20] current, 8 held
    await settle();
    store.rollBackDcState('orders', 'dc1', 1); // the claim of [11, 20] is lost
    await seq.close();
    expect(seq.stats()).toMatchObject({ issued: 12, wasted: 8, remaining: 0 });
    expect(seq.stats().waste).toMatchObject({ dropped: 8, notReturned: 0 });
    expect(seq.stats().lastError).toMatchObject({ code: 'IDGEN_STATE_ROLLED_BACK' });
  });

  it('asks SERIAL for no DC range when the claim that lands during close() leaves the range low', async () => {
    const { store, ids } = await withSequence({
      dcRangeSize: 40,
      blockSize: 10,
      maxBlockSize: 10,
      threshold: 0.5,
      shards: 1,
    });
    const seq = ids.sequence('orders');
    await draw(seq, 10); // [1, 10] spent; the claim of [11, 20] (half the range) in flight
    store.resetCalls();
    await seq.close();
    expect(store.calls).toMatchObject({ readGrants: 0, grantRange: 0 });
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(10n);
  });

  it('does not return IDs when another process claimed after them', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const a = ids.sequence('orders');
    const b = processIn(store).sequence('orders');
    expect(await a.next()).toBe(1);
    expect(await b.next()).toBe(11);
    await a.close();
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(20n);
    expect(a.stats().wasted).toBe(9);
    expect(await processIn(store).sequence('orders').next()).toBe(21);
  });

  it('returns only the preloaded block when another process claimed between the two', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const a = ids.sequence('orders');
    const b = processIn(store).sequence('orders');
    expect(await a.next()).toBe(1);
    expect(await b.next()).toBe(11);
    expect(await draw(a, 4)).toEqual([2, 3, 4, 5]); // preloads [21, 30]
    await settle();
    await a.close();
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(20n);
    expect(a.stats().wasted).toBe(5); // [6, 10]
    expect(await processIn(store).sequence('orders').next()).toBe(21);
  });

  it('waits for an in-flight refill and returns the block it brought', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    await seq.ready();
    let release!: () => void;
    store.faults.push({
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
    });
    const drained = await draw(seq, 10); // the threshold starts a claim, held by the fault
    expect(drained).toEqual(range(1, 10));
    const waiting = seq.next();
    const closed = seq.close();
    expect(seq.state).toBe('closing');
    release();
    await expect(waiting).rejects.toBeInstanceOf(ClosedError);
    await closed;
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(10n);
    expect(seq.stats()).toMatchObject({ wasted: 0, blocksClaimed: 2 });
  });

  it('throws ClosedError on every call after close, and closes only once', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    await seq.next();
    const first = seq.close();
    expect(seq.close()).toBe(first);
    await first;
    expect(() => seq.tryNext()).toThrow(ClosedError);
    await expect(seq.next()).rejects.toBeInstanceOf(ClosedError);
    await expect(seq.take(1)).rejects.toBeInstanceOf(ClosedError);
    await expect(seq.ready()).rejects.toBeInstanceOf(ClosedError);
    expect(store.calls.writeDcState).toBe(3); // install, claim, return
  });

  it('closes a handle that was never used without touching the store', async () => {
    const { store, ids } = await withSequence({});
    store.resetCalls();
    const seq = ids.sequence('orders');
    await seq.close();
    expect(seq.state).toBe('closed');
    expect(Object.values(store.calls).every((n) => n === 0)).toBe(true);
  });

  it('refuses nextIds() on a closed handle before counting a wait, as next() and take() do', async () => {
    const { ids } = await withSequence({ dcRangeSize: 100, blockSize: 10, shards: 1 });
    const seq = ids.sequence('orders');
    await seq.next();
    await seq.close();
    const waits = seq.stats().waits;
    await expect(seq.next()).rejects.toBeInstanceOf(ClosedError);
    await expect(seq.take(2)).rejects.toBeInstanceOf(ClosedError);
    await expect(seq.nextIds(2)).rejects.toBeInstanceOf(ClosedError);
    expect(seq.stats().waits).toBe(waits);
  });
});

describe('Sequence: bigint domains', () => {
  it('hands out IDs up to 2^63-1 exactly, then SequenceExhaustedError', async () => {
    const max = 2n ** 63n - 1n;
    const { store, ids } = await withSequence({
      domain: 'int63',
      start: max - 99n,
      dcRangeSize: 30,
      blockSize: 7,
    });
    const seq = ids.sequence('orders', { bigint: true });
    const { ids: got, error } = await drawUntilError(seq);
    expect(got).toHaveLength(100);
    expect(got[0]).toBe(max - 99n);
    expect(got.at(-1)).toBe(max);
    expect(got.every((id) => typeof id === 'bigint')).toBe(true);
    expectStrictlyIncreasing(got);
    expect(error).toBeInstanceOf(SequenceExhaustedError);
    expect(error).toMatchObject({ max, globalLast: max });
    expect(store.grantLog.at(-1)?.grant).toEqual({ number: 4, min: max - 9n, max });
  });

  it('keeps bigint IDs unique across processes near the top', async () => {
    const max = 2n ** 63n - 1n;
    const { store, ids } = await withSequence({
      domain: 'int63',
      start: max - 999n,
      dcRangeSize: 50,
      blockSize: 8,
    });
    const handles = [
      ids.sequence('orders', { bigint: true }),
      processIn(store, 'dc1').sequence('orders', { bigint: true }),
      processIn(store, 'dc2').sequence('orders', { bigint: true }),
    ];
    const results = await Promise.all(handles.map((h) => drawUntilError(h)));
    const all = results.flatMap((r) => r.ids);
    expectUnique(all);
    expect(all.every((id) => id >= max - 999n && id <= max)).toBe(true);
    for (const r of results) {
      expectStrictlyIncreasing(r.ids);
      expect(r.error).toBeInstanceOf(SequenceExhaustedError);
    }
  });
});

/** Wraps `owner[method]` to count its calls and the most of them in flight at once. */
function trackConcurrency(owner: object, method: string): { calls: number; max: number } {
  const target = owner as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = target[method]!;
  const seen = { calls: 0, max: 0 };
  let inFlight = 0;
  vi.spyOn(target, method).mockImplementation(async function (this: unknown, ...args: unknown[]) {
    seen.calls++;
    inFlight++;
    seen.max = Math.max(seen.max, inFlight);
    try {
      return await original.apply(this, args);
    } finally {
      inFlight--;
    }
  });
  return seen;
}

describe('Sequence: settings that change while it runs', () => {
  itOnFakeClock(
    'takes an alter at its first claim once the settings it holds are 10 s old',
    async () => {
      const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
      const seq = ids.sequence('orders');
      await draw(seq, 10);
      await processIn(store, 'dc2').alterSequence('orders', { blockSize: 40 });
      await draw(seq, 20); // the settings are fresh: still blocks of 10
      expect(seq.stats().blockSize).toBe(10);
      await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
      await draw(seq, 20);
      expect(seq.stats().blockSize).toBe(40);
      await ids.close();
    },
  );

  itOnFakeClock(
    'serves take(n) of a running handle once an alter raised the sizes, without next() calls',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 1_000,
        blockSize: 10,
        maxBlockSize: 100,
        shards: 1,
      });
      const seq = ids.sequence('orders');
      for (let i = 0; i < 5; i++) await seq.take(50);
      await settle(); // a block cut from a range of 1,000 is preloaded
      await processIn(store, 'dc2').alterSequence('orders', {
        dcRangeSize: 100_000,
        maxBlockSize: 5_000,
      });
      // Within 10 s the handle may still refuse on the settings it holds; after that it re-reads
      // them for the take itself (nothing else would: a refused take claims nothing).
      await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
      const runs: number[] = [];
      for (let i = 0; i < 5; i++) {
        const taking = seq.take(5_000);
        await vi.advanceTimersByTimeAsync(1_000); // the claims' pauses after lost races
        const { first, last } = await taking;
        expect(last - first).toBe(4_999);
        runs.push(first, last);
      }
      expectStrictlyIncreasing(runs);
      // Skipped: the rest of the blocks cut from the ranges of 1,000 granted before the alter.
      expect(seq.stats().waste.takeSkipped).toBeLessThan(2_000);
      await ids.close();
    },
  );

  itOnFakeClock(
    'skips a block of a range granted before an alter raised dcRangeSize, once it re-read them',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 1_000,
        blockSize: 10,
        maxBlockSize: 100,
        threshold: 0.1,
        shards: 1,
      });
      const seq = ids.sequence('orders');
      await seq.take(50);
      await processIn(store, 'dc2').alterSequence('orders', {
        dcRangeSize: 100_000,
        maxBlockSize: 5_000,
      });
      await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
      // next() calls whose claim re-reads the settings, then claims from the old range: the block
      // preloaded now came after the settings that say the ranges are large enough.
      await draw(seq, 150);
      await settle();
      expect(seq.stats().remaining).toBeGreaterThan(0);
      const { first, last } = await seq.take(5_000);
      expect(last - first).toBe(4_999);
      const again = await seq.take(5_000);
      expect(again.first).toBeGreaterThan(last);
      expect(again.last - again.first).toBe(4_999);
      await ids.close();
    },
  );

  itOnFakeClock(
    'refuses a waiting take(n) whose n an alter put above the largest block, burning no block',
    async () => {
      const { store, ids } = await withSequence({
        dcRangeSize: 1_000_000,
        blockSize: 10,
        maxBlockSize: 5_000,
        shards: 1,
      });
      const seq = ids.sequence('orders');
      await seq.take(100);
      await settle();
      await processIn(store, 'dc2').alterSequence('orders', { maxBlockSize: 100 });
      await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
      while (seq.tryNext() !== undefined); // nothing held: the take waits for a claim
      store.resetCalls();
      // The count passes on the settings held; the claim re-reads them and caps its block at 100.
      const taking = seq.take(3_000, { timeoutMs: 1_000 }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(1_000);
      const error = await taking;
      expect(error).toBeInstanceOf(InvalidCountError);
      expect(error).toMatchObject({ maxCount: 100, limitedBy: 'maxBlock' });
      expect(seq.stats().wasted).toBe(0);
      expect(store.calls.writeDcState).toBeLessThanOrEqual(3);
      // The IDs claimed meanwhile are served.
      expect(seq.stats().remaining).toBeGreaterThan(0);
      expect(seq.tryNext()).toBeDefined();
      await ids.close();
    },
  );

  itOnFakeClock('keeps serving with the settings it holds when the re-read fails', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    const seq = ids.sequence('orders');
    await draw(seq, 10);
    await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
    store.faults.push({ op: 'readSequence', effect: 'unavailable', times: 1 });
    expect(await draw(seq, 20)).toEqual(range(11, 30));
    expect(seq.stats().errors).toBe(0);
    await ids.close();
  });
});

describe('Sequence: waste by cause', () => {
  it('counts take() remainders and IDs close() could not give back, apart', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 4)).toEqual(range(1, 4));
    await seq.take(10); // 6 left in [1, 10] do not hold the run: skipped
    expect(seq.stats().waste).toMatchObject({ takeSkipped: 6, notReturned: 0 });
    const other = processIn(store).sequence('orders');
    await other.next(); // claims after this process's blocks: no give-back possible
    const held = seq.stats().remaining;
    await seq.close();
    expect(seq.stats().waste).toMatchObject({ takeSkipped: 6, notReturned: held });
    expect(seq.stats().wasted).toBe(6 + held);
    expect(ids.stats().totals.waste).toMatchObject({ takeSkipped: 6, notReturned: held });
  });
});

describe("Sequence: the DC's usage counters", () => {
  it('reports issued and wasted IDs at close; status shows what a process that died left', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    await draw(seq, 4);
    await seq.take(10); // 6 of [1, 10] skipped
    // A second process claims a block, hands out one ID, and dies without closing.
    const died = processIn(store).sequence('orders');
    await died.next();
    const held = seq.stats().remaining;
    await seq.close();
    const usage = (await store.readDcUsage('orders'))?.get('dc1');
    expect(usage).toMatchObject({ issued: 14n, takeSkipped: 6n, notReturned: BigInt(held) });
    const [dc1] = sequenceStatus(await readSnapshot(store, KEYSPACE, 'orders', 'dc1')).dcs;
    expect(dc1?.usage).toMatchObject({ issued: 14n, wastedTotal: BigInt(6 + held) });
    // Everything the closed process claimed is accounted for: the rest is the dead one's block.
    expect(dc1?.usage?.unreported).toBe(10n);
  });

  itOnFakeClock('reports at a claim at most every 10 s while it draws', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    const seq = ids.sequence('orders');
    await draw(seq, 35); // claims at 0 s: the first report has nothing to say yet
    await settle();
    expect(store.calls.addDcUsage).toBe(0);
    await vi.advanceTimersByTimeAsync(USAGE_REPORT_MS);
    await draw(seq, 10); // a claim 10 s on reports what was issued before it
    await settle();
    expect(store.calls.addDcUsage).toBe(1);
    expect((await store.readDcUsage('orders'))?.get('dc1')?.issued).toBeGreaterThanOrEqual(35n);
    await draw(seq, 30); // claims within 10 s of it: no report
    await settle();
    expect(store.calls.addDcUsage).toBe(1);
    await ids.close();
    expect((await store.readDcUsage('orders'))?.get('dc1')?.issued).toBe(75n);
  });

  it('serves IDs when the counters cannot be written, and reports the rest later', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    store.faults.push({ op: 'addDcUsage', effect: 'unavailable', times: Infinity });
    const seq = ids.sequence('orders');
    expect(await draw(seq, 25)).toEqual(range(1, 25));
    store.faults.length = 0;
    await seq.close();
    expect((await store.readDcUsage('orders'))?.get('dc1')?.issued).toBe(25n);
  });
});

describe('Sequence: a caller that never yields', () => {
  /** DC-state answers come through the event loop (after I/O polling), as network replies do. */
  class ReplyOverIoStore extends MemoryStore {
    private reply<V>(value: Promise<V>): Promise<V> {
      return value.then((v) => new Promise<V>((resolve) => setImmediate(() => resolve(v))));
    }
    override readDcState(...args: Parameters<MemoryStore['readDcState']>) {
      return this.reply(super.readDcState(...args));
    }
    override writeDcState(...args: Parameters<MemoryStore['writeDcState']>) {
      return this.reply(super.writeDcState(...args));
    }
  }

  it("lets another handle's claim finish during a tight await next() loop that claims nothing", async () => {
    const store = new ReplyOverIoStore({ keyspace: KEYSPACE });
    const ids = processIn(store);
    await ids.createSequence('hot', { dcRangeSize: 10_000_000, blockSize: 1_000_000 });
    await ids.createSequence('cold', { dcRangeSize: 1_000, blockSize: 10 });
    const hot = ids.sequence('hot');
    await hot.ready(); // 1,000,000 held; the loop below stays short of the preload point
    let drawn = 0;
    let drawnWhenColdServed: number | undefined;
    const cold = ids
      .sequence('cold')
      .next()
      .then(() => {
        drawnWhenColdServed = drawn;
      });
    for (; drawn < 300_000; drawn++) await hot.next();
    await cold;
    expect(hot.stats().blocksClaimed).toBe(1);
    // Without the yield the cold handle's replies wait for the end of the loop.
    expect(drawnWhenColdServed).toBeLessThan(100_000);
    await ids.close();
  });

  it('lets the preload reply in during a tight await next() loop, so blocks do not each wait', async () => {
    const store = new ReplyOverIoStore({ keyspace: KEYSPACE });
    const ids = processIn(store);
    await ids.createSequence('orders', { dcRangeSize: 1_000_000, blockSize: 20_000 });
    const seq = ids.sequence('orders');
    await seq.ready();
    const drawn = await draw(seq, 400_000);
    expectStrictlyIncreasing(drawn);
    const stats = seq.stats();
    expect(stats.blocksClaimed).toBeGreaterThanOrEqual(20);
    // Without the yield every block after the first waits: its preload's replies only arrive
    // once the loop stops, when the block is spent.
    expect(stats.waits).toBeLessThanOrEqual(2);
    await ids.close();
  });
});

/** IDs from `next()` with a deadline of `timeoutMs` each, until one rejects (or `limit` IDs). */
async function drawUntilErrorWithin(
  seq: Sequence<number>,
  timeoutMs: number,
  limit = 1_000,
): Promise<{ ids: number[]; error: unknown }> {
  const ids: number[] = [];
  while (ids.length < limit) {
    try {
      ids.push(await seq.next({ timeoutMs }));
    } catch (error) {
      return { ids, error };
    }
  }
  return { ids, error: undefined };
}
