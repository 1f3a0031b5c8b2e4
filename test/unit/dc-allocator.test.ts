/** DcAllocator on its own, from crafted rows: the grant chain and returns. */
import { describe, expect, it } from 'vitest';

import { DcAllocator } from '../../src/allocator/dc-allocator.js';
import { spreadOver } from '../../src/allocator/dc-claims.js';
import { SerialUnavailableError, StoreUnavailableError } from '../../src/errors.js';
import { resolveSequenceSettings } from '../../src/settings/resolve.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { SequenceSettings } from '../../src/store/port.js';
import { dcState, settle, writes } from './fixtures.js';

const settings: SequenceSettings = resolveSequenceSettings('orders', {
  max: 10_000,
  dcRangeSize: 100,
  blockSize: 10,
  threshold: 0.5,
});

/**
 * Another process of dc1 claiming one ID right after each of the next `times` reads of dc1's
 * state, so that a write conditional on what was read loses its race.
 */
function competingClaims(store: MemoryStore, times: number): { claims: number; stop(): void } {
  const read = store.readDcState.bind(store);
  const competing = { claims: 0, stop: () => (store.readDcState = read) };
  store.readDcState = async (sequence, dc) => {
    const state = await read(sequence, dc);
    if (state === undefined || competing.claims >= times) return state;
    competing.claims++;
    const next = { ...state, lastInteger: state.lastInteger + 1n, version: state.version + 1 };
    const expected = { version: state.version, op: state.op };
    await store.writeDcState(sequence, dc, expected, { ...next, op: `other-${competing.claims}` });
    return state;
  };
  return competing;
}

/** A store whose dc1 holds grant 1 ([1, 100]), installed, with `lastInteger` claimed. */
async function rangeOneStore(lastInteger: bigint): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.createSequence(settings, 'created');
  await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
  await store.writeDcState('orders', 'dc1', undefined, dcState({ lastInteger }));
  return store;
}

/** A store whose dc1 has grant 1 ([1, max]) and no state: nothing installed, nothing claimed. */
async function grantOneStore(max: bigint, on: SequenceSettings = settings): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.createSequence(on, 'created');
  await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max });
  return store;
}

/** A store whose dc1 holds grants 1..3 ([1, 100], [101, 200], [201, 300]) with 2 installed. */
async function pendingGrantStore(lastInteger: bigint): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.createSequence(settings, 'created');
  for (const [n, min] of [
    [1, 1n],
    [2, 101n],
    [3, 201n],
  ] as const) {
    await store.grantRange('orders', 'dc1', min - 1n, { number: n, min, max: min + 99n });
  }
  await store.writeDcState(
    'orders',
    'dc1',
    undefined,
    dcState({ lastInteger, preloadedMin: 101n, preloadedMax: 200n, installedGrant: 2 }),
  );
  return store;
}

function allocatorOn(store: MemoryStore): DcAllocator {
  return new DcAllocator({ store, dc: 'dc1', settings });
}

/** dc1's allocator on `store`, and the backoffs it sleeps (recorded, not slept). */
function allocatorRecordingSleeps(store: MemoryStore): {
  allocator: DcAllocator;
  sleeps: number[];
} {
  const sleeps: number[] = [];
  const sleep = async (ms: number) => void sleeps.push(ms);
  return { allocator: new DcAllocator({ store, dc: 'dc1', settings, sleep }), sleeps };
}

describe('DcAllocator', () => {
  it('claims a block on the state a plain read shows, with no read at LOCAL_SERIAL', async () => {
    const store = await rangeOneStore(50n);
    store.resetCalls();
    const allocator = allocatorOn(store);
    const block = await allocator.claimBlock();
    expect(block).toMatchObject({ first: 51n, last: 60n });
    expect(store.calls).toMatchObject({ readDcStateLocal: 1, readDcState: 0, writeDcState: 1 });
    expect(allocator.counters).toMatchObject({ localSerialReads: 0, lwtWrites: 1 });
  });

  it('tries a guess from replicas behind, then goes on from the state its rejected write found, with no read', async () => {
    // Every plain read answers one write behind, as replicas that missed the last commit.
    const store = new MemoryStore({ plainReadLag: 1 });
    await store.createSequence(settings, 'created');
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.writeDcState('orders', 'dc1', undefined, dcState({ lastInteger: 50n }));
    const other = allocatorOn(store);
    const mine = allocatorOn(store);
    // The other process claims: its plain read shows no state (one write behind the first), so
    // it tries to open the state with grant 1 and its block; the round that rejects that write
    // returns the state, from which it claims.
    const theirs = await other.claimBlock();
    expect(other.counters).toMatchObject({ casRejections: 1, localSerialReads: 0, lwtWrites: 2 });
    // Mine tries its write on version 1 (one behind), which the other's claim moved on:
    // rejected, with version 2 found, from which its second write claims.
    const ours = await mine.claimBlock();
    expect(theirs).toMatchObject({ first: 51n, last: 60n });
    expect(ours).toMatchObject({ first: 61n, last: 70n });
    expect(mine.counters).toMatchObject({ casRejections: 1, localSerialReads: 0, lwtWrites: 2 });
    // A plain read older than its own write is not tried (and is no rollback): it reads at
    // LOCAL_SERIAL.
    const again = await mine.claimBlock();
    expect(again).toMatchObject({ first: 71n, last: 80n });
    expect(mine.counters).toMatchObject({ casRejections: 1, localSerialReads: 1, lwtWrites: 3 });
  });

  it('stops when the state a rejected write found is older than one seen before it was sent', async () => {
    const store = await rangeOneStore(50n);
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 51n, last: 60n }); // version 2
    // The next claim's guess shows version 2, but before its write's round the replicas lose
    // that write (acknowledged, not synced): the round finds version 1, from which [51, 60]
    // could be claimed again.
    const write = store.writeDcState.bind(store);
    store.writeDcState = async (sequence, dc, expected, next) => {
      store.writeDcState = write;
      store.rollBackDcState(sequence, dc);
      return write(sequence, dc, expected, next);
    };
    await expect(allocator.claimBlock()).rejects.toMatchObject({ code: 'IDGEN_STATE_ROLLED_BACK' });
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      version: 1,
      lastInteger: 50n,
    });
  });

  it('installs a grant without backing off while block claims keep moving the version', async () => {
    const store = await rangeOneStore(50n);
    // Another process claims one ID right after each of this one's first 5 reads, so its writes
    // conditional on what it read lose 5 races in a row.
    const competing = competingClaims(store, 5);
    const { allocator, sleeps } = allocatorRecordingSleeps(store);
    await allocator.ensureRange();
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 2,
      preloadedMin: 101n,
      preloadedMax: 200n,
      lastInteger: 55n,
    });
    expect(competing.claims).toBe(5);
    // Behaviour changed: an install lost to block claims retries at once. Backing off let a
    // tight loop's claims drain the reserved range meanwhile, and every claim then waited.
    expect(sleeps).toEqual([]);
  });

  it('uses its own claim that its range install committed after the re-read missed it (Paxos v1)', async () => {
    const store = await rangeOneStore(50n);
    // The claim of [51, 60] is accepted by one replica and times out, and the re-read's quorum
    // misses it. While the claim backs off, this process's range install sends its write: that
    // round commits the claim first, is rejected, and installs on its next write, so the claim's
    // own retry finds the install's state, not its op.
    store.faults.push({ op: 'writeDcState', effect: 'in-flight', completesOn: 'write' });
    let installed: Promise<void> | undefined;
    const allocator: DcAllocator = new DcAllocator({
      store,
      dc: 'dc1',
      settings,
      sleep: async () => {
        installed ??= allocator.ensureRange();
        await installed;
      },
    });
    const block = await allocator.claimBlock();
    expect(block).toMatchObject({ first: 51n, last: 60n });
    expect(allocator.counters).toMatchObject({ casUnknown: 1, wasted: 0, blocksClaimed: 1 });
    const state = await store.readDcState('orders', 'dc1');
    expect(state).toMatchObject({ lastInteger: 60n, preloadedMin: 101n, preloadedMax: 200n });
    // The next claim goes on above it.
    expect(await allocator.claimBlock()).toMatchObject({ first: 61n, last: 70n });
  });

  it('installs a confirmed grant in its next block claim when its own install lost', async () => {
    const store = await rangeOneStore(50n);
    const competing = competingClaims(store, Infinity);
    const allocator = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    // Grant 2 is made at SERIAL, but every install write loses to the other process's claims.
    await expect(allocator.ensureRange()).rejects.toMatchObject({ code: 'IDGEN_CONTENTION' });
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({ installedGrant: 1 });
    competing.stop();
    const before = writes(store);
    const block = await allocator.claimBlock();
    expect(writes(store).writeDcState - before.writeDcState).toBe(1);
    expect(writes(store).grantRange).toBe(before.grantRange);
    const state = await store.readDcState('orders', 'dc1');
    expect(state).toMatchObject({ installedGrant: 2, preloadedMin: 101n, preloadedMax: 200n });
    expect(block.first).toBe(state!.lastInteger - 9n);
    expect(block.last).toBe(state!.lastInteger);
  });

  it('leaves a pending grant alone while a preloaded range exists', async () => {
    const store = await pendingGrantStore(60n);
    const before = writes(store);
    await allocatorOn(store).ensureRange();
    expect(writes(store)).toEqual(before);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      preloadedMin: 101n,
      installedGrant: 2,
    });
  });

  it('asks SERIAL nothing, not even a read, while a preloaded range exists', async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.grantRange('orders', 'dc1', 100n, { number: 2, min: 101n, max: 200n });
    await store.writeDcState(
      'orders',
      'dc1',
      undefined,
      dcState({ lastInteger: 90n, preloadedMin: 101n, preloadedMax: 200n, installedGrant: 2 }),
    );
    const before = writes(store);
    const allocator = allocatorOn(store);
    await allocator.ensureRange();
    expect(writes(store)).toEqual(before);
    expect(store.grantLog).toHaveLength(2);
    // Behaviour changed: the state read ends the request. It went on to read the grants at
    // SERIAL (two statements on the partition every DC shares), for every process of the DC
    // whose claim crossed the threshold after the first one had preloaded the range.
    expect(allocator.counters).toMatchObject({ serialReads: 0, localSerialReads: 1 });
  });

  it('installs the pending grant once the preloaded range became reserved, granting nothing new', async () => {
    const store = await pendingGrantStore(100n);
    const allocator = allocatorOn(store);
    const c = allocator.counters;
    // Reserved [1, 100] is spent: the claim switches to [101, 200].
    expect(await allocator.claimBlock()).toEqual({
      first: 101n,
      last: 110n,
      rangeSize: 100n,
      rangeLow: false,
    });
    await allocator.ensureRange();
    expect(store.grantLog).toHaveLength(3);
    expect(c.rangesGranted).toBe(0);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      reservedMin: 101n,
      reservedMax: 200n,
      reservedGrant: 2,
      preloadedMin: 201n,
      preloadedMax: 300n,
      installedGrant: 3,
    });
  });

  it('reports when the reserved range is used past the threshold with nothing preloaded', async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    const allocator = allocatorOn(store);
    const low: boolean[] = [];
    for (let i = 0; i < 6; i++) low.push((await allocator.claimBlock()).rangeLow);
    expect(low).toEqual([false, false, false, false, true, true]);
    await allocator.ensureRange();
    expect((await allocator.claimBlock()).rangeLow).toBe(false); // now a range is preloaded
  });

  it("ends a claim's range request once another process of the DC brought IDs, granting no preload", async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    const other = allocatorOn(store);
    const mine = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    // Our first grant is lost in flight (a SERIAL timeout), while the other process of dc1 gets
    // grant 1 installed and claims from it; then our re-read of the grants fails too, so our
    // request cannot tell whose grant 1 is and goes round again.
    store.faults.push({
      op: 'grantRange',
      effect: 'unknown-not-applied',
      onHit: async () => {
        await other.claimBlock();
        store.faults.push({ op: 'readGrants', effect: 'unavailable' });
      },
    });
    const block = await mine.claimBlock();
    // Without the early end, the next round found grant 1 installed and nothing preloaded, and
    // asked SERIAL for grant 2: a preload the DC did not need yet, from every process that
    // joined the crowd at a cold start.
    expect(store.grantLog.map((g) => g.grant.number)).toEqual([1]);
    expect(store.calls.grantRange).toBe(2);
    expect(block).toMatchObject({ first: 11n, last: 20n });
  });

  it("asks again from the GLOBAL a batch lost to another DC's grant found, without reading the grants again", async () => {
    const store = await rangeOneStore(60n);
    // dc2 gets a range right after dc1 read the grants: dc1's batch, conditional on GLOBAL 100,
    // is rejected, and its round found GLOBAL at 200 and no grant 2 of dc1.
    const read = store.readGrants.bind(store);
    store.readGrants = async (sequence, dc) => {
      const view = await read(sequence, dc);
      if (store.grantLog.length === 1) {
        await store.grantRange('orders', 'dc2', 100n, { number: 1, min: 101n, max: 200n });
      }
      return view;
    };
    const allocator = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    await allocator.ensureRange();
    expect(store.grantLog.map((g) => [g.dc, g.grant.min, g.grant.max])).toEqual([
      ['dc1', 1n, 100n],
      ['dc2', 101n, 200n],
      ['dc1', 201n, 300n],
    ]);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 2,
      preloadedMin: 201n,
      preloadedMax: 300n,
    });
    // Behaviour changed: one read of the grants and one of the state. The lost round used to
    // read both again (2 and 2) before the second batch.
    expect(allocator.counters).toMatchObject({ serialReads: 1, localSerialReads: 1 });
  });

  it('asks for the first range of a DC with no state without reading the grants, at once again from the GLOBAL found', async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    await store.grantRange('orders', 'dc2', 0n, { number: 1, min: 1n, max: 100n });
    const { allocator, sleeps } = allocatorRecordingSleeps(store);
    await allocator.ensureRange();
    // The first batch, conditional on start - 1, found GLOBAL at 100: a guess that was old, not
    // a race, so the second goes without a backoff.
    expect(store.grantLog.map((g) => [g.dc, g.grant.min, g.grant.max])).toEqual([
      ['dc2', 1n, 100n],
      ['dc1', 101n, 200n],
    ]);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 1,
      reservedMin: 101n,
      reservedMax: 200n,
    });
    expect(sleeps).toEqual([]);
    expect(allocator.counters).toMatchObject({
      serialReads: 0,
      lwtWrites: 3, // two batches, the install
      casRejections: 1,
      rangesGranted: 1,
    });
  });

  it('opens the state of a DC with no state with grant 1 and its first block in one write, with no read at LOCAL_SERIAL', async () => {
    // Grant 1 was made with the sequence (first ranges).
    const store = await grantOneStore(100n);
    store.resetCalls();
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 1n, last: 10n });
    expect(store.calls).toMatchObject({
      readDcStateLocal: 1,
      readGrantsLocal: 1,
      readDcState: 0,
      writeDcState: 1,
    });
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      version: 1,
      installedGrant: 1,
      reservedGrant: 1,
      lastInteger: 10n,
    });
  });

  it('lets processes that start at once on a DC with no state go on from the state the first opened, with no read at LOCAL_SERIAL', async () => {
    const store = await grantOneStore(100n);
    const starters = Array.from({ length: 4 }, () => allocatorRecordingSleeps(store).allocator);
    const blocks = await Promise.all(starters.map((a) => a.claimBlock()));
    const firsts = blocks.map((b) => Number(b.first)).sort((a, b) => a - b);
    expect(firsts).toEqual([1, 11, 21, 31]);
    for (const a of starters) expect(a.counters.localSerialReads).toBe(0);
    // One write opened the state; every other first write was rejected and returned it.
    const rejections = starters.reduce((sum, a) => sum + a.counters.casRejections, 0);
    expect(rejections).toBeGreaterThanOrEqual(3);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 1,
      lastInteger: 40n,
    });
  });

  it('installs the first grant another process of its DC made at once, from a plain read, without SERIAL', async () => {
    // Another process of dc1, starting at the same time, got grant 1 (its own size) and died
    // before installing it.
    const store = await grantOneStore(60n);
    store.resetCalls();
    const allocator = allocatorOn(store);
    await allocator.ensureRange();
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 1,
      reservedMin: 1n,
      reservedMax: 60n,
    });
    expect(store.calls).toMatchObject({ readGrantsLocal: 1, readGrants: 0, grantRange: 0 });
    expect(allocator.counters).toMatchObject({ serialReads: 0, lwtWrites: 1, rangesGranted: 0 });
  });

  it('installs the first grant another process of its DC made at once, after reading the grants, when the plain read does not show it yet', async () => {
    const store = await grantOneStore(60n);
    // The grant's commit has not reached a quorum of the local DC yet.
    store.readGrantsLocal = async () => ({ globalLast: 0n, latest: undefined });
    const allocator = allocatorOn(store);
    await allocator.ensureRange();
    expect(store.grantLog).toHaveLength(1);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 1,
      reservedMin: 1n,
      reservedMax: 60n,
    });
    // The batch found grant 1; the read of the grants showed it is the latest, so it was
    // installed (a later grant would have meant a lost DC state: refused, see protocol.test.ts).
    expect(allocator.counters).toMatchObject({
      serialReads: 1,
      lwtWrites: 2, // the batch, the install
      rangesGranted: 0,
    });
  });

  it('says a claim that needed a range met SERIAL timeouts, not that SERIAL is unreachable', async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    // The grants partition contended (a cold start): Cassandra times the batches and the SERIAL
    // reads out.
    const timedOut = () =>
      new StoreUnavailableError('serial', 'read grants', 'SERIAL read timed out', {
        timedOut: true,
      });
    store.grantRange = () => Promise.reject(timedOut());
    store.readGrants = () => Promise.reject(timedOut());
    const allocator = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    const failure = await allocator.claimBlock().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SerialUnavailableError);
    expect(failure).toMatchObject({ code: 'IDGEN_SERIAL_UNAVAILABLE', timedOut: true });
    expect((failure as Error).message).toContain('SERIAL operations from DC "dc1" timed out');
  });

  it('refuses a found grant with our bounds that ends above the GLOBAL its round found', async () => {
    const store = await rangeOneStore(100n);
    // dc1's batch for grant 2 ([101, 200], conditional on GLOBAL 100) is rejected, and its round
    // finds grant 2 with our bounds but GLOBAL at 150: broken rows, not a grant to install.
    store.grantRange = async (_sequence, _dc, _expected, grant) => ({
      kind: 'rejected',
      found: { globalLast: 150n, grant },
    });
    const allocator = allocatorOn(store);
    await expect(allocator.ensureRange()).rejects.toThrow(
      /ends at 200, above GLOBAL last_integer 150/,
    );
    expect((await store.readDcState('orders', 'dc1'))?.installedGrant).toBe(1);
  });

  it('installs the last grant of its DC made between its two reads at SERIAL, not taking the sequence for exhausted', async () => {
    // One range of the domain left; dc1 holds grants 1 and 2 (installed), its range spent.
    const small = resolveSequenceSettings('orders', {
      max: 300,
      dcRangeSize: 100,
      blockSize: 10,
      threshold: 0.5,
    });
    const store = new MemoryStore();
    await store.createSequence(small, 'created');
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.grantRange('orders', 'dc1', 100n, { number: 2, min: 101n, max: 200n });
    const spent = { reservedMin: 101n, reservedMax: 200n, reservedGrant: 2, installedGrant: 2 };
    await store.writeDcState(
      'orders',
      'dc1',
      undefined,
      dcState({ ...spent, lastInteger: 200n, preloadedMin: 101n, preloadedMax: 200n }),
    );
    // The Cassandra store reads the latest grant, then GLOBAL: another process of dc1 gets grant
    // 3, the domain's last range, in between, and dies before installing it.
    const read = store.readGrants.bind(store);
    let between = true;
    store.readGrants = async (sequence, dc) => {
      const { latest } = await read(sequence, dc);
      if (between) {
        between = false;
        await store.grantRange(sequence, dc, 200n, { number: 3, min: 201n, max: 300n });
      }
      return { latest, globalLast: (await read(sequence, dc)).globalLast };
    };
    const allocator = new DcAllocator({ store, dc: 'dc1', settings: small });
    // GLOBAL at max after grant 2 read as the latest looked like the end of the domain.
    await expect(allocator.claimBlock()).resolves.toMatchObject({ first: 201n, last: 210n });
    expect(allocator.exhausted).toBeUndefined();
    expect((await store.readDcState('orders', 'dc1'))?.installedGrant).toBe(3);
  });

  it('judges its grant whose outcome was unknown by a grant read after GLOBAL: ours, not lost', async () => {
    // dc1's range [1, 100] is half used: the next range, grant 2, is asked for at SERIAL.
    const store = await rangeOneStore(60n);
    // The batch stays accepted by a minority; the re-read's first round (the latest grant) misses
    // it, its second (GLOBAL) finishes it, as CassandraStore's two SERIAL reads can.
    store.faults.push({ op: 'grantRange', effect: 'in-flight', completesOn: 'second-read' });
    const allocator = allocatorOn(store);
    store.resetCalls();
    await allocator.ensureRange();
    // GLOBAL moved with grant 2 unseen looked like a race lost; a second batch for grant 2 then
    // found ours, and the grant went uncounted.
    expect(writes(store).grantRange).toBe(1);
    expect(allocator.counters).toMatchObject({ casUnknown: 1, casRejections: 0, rangesGranted: 1 });
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      installedGrant: 2,
      preloadedMin: 101n,
      preloadedMax: 200n,
    });
  });

  it('shares one range request between concurrent callers', async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    const allocator = allocatorOn(store);
    const requests = [allocator.ensureRange(), allocator.ensureRange(), allocator.ensureRange()];
    expect(requests[1]).toBe(requests[0]);
    await Promise.all(requests);
    expect(store.calls.grantRange).toBe(1);
  });

  it('returns only the part of a run that lies in the reserved range', async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    await store.grantRange('orders', 'dc1', 0n, { number: 1, min: 1n, max: 100n });
    await store.writeDcState(
      'orders',
      'dc1',
      undefined,
      dcState({ lastInteger: 10n, reservedMin: 11n, reservedMax: 100n, preloadedMin: 11n }),
    );
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 11n, last: 20n });
    // The process holds 8..20, of which 8..10 lie before the reserved range.
    expect(await allocator.returnBlock(8n, 20n)).toBe(10n);
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(10n);
  });

  it('gives nothing back on a state another writer left, though it ends where the run ends', async () => {
    const store = await rangeOneStore(10n);
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 11n, last: 20n });
    // A retire-ranges after rows went back writes its own state, spent to the grant's end; with
    // last_integer at 20 it looks like nobody claimed after the run. Here: the same state, one
    // version up, by another writer, as its seal of a spent partition does.
    const current = (await store.readDcState('orders', 'dc1'))!;
    await store.writeDcState(
      'orders',
      'dc1',
      { version: current.version, op: current.op },
      { ...current, version: current.version + 1, op: 'retire' },
    );
    const before = writes(store);
    expect(await allocator.returnBlock(15n, 20n)).toBe(0n);
    expect(writes(store)).toEqual(before);
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(20n);
  });

  it('returns nothing once another process claimed after the run', async () => {
    const store = await rangeOneStore(30n);
    const before = writes(store);
    expect(await allocatorOn(store).returnBlock(15n, 20n)).toBe(0n);
    expect(writes(store)).toEqual(before);
  });

  it('recognises its own return after a CAS timeout', async () => {
    const store = await rangeOneStore(10n);
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 11n, last: 20n });
    store.faults.push({ op: 'writeDcState', effect: 'unknown-applied' });
    expect(await allocator.returnBlock(15n, 20n)).toBe(6n);
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(14n);
  });
});

describe('DcAllocator: rows that went back', () => {
  it('takes a reply that left before its own write for old news, not for lost writes', async () => {
    const store = await rangeOneStore(60n);
    const allocator = allocatorOn(store);
    let release!: () => void;
    // The range request's state read is served now (version 1), its reply arrives late.
    store.faults.push({
      op: 'readDcState',
      effect: 'slow-reply',
      until: new Promise<void>((resolve) => (release = resolve)),
    });
    const range = allocator.ensureRange();
    await settle();
    // Meanwhile this process claims a block: version 2 is its own write.
    expect(await allocator.claimBlock()).toMatchObject({ first: 61n, last: 70n });
    release();
    await range; // the old reply (version 1) is no rollback
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({ installedGrant: 2 });
  });

  it('stops when a lost batch found GLOBAL below what this process read before', async () => {
    const store = await rangeOneStore(60n);
    await store.grantRange('orders', 'dc2', 100n, { number: 1, min: 101n, max: 200n });
    // The round that rejects dc1's batch (conditional on GLOBAL 200) finds GLOBAL at 150: rows
    // that went back. A batch conditional on 150 could grant IDs of dc2's range again.
    store.grantRange = async () => ({
      kind: 'rejected',
      found: { globalLast: 150n, grant: undefined },
    });
    const allocator = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    await expect(allocator.ensureRange()).rejects.toMatchObject({
      code: 'IDGEN_STATE_ROLLED_BACK',
    });
    expect(allocator.counters.lwtWrites).toBe(1);
  });

  it("stops when a first range's second batch found GLOBAL below what the first found", async () => {
    const store = new MemoryStore();
    await store.createSequence(settings, 'created');
    // dc1 has no state, so its first batch goes on a guess; its round finds GLOBAL at 100, the
    // next one's at 50: rows that went back in between.
    const found = [100n, 50n];
    store.grantRange = async () => ({
      kind: 'rejected',
      found: { globalLast: found.shift(), grant: undefined },
    });
    const allocator = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    await expect(allocator.ensureRange()).rejects.toMatchObject({
      code: 'IDGEN_STATE_ROLLED_BACK',
    });
    expect(allocator.counters.lwtWrites).toBe(2);
  });

  it("stops when the re-read after a claim's unknown outcome shows an older version, though later reads look current", async () => {
    const store = await rangeOneStore(0n);
    const allocator = new DcAllocator({ store, dc: 'dc1', settings, sleep: async () => {} });
    expect(await allocator.claimBlock()).toMatchObject({ first: 1n, last: 10n });
    expect(await allocator.claimBlock()).toMatchObject({ first: 11n, last: 20n }); // version 3
    // The next claim's outcome is unknown, and the node loses version 3: the re-read shows
    // version 2. Another process of dc1 then claims [11, 20] and [21, 30] from it, so that the
    // version read next (4) is no older than any this process saw.
    let rolledBack = false;
    store.faults.push({
      op: 'writeDcState',
      effect: 'unknown-not-applied',
      onHit: () => {
        store.rollBackDcState('orders', 'dc1', 1);
        rolledBack = true;
      },
    });
    const read = store.readDcState.bind(store);
    store.readDcState = async (sequence, dc) => {
      const state = await read(sequence, dc);
      if (!rolledBack || state === undefined) return state;
      rolledBack = false;
      let current = state;
      for (const op of ['other-1', 'other-2']) {
        const next = {
          ...current,
          lastInteger: current.lastInteger + 10n,
          version: current.version + 1,
        };
        await store.writeDcState(sequence, dc, current, { ...next, op });
        current = { ...next, op };
      }
      return state;
    };
    // This process still holds [11, 20], which the other now holds too: it must stop, not claim.
    await expect(allocator.claimBlock()).rejects.toMatchObject({
      code: 'IDGEN_STATE_ROLLED_BACK',
    });
  });

  it('stops when the version it wrote was lost and written again by another process', async () => {
    const store = await rangeOneStore(0n);
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 1n, last: 10n });
    expect(await allocator.claimBlock()).toMatchObject({ first: 11n, last: 20n }); // version 3
    // Version 3 is lost; another process of dc1 claims [11, 20] again, as version 3 with its op.
    store.rollBackDcState('orders', 'dc1', 1);
    const current = (await store.readDcState('orders', 'dc1'))!;
    const other = { ...current, lastInteger: 20n, version: current.version + 1, op: 'other' };
    expect(await store.writeDcState('orders', 'dc1', current, other)).toEqual({ kind: 'applied' });
    // No version went down, and last_integer is where this process left it: only the op shows
    // that [11, 20], which this process holds, is the other's too. It must stop, not claim.
    await expect(allocator.claimBlock()).rejects.toMatchObject({
      code: 'IDGEN_STATE_ROLLED_BACK',
    });
  });

  it('writes nothing once a read showed the rows gone back: the range request begun before installs nothing, and none starts', async () => {
    const store = await rangeOneStore(0n);
    const told: string[] = [];
    const allocator = new DcAllocator({
      store,
      dc: 'dc1',
      settings,
      sleep: async () => {},
      onRolledBack: (error) => told.push(error.code),
    });
    expect(await allocator.claimBlock()).toMatchObject({ first: 1n, last: 10n });
    expect(await allocator.claimBlock()).toMatchObject({ first: 11n, last: 20n }); // version 3
    // A range request's grant batch is on the wire when version 3 is lost; another process of
    // dc1 claims [11, 20] again as version 3, with its op.
    let open!: () => void;
    store.faults.push({
      op: 'grantRange',
      effect: 'delay',
      until: new Promise<void>((resolve) => (open = resolve)),
    });
    store.resetCalls();
    const range = allocator.ensureRange();
    await settle();
    expect(store.calls.grantRange).toBe(1);
    store.rollBackDcState('orders', 'dc1', 1);
    const other = async (op: string) => {
      const current = (await store.readDcState('orders', 'dc1'))!;
      const next = { ...current, lastInteger: current.lastInteger + 10n };
      await store.writeDcState('orders', 'dc1', current, {
        ...next,
        version: current.version + 1,
        op,
      });
    };
    await other('other-1');
    // This allocator's claim finds another op at version 3: the rows went back. It is told at
    // once, and from now on stops allocating.
    await expect(allocator.claimBlock()).rejects.toMatchObject({
      code: 'IDGEN_STATE_ROLLED_BACK',
    });
    expect(told).toEqual(['IDGEN_STATE_ROLLED_BACK']);
    // The other process claims on (version 4, [21, 30]): read from now on, the rows look current.
    await other('other-2');
    const before = writes(store);
    open();
    // The batch sent before is applied (grant 2, made at SERIAL, is the DC's to install), but
    // no write goes out after the detection: neither the install nor anything else.
    await expect(range).rejects.toMatchObject({ code: 'IDGEN_STATE_ROLLED_BACK' });
    expect(store.grantLog.map((g) => g.grant.number)).toEqual([1, 2]);
    allocator.requestRangeInBackground();
    await settle();
    expect(writes(store)).toEqual(before);
    expect(await store.readDcState('orders', 'dc1')).toMatchObject({
      version: 4,
      op: 'other-2',
      installedGrant: 1,
    });
  });

  it('stops when a read sent after its own write shows an older version', async () => {
    const store = await rangeOneStore(0n);
    const allocator = allocatorOn(store);
    expect(await allocator.claimBlock()).toMatchObject({ first: 1n, last: 10n });
    store.rollBackDcState('orders', 'dc1', 1);
    await expect(allocator.claimBlock()).rejects.toMatchObject({
      code: 'IDGEN_STATE_ROLLED_BACK',
    });
  });
});

describe('DcAllocator: a block is at most an eighth of its range', () => {
  // Adaptive blocks that may grow as large as a DC range.
  const adaptive = resolveSequenceSettings('orders', {
    max: 100_000,
    dcRangeSize: 800,
    blockSize: 10,
    maxBlockSize: 800,
    threshold: 0.5,
  });

  it('cuts a block as large as the range to an eighth of it, so the others of the DC claim from it without SERIAL', async () => {
    const store = await grantOneStore(800n, adaptive);
    const fast = new DcAllocator({ store, dc: 'dc1', settings: adaptive });
    expect(await fast.claimBlock({ size: () => 800 })).toMatchObject({ first: 1n, last: 100n });
    const others = Array.from(
      { length: 3 },
      () => new DcAllocator({ store, dc: 'dc1', settings: adaptive }),
    );
    for (const other of others) await other.claimBlock({ size: () => 800 });
    expect(others.map((a) => a.counters.rangesGranted)).toEqual([0, 0, 0]);
    expect(store.grantLog).toHaveLength(1);
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(400n);
  });

  it('asks for the next grant with the full block size, and cuts blocks of that size from it', async () => {
    const store = await grantOneStore(800n, adaptive);
    const fast = new DcAllocator({ store, dc: 'dc1', settings: adaptive });
    for (let i = 0; i < 8; i++) await fast.claimBlock({ size: () => 800 });
    const block = await fast.claimBlock({ size: () => 800 });
    // Grant 2 holds eight blocks of 800 (grantSizeFor; maxDcRangeSize is 8 × maxBlockSize).
    expect(adaptive.maxDcRangeSize).toBe(6_400n);
    expect(store.grantLog.map((g) => g.grant.max - g.grant.min + 1n)).toEqual([800n, 6_400n]);
    expect(block).toMatchObject({ first: 801n, last: 1_600n });
  });

  it('never cuts below what waiting calls need in one block', async () => {
    const store = await grantOneStore(800n, adaptive);
    const allocator = new DcAllocator({ store, dc: 'dc1', settings: adaptive });
    expect(await allocator.claimBlock({ size: () => 800, need: () => 500 })).toMatchObject({
      first: 1n,
      last: 500n,
    });
  });

  it('cuts to the eighth, or to what waiting calls need, and never above the size asked', () => {
    expect(spreadOver(800n, { size: 800n, floor: 10n })).toBe(100n);
    expect(spreadOver(800n, { size: 50n, floor: 10n })).toBe(50n);
    expect(spreadOver(800n, { size: 800n, floor: 500n })).toBe(500n);
    expect(spreadOver(800n, { size: 300n, floor: 500n })).toBe(300n);
    expect(spreadOver(7n, { size: 10n, floor: 10n })).toBe(10n);
  });

  it('leaves fixed blocks as large as the range whole', async () => {
    const fixed = resolveSequenceSettings('orders', {
      max: 100_000,
      dcRangeSize: 800,
      blockSize: 800,
    });
    const store = await grantOneStore(800n, fixed);
    const allocator = new DcAllocator({ store, dc: 'dc1', settings: fixed });
    expect(await allocator.claimBlock()).toMatchObject({ first: 1n, last: 800n });
  });
});
