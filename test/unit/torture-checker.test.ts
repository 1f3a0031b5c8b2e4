/** The torture campaign's checker, on histories made up to break each property. */
import { describe, expect, it } from 'vitest';

import {
  checkHistory,
  type RecordedIncarnation,
  type RowsAfter,
} from '../../scripts/torture/checker.js';
import { dcState } from './fixtures.js';

const ids = (...values: number[]) => Float64Array.from(values);
const range = (a: number, b: number) => Float64Array.from({ length: b - a + 1 }, (_, i) => a + i);

/** dc1 got [1, 100] and [201, 300]; dc2 got [101, 200]. dc1 has 271..300 still unclaimed. */
const rows: RowsAfter = {
  globalLast: 300n,
  grants: new Map([
    [
      'dc1',
      [
        { number: 1, min: 1n, max: 100n },
        { number: 2, min: 201n, max: 300n },
      ],
    ],
    ['dc2', [{ number: 1, min: 101n, max: 200n }]],
  ]),
  states: new Map([
    [
      'dc1',
      dcState({
        lastInteger: 270n,
        reservedMin: 201n,
        reservedMax: 300n,
        reservedGrant: 2,
        preloadedMin: 201n,
        preloadedMax: 300n,
        installedGrant: 2,
      }),
    ],
    [
      'dc2',
      dcState({
        lastInteger: 200n,
        reservedMin: 101n,
        reservedMax: 200n,
        preloadedMin: 101n,
        preloadedMax: 200n,
      }),
    ],
  ]),
};

function incarnation(
  id: number,
  dc: string,
  recorded: Float64Array,
  ending = 'terminated',
): RecordedIncarnation {
  return { id, dc, ending, ids: recorded };
}

describe('checkHistory', () => {
  it('accepts a sound history and accounts for every granted ID', () => {
    const verdict = checkHistory(
      [
        incarnation(1, 'dc1', range(1, 100)),
        incarnation(2, 'dc1', range(201, 250), 'killed'), // 251..270 lost with it
        incarnation(3, 'dc2', range(101, 180)),
        incarnation(4, 'dc2', range(191, 200)), // 181..190: closed, not given back
      ],
      rows,
    );
    expect(verdict.valid).toBe(true);
    expect(verdict.reconciliation).toEqual({
      granted: 300,
      drawn: 240,
      held: 30,
      lost: 30,
      balanced: true,
    });
    expect(verdict.gapsByCause).toEqual([
      { cause: 'process killed: its unused IDs', ids: 20, intervals: 1 },
      {
        cause: 'closed: unused IDs not given back (claimed after, or the give-back stayed unknown)',
        ids: 10,
        intervals: 1,
      },
    ]);
  });

  it('counts a grant not installed in its state as held, not lost', () => {
    // dc1/1 got its first range with the sequence and no process ever used it (no state row);
    // dc2's grant 2 was confirmed at SERIAL and its requester killed before installing it.
    const granted: RowsAfter = {
      globalLast: 500n,
      grants: new Map([
        ...rows.grants,
        ['dc1/1', [{ number: 1, min: 301n, max: 400n }]],
        ['dc2', [...rows.grants.get('dc2')!, { number: 2, min: 401n, max: 500n }]],
      ]),
      states: rows.states,
    };
    const history = [
      incarnation(1, 'dc1', range(1, 100)),
      incarnation(2, 'dc1', range(201, 270)),
      incarnation(3, 'dc2', range(101, 200), 'killed'),
    ];
    const verdict = checkHistory(history, granted);
    expect(verdict.valid).toBe(true);
    expect(verdict.reconciliation).toEqual({
      granted: 500,
      drawn: 270,
      held: 230,
      lost: 0,
      balanced: true,
    });
    expect(verdict.gapsByCause).toEqual([]);
    // IDs handed out from a grant no state installed: drawn and held at once, not balanced.
    const drewUninstalled = checkHistory(
      [...history, incarnation(4, 'dc2', range(401, 410))],
      granted,
    );
    expect(drewUninstalled.reconciliation.balanced).toBe(false);
  });

  it('finds duplicates across processes and DCs, naming who recorded them', () => {
    const verdict = checkHistory(
      [
        incarnation(1, 'dc1', ids(1, 2, 3)),
        incarnation(2, 'dc1', ids(3, 4)),
        incarnation(3, 'dc2', ids(101)),
      ],
      rows,
    );
    expect(verdict.valid).toBe(false);
    expect(verdict.duplicateCount).toBe(1);
    expect(verdict.duplicates).toEqual([{ id: 3, by: [1, 2] }]);
  });

  it('finds an incarnation whose IDs went backwards', () => {
    const verdict = checkHistory(
      [incarnation(7, 'dc1', ids(5, 6, 4)), incarnation(8, 'dc2', range(101, 200))],
      rows,
    );
    expect(verdict.nonMonotonic).toEqual([{ incarnation: 7, at: 2 }]);
    expect(verdict.valid).toBe(false);
  });

  describe('concurrent callers: each call judged against the calls resolved before it was made', () => {
    /** A `callers` incarnation of dc1: its IDs in the order its calls resolved, and the calls. */
    const callers = (recorded: Float64Array, ...calls: [number, number, number][]) => ({
      ...incarnation(7, 'dc1', recorded),
      calls: Float64Array.from(calls.flat()),
    });
    const dc2 = incarnation(8, 'dc2', range(101, 200));
    const judge = (one: RecordedIncarnation) => checkHistory([one, dc2], rows).nonMonotonic;

    it('accepts calls that overlapped resolving out of order', () => {
      // Call A (made first, IDs 1..3 asked) and call B (1 ID) overlapped: B resolved first with
      // 4, then A with 1..3. Call C, made after both, got 5..6.
      const history = callers(ids(4, 1, 2, 3, 5, 6), [0, 1, 1], [0, 4, 3], [4, 6, 2]);
      expect(judge(history)).toEqual([]);
      // The same history judged as one caller's would be out of order: the calls make it sound.
      expect(judge({ ...history, calls: undefined })).toEqual([{ incarnation: 7, at: 1 }]);
    });

    it('finds a call that handed out an ID below one recorded before it was made', () => {
      // C was made after A and B resolved (4 IDs recorded), and got 3.
      const history = callers(ids(4, 1, 2, 3), [0, 1, 1], [0, 3, 2], [3, 4, 1]);
      expect(judge(history)).toEqual([{ incarnation: 7, at: 3 }]);
    });

    it('finds a call whose own IDs do not increase, or that got other than the count it asked', () => {
      expect(judge(callers(ids(1, 3, 2), [0, 3, 3]))).toEqual([{ incarnation: 7, at: 2 }]);
      expect(judge(callers(ids(1, 2, 3), [0, 2, 3], [2, 3, 1]))).toEqual([
        { incarnation: 7, at: 0 },
      ]);
    });

    it('finds calls that do not describe the history: one made after IDs it preceded', () => {
      // The second call says 3 IDs were recorded when it was made, but it starts at position 2.
      expect(judge(callers(ids(1, 2, 3), [0, 2, 2], [3, 3, 1]))).toEqual([
        { incarnation: 7, at: 2 },
      ]);
    });

    it('judges the calls a raw kill left whole, and no further', () => {
      // Killed raw after writing IDs 3 and 4, before their call's entry: the calls before it are
      // judged, and still catch an ID out of order; the IDs after them are judged by none.
      const cut = (recorded: Float64Array, ...calls: [number, number, number][]) => ({
        ...callers(recorded, ...calls),
        ending: 'killed',
        cutShort: true,
      });
      const whole = checkHistory([cut(ids(1, 2, 3, 4), [0, 2, 2]), dc2], rows);
      expect(whole.nonMonotonic).toEqual([]);
      expect(whole.uncoveredCalls).toEqual([]);
      expect(judge(cut(ids(2, 1, 3, 4), [0, 1, 1], [1, 2, 1]))).toEqual([
        { incarnation: 7, at: 1 },
      ]);
    });

    describe('calls that do not cover exactly the IDs recorded fail the check (review A2)', () => {
      const uncovered = (one: RecordedIncarnation) => {
        const verdict = checkHistory([one, dc2], rows);
        expect(verdict.valid).toBe(false);
        return verdict.uncoveredCalls;
      };

      it('IDs after the last entry (P4: 5 and 3 after 10, with no entry)', () => {
        expect(uncovered(callers(ids(9, 10, 5, 3), [0, 1, 1], [1, 2, 1]))).toEqual([
          { incarnation: 7, recorded: 4, covered: 2, beyond: undefined },
        ]);
      });

      it('an entry ending beyond the history, whose later entries go unjudged (P5)', () => {
        const history = callers(ids(9, 10, 5, 3), [0, 1, 1], [1, 9, 8], [2, 3, 1]);
        expect(uncovered(history)).toEqual([
          { incarnation: 7, recorded: 4, covered: 3, beyond: 9 },
        ]);
        // Even of a process killed raw: the worker writes a call's IDs before its entry.
        expect(uncovered({ ...history, ending: 'killed', cutShort: true })).toHaveLength(1);
      });

      it('an empty calls file (P9: 10, 5, 3, 4 judged by nothing)', () => {
        expect(uncovered(callers(ids(10, 5, 3, 4)))).toEqual([
          { incarnation: 7, recorded: 4, covered: 0, beyond: undefined },
        ]);
      });
    });
  });

  it('finds IDs outside the grants of the DC that handed them out', () => {
    const verdict = checkHistory(
      [incarnation(1, 'dc2', ids(150, 250)), incarnation(2, 'dc1', range(1, 100))],
      rows,
    );
    expect(verdict.outsideGrants).toEqual([{ incarnation: 1, id: 250 }]);
    expect(verdict.valid).toBe(false);
    // Not an ID at all, inside a grant's bounds though it is.
    const fraction = checkHistory(
      [
        incarnation(1, 'dc1', Float64Array.from([...range(1, 98), 99.5])),
        incarnation(2, 'dc2', range(101, 200)),
      ],
      rows,
    );
    expect(fraction.outsideGrants).toEqual([{ incarnation: 1, id: 99.5 }]);
    expect(fraction.valid).toBe(false);
  });

  it("accounts for a sharded DC's shards, and finds a process whose IDs came from two of them", () => {
    // dc1 has two shards: dc1 itself got [1, 100], dc1/1 got [101, 200] and still holds 181..200.
    const sharded: RowsAfter = {
      globalLast: 200n,
      grants: new Map([
        ['dc1', [{ number: 1, min: 1n, max: 100n }]],
        ['dc1/1', [{ number: 1, min: 101n, max: 200n }]],
      ]),
      states: new Map([
        [
          'dc1',
          dcState({ lastInteger: 100n, reservedMin: 1n, reservedMax: 100n, preloadedMax: 100n }),
        ],
        [
          'dc1/1',
          dcState({
            lastInteger: 180n,
            reservedMin: 101n,
            reservedMax: 200n,
            preloadedMin: 101n,
            preloadedMax: 200n,
          }),
        ],
      ]),
    };
    const sound = checkHistory(
      [
        incarnation(1, 'dc1', range(1, 100)),
        incarnation(2, 'dc1', range(101, 170), 'killed'), // 171..180 lost with it
      ],
      sharded,
    );
    expect(sound.valid).toBe(true);
    expect(sound.reconciliation).toEqual({
      granted: 200,
      drawn: 170,
      held: 20,
      lost: 10,
      balanced: true,
    });
    // A process keeps its shard: IDs from the other one are outside its grants, as are a
    // shard's IDs recorded by another DC's process.
    const mixed = checkHistory(
      [incarnation(1, 'dc1', ids(50, 150)), incarnation(2, 'dc2', ids(160))],
      sharded,
    );
    expect(mixed.outsideGrants).toEqual([
      { incarnation: 1, id: 150 },
      { incarnation: 2, id: 160 },
    ]);
    expect(mixed.valid).toBe(false);
  });

  it('finds an ID recorded although the DC state says it was never claimed (rows went back)', () => {
    const verdict = checkHistory(
      [incarnation(1, 'dc1', ids(275)), incarnation(2, 'dc2', range(101, 200))],
      rows,
    );
    expect(verdict.reconciliation.balanced).toBe(false);
    expect(verdict.valid).toBe(false);
  });

  it('does not pass an empty history, nor one in which a DC recorded no ID', () => {
    // Sound rows and nothing recorded: every other property holds vacuously.
    const nothing = checkHistory([], rows);
    expect(nothing.valid).toBe(false);
    expect(nothing.dcsWithoutIds).toEqual(['dc1', 'dc2']);
    // No grants either (a sequence that never granted): no DC to name, and still no evidence.
    const bare = checkHistory([], { globalLast: 0n, grants: new Map(), states: new Map() });
    expect(bare).toMatchObject({ drawn: 0, dcsWithoutIds: [], valid: false });
    // dc1's history alone is sound and balanced; dc2 was granted a range and its processes ran,
    // as did dc3's, without recording an ID.
    const silent = checkHistory(
      [
        incarnation(1, 'dc1', range(1, 100)),
        incarnation(2, 'dc1', range(201, 270)),
        incarnation(3, 'dc2', ids()),
        incarnation(4, 'dc3', ids()),
      ],
      rows,
    );
    expect(silent.reconciliation.balanced).toBe(true);
    expect(silent.valid).toBe(false);
    expect(silent.dcsWithoutIds).toEqual(['dc2', 'dc3']);
    // Every DC recorded: valid.
    expect(
      checkHistory(
        [
          incarnation(1, 'dc1', range(1, 100)),
          incarnation(2, 'dc1', range(201, 270)),
          incarnation(3, 'dc2', ids(101)),
        ],
        rows,
      ).valid,
    ).toBe(true);
  });

  it('finds overlapping grants and grants above GLOBAL', () => {
    const broken: RowsAfter = {
      ...rows,
      globalLast: 250n,
      grants: new Map([
        ['dc1', [{ number: 1, min: 1n, max: 120n }]],
        ['dc2', [{ number: 1, min: 101n, max: 260n }]],
      ]),
    };
    const verdict = checkHistory(
      [incarnation(1, 'dc1', ids(1)), incarnation(2, 'dc2', ids(150))],
      broken,
    );
    expect(verdict.dcsWithoutIds).toEqual([]);
    expect(verdict.grantProblems).toHaveLength(2);
    expect(verdict.valid).toBe(false);
  });
});
