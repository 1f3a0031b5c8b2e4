/** The campaign's checker: pure, it trusts only the recorded history and the rows read back. */
import type { DcState, Grant } from '../../src/index.js';
import { dcOfGrantee } from '../../src/names.js';

export interface RecordedIncarnation {
  readonly id: number;
  readonly dc: string;
  readonly ending: string;
  /** The IDs it recorded, in the order handed out (concurrent callers: as calls resolved). */
  readonly ids: Float64Array;
  /** Its calls file (worker.ts); absent: one caller, whose IDs must simply increase. */
  readonly calls?: Float64Array | undefined;
  /** SIGKILLed without writing its history first: its last calls' entries may be missing. */
  readonly cutShort?: boolean | undefined;
}

export interface RowsAfter {
  readonly globalLast: bigint;
  /** Every grant of each grantee, a DC or a shard of one (read at SERIAL). */
  readonly grants: ReadonlyMap<string, readonly Grant[]>;
  /** Each grantee's state (read at LOCAL_SERIAL from its DC). */
  readonly states: ReadonlyMap<string, DcState>;
}

/** An incarnation whose calls do not cover exactly its IDs: where they end, and any beyond. */
export interface UncoveredCalls {
  readonly incarnation: number;
  readonly recorded: number;
  readonly covered: number;
  readonly beyond?: number | undefined;
}

/** What the checks found; optional fields are absent in older reports. */
export interface Verdict {
  readonly valid: boolean;
  readonly drawn: number;
  /** DCs (with a process or a grant) that recorded no ID: an empty history proves nothing. */
  readonly dcsWithoutIds?: readonly string[];
  readonly duplicates: readonly { readonly id: number; readonly by: readonly number[] }[];
  readonly duplicateCount: number;
  readonly nonMonotonic: readonly { readonly incarnation: number; readonly at: number }[];
  readonly uncoveredCalls?: readonly UncoveredCalls[];
  /** IDs outside the grants of the one grantee (DC or shard) the process drew its first ID from. */
  readonly outsideGrants: readonly { readonly incarnation: number; readonly id: number }[];
  readonly outsideGrantsCount: number;
  readonly grantProblems: readonly string[];
  /** `balanced`: no recorded ID lies in a held range, and held ranges lie inside grants. */
  readonly reconciliation: Readonly<Record<'granted' | 'drawn' | 'held' | 'lost', number>> & {
    readonly balanced: boolean;
  };
  readonly gapsByCause: readonly GapCause[];
}

interface GapCause {
  readonly cause: string;
  readonly ids: number;
  readonly intervals: number;
}

const MAX_LISTED = 20;

/** Packed sort keys `id · OWNER_SPAN + owner` stay exact below 2^53. */
const OWNER_SPAN = 2 ** 21;
const MAX_PACKED_ID = 2 ** 32;

export function checkHistory(
  incarnations: readonly RecordedIncarnation[],
  rows: RowsAfter,
): Verdict {
  const drawn = incarnations.reduce((sum, i) => sum + i.ids.length, 0);

  // 0. Something to judge: every DC recorded IDs (a sound-looking empty history is no evidence).
  const recordedByDc = new Map<string, number>();
  for (const grantee of rows.grants.keys()) recordedByDc.set(dcOfGrantee(grantee) ?? grantee, 0);
  for (const { dc, ids } of incarnations)
    recordedByDc.set(dc, (recordedByDc.get(dc) ?? 0) + ids.length);
  const dcsWithoutIds = [...recordedByDc]
    .filter(([, count]) => count === 0)
    .map(([dc]) => dc)
    .sort();

  // 1. No ID recorded twice, across every incarnation of every DC.
  const all = new Float64Array(drawn);
  let offset = 0;
  for (const incarnation of incarnations) {
    all.set(incarnation.ids, offset);
    offset += incarnation.ids.length;
  }
  all.sort();
  const duplicateValues: number[] = [];
  let duplicateCount = 0;
  for (let i = 1; i < all.length; i++) {
    if (all[i] === all[i - 1]) {
      duplicateCount++;
      if (duplicateValues.at(-1) !== all[i]) duplicateValues.push(all[i]!);
    }
  }
  const listed = new Set(duplicateValues.slice(0, MAX_LISTED));
  const owners = new Map<number, number[]>();
  if (listed.size > 0) {
    for (const incarnation of incarnations) {
      for (const id of incarnation.ids)
        if (listed.has(id)) owners.set(id, [...(owners.get(id) ?? []), incarnation.id]);
    }
  }
  const duplicates = [...listed].map((id) => ({ id, by: owners.get(id) ?? [] }));

  // 2. Strictly increasing within each incarnation.
  const nonMonotonic: { incarnation: number; at: number }[] = [];
  for (const incarnation of incarnations) {
    const at = firstOutOfOrder(incarnation);
    if (at !== undefined) nonMonotonic.push({ incarnation: incarnation.id, at });
  }
  const uncoveredCalls = incarnations.map(callsCoverage).filter((u) => u !== undefined);

  // 3. All of one process's IDs inside the grants of one grantee of its DC, read off its first ID.
  const outsideGrants: { incarnation: number; id: number }[] = [];
  let outsideGrantsCount = 0;
  const sortedGrants = new Map<string, Grant[]>();
  const grantsOfDc = new Map<string, { grantee: string; grant: Grant }[]>();
  for (const [grantee, grants] of rows.grants) {
    sortedGrants.set(grantee, [...grants].sort(byMin));
    const dc = dcOfGrantee(grantee) ?? grantee;
    const list = grantsOfDc.get(dc) ?? [];
    for (const grant of grants) list.push({ grantee, grant });
    grantsOfDc.set(dc, list);
  }
  for (const list of grantsOfDc.values()) list.sort((a, b) => byMin(a.grant, b.grant));
  const granteeOf = new Map<number, string>();
  for (const incarnation of incarnations) {
    const ofDc = grantsOfDc.get(incarnation.dc) ?? [];
    let grantee: string | undefined;
    for (const id of incarnation.ids) {
      // A fraction (or NaN) lies in no grant: the packed keys would round it.
      const found = Number.isInteger(id) ? findOwned(ofDc, id) : undefined;
      grantee ??= found?.grantee;
      if (found === undefined || found.grantee !== grantee) {
        outsideGrantsCount++;
        if (outsideGrants.length < MAX_LISTED)
          outsideGrants.push({ incarnation: incarnation.id, id });
      }
    }
    if (grantee !== undefined) granteeOf.set(incarnation.id, grantee);
  }

  // 4. Grants disjoint across DCs and at or below GLOBAL.
  const grantProblems: string[] = [];
  const every = [...rows.grants].flatMap(([dc, grants]) => grants.map((grant) => ({ dc, grant })));
  every.sort((a, b) => byMin(a.grant, b.grant));
  for (let i = 0; i < every.length; i++) {
    const { dc, grant } = every[i]!;
    if (grant.max > rows.globalLast) {
      grantProblems.push(
        `grant #${grant.number} of ${dc} ends at ${grant.max}, above GLOBAL ${rows.globalLast}`,
      );
    }
    const before = every[i - 1];
    if (before !== undefined && grant.min <= before.grant.max) {
      grantProblems.push(
        `grant #${grant.number} of ${dc} [${grant.min}, ${grant.max}] overlaps grant #${before.grant.number} of ${before.dc} [${before.grant.min}, ${before.grant.max}]`,
      );
    }
  }

  // 5. Reconciliation: every granted ID is drawn, still held by its DC, or lost to a gap.
  const { gapsByCause, held, lost } = reconcile(incarnations, granteeOf, sortedGrants, rows.states);
  const granted = every.reduce((sum, { grant }) => sum + Number(grant.max - grant.min + 1n), 0);
  const distinctDrawn = drawn - duplicateCount;
  const balanced = granted === distinctDrawn - outsideGrantsCount + held + lost;

  return {
    valid:
      drawn > 0 &&
      dcsWithoutIds.length === 0 &&
      duplicateCount === 0 &&
      nonMonotonic.length === 0 &&
      uncoveredCalls.length === 0 &&
      outsideGrantsCount === 0 &&
      grantProblems.length === 0 &&
      balanced,
    drawn,
    dcsWithoutIds,
    duplicates,
    duplicateCount,
    nonMonotonic,
    uncoveredCalls,
    outsideGrants,
    outsideGrantsCount,
    grantProblems,
    reconciliation: { granted, drawn: distinctDrawn, held, lost, balanced },
    gapsByCause,
  };
}

/** Where a call's IDs (as many as asked) do not increase from above all recorded before it. */
function firstOutOfOrder({ ids, calls }: RecordedIncarnation): number | undefined {
  if (calls === undefined) {
    for (let i = 1; i < ids.length; i++) if (!(ids[i]! > ids[i - 1]!)) return i;
    return undefined;
  }
  const highest = new Float64Array(ids.length);
  for (let i = 0; i < ids.length; i++)
    highest[i] = Math.max(ids[i]!, i > 0 ? highest[i - 1]! : -Infinity);
  let start = 0;
  for (let c = 0; c + 2 < calls.length; c += 3) {
    const floor = calls[c]!;
    const end = calls[c + 1]!;
    const asked = calls[c + 2]!;
    // Other than the count asked, or an entry the worker cannot have written.
    if (
      !(Number.isInteger(floor) && Number.isInteger(end) && floor <= start && start < end) ||
      end - start !== asked
    ) {
      return start;
    }
    if (end > ids.length) break; // not the calls made: callsCoverage fails it
    if (floor > 0 && !(ids[start]! > highest[floor - 1]!)) return start;
    for (let i = start + 1; i < end; i++) if (!(ids[i]! > ids[i - 1]!)) return i;
    start = end;
  }
  return undefined;
}

/** How an incarnation's calls fail to cover exactly its IDs (short only if `cutShort`). */
export function callsCoverage({
  id,
  ids,
  calls,
  cutShort,
}: RecordedIncarnation): UncoveredCalls | undefined {
  if (calls === undefined) return undefined;
  let beyond: number | undefined;
  for (let c = 1; c < calls.length; c += 3)
    if (!(calls[c]! <= ids.length)) beyond = Math.max(beyond ?? -Infinity, calls[c]!);
  const covered = calls.length >= 3 ? calls[calls.length - 2]! : 0;
  if (beyond === undefined && (covered === ids.length || cutShort === true)) return undefined;
  return { incarnation: id, recorded: ids.length, covered, beyond };
}

const byMin = (a: Grant, b: Grant): number => (a.min < b.min ? -1 : 1);

function findOwned<T extends { grant: Grant }>(owned: readonly T[], id: number): T | undefined {
  let low = 0;
  let high = owned.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const entry = owned[mid]!;
    if (id < Number(entry.grant.min)) high = mid - 1;
    else if (id > Number(entry.grant.max)) low = mid + 1;
    else return entry;
  }
  return undefined;
}

/** The granted IDs neither recorded nor held, as gaps blamed on who recorded the ID below. */
function reconcile(
  incarnations: readonly RecordedIncarnation[],
  granteeOf: ReadonlyMap<number, string>,
  grantsByDc: ReadonlyMap<string, readonly Grant[]>,
  states: ReadonlyMap<string, DcState>,
): { gapsByCause: GapCause[]; held: number; lost: number } {
  const causes = new Map<string, { ids: number; intervals: number }>();
  const blame = (cause: string, ids: number) => {
    const entry = causes.get(cause) ?? { ids: 0, intervals: 0 };
    entry.ids += ids;
    entry.intervals++;
    causes.set(cause, entry);
  };
  const endings = new Map(incarnations.map((i) => [i.id, i.ending]));
  let held = 0;
  let lost = 0;

  for (const [dc, grants] of grantsByDc) {
    const mine = incarnations.filter((i) => granteeOf.get(i.id) === dc);
    const count = mine.reduce((sum, i) => sum + i.ids.length, 0);
    // Packed into one double and sorted as numbers: V8 refuses a comparator sort this large.
    const keys = new Float64Array(count);
    let k = 0;
    for (const incarnation of mine) {
      if (incarnation.id >= OWNER_SPAN)
        throw new Error(`incarnation ${incarnation.id} does not fit the checker's packed keys`);
      for (const id of incarnation.ids) {
        if (id >= MAX_PACKED_ID) throw new Error(`ID ${id} does not fit the checker's packed keys`);
        keys[k++] = id * OWNER_SPAN + incarnation.id;
      }
    }
    keys.sort();
    const idAt = (i: number): number => Math.floor(keys[i]! / OWNER_SPAN);
    const ownerAt = (i: number): number => keys[i]! % OWNER_SPAN;

    // Held: the reserved range's rest, the preloaded range, grants confirmed and not installed.
    const heldRanges: [number, number][] = [];
    const state = states.get(dc);
    if (state !== undefined) {
      if (state.lastInteger < state.reservedMax)
        heldRanges.push([Number(state.lastInteger + 1n), Number(state.reservedMax)]);
      if (state.installedGrant === state.reservedGrant + 1)
        heldRanges.push([Number(state.preloadedMin), Number(state.preloadedMax)]);
    }
    for (const grant of grants) {
      if (grant.number > (state?.installedGrant ?? 0))
        heldRanges.push([Number(grant.min), Number(grant.max)]);
    }
    heldRanges.sort((x, y) => x[0] - y[0]); // gapUntil walks them in order
    for (const [a, b] of heldRanges) held += b - a + 1;

    let cursor = 0;
    for (const grant of grants) {
      const min = Number(grant.min);
      const max = Number(grant.max);
      while (cursor < count && idAt(cursor) < min) cursor++;
      let next = min; // first ID of the grant not yet accounted for
      let previousOwner: number | undefined;
      // Blames the granted IDs from `next` to `end` that no final state holds.
      const gapUntil = (end: number, followingOwner: number | undefined) => {
        const cause = gapCause(previousOwner, followingOwner, endings);
        const attribute = (a: number, b: number) => {
          lost += b - a + 1;
          blame(cause, b - a + 1);
        };
        let from = next;
        for (const [a, b] of heldRanges) {
          if (b < from || a > end) continue;
          if (a > from) attribute(from, a - 1);
          from = Math.max(from, b + 1);
        }
        if (from <= end) attribute(from, end);
      };
      while (cursor < count) {
        const id = idAt(cursor);
        if (id > max) break;
        if (id > next) gapUntil(id - 1, ownerAt(cursor));
        if (id >= next) next = id + 1;
        previousOwner = ownerAt(cursor);
        cursor++;
      }
      if (next <= max) gapUntil(max, undefined);
    }
  }
  const gapsByCause = [...causes]
    .map(([cause, { ids, intervals }]) => ({ cause, ids, intervals }))
    .sort((a, b) => b.ids - a.ids);
  return { gapsByCause, held, lost };
}

/** Why granted IDs between `before`'s recorded ID and `after`'s were neither recorded nor held. */
function gapCause(
  before: number | undefined,
  after: number | undefined,
  endings: ReadonlyMap<number, string>,
): string {
  if (before !== undefined && before === after)
    return 'skipped inside one process (a take() remainder, a nextIds() call that failed, or a claim whose outcome stayed unknown)';
  if (before === undefined)
    return 'start of a grant (a claim whose outcome stayed unknown, or a process gone before recording)';
  const ending = endings.get(before);
  if (ending === 'killed') return 'process killed: its unused IDs';
  if (ending === 'terminated' || ending === 'closed-while-drawing')
    return 'closed: unused IDs not given back (claimed after, or the give-back stayed unknown)';
  return `process ${ending ?? 'unknown'}: its unused IDs`;
}
