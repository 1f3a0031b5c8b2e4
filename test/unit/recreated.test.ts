/**
 * A sequence whose rows were deleted by hand (CQL) and whose name was seeded again: the docs say
 * never to, and these tests hold what happens when it is done anyway. Each DC-state row carries
 * the incarnation (the create's op) of the sequence its writer loaded; `seed` refuses a name
 * whose state rows remain, a process refuses a state row of another incarnation, and a process
 * that loaded the earlier sequence stops once it re-reads the settings.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import { retireDcRanges } from '../../src/allocator/retire.js';
import { SETTINGS_REFRESH_MS } from '../../src/allocator/held-settings.js';
import type { Sequence } from '../../src/allocator/sequence.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { SequenceExistsError, SequenceRecreatedError } from '../../src/errors.js';
import type { CreateSequenceOptions } from '../../src/settings/model.js';
import { MemoryStore } from '../../src/store/memory.js';
import { draw, drawUntilError, KEYSPACE, processIn, settle } from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

const FIXED: CreateSequenceOptions = { dcRangeSize: 100, blockSize: 10, threshold: 0.5 };

/** dc1 and dc2 processes of `orders` draw 25 IDs each; the processes are returned running. */
async function drawnInTwoDcs(): Promise<{
  store: MemoryStore;
  before: number[];
  running: Sequence<number>;
}> {
  const store = new MemoryStore({ keyspace: KEYSPACE, replicaDcs: ['dc1', 'dc2'] });
  await processIn(store).createSequence('orders', FIXED);
  const running = processIn(store).sequence('orders');
  const before = [
    ...(await draw(running, 25)),
    ...(await draw(processIn(store, 'dc2').sequence('orders'), 25)),
  ];
  // Their preload claims, in flight, land now: tests count only their own calls.
  await settle();
  return { store, before, running };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a sequence whose rows were deleted by hand and seeded again', () => {
  it('seed refuses the name while state rows of the earlier sequence remain, and writes nothing', async () => {
    const { store } = await drawnInTwoDcs();
    store.deleteRowsByHand('orders');
    store.resetCalls();
    const seed = processIn(store).createSequence('orders', FIXED);
    await expect(seed).rejects.toThrow(SequenceRecreatedError);
    await expect(seed).rejects.toMatchObject({
      code: 'IDGEN_SEQUENCE_RECREATED',
      message: expect.stringMatching(/state rows of one do \(dc1, dc2\); nothing was written/),
    });
    // --if-not-exists (a service's start) is refused too: the name does not exist.
    await expect(
      processIn(store).createSequence('orders', { ...FIXED, ifNotExists: true }),
    ).rejects.toThrow(SequenceRecreatedError);
    expect(store.calls.createSequence).toBe(0);
    expect(await store.readSequence('orders', 'serial')).toBeUndefined();
  });

  it('a process refuses a state row of the earlier sequence, where a row without incarnation hands out IDs again', async () => {
    // Control: rows as an older release wrote them carry no incarnation. A create that skips
    // seed's look for them (an older release's) starts GLOBAL again under them, and dc2 is
    // granted IDs that dc1's processes handed out.
    const control = await drawnInTwoDcs();
    const legacy = (await control.store.readDcState('orders', 'dc1'))!;
    const dc2Legacy = (await control.store.readDcState('orders', 'dc2'))!;
    control.store.deleteRowsByHand('orders');
    const { incarnation: _a, ...noIncarnation } = legacy;
    const { incarnation: _b, ...dc2NoIncarnation } = dc2Legacy;
    control.store.seedDcState('orders', 'dc1', noIncarnation);
    control.store.seedDcState('orders', 'dc2', dc2NoIncarnation);
    expect([_a, _b]).toEqual([expect.any(String), expect.any(String)]);
    const settings = await processIn(new MemoryStore()).createSequence('orders', FIXED);
    expect(await control.store.createSequence(settings, 'create:older-release')).toEqual({
      kind: 'applied',
    });
    const again = await draw(processIn(control.store, 'dc3').sequence('orders'), 25);
    expect(again.filter((id) => control.before.includes(id)).length).toBeGreaterThan(0);

    // The same with rows this release wrote: every process refuses them, and nothing is drawn.
    const { store } = await drawnInTwoDcs();
    store.deleteRowsByHand('orders');
    expect(await store.createSequence(settings, 'create:older-release')).toEqual({
      kind: 'applied',
    });
    store.resetCalls();
    for (const dc of ['dc1', 'dc2']) {
      const { ids, error } = await drawUntilError(processIn(store, dc).sequence('orders'));
      expect(ids).toEqual([]);
      expect(error).toBeInstanceOf(SequenceRecreatedError);
      expect((error as Error).message).toMatch(
        new RegExp(`state row of "${dc}" \\(version \\d+\\) was written for another sequence`),
      );
    }
    expect(store.calls.writeDcState).toBe(0);
  });

  itOnFakeClock(
    'a process still running with the earlier sequence stops at its next claim, which re-reads the settings',
    async () => {
      const { store, before, running } = await drawnInTwoDcs();
      // Every row deleted, so seed finds none and creates the name again.
      store.deleteRowsByHand('orders', { states: true });
      await processIn(store, 'dc2').createSequence('orders', FIXED);
      const fresh = await draw(processIn(store, 'dc2').sequence('orders'), 25);
      expect(fresh.filter((id) => before.includes(id)).length).toBeGreaterThan(0);
      await vi.advanceTimersByTimeAsync(SETTINGS_REFRESH_MS);
      const { ids, error } = await drawUntilError(running);
      expect(error).toBeInstanceOf(SequenceRecreatedError);
      expect((error as Error).message).toMatch(/it was created again while this process used it/);
      // It served only what it held already (the rest of [21, 30] and its preloaded [31, 40]):
      // the claim after them re-read the settings and found the other incarnation.
      expect(ids.every((id) => id > 25 && id <= 40)).toBe(true);
      await expect(running.next()).rejects.toThrow(SequenceRecreatedError);
      // Nor did it write: dc1 has no state in the new sequence.
      expect(await store.readDcState('orders', 'dc1')).toBeUndefined();
    },
  );

  it('retire-ranges refuses a state row of another incarnation and writes nothing there', async () => {
    const { store } = await drawnInTwoDcs();
    const dc1 = (await store.readDcState('orders', 'dc1'))!;
    store.seedDcState('orders', 'dc1', { ...dc1, incarnation: 'create:another' });
    store.resetCalls();
    const stored = (await store.readSequence('orders', 'serial'))!;
    await expect(retireDcRanges(store, stored, 'dc1')).rejects.toThrow(
      /incarnation create:another.*nothing was retired there/,
    );
    expect(store.calls.writeDcState).toBe(0);
  });

  it('check reports a state row of another incarnation as a confirmed violation, and judges it no further', async () => {
    const { store } = await drawnInTwoDcs();
    const admin = new Admin({ store, dc: 'dc1', keyspace: KEYSPACE });
    expect((await admin.check('orders')).verdict).toBe('ok');
    const dc2 = (await store.readDcState('orders', 'dc2'))!;
    store.seedDcState('orders', 'dc2', { ...dc2, incarnation: 'create:another', lastInteger: 0n });
    const result = await admin.check('orders');
    expect(result.verdict).toBe('violated');
    expect(result.violations.map((v) => [v.kind, v.dc, v.confirmed])).toEqual([
      ['state-of-another-incarnation', 'dc2', true],
    ]);
    expect(result.violations[0]?.message).toMatch(/incarnation create:another, this one create:/);
  });

  it('goes on from a state row an older release opened (no incarnation), which keeps none', async () => {
    const { store } = await drawnInTwoDcs();
    const stored = (await store.readSequence('orders', 'serial'))!;
    expect(stored.incarnation).toMatch(/^create:/);
    const { incarnation, ...legacy } = (await store.readDcState('orders', 'dc1'))!;
    expect(incarnation).toBe(stored.incarnation);
    store.seedDcState('orders', 'dc1', legacy);
    const ids = await draw(processIn(store).sequence('orders'), 15);
    expect(ids).toHaveLength(15);
    const after = (await store.readDcState('orders', 'dc1'))!;
    expect(after.version).toBeGreaterThan(legacy.version);
    expect(after).not.toHaveProperty('incarnation');
  });

  it('seed looks at every shard of the local DC too, where the keyspace names no DC', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    expect(store.replicaDcs).toBeUndefined();
    await processIn(store).createSequence('orders', { ...FIXED, shards: 2 });
    vi.spyOn(Math, 'random').mockReturnValueOnce(0.9); // the shard: dc1/1
    const seq = processIn(store).sequence('orders');
    await draw(seq, 5);
    expect(seq.grantee).toBe('dc1/1');
    store.deleteRowsByHand('orders');
    await expect(
      processIn(store).createSequence('orders', { ...FIXED, shards: 2 }),
    ).rejects.toThrow(new RegExp(`state rows of one do \\(${seq.grantee.replace('/', '\\/')}\\)`));
  });

  it('seed says the sequence exists when it was created while seed looked for rows left behind', async () => {
    const { store } = await drawnInTwoDcs();
    const stored = (await store.readSequence('orders', 'serial'))!;
    store.deleteRowsByHand('orders');
    // Another create lands between seed's SERIAL read and its look at the state rows.
    const racing = new Proxy(store, {
      get(target, key) {
        if (key === 'readDcStatesOf') {
          return async (sequence: string, grantees: readonly string[]) => {
            await target.createSequence(stored.settings, 'create:the-other-seed');
            return target.readDcStatesOf(sequence, grantees);
          };
        }
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const ids = new IdGen({ store: racing, dc: 'dc1', keyspace: KEYSPACE });
    await expect(ids.createSequence('orders', FIXED)).rejects.toThrow(SequenceExistsError);
    store.deleteRowsByHand('orders');
    const again = await ids.createSequenceGranting('orders', { ...FIXED, ifNotExists: true });
    expect(again.created).toBe(false);
  });

  it('seed refuses as unavailable when SERIAL cannot say whether the sequence exists and state rows of it do', async () => {
    const { store } = await drawnInTwoDcs();
    store.deleteRowsByHand('orders');
    store.faults.push({ op: 'readSequence', effect: 'unavailable' });
    store.resetCalls();
    await expect(processIn(store).createSequence('orders', FIXED)).rejects.toMatchObject({
      code: 'IDGEN_STORE_UNAVAILABLE',
      message: expect.stringMatching(
        /could not be read at SERIAL, and state rows of it do \(dc1, dc2\)/,
      ),
    });
    expect(store.calls.createSequence).toBe(0);
  });
});
