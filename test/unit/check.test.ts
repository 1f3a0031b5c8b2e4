/**
 * `check` on reads that cannot be stale (defect 8): which read each rule uses, confirmed and
 * unconfirmed violations, verdicts, and Admin.check over a store whose consistent reads fail the
 * way they do during a partition (EACH_QUORUM for every DC's state, SERIAL from a minority).
 */
import { describe, expect, it, vi } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import {
  checkSequence,
  checkVerdict,
  describeUnverified,
  type CheckSnapshot,
  type UnverifiedFact,
  type Violation,
} from '../../src/admin/check.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { DcState, Grant, OverviewReading, SequenceSettings } from '../../src/store/port.js';
import { dcState, KEYSPACE, processIn } from './fixtures.js';

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

/** dc1: grant 1 [1, 100] in use; dc2: grants 1 [101, 200] and 2 [201, 300], 2 preloaded. */
function snapshot(overrides: Partial<CheckSnapshot> = {}): CheckSnapshot {
  return {
    settings: SETTINGS,
    globalLast: 300n,
    grants: new Map([
      ['dc1', [grant(1, 1n, 100n)]],
      ['dc2', [grant(1, 101n, 200n), grant(2, 201n, 300n)]],
    ]),
    states: new Map([
      ['dc1', dcState({ lastInteger: 50n })],
      [
        'dc2',
        dcState({
          lastInteger: 180n,
          reservedMin: 101n,
          reservedMax: 200n,
          preloadedMin: 201n,
          preloadedMax: 300n,
          installedGrant: 2,
        }),
      ],
    ]),
    readAt: 0,
    ...overrides,
  };
}

function fact(kind: 'grants' | 'dc-state', dc?: string, read?: 'first' | 'second'): UnverifiedFact {
  return { fact: kind, dc, read, reason: 'EACH_QUORUM read failed: cut off' };
}

function summary(violations: readonly Violation[]): string[] {
  return violations.map((v) => `${v.confirmed ? '' : 'unconfirmed '}${v.kind} ${v.dc ?? '-'}`);
}

describe('checkSequence: which read each rule rests on', () => {
  it('finds nothing in consistent rows', () => {
    expect(checkSequence(snapshot())).toEqual([]);
  });

  it('counts grants waiting to be installed against the states read after the grants', () => {
    // Between the first states read and the grants read, dc2 switched to grant 2, installed a
    // grant 3 and was granted 4: the first read's installed_grant 2 is two behind, legitimately.
    const grants = new Map(snapshot().grants).set('dc2', [
      grant(1, 101n, 200n),
      grant(2, 201n, 300n),
      grant(3, 301n, 400n),
      grant(4, 401n, 500n),
    ]);
    const after = new Map(snapshot().states).set(
      'dc2',
      dcState({
        lastInteger: 300n,
        reservedGrant: 2,
        reservedMin: 201n,
        reservedMax: 300n,
        installedGrant: 3,
        preloadedMin: 301n,
        preloadedMax: 400n,
        version: 5,
      }),
    );
    const read = snapshot({ grants, globalLast: 500n, statesAfter: after });
    expect(checkSequence(read)).toEqual([]);
    // One read of the states for both rules would call it a violation.
    expect(summary(checkSequence({ ...read, statesAfter: undefined }))).toEqual([
      'grants-outstanding dc2',
    ]);
  });

  it('checks a state against the grants with the states read before the grants', () => {
    // After the grants read, dc2 was granted and installed grant 3: the second read names a
    // grant the grants read cannot hold yet; the first read's state is what is checked.
    const after = new Map(snapshot().states).set(
      'dc2',
      dcState({
        lastInteger: 250n,
        reservedGrant: 2,
        reservedMin: 201n,
        reservedMax: 300n,
        installedGrant: 3,
        preloadedMin: 301n,
        preloadedMax: 400n,
        version: 7,
      }),
    );
    expect(checkSequence(snapshot({ statesAfter: after }))).toEqual([]);
    expect(summary(checkSequence(snapshot({ states: after, statesAfter: after })))).toEqual([
      'state-above-global dc2',
      'installed-grant-ahead dc2',
      'state-without-grant dc2',
    ]);
  });

  it('uses the DC-state list of the allocator for every DC-state invariant', () => {
    const states = new Map(snapshot().states).set('dc1', dcState({ lastInteger: 50n, version: 0 }));
    expect(summary(checkSequence(snapshot({ states })))).toEqual(['version-invalid dc1']);
  });
});

describe('checkSequence: confirmed and unconfirmed violations', () => {
  /** dc2's state read locally shows last_integer beyond its reserved range. */
  function brokenDc2(unverified: readonly UnverifiedFact[]): Violation[] {
    const states = new Map(snapshot().states).set('dc2', {
      ...snapshot().states.get('dc2')!,
      lastInteger: 250n,
    });
    return checkSequence(snapshot({ states, unverified }));
  }

  it('a violation on a state read locally is unconfirmed, and names the fact', () => {
    const violations = brokenDc2([fact('dc-state', 'dc2', 'first')]);
    expect(summary(violations)).toEqual(['unconfirmed last-integer-outside-reserved dc2']);
    expect(violations[0]?.unverified).toEqual([fact('dc-state', 'dc2', 'first')]);
  });

  it('a violation on consistent reads stays confirmed when other facts are unverified', () => {
    // dc3's state and the second read of dc2's are unverified: this rests on neither.
    const violations = brokenDc2([
      fact('dc-state', 'dc3', 'first'),
      fact('dc-state', 'dc2', 'second'),
    ]);
    expect(summary(violations)).toEqual(['last-integer-outside-reserved dc2']);
    expect(violations[0]?.unverified).toEqual([]);
  });

  it('a state violation against the grants is unconfirmed when the grants were read locally', () => {
    const states = new Map(snapshot().states).set(
      'dc1',
      dcState({ lastInteger: 500n, reservedMax: 99n, preloadedMax: 99n }),
    );
    const violations = checkSequence(snapshot({ states, unverified: [fact('grants')] }));
    // last_integer outside its reserved range rests on the state alone; the mismatch with
    // grant 1 [1, 100] rests on the grants too.
    expect(summary(violations)).toEqual([
      'last-integer-outside-reserved dc1',
      'unconfirmed reserved-mismatch dc1',
    ]);
  });

  it('sequence-wide violations rest on the grants; grants-outstanding on the second states read', () => {
    const grants = new Map(snapshot().grants).set('dc3', [
      grant(1, 301n, 400n),
      grant(2, 401n, 500n),
    ]);
    const read = snapshot({ grants, globalLast: 450n });
    expect(summary(checkSequence({ ...read, unverified: [fact('grants')] }))).toEqual([
      'unconfirmed grant-above-global dc3',
      'unconfirmed grants-outstanding dc3',
    ]);
    expect(
      summary(checkSequence({ ...read, unverified: [fact('dc-state', 'dc3', 'second')] })),
    ).toEqual(['grant-above-global dc3', 'unconfirmed grants-outstanding dc3']);
  });
});

describe('checkVerdict', () => {
  const violation = (confirmed: boolean): Violation => ({
    kind: 'grants-overlap',
    sequence: 'orders',
    dc: 'dc1',
    message: 'x',
    confirmed,
    unverified: confirmed ? [] : [fact('grants')],
  });

  it('is violated only on a confirmed violation, incomplete on unverified facts, ok otherwise', () => {
    expect(checkVerdict([], [])).toBe('ok');
    expect(checkVerdict([], [fact('grants')])).toBe('incomplete');
    expect(checkVerdict([violation(false)], [fact('grants')])).toBe('incomplete');
    expect(checkVerdict([violation(false), violation(true)], [fact('grants')])).toBe('violated');
    expect(checkVerdict([violation(true)], [])).toBe('violated');
  });

  it('describes unverified facts in one line per cause', () => {
    const reason = 'EACH_QUORUM read failed: cut off';
    expect(
      describeUnverified([
        fact('dc-state', 'dc2', 'first'),
        fact('dc-state', 'dc3', 'first'),
        fact('dc-state', 'dc2', 'second'),
        fact('dc-state', 'dc3', 'second'),
        { ...fact('grants'), reason: 'SERIAL read failed: no quorum' },
      ]),
    ).toEqual([
      `dc2's and dc3's states (read before and after the grants): ${reason}`,
      'the grants and GLOBAL: SERIAL read failed: no quorum',
    ]);
  });
});

/**
 * A MemoryStore as seen from a DC while another is cut off: consistent reads of the DC states
 * (EACH_QUORUM) fail, and so may SERIAL; plain local reads answer from `stale` when given, as a
 * replica that missed writes would.
 */
class CutOffStore extends MemoryStore {
  eachQuorum = true;
  serial = true;
  localSerial = true;
  /** What local reads of the DC states show, if not the current rows. */
  stale: ReadonlyMap<string, DcState> | undefined;

  override async readDcStatesOverview(
    sequence: string,
    reading: OverviewReading = 'local',
  ): Promise<ReadonlyMap<string, DcState>> {
    if (reading === 'consistent' && !this.eachQuorum) {
      throw unavailable('local', 'Cannot achieve consistency level EACH_QUORUM in DC dc3');
    }
    const current = await super.readDcStatesOverview(sequence);
    return reading === 'local' && this.stale !== undefined ? this.stale : current;
  }

  override async readGrantsOverview(sequence: string, reading: OverviewReading = 'local') {
    if (reading === 'consistent' && !this.serial) {
      throw unavailable('serial', 'Cannot achieve consistency level SERIAL');
    }
    return super.readGrantsOverview(sequence);
  }

  override async readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    if (!this.localSerial) throw unavailable('local_serial', 'LOCAL_SERIAL timed out');
    return super.readDcState(sequence, dc);
  }
}

function unavailable(level: 'local' | 'serial' | 'local_serial', message: string) {
  return new StoreUnavailableError(level, 'read', message, { cause: new Error(message) });
}

/** Processes in dc1, dc2 and dc3 drew from "orders"; every DC has a state. */
async function threeDcs(): Promise<CutOffStore> {
  const store = new CutOffStore({ keyspace: KEYSPACE });
  const first = processIn(store, 'dc1');
  await first.createSequence('orders', { dcRangeSize: 100, blockSize: 10 });
  for (const dc of ['dc1', 'dc2', 'dc3']) {
    const ids = processIn(store, dc);
    await ids.sequence('orders').next();
    await ids.close();
  }
  await first.close();
  return store;
}

function adminOf(store: MemoryStore, dc = 'dc1'): Admin {
  const hosts = ['dc1', 'dc2', 'dc3'].map((name, i) => ({
    address: `10.0.0.${i + 1}:9042`,
    dc: name,
    up: true,
  }));
  return new Admin({ store, dc, keyspace: KEYSPACE, hosts: () => hosts });
}

describe('Admin.check while a DC is cut off', () => {
  it("reads dc3's lagging state locally: an unconfirmed violation, verdict incomplete", async () => {
    const store = await threeDcs();
    // dc3 is cut off, and the replica dc1 reads locally holds a dc3 state that breaks an
    // invariant (a lagging or damaged copy: whatever it shows, it is no proof).
    const current = await store.readDcStatesOverview('orders', 'consistent');
    const dc3 = current.get('dc3')!;
    store.eachQuorum = false;
    store.stale = new Map(current).set('dc3', { ...dc3, lastInteger: dc3.reservedMax + 50n });

    const result = await adminOf(store).check('orders', { confirmAfterMs: 0 });
    expect(result.verdict).toBe('incomplete');
    expect(summary(result.violations)).toEqual(['unconfirmed last-integer-outside-reserved dc3']);
    // dc1's own state was read at LOCAL_SERIAL: verified. dc2's and dc3's were not, in both reads.
    expect(result.unverified.map((f) => `${f.dc} ${f.read}`)).toEqual([
      'dc2 first',
      'dc3 first',
      'dc2 second',
      'dc3 second',
    ]);
    expect(result.unverified[0]?.reason).toBe(
      'EACH_QUORUM read failed: Cannot achieve consistency level EACH_QUORUM in DC dc3',
    );
  });

  it("confirms a broken local state (read at LOCAL_SERIAL) even while others' are unverified", async () => {
    const store = await threeDcs();
    const dc1 = (await store.readDcState('orders', 'dc1'))!;
    store.seedDcState('orders', 'dc1', { ...dc1, lastInteger: 999n, version: dc1.version + 1 });
    // The local replica lags: LOCAL_ONE would still show the healthy row.
    store.stale = new Map(await store.readDcStatesOverview('orders', 'consistent')).set('dc1', dc1);
    store.eachQuorum = false;

    const result = await adminOf(store).check('orders', { confirmAfterMs: 0 });
    expect(result.verdict).toBe('violated');
    expect(summary(result.violations)).toEqual(['last-integer-outside-reserved dc1']);
    expect(result.snapshot.states.get('dc1')?.lastInteger).toBe(999n);
  });

  it("reads each shard of the local DC at LOCAL_SERIAL too, leaving other DCs' shards unverified", async () => {
    const store = new CutOffStore({ keyspace: KEYSPACE });
    const first = processIn(store, 'dc1');
    await first.createSequence('orders', { dcRangeSize: 100, blockSize: 10, shards: 2 });
    const random = vi.spyOn(Math, 'random');
    for (const [dc, pick] of [
      ['dc1', 0.2],
      ['dc1', 0.7],
      ['dc3', 0.7],
    ] as const) {
      random.mockReturnValueOnce(pick); // the handle's shard
      const ids = processIn(store, dc);
      await ids.sequence('orders').next();
      await ids.close();
    }
    random.mockRestore();
    await first.close();
    // dc1/1's own row is broken, and the replica dc1 reads locally lags behind it.
    const healthy = (await store.readDcState('orders', 'dc1/1'))!;
    store.seedDcState('orders', 'dc1/1', {
      ...healthy,
      lastInteger: healthy.reservedMax + 5n,
      version: healthy.version + 1,
    });
    store.stale = new Map(await store.readDcStatesOverview('orders', 'consistent')).set(
      'dc1/1',
      healthy,
    );
    store.eachQuorum = false;

    const result = await adminOf(store).check('orders', { confirmAfterMs: 0 });
    expect(result.verdict).toBe('violated');
    expect(summary(result.violations)).toEqual(['last-integer-outside-reserved dc1/1']);
    // Every shard of every other DC, dc2/1 with no row included: its absence is a fact too.
    expect(result.unverified.map((f) => `${f.dc} ${f.read}`)).toEqual([
      'dc2 first',
      'dc2/1 first',
      'dc3 first',
      'dc3/1 first',
      'dc2 second',
      'dc2/1 second',
      'dc3 second',
      'dc3/1 second',
    ]);
  });

  it('leaves the local state unverified too when LOCAL_SERIAL fails', async () => {
    const store = await threeDcs();
    store.eachQuorum = false;
    store.localSerial = false;
    const result = await adminOf(store).check('orders', { confirmAfterMs: 0 });
    expect(result.verdict).toBe('incomplete');
    expect(result.violations).toEqual([]);
    expect(new Set(result.unverified.map((f) => f.dc))).toEqual(new Set(['dc1', 'dc2', 'dc3']));
  });

  it('reads the grants locally when SERIAL is unreachable, and says so', async () => {
    const store = await threeDcs();
    store.serial = false;
    const result = await adminOf(store, 'dc3').check('orders', { confirmAfterMs: 0 });
    expect(result.verdict).toBe('incomplete');
    expect(result.unverified).toEqual([
      {
        fact: 'grants',
        dc: undefined,
        read: undefined,
        reason: 'SERIAL read failed: Cannot achieve consistency level SERIAL',
      },
    ]);
  });

  it('reads again after confirmAfterMs when a violation is unconfirmed, and reports the second', async () => {
    const store = await threeDcs();
    const current = await store.readDcStatesOverview('orders', 'consistent');
    const dc2 = current.get('dc2')!;
    store.eachQuorum = false;
    store.stale = new Map(current).set('dc2', { ...dc2, lastInteger: dc2.reservedMax + 1n });
    store.resetCalls();
    const admin = adminOf(store);
    const checking = admin.check('orders', { confirmAfterMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    store.eachQuorum = true; // the DC is back before the second reading
    const result = await checking;
    expect(result).toMatchObject({ verdict: 'ok', violations: [], unverified: [] });
    expect(store.calls.readGrantsOverview).toBe(2);
  });

  it('throws when even the local reads fail', async () => {
    const store = await threeDcs();
    store.eachQuorum = false;
    store.faults.push({ op: 'readDcStatesOverview', effect: 'unavailable', times: Infinity });
    await expect(adminOf(store).check('orders')).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
