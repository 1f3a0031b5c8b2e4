/**
 * The DC-state model on its own, without a store: derived views, each pure transition (the next
 * state it returns, with the version one higher and the op given) and the one list of invariants.
 */
import { describe, expect, it } from 'vitest';

import {
  claim,
  dcStateViolations,
  giveBack,
  hasPreloaded,
  installAndClaim,
  installGrant,
  remainingIn,
  type DcStateContext,
} from '../../src/allocator/dc-state.js';
import type { DcState, Grant } from '../../src/store/port.js';
import { dcState } from './fixtures.js';

const domain = { settings: { start: 1n, max: 10_000n } } as const;
const grant1: Grant = { number: 1, min: 1n, max: 100n };
const grant2: Grant = { number: 2, min: 201n, max: 300n };

/** Reserved grant 1 ([1, 100]) with `lastInteger` claimed, and grant 2 ([201, 300]) preloaded. */
function preloaded(lastInteger: bigint): DcState {
  return dcState({ lastInteger, preloadedMin: 201n, preloadedMax: 300n, installedGrant: 2 });
}

/** The kinds `state` breaks, in the order they are listed. */
function kinds(state: DcState, context: DcStateContext = domain): string[] {
  return dcStateViolations('dc1', state, context).map((v) => v.kind);
}

describe('derived views', () => {
  it('has a preloaded range exactly when the installed grant is the one after the reserved one', () => {
    expect(hasPreloaded(dcState())).toBe(false);
    expect(hasPreloaded(preloaded(0n))).toBe(true);
  });

  it('counts what the DC still holds: the rest of the reserved range plus any preloaded range', () => {
    expect(remainingIn(undefined)).toBe(0n);
    expect(remainingIn(dcState({ lastInteger: 30n }))).toBe(70n);
    expect(remainingIn(preloaded(30n))).toBe(170n);
    expect(remainingIn(preloaded(100n))).toBe(100n);
  });
});

describe('claim', () => {
  it('claims the next block of the reserved range, moving only last_integer, version and op', () => {
    const state = Object.freeze(dcState({ lastInteger: 10n, version: 7 }));
    expect(claim(state, 10n, 'op-2')).toEqual({
      next: { ...state, lastInteger: 20n, version: 8, op: 'op-2' },
      block: { first: 11n, last: 20n, rangeMin: 1n, rangeMax: 100n },
    });
    expect(state.lastInteger).toBe(10n);
  });

  it('cuts the block at the end of the reserved range', () => {
    const result = claim(dcState({ lastInteger: 95n }), 10n, 'op');
    expect(result?.block).toEqual({ first: 96n, last: 100n, rangeMin: 1n, rangeMax: 100n });
    expect(result?.next.lastInteger).toBe(100n);
  });

  it('switches to the preloaded range and claims from its start in the same write', () => {
    const state = preloaded(100n);
    expect(claim(state, 10n, 'op-2')).toEqual({
      next: {
        ...state,
        reservedMin: 201n,
        reservedMax: 300n,
        reservedGrant: 2,
        lastInteger: 210n,
        version: 2,
        op: 'op-2',
      },
      block: { first: 201n, last: 210n, rangeMin: 201n, rangeMax: 300n },
    });
  });

  it('cuts a switch-and-claim at the end of a preloaded range smaller than a block', () => {
    const state = dcState({
      lastInteger: 100n,
      preloadedMin: 201n,
      preloadedMax: 205n,
      installedGrant: 2,
    });
    expect(claim(state, 10n, 'op')?.block).toEqual({
      first: 201n,
      last: 205n,
      rangeMin: 201n,
      rangeMax: 205n,
    });
  });

  it('claims nothing when the reserved range is spent and nothing is preloaded', () => {
    expect(claim(dcState({ lastInteger: 100n }), 10n, 'op')).toBeUndefined();
  });

  it('leaves a sound state sound', () => {
    const context = { ...domain, grants: [grant1, grant2], allGrants: true, globalLast: 300n };
    for (const state of [dcState({ lastInteger: 10n }), preloaded(95n), preloaded(100n)]) {
      const next = claim(state, 10n, 'op')?.next;
      expect(next).toBeDefined();
      expect(dcStateViolations('dc1', next!, context)).toEqual([]);
    }
  });
});

describe('installGrant', () => {
  it("creates the DC's first state from grant 1: reserved and preloaded both equal it", () => {
    expect(installGrant(undefined, grant1, 'op-1')).toEqual({
      lastInteger: 0n,
      reservedMin: 1n,
      reservedMax: 100n,
      reservedGrant: 1,
      preloadedMin: 1n,
      preloadedMax: 100n,
      installedGrant: 1,
      version: 1,
      op: 'op-1',
    });
  });

  it('installs the next grant as the preloaded range, leaving the reserved one as it is', () => {
    const state = dcState({ lastInteger: 60n, version: 5 });
    const next = installGrant(state, grant2, 'op-6');
    expect(next).toEqual({
      ...state,
      preloadedMin: 201n,
      preloadedMax: 300n,
      installedGrant: 2,
      version: 6,
      op: 'op-6',
    });
    expect(hasPreloaded(next!)).toBe(true);
    expect(
      dcStateViolations('dc1', next!, { ...domain, grants: [grant1, grant2], allGrants: true }),
    ).toEqual([]);
  });

  it('installs nothing while a preloaded range waits, or when the grant is already installed', () => {
    expect(installGrant(preloaded(50n), { number: 3, min: 301n, max: 400n }, 'op')).toBeUndefined();
    expect(installGrant(preloaded(50n), grant2, 'op')).toBeUndefined();
    expect(installGrant(dcState({ installedGrant: 1 }), grant1, 'op')).toBeUndefined();
  });

  it('refuses a grant that does not follow, naming the broken rule', () => {
    expect(() => installGrant(undefined, grant2, 'op')).toThrow(
      new RangeError('grant 2 cannot be the first one installed'),
    );
    expect(() => installGrant(dcState(), { number: 3, min: 301n, max: 400n }, 'op')).toThrow(
      new RangeError('grant 3 cannot follow installed grant 1'),
    );
    expect(() => installGrant(dcState(), { number: 2, min: 50n, max: 150n }, 'op')).toThrow(
      new RangeError('grant 2 [50, 150] does not lie above the reserved range ending at 100'),
    );
  });
});

describe('installAndClaim', () => {
  it('installs the grant and claims from the reserved range in one write: the version moves by one', () => {
    const state = dcState({ lastInteger: 60n, version: 5 });
    const claimed = installAndClaim(state, grant2, 10n, 'op-6');
    expect(claimed?.next).toEqual({
      ...state,
      preloadedMin: 201n,
      preloadedMax: 300n,
      installedGrant: 2,
      lastInteger: 70n,
      version: 6,
      op: 'op-6',
    });
    expect(claimed?.block).toEqual({ first: 61n, last: 70n, rangeMin: 1n, rangeMax: 100n });
    expect(
      dcStateViolations('dc1', claimed!.next, { settings: { start: 1n, max: 1_000n } }),
    ).toEqual([]);
  });

  it('switches to the grant when the reserved range is spent', () => {
    const state = dcState({ lastInteger: 100n, version: 5 });
    const claimed = installAndClaim(state, grant2, 10n, 'op-6');
    expect(claimed?.next).toMatchObject({
      reservedMin: 201n,
      reservedMax: 300n,
      reservedGrant: 2,
      installedGrant: 2,
      lastInteger: 210n,
      version: 6,
    });
    expect(claimed?.block).toEqual({ first: 201n, last: 210n, rangeMin: 201n, rangeMax: 300n });
  });

  it('takes nothing while a preloaded range exists, and refuses a grant that does not follow', () => {
    const preloaded = dcState({ preloadedMin: 201n, preloadedMax: 300n, installedGrant: 2 });
    expect(installAndClaim(preloaded, { number: 3, min: 301n, max: 400n }, 10n, 'op')).toBe(
      undefined,
    );
    expect(() =>
      installAndClaim(dcState(), { number: 3, min: 301n, max: 400n }, 10n, 'op'),
    ).toThrow(RangeError);
  });
});

describe('giveBack', () => {
  it('moves last_integer back to the first unused ID minus one', () => {
    const state = dcState({ lastInteger: 40n, version: 3 });
    expect(giveBack(state, 31n, 40n, 'op-4')).toEqual({
      next: { ...state, lastInteger: 30n, version: 4, op: 'op-4' },
      returned: 10n,
    });
  });

  it('gives nothing back once someone claimed after the run', () => {
    expect(giveBack(dcState({ lastInteger: 50n }), 31n, 40n, 'op')).toBeUndefined();
  });

  it('gives back only the part of a run within the reserved range when the run spans a switch', () => {
    const state = dcState({
      reservedMin: 201n,
      reservedMax: 300n,
      reservedGrant: 2,
      preloadedMin: 201n,
      preloadedMax: 300n,
      installedGrant: 2,
      lastInteger: 205n,
    });
    expect(giveBack(state, 95n, 205n, 'op')).toMatchObject({
      next: { lastInteger: 200n },
      returned: 5n,
    });
    // Nothing of the run lies within the reserved range.
    expect(giveBack({ ...state, lastInteger: 200n }, 150n, 200n, 'op')).toBeUndefined();
  });
});

describe('dcStateViolations', () => {
  it('finds nothing wrong with a sound state, with or without what it is checked against', () => {
    expect(kinds(dcState({ lastInteger: 42n }))).toEqual([]);
    expect(kinds(preloaded(42n))).toEqual([]);
    expect(
      kinds(preloaded(42n), {
        ...domain,
        grants: [grant1, grant2],
        allGrants: true,
        globalLast: 300n,
      }),
    ).toEqual([]);
  });

  it('lists every invariant a state breaks, in a fixed order, each with its own message', () => {
    const broken = dcState({
      version: 0,
      lastInteger: 500n,
      reservedGrant: 0,
      preloadedMin: 0n,
      preloadedMax: 20_000n,
      installedGrant: 5,
    });
    const violations = dcStateViolations('dc1', broken, {
      ...domain,
      grants: [grant1],
      allGrants: true,
      globalLast: 50n,
    });
    expect(violations).toEqual([
      { kind: 'version-invalid', message: "dc1's state version 0 is not a positive integer" },
      {
        kind: 'range-outside-domain',
        message: "dc1's preloaded range [0, 20000] is not within [1, 10000]",
      },
      {
        kind: 'last-integer-outside-reserved',
        message: "dc1's last_integer 500 is outside [reserved_min - 1, reserved_max] = [0, 100]",
      },
      {
        kind: 'grant-numbers-invalid',
        message: "dc1's reserved grant 0 is not a positive integer",
      },
      {
        kind: 'preloaded-mismatch',
        message:
          'dc1 has nothing preloaded (installed_grant = reserved_grant = 5) but its preloaded range [0, 20000] differs from its reserved range [1, 100]',
      },
      {
        kind: 'state-above-global',
        message: 'dc1 holds IDs up to 100, above GLOBAL last_integer 50',
      },
      {
        kind: 'installed-grant-ahead',
        message: "dc1's state has installed_grant 5 but its latest grant is #1",
      },
      {
        kind: 'state-without-grant',
        message: "dc1's reserved range [1, 100] names grant #0, which dc1 does not have",
      },
    ]);
  });

  it('lists ranges that differ from the grants they name, and a reserved range outside the domain', () => {
    const state = preloaded(10n);
    const grants = [
      { number: 1, min: 1n, max: 90n },
      { number: 2, min: 101n, max: 200n },
    ];
    expect(dcStateViolations('dc1', state, { ...domain, grants })).toEqual([
      {
        kind: 'reserved-mismatch',
        message: "dc1's reserved range [1, 100] differs from its grant #1 [1, 90]",
      },
      {
        kind: 'preloaded-mismatch',
        message: "dc1's preloaded range [201, 300] differs from its grant #2 [101, 200]",
      },
    ]);
    expect(kinds(dcState(), { settings: { start: 10n, max: 10_000n } })).toEqual([
      'range-outside-domain',
      'range-outside-domain',
    ]);
  });

  it('lists a preloaded range below the reserved one, and installed grants that skip one', () => {
    expect(kinds(dcState({ preloadedMin: 50n, preloadedMax: 150n, installedGrant: 2 }))).toEqual([
      'preloaded-mismatch',
    ]);
    expect(kinds(dcState({ installedGrant: 3 }))).toEqual(['grant-numbers-invalid']);
  });

  it('reports a named grant missing only when it holds every grant of the DC', () => {
    const state = preloaded(10n);
    // Only the latest grant, as the allocator reads it: grant 1 is simply not among them.
    expect(kinds(state, { ...domain, grants: [grant2] })).toEqual([]);
    expect(kinds(state, { ...domain, grants: [grant2], allGrants: true })).toEqual([
      'state-without-grant',
    ]);
  });
});
