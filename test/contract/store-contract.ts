/**
 * The semantics every {@link IdStore} must have, asserted through the port alone, so that one
 * suite runs against the in-memory store and the Cassandra adapter.
 *
 * What a store promises for each outcome of a conditional write:
 * - `applied`: the write is committed.
 * - `rejected`: the condition was false when the round evaluated it, and `found` is what the
 *   round read: the stored settings (create, alter), GLOBAL's value and the DC's grant of the
 *   number asked (grant), the stored version and op (DC state). It does not promise that our own
 *   write is not what made the condition false: the allocator compares `found` with its write.
 * - `unknown`: anything else, including every failure after the request may have reached a
 *   replica; the write may be applied now or later. A store may also throw from a conditional
 *   write; callers treat a throw like `unknown`. Stores never retry a conditional write.
 *
 * Each test uses sequences of its own, so the suite may share a keyspace with other tests. DC
 * states are written only for `dc` (the store's local DC); `otherDc` only receives grants,
 * which any DC may make at SERIAL. Overviews are plain reads that may lag, so they are polled.
 */
import { randomUUID } from 'node:crypto';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { DcState, Grant, IdStore, SequenceSettings } from '../../src/store/port.js';

export interface StoreContext {
  readonly store: IdStore;
  /** The DC the store's client is local to. */
  readonly dc: string;
  /** Another DC of the cluster. */
  readonly otherDc: string;
  /** Writes a DC state row as it is, bypassing the protocol (e.g. a very high version). */
  seedDcState(sequence: string, dc: string, state: DcState): Promise<void>;
  cleanup(): Promise<void>;
}

const POLL = { timeout: 10_000, interval: 50 } as const;

export function describeStoreContract(name: string, factory: () => Promise<StoreContext>): void {
  describe(`${name} store contract`, () => {
    let ctx: StoreContext;
    let store: IdStore;

    beforeEach(async () => {
      ctx = await factory();
      store = ctx.store;
    });

    afterEach(async () => {
      await ctx.cleanup();
    });

    describe('sequences', () => {
      it('creates a sequence once: the second create is rejected with what is stored', async () => {
        const settings = sequenceSettings();
        const op = randomUUID();
        expect(await store.createSequence(settings, op)).toEqual({ kind: 'applied' });
        expect(
          await store.createSequence({ ...settings, blockSize: 7, start: 50n }, randomUUID()),
        ).toEqual({ kind: 'rejected', found: { settings, op, incarnation: op } });
        // The create's op is also the sequence's incarnation (alters leave it, see below).
        expect(await store.readSequence(settings.name)).toEqual({ settings, op, incarnation: op });
        expect(await store.readSequence(settings.name, 'serial')).toEqual({
          settings,
          op,
          incarnation: op,
        });
        expect(await store.readGrants(settings.name, ctx.dc)).toEqual({
          globalLast: settings.start - 1n,
          latest: undefined,
        });
      });

      it('reads back settings exactly, including bigints near 2^63-1 and min 0', async () => {
        const max = 2n ** 63n - 1n;
        const large = sequenceSettings({ domain: 'int63', max, start: max - 5n, min: 0n });
        expect(await store.createSequence(large, 'op')).toEqual({ kind: 'applied' });
        expect((await store.readSequence(large.name))?.settings).toEqual(large);
        expect((await store.readGrants(large.name, ctx.dc)).globalLast).toBe(max - 6n);
      });

      it('returns undefined for a sequence that does not exist', async () => {
        expect(await store.readSequence(uniqueName('missing'))).toBeUndefined();
        expect(await store.readGrantsOverview(uniqueName('missing'))).toBeUndefined();
      });

      it('lists sequences sorted by name, with their settings', async () => {
        const prefix = uniqueName('list');
        const b = sequenceSettings({ name: `${prefix}_b`, blockSize: 20 });
        const a = sequenceSettings({ name: `${prefix}_a`, blockSize: 10 });
        await store.createSequence(b, randomUUID());
        await store.createSequence(a, randomUUID());
        const listed = await store.listSequences();
        const names = listed.map((s) => s.name);
        expect(names).toEqual([...names].sort());
        expect(listed.filter((s) => s.name.startsWith(prefix))).toEqual([a, b]);
      });

      it('alters the sizes only if the settings were last written by the op given', async () => {
        const settings = sequenceSettings();
        await store.createSequence(settings, 'created');
        const sizes = {
          dcRangeSize: 500n,
          blockSize: 25,
          threshold: 0.75,
          maxBlockSize: 400,
          claimIntervalMs: 5_000,
          maxDcRangeSize: 50_000n,
          autonomySeconds: 3_600,
          shards: 4,
        };
        // A stale op: rejected with what is stored.
        expect(await store.alterSequence(settings.name, 'stale', sizes, 'alter1')).toEqual({
          kind: 'rejected',
          found: { settings, op: 'created', incarnation: 'created' },
        });
        expect(await store.alterSequence(settings.name, 'created', sizes, 'alter1')).toEqual({
          kind: 'applied',
        });
        const altered = { ...settings, ...sizes };
        expect(await store.readSequence(settings.name)).toEqual({
          settings: altered,
          op: 'alter1',
          incarnation: 'created',
        });
        // The same expectation again loses to the write that moved the op on.
        expect(
          await store.alterSequence(settings.name, 'created', { ...sizes, blockSize: 5 }, 'alter2'),
        ).toEqual({
          kind: 'rejected',
          found: { settings: altered, op: 'alter1', incarnation: 'created' },
        });
        expect(
          await store.alterSequence(uniqueName('missing'), 'created', sizes, 'alter3'),
        ).toEqual({ kind: 'rejected', found: undefined });
      });

      it('rejects reading the grants of a sequence that does not exist', async () => {
        await expect(store.readGrants(uniqueName('missing'), ctx.dc)).rejects.toMatchObject({
          code: 'IDGEN_SEQUENCE_NOT_FOUND',
        });
      });
    });

    describe('grants (SERIAL)', () => {
      it('applies the first grant, number 1, only with the right GLOBAL value', async () => {
        const s = await created({ start: 100n });
        const grant = { number: 1, min: 100n, max: 199n };
        const nothing = { kind: 'rejected', found: { globalLast: 99n, grant: undefined } };
        expect(await store.grantRange(s.name, ctx.dc, 98n, grant)).toEqual(nothing);
        expect(await store.grantRange(s.name, ctx.dc, 100n, grant)).toEqual(nothing);
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({
          globalLast: 99n,
          latest: undefined,
        });
        expect(await store.grantRange(s.name, ctx.dc, 99n, grant)).toEqual({ kind: 'applied' });
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({ globalLast: 199n, latest: grant });
      });

      it('refuses a grant number the DC already has, even with the right GLOBAL value', async () => {
        const s = await created();
        const first = { number: 1, min: 1n, max: 100n };
        const second = { number: 2, min: 101n, max: 200n };
        expect(await store.grantRange(s.name, ctx.dc, 0n, first)).toEqual({ kind: 'applied' });
        // GLOBAL is 100, as expected, but grant 1 of this DC exists: nothing is written.
        expect(
          await store.grantRange(s.name, ctx.dc, 100n, { ...first, min: 101n, max: 200n }),
        ).toEqual({ kind: 'rejected', found: { globalLast: 100n, grant: first } });
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({ globalLast: 100n, latest: first });
        expect(await store.grantRange(s.name, ctx.dc, 100n, second)).toEqual({ kind: 'applied' });
        expect(
          await store.grantRange(s.name, ctx.dc, 200n, { number: 2, min: 201n, max: 300n }),
        ).toEqual({ kind: 'rejected', found: { globalLast: 200n, grant: second } });
        expect(
          await store.grantRange(s.name, ctx.dc, 200n, { number: 1, min: 201n, max: 300n }),
        ).toEqual({ kind: 'rejected', found: { globalLast: 200n, grant: first } });
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({
          globalLast: 200n,
          latest: second,
        });
        // The number is per DC: another DC's grant 1 is free.
        expect(
          await store.grantRange(s.name, ctx.otherDc, 200n, { number: 1, min: 201n, max: 300n }),
        ).toEqual({
          kind: 'applied',
        });
      });

      it('refuses a new grant number when GLOBAL moved, and writes nothing', async () => {
        const s = await created();
        const first = { number: 1, min: 1n, max: 100n };
        expect(await store.grantRange(s.name, ctx.dc, 0n, first)).toEqual({ kind: 'applied' });
        const stale = { number: 2, min: 1n, max: 100n };
        const moved = { kind: 'rejected', found: { globalLast: 100n, grant: undefined } };
        expect(await store.grantRange(s.name, ctx.dc, 0n, stale)).toEqual(moved);
        expect(await store.grantRange(s.name, ctx.dc, 99n, stale)).toEqual(moved);
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({ globalLast: 100n, latest: first });
        await expect
          .poll(async () => overviewOf(await store.readGrantsOverview(s.name)), POLL)
          .toEqual({ globalLast: 100n, grants: { [ctx.dc]: [first] } });
      });

      it('moves GLOBAL for every DC: a stale expectation from another DC is rejected', async () => {
        const s = await created();
        const mine = { number: 1, min: 1n, max: 100n };
        const theirs = { number: 1, min: 101n, max: 300n };
        expect(await store.grantRange(s.name, ctx.dc, 0n, mine)).toEqual({ kind: 'applied' });
        expect(
          await store.grantRange(s.name, ctx.otherDc, 0n, { number: 1, min: 1n, max: 100n }),
        ).toEqual({ kind: 'rejected', found: { globalLast: 100n, grant: undefined } });
        expect(await store.grantRange(s.name, ctx.otherDc, 100n, theirs)).toEqual({
          kind: 'applied',
        });
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({ globalLast: 300n, latest: mine });
        expect(await store.readGrants(s.name, ctx.otherDc)).toEqual({
          globalLast: 300n,
          latest: theirs,
        });
        // ctx.dc's next grant must expect the GLOBAL value other DCs left.
        const next = { number: 2, min: 301n, max: 400n };
        expect(await store.grantRange(s.name, ctx.dc, 100n, next)).toEqual({
          kind: 'rejected',
          found: { globalLast: 300n, grant: undefined },
        });
        expect(await store.grantRange(s.name, ctx.dc, 300n, next)).toEqual({ kind: 'applied' });
      });

      it('keeps every grant: the overview lists each DC history in order, and GLOBAL', async () => {
        const s = await created();
        const grants = [
          [ctx.dc, 0n, { number: 1, min: 1n, max: 100n }],
          [ctx.otherDc, 100n, { number: 1, min: 101n, max: 200n }],
          [ctx.dc, 200n, { number: 2, min: 201n, max: 300n }],
          [ctx.dc, 300n, { number: 3, min: 301n, max: 350n }],
        ] as const;
        for (const [dc, expected, grant] of grants) {
          expect(await store.grantRange(s.name, dc, expected, grant)).toEqual({ kind: 'applied' });
        }
        await expect
          .poll(async () => overviewOf(await store.readGrantsOverview(s.name)), POLL)
          .toEqual({
            globalLast: 350n,
            grants: {
              [ctx.dc]: [
                { number: 1, min: 1n, max: 100n },
                { number: 2, min: 201n, max: 300n },
                { number: 3, min: 301n, max: 350n },
              ],
              [ctx.otherDc]: [{ number: 1, min: 101n, max: 200n }],
            },
          });
        // readGrants shows the latest of each DC.
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({
          globalLast: 350n,
          latest: { number: 3, min: 301n, max: 350n },
        });
        expect(await store.readGrants(s.name, ctx.otherDc)).toEqual({
          globalLast: 350n,
          latest: { number: 1, min: 101n, max: 200n },
        });
      });

      it('shows GLOBAL and no grants in the overview of a new sequence', async () => {
        const s = await created({ start: 10n });
        await expect
          .poll(async () => overviewOf(await store.readGrantsOverview(s.name)), POLL)
          .toEqual({ globalLast: 9n, grants: {} });
      });

      it('grants up to the largest bigint', async () => {
        const max = 2n ** 63n - 1n;
        const s = await created({ domain: 'int63', max, start: max - 9n });
        const grant = { number: 1, min: max - 9n, max };
        expect(await store.grantRange(s.name, ctx.dc, max - 10n, grant)).toEqual({
          kind: 'applied',
        });
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({ globalLast: max, latest: grant });
      });
    });

    describe('DC state (LOCAL_SERIAL)', () => {
      it('creates the state once; later writes need the stored version and op', async () => {
        const s = await created();
        const first = dcState({ min: 1n, max: 100n }, 1);
        expect(await store.readDcState(s.name, ctx.dc)).toBeUndefined();
        expect(await store.readDcStateLocal(s.name, ctx.dc)).toBeUndefined();
        expect(await store.writeDcState(s.name, ctx.dc, undefined, first)).toEqual({
          kind: 'applied',
        });
        const stamp = (state: DcState) => ({ version: state.version, op: state.op });
        expect(
          await store.writeDcState(s.name, ctx.dc, undefined, { ...first, op: randomUUID() }),
        ).toEqual({ kind: 'rejected', found: first });
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(first);

        const claim = { ...first, lastInteger: 10n, version: 2, op: randomUUID() };
        // The right version with another op is not the stored state. A rejection returns the
        // whole state the round found, for a claim to go on from.
        expect(
          await store.writeDcState(s.name, ctx.dc, { version: 1, op: 'other' }, claim),
        ).toEqual({ kind: 'rejected', found: first });
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(first);
        expect(await store.writeDcState(s.name, ctx.dc, stamp(first), claim)).toEqual({
          kind: 'applied',
        });
        // Our own write, if it came back through a second round, shows our op in `found`.
        expect(
          await store.writeDcState(s.name, ctx.dc, stamp(first), { ...claim, op: randomUUID() }),
        ).toEqual({ kind: 'rejected', found: claim });
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(claim);
        // A plain read after writes acknowledged at LOCAL_QUORUM shows the latest of them.
        expect(await store.readDcStateLocal(s.name, ctx.dc)).toEqual(claim);
      });

      it('keeps the incarnation a state was written with; a rejected update does not return it', async () => {
        const s = await created();
        const first = { ...dcState({ min: 1n, max: 100n }, 1), incarnation: 'create:a' };
        expect(await store.writeDcState(s.name, ctx.dc, undefined, first)).toEqual({
          kind: 'applied',
        });
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(first);
        expect(await store.readDcStateLocal(s.name, ctx.dc)).toEqual(first);
        // IF NOT EXISTS returns the whole row the round found, its incarnation with it.
        expect(
          await store.writeDcState(s.name, ctx.dc, undefined, { ...first, op: randomUUID() }),
        ).toEqual({ kind: 'rejected', found: first });
        const next = { ...first, lastInteger: 5n, version: 2, op: randomUUID() };
        expect(
          await store.writeDcState(s.name, ctx.dc, { version: 1, op: first.op }, next),
        ).toEqual({ kind: 'applied' });
        // An update's rejection returns the columns of its conditions only: no incarnation.
        const { incarnation, ...withoutIncarnation } = next;
        expect(incarnation).toBe('create:a');
        const rejected = await store.writeDcState(
          s.name,
          ctx.dc,
          { version: 1, op: first.op },
          {
            ...next,
            op: randomUUID(),
          },
        );
        expect(rejected).toEqual({ kind: 'rejected', found: withoutIncarnation });
        expect(rejected.kind === 'rejected' && rejected.found).not.toHaveProperty('incarnation');
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(next);
        // Only the first write writes it: an update leaves the row's, whatever it carries.
        const other = { ...next, version: 3, op: randomUUID(), incarnation: 'create:b' };
        expect(
          await store.writeDcState(s.name, ctx.dc, { version: 2, op: next.op }, other),
        ).toEqual({ kind: 'applied' });
        expect(await store.readDcState(s.name, ctx.dc)).toEqual({
          ...other,
          incarnation: 'create:a',
        });
      });

      it('reads the states of the grantees asked, of any sequence, only those found', async () => {
        const name = uniqueName('states_of');
        const state = { ...dcState({ min: 1n, max: 100n }, 1), incarnation: 'create:x' };
        const shard = `${ctx.dc}/2`;
        for (const dc of [ctx.dc, shard]) {
          expect(await store.writeDcState(name, dc, undefined, state)).toEqual({
            kind: 'applied',
          });
        }
        const found = await store.readDcStatesOf(name, [ctx.dc, `${ctx.dc}/1`, shard, ctx.otherDc]);
        expect([...found.keys()].sort()).toEqual([ctx.dc, shard].sort());
        expect(found.get(shard)).toEqual(state);
        expect((await store.readDcStatesOf(uniqueName('none'), [ctx.dc])).size).toBe(0);
      });

      it('keeps a DC-state partition apart from the grants partition: it needs no settings row', async () => {
        // As when an operator deleted a sequence's grants partition by hand and its DC-state
        // rows stayed behind: seed must still be able to see them (settings-writes.ts).
        const name = uniqueName('orphan');
        const state = { ...dcState({ min: 1n, max: 100n }, 1), incarnation: 'create:gone' };
        expect(await store.writeDcState(name, ctx.dc, undefined, state)).toEqual({
          kind: 'applied',
        });
        expect(await store.readSequence(name, 'serial')).toBeUndefined();
        expect(await store.readDcState(name, ctx.dc)).toEqual(state);
        expect(await store.readDcStateLocal(name, ctx.dc)).toEqual(state);
      });

      it('keeps versions beyond 2^31 exact: a long-lived DC never stops on its version', async () => {
        const s = await created();
        const old = { ...dcState({ min: 1n, max: 100n }, 2 ** 31 - 1) };
        await ctx.seedDcState(s.name, ctx.dc, old);
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(old);
        let current: DcState = old;
        for (let i = 0; i < 2; i++) {
          const next = {
            ...current,
            lastInteger: current.lastInteger + 1n,
            version: current.version + 1,
            op: randomUUID(),
          };
          expect(
            await store.writeDcState(
              s.name,
              ctx.dc,
              { version: current.version, op: current.op },
              next,
            ),
          ).toEqual({ kind: 'applied' });
          current = next;
        }
        expect(await store.readDcState(s.name, ctx.dc)).toEqual({
          ...current,
          version: 2 ** 31 + 1,
        });
      });

      it('stores every column, with a preloaded range and bigints near 2^63-1', async () => {
        const max = 2n ** 63n - 1n;
        const s = await created({ domain: 'int63', max, start: max - 999n });
        const first = dcState({ min: max - 999n, max: max - 500n }, 1);
        await store.writeDcState(s.name, ctx.dc, undefined, first);
        const preloaded: DcState = {
          lastInteger: max - 600n,
          reservedMin: max - 999n,
          reservedMax: max - 500n,
          reservedGrant: 1,
          preloadedMin: max - 499n,
          preloadedMax: max,
          installedGrant: 2,
          version: 2,
          op: randomUUID(),
        };
        expect(
          await store.writeDcState(s.name, ctx.dc, { version: 1, op: first.op }, preloaded),
        ).toEqual({
          kind: 'applied',
        });
        expect(await store.readDcState(s.name, ctx.dc)).toEqual(preloaded);
      });

      it('keeps DC states apart and shows them in the overview', async () => {
        const s = await created();
        const state = dcState({ min: 1n, max: 100n }, 1);
        await store.writeDcState(s.name, ctx.dc, undefined, state);
        await expect
          .poll(async () => Object.fromEntries(await store.readDcStatesOverview(s.name)), POLL)
          .toEqual({ [ctx.dc]: state });
        expect((await store.readDcStatesOverview(uniqueName('missing'))).size).toBe(0);
      });

      it('is independent of the grant level', async () => {
        const s = await created();
        await store.writeDcState(s.name, ctx.dc, undefined, dcState({ min: 1n, max: 100n }, 1));
        expect(await store.readGrants(s.name, ctx.dc)).toEqual({
          globalLast: 0n,
          latest: undefined,
        });
      });
    });

    describe('usage counters (plain counter writes)', () => {
      it('adds what processes report, per DC and cause, and reads every DC of a sequence', async () => {
        const s = await created();
        const other = await created();
        await store.addDcUsage(s.name, ctx.dc, { issued: 100, takeSkipped: 3 });
        await store.addDcUsage(s.name, ctx.dc, { issued: 50, notReturned: 7, dropped: 0 });
        await store.addDcUsage(s.name, ctx.otherDc, { unknownOutcome: 10 });
        await store.addDcUsage(other.name, ctx.dc, { issued: 1 });
        const zero = {
          issued: 0n,
          unknownOutcome: 0n,
          takeSkipped: 0n,
          notReturned: 0n,
          dropped: 0n,
          refused: 0n,
          undelivered: 0n,
          retired: 0n,
        };
        await store.addDcUsage(s.name, ctx.otherDc, { retired: 5 });
        await expect
          .poll(async () => {
            const usage = await store.readDcUsage(s.name);
            return usage && Object.fromEntries(usage);
          }, POLL)
          .toEqual({
            [ctx.dc]: { ...zero, issued: 150n, takeSkipped: 3n, notReturned: 7n },
            [ctx.otherDc]: { ...zero, unknownOutcome: 10n, retired: 5n },
          });
        expect(Object.fromEntries((await store.readDcUsage(uniqueName('none'))) ?? [])).toEqual({});
      });
    });

    async function created(overrides: Partial<SequenceSettings> = {}): Promise<SequenceSettings> {
      const settings = sequenceSettings(overrides);
      expect(await store.createSequence(settings, randomUUID())).toEqual({ kind: 'applied' });
      return settings;
    }
  });
}

function uniqueName(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

function sequenceSettings(overrides: Partial<SequenceSettings> = {}): SequenceSettings {
  return {
    name: uniqueName('contract'),
    domain: 'safe53',
    min: 1n,
    max: 2n ** 53n - 1n,
    start: 1n,
    dcRangeSize: 100n,
    blockSize: 10,
    threshold: 0.5,
    maxBlockSize: 10,
    claimIntervalMs: 2_000,
    maxDcRangeSize: 100n,
    autonomySeconds: 0,
    shards: 1,
    ...overrides,
  };
}

function dcState(grant: Omit<Grant, 'number'>, version: number): DcState {
  return {
    lastInteger: grant.min - 1n,
    reservedMin: grant.min,
    reservedMax: grant.max,
    reservedGrant: 1,
    preloadedMin: grant.min,
    preloadedMax: grant.max,
    installedGrant: 1,
    version,
    op: randomUUID(),
  };
}

function overviewOf(
  overview: Awaited<ReturnType<IdStore['readGrantsOverview']>>,
): { globalLast: bigint; grants: Record<string, readonly Grant[]> } | undefined {
  return (
    overview && { globalLast: overview.globalLast, grants: Object.fromEntries(overview.grants) }
  );
}
