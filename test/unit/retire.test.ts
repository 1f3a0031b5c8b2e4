import { describe, expect, it } from 'vitest';

import { retireDcRanges } from '../../src/allocator/retire.js';
import { ContentionError, InvariantError, StoreUnavailableError } from '../../src/errors.js';
import type { CreateSequenceOptions } from '../../src/settings/model.js';
import { MemoryStore } from '../../src/store/memory.js';
import { draw, KEYSPACE, processIn, range, settle } from './fixtures.js';

const FIXED: CreateSequenceOptions = { dcRangeSize: 100, blockSize: 10, threshold: 0.5 };

/**
 * A dc1 process draws `drawn` IDs and dies without giving anything back; then dc1's state loses
 * its last `lost` writes (replicas that crashed with `commitlog_sync: periodic`, or a restore).
 */
async function rolledBack(
  drawn: number,
  lost: number,
  options: CreateSequenceOptions = FIXED,
): Promise<{ store: MemoryStore; before: number[] }> {
  const store = new MemoryStore({ keyspace: KEYSPACE });
  await processIn(store).createSequence('orders', options);
  const before = await draw(processIn(store).sequence('orders'), drawn);
  store.rollBackDcState('orders', 'dc1', lost);
  // The process's preload claim, in flight, lands now: tests count only their own calls.
  await settle();
  return { store, before };
}

describe('retireDcRanges', () => {
  it('after dc1 lost its last writes, a new dc1 process hands out IDs again without it and only new IDs with it', async () => {
    // Without retiring: the new process claims blocks the lost writes had claimed.
    const control = await rolledBack(35, 2);
    const again = await draw(processIn(control.store).sequence('orders'), 30);
    expect(again.filter((id) => control.before.includes(id)).length).toBeGreaterThan(0);

    const { store, before } = await rolledBack(35, 2);
    const stateBefore = await store.readDcState('orders', 'dc1');
    const [retired, ...others] = await processIn(store).retireDcRanges('orders');
    expect(others).toEqual([]);
    expect(retired).toMatchObject({ grantee: 'dc1', retired: true, before: stateBefore });
    expect(retired?.grant).toEqual({ number: 1, min: 1n, max: 100n });
    // The state as it went back held [21, 100] (2 claims of 10 lost): a gap from now on.
    expect(retired?.gap).toBe(100n - stateBefore!.lastInteger);
    const after = await draw(processIn(store).sequence('orders'), 30);
    expect(Math.min(...after)).toBeGreaterThan(Math.max(...before));
    expect(Math.min(...after)).toBeGreaterThan(100); // from grant 2, asked at SERIAL
  });

  it('retires nothing from a partition already spent at its latest grant, but writes it as it was, so repeating it is harmless', async () => {
    const { store } = await rolledBack(35, 2);
    const ids = processIn(store);
    await ids.retireDcRanges('orders');
    const spent = (await store.readDcState('orders', 'dc1'))!;
    store.resetCalls();
    const [again] = await ids.retireDcRanges('orders');
    expect(again).toMatchObject({
      grantee: 'dc1',
      outcome: 'already-spent',
      retired: false,
      gap: 0n,
    });
    expect(store.calls).toMatchObject({ writeDcState: 1 });
    // The same ranges, one version up, with the op of this retire.
    const { version, op, ...ranges } = (await store.readDcState('orders', 'dc1'))!;
    const { version: spentVersion, op: spentOp, ...spentRanges } = spent;
    expect(ranges).toEqual(spentRanges);
    expect({ version, sameOp: op === spentOp }).toEqual({
      version: spentVersion + 1,
      sameOp: false,
    });
  });

  it('keeps a give-back left in flight by a stopped process from reopening a partition already spent', async () => {
    // Grant 1 = [1, 10] and no other (SERIAL cut off): process Q hands out 1..10, its claim of
    // [6, 10] being the state's last write, and that write goes back (dc1's replicas lost it).
    const store = new MemoryStore({ keyspace: KEYSPACE });
    await processIn(store).createSequence('s', {
      dcRangeSize: 10,
      blockSize: 5,
      shards: 1,
      firstRanges: ['dc1'],
    });
    store.faults.push(
      { op: 'readGrants', effect: 'unavailable', times: Infinity },
      { op: 'grantRange', effect: 'unavailable', times: Infinity },
    );
    const q = processIn(store).sequence('s');
    const before = await draw(q, 10);
    expect(before).toEqual(range(1, 10));
    store.rollBackDcState('s', 'dc1', 1);
    // A fresh process P claims [6, 10] again, hands out nothing and closes; its give-back is
    // accepted by a minority of the replicas only (the next write's round commits it), and P is
    // stopped with it on the wire.
    const p = processIn(store).sequence('s');
    await p.ready();
    expect(p.stats().remaining).toBe(5);
    store.faults.push({
      op: 'writeDcState',
      effect: 'in-flight',
      completesOn: 'write',
      onHit: () => new Promise(() => undefined),
    });
    void p.close();
    await settle();
    // The operator retires dc1's ranges with SERIAL back: the state reads spent at grant 1.
    store.faults.splice(0, store.faults.length);
    const [retired] = await processIn(store).retireDcRanges('s');
    expect(retired?.grant?.number).toBe(1);
    const after = await draw(processIn(store).sequence('s'), 5);
    expect(after.filter((id) => before.includes(id))).toEqual([]);
  });

  it('retires every shard of its own DC and leaves the other DCs alone', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE, replicaDcs: ['dc1', 'dc2'] });
    await processIn(store).createSequence('orders', { ...FIXED, shards: 3 });
    await draw(processIn(store, 'dc2').sequence('orders'), 5);
    await settle(); // its preload claim lands
    const dc2States = async () =>
      [...(await store.readDcStatesOverview('orders'))].filter(([g]) => g.startsWith('dc2'));
    const dc2Before = await dc2States();
    expect(dc2Before).toHaveLength(1);
    const retired = await processIn(store, 'dc1').retireDcRanges('orders');
    expect(retired.map((s) => s.grantee)).toEqual(['dc1', 'dc1/1', 'dc1/2']);
    // Fixed blocks get no first ranges: shards without a grant have nothing to retire.
    expect(retired.every((s) => !s.retired && s.grant === undefined)).toBe(true);
    expect(await dc2States()).toEqual(dc2Before);
  });

  it('retires first ranges granted at creation, installed or not, on every shard', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE, replicaDcs: ['dc1'] });
    await processIn(store).createSequence('orders', { shards: 2 });
    const retired = await processIn(store).retireDcRanges('orders');
    expect(retired.map((s) => [s.grantee, s.retired, s.grant?.number])).toEqual([
      ['dc1', true, 1],
      ['dc1/1', true, 1],
    ]);
    // Neither state was opened: each grant 1 becomes a gap whole.
    const sizes = retired.map((s) => s.grant!.max - s.grant!.min + 1n);
    expect(retired.map((s) => s.gap)).toEqual(sizes);
    const first = await processIn(store).sequence('orders').next();
    expect(BigInt(first)).toBeGreaterThan(
      retired.reduce((m, s) => (s.grant!.max > m ? s.grant!.max : m), 0n),
    );
  });

  it('writes the state anew when the row itself was lost (a restore without it)', async () => {
    const { store, before } = await rolledBack(15, 99); // every write lost: no row left
    expect(await store.readDcState('orders', 'dc1')).toBeUndefined();
    const [retired] = await processIn(store).retireDcRanges('orders');
    expect(retired).toMatchObject({ retired: true, before: undefined });
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      version: 1,
      lastInteger: 100n,
      installedGrant: 1,
    });
    const after = await draw(processIn(store).sequence('orders'), 5);
    expect(Math.min(...after)).toBeGreaterThan(Math.max(...before));
  });

  it('refuses, writing nothing, when the state installed a grant SERIAL does not show', async () => {
    const { store } = await rolledBack(15, 0);
    const state = (await store.readDcState('orders', 'dc1'))!;
    store.seedDcState('orders', 'dc1', { ...state, installedGrant: 2, version: state.version + 1 });
    store.resetCalls();
    await expect(processIn(store).retireDcRanges('orders')).rejects.toThrow(InvariantError);
    await expect(processIn(store).retireDcRanges('orders')).rejects.toThrow(/grant level/);
    expect(store.calls).toMatchObject({ writeDcState: 0 });
  });

  it.each(['unknown-applied', 'applied-reported-rejected'] as const)(
    'knows its own write after a %s outcome',
    async (effect) => {
      const { store } = await rolledBack(35, 2);
      store.faults.push({ op: 'writeDcState', effect });
      const [retired] = await processIn(store).retireDcRanges('orders');
      expect(retired?.retired).toBe(true);
      expect(await store.readDcState('orders', 'dc1')).toMatchObject({ lastInteger: 100n });
    },
  );

  it('says it retired a partition when its own write, left in flight, is committed by its retry', async () => {
    // The write stays accepted by one replica: the re-read misses it (an unchanged state, not
    // proof of "not written"), and the next write's round commits it before being rejected.
    const { store } = await rolledBack(35, 2);
    const before = (await store.readDcState('orders', 'dc1'))!;
    store.faults.push({ op: 'writeDcState', effect: 'in-flight', completesOn: 'write' });
    const [retired] = await processIn(store).retireDcRanges('orders');
    expect(retired).toMatchObject({
      outcome: 'retired',
      retired: true,
      before,
      gap: 100n - before.lastInteger,
    });
    // Its write, then the same state once more: it read the partition spent by its own write,
    // and the last write of a retire is always one of its own (see retire.ts, retireOne).
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      version: before.version + 2,
      lastInteger: 100n,
    });
  });

  it("says another writer spent a partition when that writer's write took the version its own was conditional on", async () => {
    const { store } = await rolledBack(35, 2);
    const other = processIn(store);
    store.faults.push({
      op: 'writeDcState',
      effect: 'rejected',
      onHit: async () => {
        await other.retireDcRanges('orders');
      },
    });
    const [retired] = await processIn(store).retireDcRanges('orders');
    expect(retired).toMatchObject({ outcome: 'spent-by-another', retired: false, gap: 0n });
  });

  it('says who spent a partition is unknown when another op is found past the version its own write would have taken', async () => {
    // Ours is applied and times out; before its re-read, a process not stopped takes grant 2 and
    // installs it, and another retire spends that one: the re-read shows the other retire's op,
    // two versions past ours, so ours may have been applied in between (it was).
    const { store } = await rolledBack(35, 2);
    const before = (await store.readDcState('orders', 'dc1'))!;
    store.faults.push({
      op: 'writeDcState',
      effect: 'unknown-applied',
      onHit: async () => {
        expect(await processIn(store).sequence('orders').next()).toBe(101);
        await processIn(store).retireDcRanges('orders');
      },
    });
    const [retired] = await processIn(store).retireDcRanges('orders');
    expect(retired).toMatchObject({ outcome: 'spent-unknown', retired: false, gap: 0n });
    expect(retired?.grant?.number).toBe(2);
    expect((await store.readDcState('orders', 'dc1'))!.version).toBeGreaterThan(before.version + 2);
  });

  it('says the outcome is unknown when the write timed out and its re-read failed; a rerun retires', async () => {
    const { store } = await rolledBack(35, 2);
    const settings = (await store.readSequence('orders'))!;
    let reads = 0;
    // The second LOCAL_SERIAL read is the re-read after the unknown outcome: it fails.
    const flaky = new Proxy(store, {
      get(target, key) {
        if (key === 'readDcState') {
          return (sequence: string, dc: string) => {
            reads += 1;
            if (reads === 2) {
              return Promise.reject(new StoreUnavailableError('local_serial', 'read', 'timed out'));
            }
            return target.readDcState(sequence, dc);
          };
        }
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    store.faults.push({ op: 'writeDcState', effect: 'unknown-not-applied' });
    await expect(retireDcRanges(flaky, settings, 'dc1')).rejects.toThrow(/retiring again is safe/);
    await expect(retireDcRanges(store, settings, 'dc1')).resolves.toMatchObject([
      { retired: true },
    ]);
  });

  it('gives up with a contention error while another writer keeps coming first', async () => {
    const { store } = await rolledBack(35, 2);
    for (let i = 0; i < 5; i++) store.faults.push({ op: 'writeDcState', effect: 'rejected' });
    await expect(processIn(store).retireDcRanges('orders')).rejects.toThrow(ContentionError);
    await expect(
      retireDcRanges(store, (await store.readSequence('orders'))!, 'dc1'),
    ).resolves.toMatchObject([{ retired: true }]);
  });
});
