/**
 * The read side: checkSequence on hand-made overview data (one case per kind of violation),
 * the status maths (left, rate, runway, domain used), and Admin over a MemoryStore.
 */
import { describe, expect, it } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import { checkSequence, type ViolationKind } from '../../src/admin/check.js';
import { sequenceStatus, type SequenceSnapshot } from '../../src/admin/status.js';
import { renderStatus, statusJson, statusOutcome } from '../../src/cli/status-view.js';
import { SequenceNotFoundError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { DcState, Grant, SequenceSettings } from '../../src/store/port.js';
import {
  dcState,
  draw,
  EACH_QUORUM_FAILS,
  eachQuorumFails,
  KEYSPACE,
  processIn,
  withSequence,
} from './fixtures.js';

const SETTINGS: SequenceSettings = Object.freeze({
  name: 'orders',
  domain: 'custom',
  min: 1n,
  max: 1000n,
  start: 1n,
  dcRangeSize: 100n,
  blockSize: 10,
  threshold: 0.5,
  maxBlockSize: 10,
  claimIntervalMs: 2_000,
  maxDcRangeSize: 100n,
  autonomySeconds: 0,
  shards: 1,
});

function grant(number: number, min: bigint, max: bigint): Grant {
  return { number, min, max };
}

/**
 * A consistent sequence: dc1 has grants 1 and 2 (2 preloaded), dc2 has grant 1 with nothing
 * preloaded, GLOBAL at 300.
 */
function snapshot(overrides: Partial<SequenceSnapshot> = {}): SequenceSnapshot {
  return {
    settings: SETTINGS,
    globalLast: 300n,
    grants: new Map([
      ['dc1', [grant(1, 1n, 100n), grant(2, 201n, 300n)]],
      ['dc2', [grant(1, 101n, 200n)]],
    ]),
    states: new Map([
      [
        'dc1',
        dcState({
          lastInteger: 80n,
          installedGrant: 2,
          preloadedMin: 201n,
          preloadedMax: 300n,
          version: 9,
        }),
      ],
      [
        'dc2',
        dcState({
          lastInteger: 150n,
          reservedMin: 101n,
          reservedMax: 200n,
          preloadedMin: 101n,
          preloadedMax: 200n,
        }),
      ],
    ]),
    readAt: 1_000_000,
    ...overrides,
  };
}

/** `snapshot()` with dc's state changed. */
function withState(dc: string, changes: Partial<DcState>): SequenceSnapshot {
  const base = snapshot();
  const states = new Map(base.states);
  states.set(dc, { ...(states.get(dc) ?? dcState()), ...changes });
  return { ...base, states };
}

/** `snapshot()` with dc's grants replaced. */
function withGrants(dc: string, grants: readonly Grant[]): SequenceSnapshot {
  const base = snapshot();
  const map = new Map(base.grants);
  map.set(dc, grants);
  return { ...base, grants: map };
}

function kinds(s: SequenceSnapshot): ViolationKind[] {
  return checkSequence(s).map((v) => v.kind);
}

describe('checkSequence', () => {
  it('finds nothing in consistent rows', () => {
    expect(checkSequence(snapshot())).toEqual([]);
  });

  it('accepts a sequence no DC has drawn from, and a first grant not installed yet', () => {
    expect(
      checkSequence(snapshot({ globalLast: 0n, grants: new Map(), states: new Map() })),
    ).toEqual([]);
    const base = snapshot();
    const grants = new Map(base.grants).set('dc3', [grant(1, 301n, 400n)]);
    expect(checkSequence({ ...base, grants, globalLast: 400n })).toEqual([]);
  });

  it('reports settings that break the creation rules', () => {
    const s = snapshot({ settings: { ...SETTINGS, threshold: 1.5 } });
    const [violation, ...rest] = checkSequence(s);
    expect(rest).toEqual([]);
    expect(violation).toMatchObject({
      kind: 'settings-invalid',
      sequence: 'orders',
      dc: undefined,
    });
    expect(violation?.message).toContain('threshold 1.5');
  });

  it('reports GLOBAL last_integer outside [start - 1, max]', () => {
    expect(kinds(snapshot({ globalLast: 1001n }))).toEqual(['global-outside-domain']);
    const belowStart = snapshot({
      settings: { ...SETTINGS, start: 500n },
      globalLast: 10n,
      grants: new Map(),
      states: new Map(),
    });
    const [violation] = checkSequence(belowStart);
    expect(violation?.kind).toBe('global-outside-domain');
    expect(violation?.message).toContain('[499, 1000]');
  });

  it('reports a grant with min above max', () => {
    expect(kinds(withGrants('dc2', [grant(1, 200n, 101n)]))).toEqual([
      'grant-malformed',
      'reserved-mismatch',
    ]);
  });

  it('reports a grant outside [start, max]', () => {
    // start 51: dc1's grant 1 [1, 100] reaches below it, and so does dc1's reserved range.
    const s = snapshot({ settings: { ...SETTINGS, start: 51n } });
    const violations = checkSequence(s);
    expect(violations.map((v) => v.kind)).toEqual(['grant-outside-domain', 'range-outside-domain']);
    expect(violations[0]).toMatchObject({ dc: 'dc1' });
    expect(violations[0]?.message).toBe(
      'orders: grant #1 of dc1 [1, 100] is outside [start, max] = [51, 1000]',
    );
  });

  it('reports a grant ending above GLOBAL last_integer', () => {
    const violations = checkSequence(snapshot({ globalLast: 250n }));
    // dc1's state preloads that grant: it holds IDs above GLOBAL too (the DC-state list's rule).
    expect(violations.map((v) => v.kind)).toEqual(['grant-above-global', 'state-above-global']);
    expect(violations[0]?.message).toContain('grant #2 of dc1 [201, 300]');
    expect(violations[0]?.message).toContain('250');
  });

  it('reports grants of two DCs that overlap', () => {
    const base = withGrants('dc2', [grant(1, 90n, 200n)]);
    const states = new Map(base.states);
    states.set(
      'dc2',
      dcState({
        reservedMin: 90n,
        reservedMax: 200n,
        preloadedMin: 90n,
        preloadedMax: 200n,
        lastInteger: 150n,
      }),
    );
    const violations = checkSequence({ ...base, states });
    expect(violations.map((v) => v.kind)).toEqual(['grants-overlap']);
    expect(violations[0]?.message).toBe(
      'orders: grant #1 of dc2 [90, 200] overlaps grant #1 of dc1 [1, 100]',
    );
  });

  it('reports grants of one DC that overlap, and overlaps hidden behind a long grant', () => {
    // dc1's grant 2 [50, 300] covers dc2's [101, 200] too.
    const s = withGrants('dc1', [grant(1, 1n, 100n), grant(2, 50n, 300n)]);
    const states = new Map(s.states);
    states.set(
      'dc1',
      dcState({ lastInteger: 80n, installedGrant: 2, preloadedMin: 50n, preloadedMax: 300n }),
    );
    const violations = checkSequence({ ...s, states });
    expect(violations.map((v) => `${v.kind} ${v.dc}`)).toEqual([
      'grants-overlap dc1',
      'grants-overlap dc2',
      'preloaded-mismatch dc1', // its preloaded [50, 300] does not lie above its reserved [1, 100]
    ]);
  });

  it('reports grant numbers that are not the chain 1, 2, 3…', () => {
    const s = withGrants('dc1', [grant(1, 1n, 100n), grant(3, 201n, 300n)]);
    // dc1's state preloads grant 2, which is missing from the chain.
    expect(kinds(s)).toEqual(['grant-chain-broken', 'state-without-grant']);
  });

  it('reports a state whose grant the DC does not have', () => {
    const base = snapshot();
    const states = new Map(base.states).set(
      'dc3',
      dcState({
        lastInteger: 300n,
        reservedMin: 301n,
        reservedMax: 400n,
        preloadedMin: 301n,
        preloadedMax: 400n,
      }),
    );
    const violations = checkSequence({ ...base, states });
    expect(violations.map((v) => `${v.kind} ${v.dc}`)).toEqual([
      'state-above-global dc3', // [301, 400] above GLOBAL 300
      'installed-grant-ahead dc3',
      'state-without-grant dc3',
    ]);
  });

  it('reports a reserved range that differs from its grant', () => {
    const violations = checkSequence(withState('dc2', { reservedMax: 199n, preloadedMax: 199n }));
    expect(violations.map((v) => v.kind)).toEqual(['reserved-mismatch']);
    expect(violations[0]?.message).toBe(
      "orders: dc2's reserved range [101, 199] differs from its grant #1 [101, 200]",
    );
  });

  it('reports a preloaded range that differs from its grant or from the reserved range', () => {
    expect(kinds(withState('dc1', { preloadedMax: 299n }))).toEqual(['preloaded-mismatch']);
    // Nothing preloaded (installed = reserved), yet preloaded differs from reserved.
    expect(kinds(withState('dc2', { preloadedMin: 201n, preloadedMax: 300n }))).toEqual([
      'preloaded-mismatch',
    ]);
    // installed_grant below reserved_grant.
    expect(
      kinds(
        withState('dc1', {
          reservedGrant: 2,
          reservedMin: 201n,
          reservedMax: 300n,
          lastInteger: 210n,
          installedGrant: 1,
        }),
      ),
    ).toEqual(['grant-numbers-invalid']);
  });

  it('reports last_integer outside [reserved_min - 1, reserved_max]', () => {
    expect(kinds(withState('dc2', { lastInteger: 201n }))).toEqual([
      'last-integer-outside-reserved',
    ]);
    expect(kinds(withState('dc2', { lastInteger: 99n }))).toEqual([
      'last-integer-outside-reserved',
    ]);
    expect(kinds(withState('dc2', { lastInteger: 100n }))).toEqual([]); // nothing claimed yet
  });

  it('reports installed_grant above the latest grant', () => {
    const violations = checkSequence(
      withState('dc2', { installedGrant: 2, preloadedMin: 301n, preloadedMax: 400n }),
    );
    expect(violations.map((v) => v.kind)).toEqual([
      'state-above-global', // the preloaded [301, 400] lies above GLOBAL 300
      'installed-grant-ahead',
      'state-without-grant',
    ]);
    expect(violations[1]?.message).toBe(
      "orders: dc2's state has installed_grant 2 but its latest grant is #1",
    );
  });

  it('reports more than one grant waiting to be installed', () => {
    const base = withGrants('dc2', [
      grant(1, 101n, 200n),
      grant(2, 301n, 400n),
      grant(3, 401n, 500n),
    ]);
    expect(kinds({ ...base, globalLast: 500n })).toEqual(['grants-outstanding']);
    // Grants 1 and 2 but no state at all.
    const states = new Map(base.states);
    states.delete('dc2');
    const grants = new Map(base.grants).set('dc2', [grant(1, 101n, 200n), grant(2, 301n, 400n)]);
    const violations = checkSequence({ ...base, grants, states, globalLast: 500n });
    expect(violations.map((v) => v.kind)).toEqual(['grants-outstanding']);
    expect(violations[0]?.message).toContain('no DC state');
  });

  it('reports every violation, not just the first', () => {
    const s = withState('dc2', { lastInteger: 500n, reservedMax: 199n, preloadedMax: 199n });
    // Sequence-wide first, then the DC state's in the order of allocator/dc-state.ts.
    expect(kinds({ ...s, globalLast: 250n })).toEqual([
      'grant-above-global',
      'state-above-global',
      'last-integer-outside-reserved',
      'reserved-mismatch',
    ]);
  });
});

describe('sequenceStatus', () => {
  it('computes the domain used and left from GLOBAL', () => {
    const status = sequenceStatus(snapshot());
    expect(status.globalLast).toBe(300n);
    expect(status.granted).toBe(300n);
    expect(status.domainSize).toBe(1000n);
    expect(status.domainUsedShare).toBe(0.3);
    expect(status.domainLeft).toBe(700n);
    expect(status.sampledOverMs).toBeUndefined();
  });

  it('counts IDs below start as used (a migrated IDENTITY column)', () => {
    const status = sequenceStatus(
      snapshot({
        settings: { ...SETTINGS, start: 201n },
        globalLast: 250n,
        grants: new Map(),
        states: new Map(),
      }),
    );
    expect(status.granted).toBe(50n);
    expect(status.domainUsedShare).toBe(0.25);
  });

  it('computes per DC the ranges, IDs left and reserved share used', () => {
    const [dc1, dc2] = sequenceStatus(snapshot()).dcs;
    // dc1: 20 left in reserved [1, 100] at 80, plus the preloaded [201, 300].
    expect(dc1).toMatchObject({
      dc: 'dc1',
      reserved: { grant: 1, min: 1n, max: 100n },
      preloaded: { grant: 2, min: 201n, max: 300n },
      pendingGrant: undefined,
      lastInteger: 80n,
      reservedUsed: 80n,
      reservedUsedShare: 0.8,
      left: 120n,
      consumed: 80n,
      rate: undefined,
      runway: undefined,
    });
    // dc2: nothing preloaded; 50 of [101, 200] used.
    expect(dc2).toMatchObject({ preloaded: undefined, left: 50n, reservedUsedShare: 0.5 });
  });

  it('measures the rate between two snapshots, across a switch to the preloaded range', () => {
    const before = snapshot();
    // dc1 used up [1, 100], switched to grant 2 and claimed up to 220; 2 s later.
    const after = {
      ...withState('dc1', {
        lastInteger: 220n,
        reservedGrant: 2,
        reservedMin: 201n,
        reservedMax: 300n,
      }),
      readAt: before.readAt + 2_000,
    };
    const status = sequenceStatus(after, before);
    const dc1 = status.dcs.find((dc) => dc.dc === 'dc1')!;
    expect(status.sampledOverMs).toBe(2_000);
    expect(dc1.consumed).toBe(120n); // 100 of grant 1 + 20 of grant 2
    expect(dc1.rate).toBe(20); // (120 - 80) IDs in 2 s
    expect(dc1.left).toBe(80n);
    expect(dc1.runway).toBe(4); // 80 IDs at 20/s
    expect(dc1.preloaded).toBeUndefined();
  });

  it('reports an infinite runway at rate 0, and none for an empty DC', () => {
    const before = snapshot();
    const status = sequenceStatus({ ...before, readAt: before.readAt + 1_000 }, before);
    const dc2 = status.dcs.find((dc) => dc.dc === 'dc2')!;
    expect(dc2.rate).toBe(0);
    expect(dc2.runway).toBe(Infinity);
    const empty = withState('dc2', { lastInteger: 200n });
    const spent = sequenceStatus({ ...empty, readAt: before.readAt + 1_000 }, empty);
    expect(spent.dcs.find((dc) => dc.dc === 'dc2')).toMatchObject({ left: 0n, runway: 0 });
  });

  it('reports a spent domain as lasting 0 s, not for ever at rate 0', () => {
    const settings = { ...SETTINGS, max: 300n };
    const spent = snapshot({
      settings,
      states: new Map([
        [
          'dc1',
          dcState({
            ...{ reservedMin: 201n, reservedMax: 300n, reservedGrant: 2 },
            installedGrant: 2,
            preloadedMin: 201n,
            preloadedMax: 300n,
            lastInteger: 300n,
          }),
        ],
        [
          'dc2',
          dcState({
            reservedMin: 101n,
            reservedMax: 200n,
            preloadedMin: 101n,
            preloadedMax: 200n,
            lastInteger: 200n,
          }),
        ],
      ]),
    });
    const status = sequenceStatus({ ...spent, readAt: spent.readAt + 1_000 }, spent);
    expect(status.dcs.map((dc) => dc.left)).toEqual([0n, 0n]);
    expect(status.exhaustsIn).toBe(0);
    // IDs still held, nobody drawing: those last for ever at rate 0.
    const held = sequenceStatus({ ...snapshot(), readAt: spent.readAt + 1_000 }, snapshot());
    expect(held.exhaustsIn).toBe(Infinity);
  });

  it('lists grantees by DC, then shard number', () => {
    const names = ['us/10', 'us-east/1', 'us', 'us/2', 'us-east', 'us/1'];
    const status = sequenceStatus(
      snapshot({ grants: new Map(), states: new Map() }),
      undefined,
      names,
    );
    expect(status.dcs.map((dc) => dc.dc)).toEqual([
      'us',
      'us/1',
      'us/2',
      'us/10',
      'us-east',
      'us-east/1',
    ]);
  });

  it('never reports a negative rate when a closing process returns its block', () => {
    const before = snapshot();
    const after = { ...withState('dc2', { lastInteger: 120n }), readAt: before.readAt + 1_000 };
    expect(sequenceStatus(after, before).dcs.find((dc) => dc.dc === 'dc2')?.rate).toBe(0);
  });

  it('lists DCs without grants or state, and grants not installed yet', () => {
    const base = snapshot();
    const grants = new Map(base.grants).set('dc3', [grant(1, 301n, 400n)]);
    const status = sequenceStatus({ ...base, grants, globalLast: 400n }, undefined, ['dc4']);
    expect(status.dcs.map((dc) => dc.dc)).toEqual(['dc1', 'dc2', 'dc3', 'dc4']);
    // A DC with no state and its grant 1 (a first range granted at creation, or one whose
    // requester died) holds it: its first process installs it after a plain read, without SERIAL.
    expect(status.dcs[2]).toMatchObject({
      reserved: undefined,
      pendingGrant: { number: 1, min: 301n, max: 400n },
      left: 100n,
      runway: undefined, // its rate is not measured without a second snapshot
    });
    expect(status.dcs[3]).toMatchObject({ grants: [], reserved: undefined, left: 0n });
    const later = { ...base, grants, globalLast: 400n, readAt: base.readAt + 1_000 };
    const again = sequenceStatus(later, { ...base, grants, globalLast: 400n });
    expect(again.dcs[2]).toMatchObject({ left: 100n, rate: 0, runway: Infinity });
  });

  it('does not count a later grant not installed yet as held: a DC with a state finds it at SERIAL', () => {
    const base = withState('dc2', { lastInteger: 200n });
    const grants = new Map(base.grants).set('dc2', [
      ...(base.grants.get('dc2') ?? []),
      grant(9, 901n, 1_000n),
    ]);
    const dc2 = sequenceStatus({ ...base, grants }, undefined).dcs.find((dc) => dc.dc === 'dc2');
    expect(dc2).toMatchObject({ pendingGrant: { number: 9 }, left: 0n });
  });
});

describe('Admin over a MemoryStore', () => {
  function adminOf(store: MemoryStore, dc = 'dc1'): Admin {
    return new Admin({
      store,
      dc,
      keyspace: KEYSPACE,
      hosts: () => [
        { address: '10.0.0.2:9042', dc: 'dc2', up: false },
        { address: '10.0.0.1:9042', dc: 'dc1', up: true },
      ],
    });
  }

  it('reports what processes of two DCs drew, with rates, SERIAL and hosts', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    const dc2 = processIn(store, 'dc2');
    for (let i = 0; i < 5; i++) await ids.sequence('orders').next();
    await dc2.sequence('orders').next();
    // Closing returns the unused IDs: last_integer is then exactly what was drawn.
    await Promise.all([ids.close(), dc2.close()]);

    const admin = adminOf(store);
    const report = await admin.status({ sampleMs: 5 });
    expect(report.serial).toMatchObject({ reachable: true, dc: 'dc1', error: undefined });
    expect(report.hosts.map((h) => h.dc)).toEqual(['dc1', 'dc2']);
    const [orders] = report.sequences;
    expect(orders?.dcs.map((dc) => [dc.dc, dc.lastInteger, dc.left])).toEqual([
      ['dc1', 5n, 95n],
      ['dc2', 101n, 99n],
    ]);
    expect(orders?.dcs.every((dc) => dc.rate === 0 && dc.runway === Infinity)).toBe(true);
    expect(orders?.sampledOverMs).toBeGreaterThan(0);
  });

  it('measures rates since an earlier report', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.sequence('orders').next();
    await ids.close();
    const admin = adminOf(store);
    const first = await admin.status({ sampleMs: 0 });
    expect(first.sequences[0]?.dcs[0]?.rate).toBeUndefined();

    const later = processIn(store);
    for (let i = 0; i < 25; i++) await later.sequence('orders').next();
    await later.close();
    await new Promise((resolve) => setTimeout(resolve, 10));
    const second = await admin.status({ since: first });
    const dc1 = second.sequences[0]?.dcs[0];
    expect(dc1?.consumed).toBe(26n);
    const seconds = (second.sequences[0]!.sampledOverMs ?? 0) / 1000;
    expect(dc1?.rate).toBeCloseTo(25 / seconds);
    expect(dc1?.runway).toBeCloseTo(74 / (25 / seconds));
  });

  it("marks a cut-off DC's rows not current, its runway unknown (not unbounded), and fails --fail-if-runway-below on it", async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const dc1 = processIn(store);
    const dc3 = processIn(store, 'dc3');
    await dc1.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    await draw(dc1.sequence('orders'), 5);
    await draw(dc3.sequence('orders'), 5);
    await Promise.all([dc1.close(), dc3.close()]);
    // From dc1 while dc3 is cut off: the EACH_QUORUM read of the DC states fails.
    const admin = new Admin({ store: eachQuorumFails(store), dc: 'dc1', keyspace: KEYSPACE });
    store.resetCalls();
    const report = await admin.status({ sampleMs: 5 });
    const [orders] = report.sequences;
    const [own, cutOff] = orders!.dcs;
    // The local DC reads its own rows current at LOCAL_QUORUM: unchanged.
    expect(own).toMatchObject({ dc: 'dc1', rowsNotCurrent: undefined, rate: 0, runway: Infinity });
    expect(cutOff).toMatchObject({ dc: 'dc3', left: 995n, rate: undefined, runway: undefined });
    expect(cutOff?.rowsNotCurrent).toBe(
      `not read current from dc1 (EACH_QUORUM read failed: ${EACH_QUORUM_FAILS})`,
    );
    expect(orders?.exhaustsIn).toBeUndefined();
    // No serial read of any state, no write.
    expect(store.calls).toMatchObject({ readDcState: 0, writeDcState: 0, readGrants: 0 });

    const outcome = statusOutcome(report, 3_600);
    expect(outcome).toMatchObject({ code: 'IDGEN_STATUS_RUNWAY_LOW', exitCode: 14 });
    expect(outcome?.message).toBe(
      `runway unknown from dc1: "orders" in dc3: their rows were not read current from dc1 (EACH_QUORUM read failed: ${EACH_QUORUM_FAILS}), and may lag. A DC cut off from the others is judged by the status run in that DC: run this check in every DC.`,
    );
    expect(statusOutcome(report)).toBeUndefined(); // not judged without the option

    const text = renderStatus(report).join('\n');
    expect(text).toMatch(/^ {2}dc3 +#1 \[1001, 2000\] .* 995 +\? +unknown +rows not current$/m);
    expect(text).toContain(
      `  rows not current: dc3: not read current from dc1 (EACH_QUORUM read failed: ${EACH_QUORUM_FAILS}); what they show may be old, their runway is unknown here (run status in that DC)`,
    );
    const dcs = (statusJson(report)['sequences'] as { dcs: Record<string, unknown>[] }[])[0]!.dcs;
    expect(dcs.map((dc) => [dc['dc'], dc['runwaySeconds'], dc['rowsNotCurrent']])).toEqual([
      ['dc1', null, null],
      ['dc3', null, cutOff?.rowsNotCurrent],
    ]);

    // Every DC reachable: the same rows read current, runway unbounded, exit 0.
    const healed = await new Admin({ store, dc: 'dc1', keyspace: KEYSPACE }).status({
      sampleMs: 5,
    });
    expect(healed.sequences[0]?.dcs.map((dc) => [dc.dc, dc.runway, dc.rowsNotCurrent])).toEqual([
      ['dc1', Infinity, undefined],
      ['dc3', Infinity, undefined],
    ]);
    expect(statusOutcome(healed, 3_600)).toBeUndefined();
  });

  it("reads each other DC's rows through its own nodes when EACH_QUORUM fails, and marks only those it could not reach", async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const dc1 = processIn(store);
    const dc2 = processIn(store, 'dc2');
    const dc3 = processIn(store, 'dc3');
    await dc1.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    await draw(dc1.sequence('orders'), 5);
    await draw(dc2.sequence('orders'), 5);
    await draw(dc3.sequence('orders'), 5);
    // What dc1's replicas hold of dc2 lags: dc2's state before its last claims.
    const lagging = (await store.readDcStatesOverview('orders')).get('dc2')!;
    await draw(dc2.sequence('orders'), 20);
    await Promise.all([dc1.close(), dc2.close(), dc3.close()]);
    const local = eachQuorumFails(store, (states) => states.set('dc2', lagging));
    const asked: string[] = [];
    const admin = new Admin({
      store: local,
      dc: 'dc1',
      keyspace: KEYSPACE,
      hosts: () => ['dc1', 'dc2', 'dc3'].map((dc) => ({ address: `${dc}-1`, dc, up: true })),
      statesInDc: async (dc, name) => {
        asked.push(dc);
        if (dc === 'dc3') throw new Error('connection refused');
        // dc2's nodes: its own row current, another DC's (left out) from long ago.
        const theirs = new Map(await store.readDcStatesOverview(name));
        theirs.set('dc3', lagging);
        return theirs;
      },
    });
    const report = await admin.status({ sampleMs: 5 });
    const [orders] = report.sequences;
    expect(
      orders?.dcs.map((dc) => [dc.dc, dc.lastInteger, dc.rowsNotCurrent === undefined]),
    ).toEqual([
      ['dc1', 5n, true],
      ['dc2', 1025n, true],
      ['dc3', 2005n, false],
    ]);
    expect(orders?.dcs[1]).toMatchObject({ rate: 0, runway: Infinity });
    expect(orders?.dcs[2]?.rowsNotCurrent).toBe(
      `not read current from dc1 (EACH_QUORUM read failed: ${EACH_QUORUM_FAILS}; its own nodes not reached either: connection refused)`,
    );
    // Both reads of the sample asked dc2; dc3, not reached in the first, was not tried again.
    expect(asked.sort()).toEqual(['dc2', 'dc2', 'dc3']);
    const text = renderStatus(report).join('\n');
    expect(text).toContain('  rows not current: dc3: not read current from dc1 (');

    // Without a way to other DCs' nodes, every other DC is marked, dc2 with its lagging row.
    const alone = await new Admin({ store: local, dc: 'dc1', keyspace: KEYSPACE }).status({
      sampleMs: 0,
    });
    expect(alone.sequences[0]?.dcs.map((dc) => dc.rowsNotCurrent === undefined)).toEqual([
      true,
      false,
      false,
    ]);
  });

  it('reports SERIAL unreachable, and still reads the overview', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.sequence('orders').next();
    store.faults.push({ op: 'probeSerial', effect: 'unavailable', times: Infinity });
    const report = await adminOf(store).status({ sampleMs: 0 });
    expect(report.serial.reachable).toBe(false);
    expect(report.serial.error).toContain('SERIAL');
    expect(report.sequences[0]?.dcs[0]?.left).toBe(90n);
    await ids.close();
  });

  it("probes SERIAL on a partition of its own, never on a sequence's grants", async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.sequence('orders').next();
    await ids.close();
    store.resetCalls();
    const report = await adminOf(store).status({ sampleMs: 0 });
    expect(report.serial.reachable).toBe(true);
    expect(store.calls.probeSerial).toBe(1);
    // No Paxos round on a sequence's partition: no SERIAL read, no write.
    expect(store.calls).toMatchObject({ readGrants: 0, grantRange: 0, readDcState: 0 });
    expect(store.calls).toMatchObject({ writeDcState: 0, createSequence: 0, alterSequence: 0 });
  });

  it('counts a SERIAL probe without answer as unreachable', async () => {
    const store = new MemoryStore();
    store.faults.push({ op: 'probeSerial', effect: 'delay', until: new Promise(() => undefined) });
    const probe = await adminOf(store).probeSerial({ timeoutMs: 20 });
    expect(probe).toMatchObject({ reachable: false, error: 'no answer within 20 ms' });
  });

  it('counts a probe that gets through Paxos as reachable, on an empty keyspace too', async () => {
    const probe = await adminOf(new MemoryStore()).probeSerial();
    expect(probe).toMatchObject({ reachable: true, dc: 'dc1', error: undefined });
  });

  it('checks stored rows on consistent reads: a broken row is a confirmed violation', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 100, blockSize: 10 });
    await ids.sequence('orders').next();
    await ids.close();
    const admin = adminOf(store);
    expect(await admin.check('orders')).toMatchObject({
      verdict: 'ok',
      violations: [],
      unverified: [],
    });

    const state = (await store.readDcState('orders', 'dc1'))!;
    const broken = { ...state, lastInteger: 150n, version: state.version + 1 };
    await store.writeDcState('orders', 'dc1', { version: state.version, op: state.op }, broken);
    store.resetCalls();
    const result = await admin.check('orders', { confirmAfterMs: 1 });
    expect(result.verdict).toBe('violated');
    expect(result.violations.map((v) => [v.kind, v.confirmed])).toEqual([
      ['last-integer-outside-reserved', true],
    ]);
    expect(result.snapshot.states.get('dc1')?.lastInteger).toBe(150n);
    // States, grants, states again; confirmed at once, so no second reading.
    expect(store.calls).toMatchObject({ readDcStatesOverview: 2, readGrantsOverview: 1 });
  });

  it('finds at SERIAL a sequence whose create was committed in other DCs only, for check and status', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    await processIn(store, 'dc2').createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    const admin = new Admin({ store, dc: 'dc1', keyspace: KEYSPACE });
    const missed = () =>
      store.faults.push({ op: 'readSequence', effect: 'missed-locally', sequence: 'orders' });
    missed();
    expect((await admin.check('orders', { confirmAfterMs: 0 })).verdict).toBe('ok');
    missed();
    const report = await admin.status({ sequences: ['orders'], sampleMs: 0 });
    expect(report.sequences.map((s) => s.settings.name)).toEqual(['orders']);
  });

  it('measures no rate across a retire, and counts its gap as retired, not unreported', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const ids = processIn(store);
    await ids.createSequence('orders', { dcRangeSize: 100_000, blockSize: 100, threshold: 0.5 });
    await draw(ids.sequence('orders'), 250);
    await ids.close(); // reports 250 issued, returns the rest of its block
    const admin = new Admin({ store, dc: 'dc1', keyspace: KEYSPACE });
    const before = await admin.snapshot('orders');
    const [retired] = await processIn(store).retireDcRanges('orders');
    expect(retired).toMatchObject({ outcome: 'retired', gap: 99_750n });
    const after = await admin.snapshot('orders');
    const [dc1] = sequenceStatus({ ...after, readAt: before.readAt + 1_000 }, before).dcs;
    expect(dc1?.rate).toBe(0);
    expect(dc1?.usage).toMatchObject({ issued: 250n, wastedTotal: 99_750n, unreported: 0n });
    expect(dc1?.usage?.wasted.retired).toBe(99_750n);
    // Counters unread (a keyspace from before them): the retire's op leaves the rate unmeasured.
    const noUsage = { ...after, usage: undefined, readAt: before.readAt + 1_000 };
    expect(sequenceStatus(noUsage, { ...before, usage: undefined }).dcs[0]?.rate).toBeUndefined();
  });

  it('throws SequenceNotFoundError for an unknown sequence', async () => {
    const admin = adminOf(new MemoryStore());
    await expect(admin.status({ sequences: ['nope'], sampleMs: 0 })).rejects.toBeInstanceOf(
      SequenceNotFoundError,
    );
    await expect(admin.check('nope')).rejects.toBeInstanceOf(SequenceNotFoundError);
  });

  it('refuses a SERIAL probe timeout of 0, which no probe meets (SERIAL would read unreachable)', async () => {
    await expect(
      adminOf(new MemoryStore()).status({ sampleMs: 0, serialTimeoutMs: 0 }),
    ).rejects.toThrow('Invalid option "serialTimeoutMs": received 0');
  });

  it('refuses a negative sample window, naming the option', async () => {
    await expect(adminOf(new MemoryStore()).status({ sampleMs: -1 })).rejects.toThrow(
      'Invalid option "sampleMs": received -1',
    );
  });

  it('refuses options it cannot honour, each with IDGEN_INVALID_OPTION naming it', async () => {
    const { store, ids } = await withSequence({});
    await ids.close();
    const admin = adminOf(store);
    const invalid = (option: string) =>
      expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option });
    // Before: a misspelt key was ignored (its default used); 'orders' as a string, a `since`
    // that is no report and a signal that is no AbortSignal threw TypeErrors, and the signal
    // one more, uncaught, from a timer callback after the call had failed.
    await expect(admin.status({ sample: 10 } as never)).rejects.toThrow(invalid('sample'));
    await expect(admin.status({ sequences: 'orders' as never })).rejects.toThrow(
      invalid('sequences'),
    );
    await expect(admin.status({ since: {} as never })).rejects.toThrow(invalid('since'));
    await expect(admin.status({ sampleMs: 5, signal: true as never })).rejects.toThrow(
      invalid('signal'),
    );
    await expect(admin.check('orders', { confirmAfter: 5 } as never)).rejects.toThrow(
      invalid('confirmAfter'),
    );
    // A probe bounded by a timeout below 0 (or none that is a number) would count SERIAL
    // unreachable whatever its state.
    for (const timeoutMs of [-5, 0, 'x']) {
      await expect(admin.probeSerial({ timeoutMs: timeoutMs as never })).rejects.toThrow(
        invalid('timeoutMs'),
      );
    }
    await expect(admin.probeSerial({ timeout: 5 } as never)).rejects.toThrow(invalid('timeout'));
    // What they take still works.
    const report = await admin.status({ sequences: ['orders'], sampleMs: 0 });
    expect((await admin.status({ since: report })).sequences).toHaveLength(1);
    expect((await admin.check('orders', { confirmAfterMs: 0 })).verdict).toBe('ok');
    expect((await admin.probeSerial({ timeoutMs: 1_000 })).reachable).toBe(true);
  });
});
