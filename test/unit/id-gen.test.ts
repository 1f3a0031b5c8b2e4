import { describe, expect, it } from 'vitest';

import { IdGen } from '../../src/allocator/id-gen.js';
import {
  ClosedError,
  InvalidNameError,
  InvalidOptionError,
  SequenceExistsError,
  SequenceNotFoundError,
} from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import { KEYSPACE, processIn, settle } from './fixtures.js';

function fresh(): { store: MemoryStore; ids: IdGen } {
  const store = new MemoryStore();
  return { store, ids: processIn(store, 'eu_west1') };
}

/**
 * A process whose handle `a` of "orders" (blocks of 10) handed out 1, with the next read of the
 * DC state (its close()'s give-back) held until `open()`.
 */
async function oneHandedOutThenGiveBackHeld() {
  const store = new MemoryStore({ keyspace: KEYSPACE });
  const ids = processIn(store, 'dc1');
  await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
  const a = ids.sequence('orders');
  expect(await a.next()).toBe(1);
  let open!: () => void;
  store.faults.push({
    op: 'readDcState',
    effect: 'delay',
    until: new Promise<void>((resolve) => (open = resolve)),
  });
  return { store, ids, a, open };
}
describe('IdGen', () => {
  it('grants every DC of the keyspace its first ranges, one per shard, when blocks adapt and the create names none', async () => {
    const store = new MemoryStore({ replicaDcs: ['dc1', 'dc2', 'dc3'] });
    const ids = processIn(store, 'dc1');
    const { settings, firstGrants } = await ids.createSequenceGranting('orders');
    expect(settings.shards).toBe(16);
    expect(firstGrants.map(({ grantee }) => grantee)).toEqual(
      ['dc1', 'dc2', 'dc3'].flatMap((dc) => [
        dc,
        ...Array.from({ length: 15 }, (_, k) => `${dc}/${k + 1}`),
      ]),
    );
    const overview = await store.readGrantsOverview('orders');
    expect(overview?.globalLast).toBe(4_800_000n);
    expect(overview?.grants.get('dc3/15')).toEqual([
      { number: 1, min: 4_700_001n, max: 4_800_000n },
    ]);
    // A process of each DC starts on its first ranges: no grant at SERIAL.
    store.resetCalls();
    for (const dc of ['dc1', 'dc2', 'dc3']) await processIn(store, dc).sequence('orders').next();
    expect(store.calls).toMatchObject({ grantRange: 0, readGrants: 0 });
  });

  it.each([
    ['fixed blocks', { blockSize: 500 }, ['dc1', 'dc2']],
    ['an empty list given', { firstRanges: [] }, ['dc1', 'dc2']],
    ['a keyspace that names no DC', {}, undefined],
  ] as const)('grants no first ranges with %s', async (_, options, replicaDcs) => {
    const store = new MemoryStore({ replicaDcs });
    const { firstGrants } = await processIn(store, 'dc1').createSequenceGranting('orders', options);
    expect(firstGrants).toEqual([]);
    expect((await store.readGrantsOverview('orders'))?.globalLast).toBe(0n);
  });

  it('grants the DCs named, not the keyspace’s, and reports none for a sequence that existed', async () => {
    const store = new MemoryStore({ replicaDcs: ['dc1', 'dc2', 'dc3'] });
    const ids = processIn(store, 'dc1');
    const named = await ids.createSequenceGranting('orders', { firstRanges: ['dc2'], shards: 2 });
    expect(named.firstGrants.map(({ grantee }) => grantee)).toEqual(['dc2', 'dc2/1']);
    expect(named.created).toBe(true);
    const again = await ids.createSequenceGranting('orders', { ifNotExists: true });
    expect(again).toEqual({ settings: named.settings, firstGrants: [], created: false });
  });

  it('ifNotExists refuses an existing sequence whose IDs differ from those given, not one whose defaults do', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = processIn(store, 'dc1');
    const created = await ids.createSequence('orders', { start: 1_000n, dcRangeSize: 100 });
    // Defaults (no domain, min, max or start given) accept whatever IDs the sequence has.
    await expect(ids.createSequence('orders', { ifNotExists: true })).resolves.toEqual(created);
    await expect(
      ids.createSequence('orders', { domain: 'int32', start: 1_000, ifNotExists: true }),
    ).resolves.toEqual(created);
    for (const [options, difference] of [
      [{ start: 1n }, 'start 1000 (asked 1)'],
      [{ min: 10n, start: 1_000n }, 'min 1 (asked 10)'],
      [{ max: 5_000_000n }, 'max 2147483647 (asked 5000000)'],
      [{ domain: 'int63' }, 'max 2147483647 (asked 9223372036854775807)'],
    ] as const) {
      const error = await ids
        .createSequence('orders', { ...options, ifNotExists: true })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SequenceExistsError);
      expect(error).toMatchObject({ code: 'IDGEN_SEQUENCE_EXISTS', differences: [difference] });
    }
    expect((await store.readSequence('orders'))?.settings).toEqual(created);
  });

  it('two racing ifNotExists creates with different starts: one creates, the other is refused', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const results = await Promise.allSettled([
      processIn(store, 'dc1').createSequence('orders', { start: 1n, ifNotExists: true }),
      processIn(store, 'dc2').createSequence('orders', { start: 48_213_578n, ifNotExists: true }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(SequenceExistsError);
  });

  it('keeps the counts of a handle it replaced in stats(), so that no counter goes back', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = processIn(store, 'dc1');
    await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10, threshold: 0.9 });
    const a = ids.sequence('orders');
    expect([await a.next(), await a.next(), await a.next()]).toEqual([1, 2, 3]);
    await a.close(); // gives 4..10 back
    const before = ids.stats();
    expect(before.totals).toMatchObject({ issued: 3, blocksClaimed: 1, remaining: 0 });
    const b = ids.sequence('orders');
    expect(b).not.toBe(a);
    // Replaced, not yet used: the counts are a's.
    expect(ids.stats().totals).toMatchObject({ issued: 3, blocksClaimed: 1 });
    expect([await b.next(), await b.next()]).toEqual([4, 5]);
    const after = ids.stats();
    expect(after.sequences).toHaveLength(1);
    expect(after.sequences[0]?.stats).toMatchObject({ issued: 5, blocksClaimed: 2 });
    expect(after.totals).toMatchObject({ issued: 5, blocksClaimed: 2, remaining: 8 });
    for (const [key, value] of Object.entries(before.totals)) {
      if (typeof value === 'number' && key !== 'remaining') {
        expect(after.totals[key as keyof typeof after.totals]).toBeGreaterThanOrEqual(value);
      }
    }
  });

  it('counts a handle replaced while still closing once, with what its close() left as a gap', async () => {
    // a's give-back will wait in its read; meanwhile another process claims after a's block.
    const { store, ids, a, open } = await oneHandedOutThenGiveBackHeld();
    const closing = a.close();
    await settle();
    const b = ids.sequence('orders');
    expect(b).not.toBe(a);
    expect(await processIn(store, 'dc1').sequence('orders').next()).toBe(11);
    // a holds its 9 unused IDs until its give-back ends.
    expect(ids.stats().totals).toMatchObject({ issued: 1, remaining: 9, wasted: 0 });
    open();
    await closing;
    expect(await b.next()).toBe(21);
    const { totals } = ids.stats();
    expect(totals).toMatchObject({ issued: 2, blocksClaimed: 2, remaining: 9, wasted: 9 });
    expect(totals.waste).toMatchObject({ notReturned: 9 });
    await ids.close();
  });

  it('keeps its final counters in stats() after close(), with the IDs close() could not give back', async () => {
    const { store, ids, a, open } = await oneHandedOutThenGiveBackHeld();
    expect(await a.next()).toBe(2);
    const closing = ids.close();
    await settle();
    // Another process claims after a's block while a's give-back waits in its read.
    expect(await processIn(store, 'dc1').sequence('orders').next()).toBe(11);
    open();
    await closing;
    const { totals, sequences } = ids.stats();
    expect(sequences.map(({ name }) => name)).toEqual(['orders']);
    expect(totals).toMatchObject({ issued: 2, blocksClaimed: 1, remaining: 0, wasted: 8 });
    expect(totals.waste).toMatchObject({ notReturned: 8 });
    expect(ids.stats()).toBe(ids.stats()); // final: nothing moves any more
  });

  it('close() waits for a handle that was closing when sequence() replaced it, then closes the store', async () => {
    const { store, ids, a, open } = await oneHandedOutThenGiveBackHeld();
    const events: string[] = [];
    void a.close().then(() => events.push('a closed'));
    await settle();
    expect(ids.sequence('orders')).not.toBe(a); // a is closing: a new handle
    const close = store.close.bind(store);
    store.close = async () => {
      events.push('store closed');
      return close();
    };
    const closing = ids.close().then(() => events.push('ids closed'));
    await settle();
    expect(events).toEqual([]); // a's give-back still needs the store
    open();
    await closing;
    expect(events).toEqual(['a closed', 'store closed', 'ids closed']);
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(1n);
  });

  it('finds a sequence committed in other DCs only: --if-not-exists and alter read it at SERIAL', async () => {
    // A create that timed out may be committed at the other DCs' replicas only: the local
    // LOCAL_QUORUM read does not see it yet, a read at SERIAL does (and completes it).
    class LaggingStore extends MemoryStore {
      override async readSequence(name: string, reading: 'local' | 'serial' = 'local') {
        return reading === 'local' ? undefined : super.readSequence(name, reading);
      }
    }
    const store = new LaggingStore();
    const ids = processIn(store, 'dc1');
    const created = await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    const again = await ids.createSequenceGranting('orders', {
      dcRangeSize: 5_000,
      ifNotExists: true,
    });
    expect(again).toMatchObject({ settings: created, created: false });
    expect(await ids.alterSequence('orders', { blockSize: 200 })).toMatchObject({
      blockSize: 200,
    });
  });

  it('refuses first ranges for a DC the keyspace does not replicate to, and writes nothing', async () => {
    // Its ranges would be lost from the domain: no process there can claim at LOCAL_SERIAL.
    const store = new MemoryStore({ replicaDcs: ['dc1', 'dc2', 'dc3'] });
    const ids = processIn(store, 'dc1');
    const error = await ids
      .createSequenceGranting('orders', { firstRanges: ['dc1', 'dc9'] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ option: 'firstRanges' });
    expect((error as Error).message).toContain(
      'allowed: DCs the keyspace replicates to: dc1, dc2, dc3 (not dc9)',
    );
    expect(store.calls.createSequence).toBe(0);
    // A keyspace whose replication names no DC (another strategy) cannot tell: the list stands.
    const other = new MemoryStore({ replicaDcs: undefined });
    const { firstGrants } = await processIn(other, 'dc1').createSequenceGranting('orders', {
      firstRanges: ['dc9'],
      shards: 1,
    });
    expect(firstGrants.map(({ grantee }) => grantee)).toEqual(['dc9']);
  });

  it('exposes its DC and keyspace, not its store', () => {
    const { ids } = fresh();
    expect(ids.dc).toBe('eu_west1');
    expect(ids.keyspace).toBe(KEYSPACE);
    expect(Object.keys(ids)).toEqual(['dc', 'keyspace']);
    expect((ids as unknown as Record<string, unknown>)['store']).toBeUndefined();
  });

  it('creates a sequence with validated settings, once', async () => {
    const { store, ids } = fresh();
    const settings = await ids.createSequence('orders', { domain: 'int32', blockSize: 500 });
    expect(settings).toMatchObject({
      name: 'orders',
      domain: 'int32',
      max: 2n ** 31n - 1n,
      blockSize: 500,
    });
    expect((await store.readSequence('orders'))?.settings).toEqual(settings);
    const error = await ids.createSequence('orders').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SequenceExistsError);
    expect(error).toMatchObject({ sequence: 'orders', keyspace: KEYSPACE });
    expect((await store.readSequence('orders'))?.settings).toEqual(settings);
  });

  it('refuses bad names and options before touching the store', async () => {
    const { store, ids } = fresh();
    await expect(ids.createSequence('bad name')).rejects.toBeInstanceOf(InvalidNameError);
    await expect(ids.createSequence('orders', { threshold: 2 })).rejects.toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      option: 'threshold',
    });
    expect(store.calls.createSequence).toBe(0);
  });

  it('reads and lists sequences, and names a missing one', async () => {
    const { ids } = fresh();
    const b = await ids.createSequence('b_seq');
    const a = await ids.createSequence('a_seq', { domain: 'int63' });
    expect(await ids.readSequence('a_seq')).toEqual(a);
    expect(await ids.listSequences()).toEqual([a, b]);
    const error = await ids.readSequence('nope').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SequenceNotFoundError);
    expect((error as Error).message).toBe(
      `Sequence "nope" not found in keyspace "${KEYSPACE}". Create it with ids.createSequence("nope").`,
    );
  });

  it('alters sizes after validating them against the stored settings', async () => {
    const { store, ids } = fresh();
    const created = await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    const altered = await ids.alterSequence('orders', { dcRangeSize: 5_000, threshold: 0.8 });
    // Fixed DC ranges stay fixed: the largest DC range moves with dcRangeSize.
    expect(altered).toEqual({
      ...created,
      dcRangeSize: 5_000n,
      threshold: 0.8,
      maxDcRangeSize: 5_000n,
    });
    expect((await store.readSequence('orders'))?.settings).toEqual(altered);

    await expect(ids.alterSequence('orders', { blockSize: 5_001 })).rejects.toBeInstanceOf(
      InvalidOptionError,
    );
    await expect(ids.alterSequence('missing', { blockSize: 5 })).rejects.toBeInstanceOf(
      SequenceNotFoundError,
    );
    expect(store.calls.alterSequence).toBe(1);
  });

  it('returns the same handle per name and type, and a new one once it was closed', async () => {
    const { ids } = fresh();
    const orders = ids.sequence('orders');
    expect(ids.sequence('orders')).toBe(orders);
    expect(ids.sequence('orders', { bigint: false })).toBe(orders);
    const wide = ids.sequence('orders', { bigint: true });
    expect(wide).not.toBe(orders);
    expect(ids.sequence('orders', { bigint: true })).toBe(wide);
    await orders.close();
    const reopened = ids.sequence('orders');
    expect(reopened).not.toBe(orders);
    expect(reopened.state).toBe('idle');
  });

  it('closes every handle and then the store, once', async () => {
    const { store, ids } = fresh();
    await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10 });
    const orders = ids.sequence('orders');
    expect(await orders.next()).toBe(1);
    const closing = ids.close();
    expect(ids.close()).toBe(closing);
    await closing;
    expect(orders.state).toBe('closed');
    expect(store.calls.close).toBe(1);
    expect((await store.readDcState('orders', 'eu_west1'))?.lastInteger).toBe(1n);

    expect(() => ids.sequence('orders')).toThrow(ClosedError);
    await expect(ids.createSequence('other')).rejects.toBeInstanceOf(ClosedError);
    await expect(ids.listSequences()).rejects.toBeInstanceOf(ClosedError);
    await expect(orders.next()).rejects.toMatchObject({ code: 'IDGEN_CLOSED' });
  });

  it('says what to do with a closed handle: another from ids.sequence(), the allocator being open', async () => {
    const store = new MemoryStore();
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE });
    await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10 });
    const orders = ids.sequence('orders');
    expect(await orders.next()).toBe(1);
    await orders.close();
    // It said "The allocator is closed; create a new one with connect()", which was not so.
    const error: unknown = await orders.next().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'IDGEN_CLOSED', sequence: 'orders' });
    expect((error as Error).message).toContain('get a new one with ids.sequence("orders")');
    // A new handle serves, from the IDs the closed one gave back.
    expect(await ids.sequence('orders').next()).toBe(2);
    await ids.close();
  });

  it('refuses options it cannot work with when built, not at the first call', () => {
    const store = new MemoryStore();
    const make = (options: Record<string, unknown>) => () =>
      new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, ...options } as never);
    // Each was accepted before, and failed later, at the first call, with a TypeError or as a
    // store error naming a DC or keyspace no statement could use.
    expect(make({ store: undefined })).toThrow(
      expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option: 'store' }),
    );
    expect(make({ store: { readSequence: () => undefined } })).toThrow(
      expect.objectContaining({ option: 'store' }),
    );
    expect(make({ dc: 'dc 1' })).toThrow(expect.objectContaining({ code: 'IDGEN_INVALID_NAME' }));
    expect(make({ keyspace: 'Bad-ks' })).toThrow(
      expect.objectContaining({ code: 'IDGEN_INVALID_NAME' }),
    );
    expect(make({ logr: {} })).toThrow(expect.objectContaining({ option: 'logr' }));
    expect(make({})()).toBeInstanceOf(IdGen);
  });

  it('logs through the given logger only, bound to the sequence', async () => {
    const store = new MemoryStore();
    const lines: string[] = [];
    const { pino } = await import('pino');
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE, logger });
    await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10, threshold: 0.5 });
    const seq = ids.sequence('orders');
    await seq.next();
    // Both reads of a claim fail: its guess, then its read at LOCAL_SERIAL.
    store.faults.push({ op: 'readDcStateLocal', effect: 'unavailable', times: 3 });
    store.faults.push({ op: 'readDcState', effect: 'unavailable', times: 3 });
    for (let i = 0; i < 9; i++) await seq.next(); // the background claim at 5 fails...
    expect(await seq.next()).toBe(11); // ...and is retried until it gets the block
    expect(seq.stats().errors).toBe(3);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ sequence: 'orders', dc: 'dc1', level: 40 });
  });
});
