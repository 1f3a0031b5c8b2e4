/**
 * `check`, pure: every invariant of docs/design.md ("Why no ID is handed out twice") that the
 * stored rows of one sequence break, and whether each finding rests on reads that cannot be stale.
 * The DC-state invariants are the allocator's own list (allocator/dc-state.ts); the sequence-wide
 * ones live here.
 *
 * `Admin.check` reads the DC states, then the grants, then the DC states again, while processes
 * keep writing:
 * - a state is judged against the grants with the FIRST states read: grants it names were
 *   confirmed before it was written and never change, and GLOBAL only grows.
 * - "at most one grant waiting to be installed" with the SECOND: `installed_grant` only grows,
 *   so a state read after the grants is at most one behind them.
 */

import { dcStateViolations, type DcStateViolationKind } from '../allocator/dc-state.js';
import { InvariantError } from '../errors.js';
import { ascending } from '../order.js';
import { validateStoredSettings } from '../settings/resolve.js';
import type { DcState, Grant } from '../store/port.js';
import type { SequenceSnapshot } from './status.js';

/** A fact `check` rests on that could not be read consistently, and was read locally instead. */
export interface UnverifiedFact {
  /** `grants`: GLOBAL and every grant (consistent: SERIAL); `dc-state`: one DC's state. */
  readonly fact: 'grants' | 'dc-state';
  /** The DC whose state it is; undefined for `grants`. */
  readonly dc: string | undefined;
  /** Which read of the DC states: before the grants (`first`) or after them (`second`). */
  readonly read: 'first' | 'second' | undefined;
  /** Why: the consistent read that failed, and its error. */
  readonly reason: string;
}

/** What {@link checkSequence} checks: the reads of one sequence, and how fresh each was. */
export interface CheckSnapshot extends SequenceSnapshot {
  /**
   * The DC states read after the grants (`states` were read before them); "at most one grant
   * waiting to be installed" is checked against these.
   * @default `states` (one read of everything, as in a hand-made snapshot)
   */
  readonly statesAfter?: ReadonlyMap<string, DcState> | undefined;
  /**
   * Facts that were read locally (they may lag) because their consistent read failed.
   * Violations that rest on one of them are reported unconfirmed.
   * @default none: every fact was read consistently
   */
  readonly unverified?: readonly UnverifiedFact[] | undefined;
}

/** The kinds of broken invariant {@link checkSequence} reports. */
export type ViolationKind =
  /** The settings break the rules sequences are created with. */
  | 'settings-invalid'
  /** GLOBAL.last_integer is below `start - 1` or above `max`. */
  | 'global-outside-domain'
  /** A grant with `min > max`. */
  | 'grant-malformed'
  /** A grant reaching below `start` or above `max`. */
  | 'grant-outside-domain'
  /** A grant ending above GLOBAL.last_integer. */
  | 'grant-above-global'
  /** Two grants (of one DC or of two) sharing IDs. */
  | 'grants-overlap'
  /** A DC's grant numbers are not the chain 1, 2, 3, …. */
  | 'grant-chain-broken'
  /** More than one grant made but not installed (grant n + 1 needs grant n installed). */
  | 'grants-outstanding'
  /**
   * A DC state written for an earlier sequence of this name; not judged against this sequence's
   * grants.
   */
  | 'state-of-another-incarnation'
  /** A DC state's own invariants and those against its grants (allocator/dc-state.ts). */
  | DcStateViolationKind;

/** One broken invariant, with the numbers that break it. */
export interface Violation {
  readonly kind: ViolationKind;
  readonly sequence: string;
  /** The DC concerned; undefined for sequence-wide violations. */
  readonly dc: string | undefined;
  readonly message: string;
  /**
   * True when every fact the violation rests on was read consistently: the rows really break
   * the invariant. False when one was read locally: a lagging replica may be all it shows.
   */
  readonly confirmed: boolean;
  /** The unverified facts it rests on; empty when confirmed. */
  readonly unverified: readonly UnverifiedFact[];
}

/**
 * What a check concludes: `violated` only on confirmed violations; `incomplete` when nothing is
 * confirmed broken but some facts could not be read consistently; `ok` otherwise.
 */
export type CheckVerdict = 'ok' | 'violated' | 'incomplete';

/** The verdict of a check that found `violations` with `unverified` facts. */
export function checkVerdict(
  violations: readonly Violation[],
  unverified: readonly UnverifiedFact[],
): CheckVerdict {
  if (violations.some((v) => v.confirmed)) return 'violated';
  return unverified.length > 0 || violations.length > 0 ? 'incomplete' : 'ok';
}

/** What a finding rests on besides the settings (read at LOCAL_QUORUM; written at EACH_QUORUM). */
interface Basis {
  readonly grants?: boolean;
  readonly state?: { readonly dc: string; readonly read: 'first' | 'second' };
}

/**
 * Every invariant the stored rows of one sequence break: grants disjoint, inside `[start, max]`,
 * at or below GLOBAL and numbered 1, 2, 3… per DC; at most one grant per DC waiting to be
 * installed; and every DC-state invariant of allocator/dc-state.ts. Each violation says whether
 * it is confirmed (see {@link CheckSnapshot.unverified}). Pure.
 *
 * @example
 * ```ts
 * for (const v of checkSequence(await admin.snapshot('orders'))) console.error(v.message);
 * ```
 * @returns the violations, sequence-wide ones first; empty when every invariant holds.
 */
export function checkSequence(snapshot: CheckSnapshot): Violation[] {
  const { settings, globalLast } = snapshot;
  const sequence = settings.name;
  const unverified = snapshot.unverified ?? [];
  const statesAfter = snapshot.statesAfter ?? snapshot.states;
  const violations: Violation[] = [];
  const report = (kind: ViolationKind, dc: string | undefined, message: string, basis: Basis) => {
    const resting = unverified.filter(
      (fact) =>
        (basis.grants === true && fact.fact === 'grants') ||
        (basis.state !== undefined &&
          fact.fact === 'dc-state' &&
          fact.dc === basis.state.dc &&
          fact.read === basis.state.read),
    );
    violations.push({
      kind,
      sequence,
      dc,
      message: `${sequence}: ${message}`,
      confirmed: resting.length === 0,
      unverified: resting,
    });
  };

  try {
    validateStoredSettings(settings);
  } catch (error) {
    if (!(error instanceof InvariantError)) throw error;
    report('settings-invalid', undefined, error.detail, {});
  }
  if (globalLast < settings.start - 1n || globalLast > settings.max) {
    report(
      'global-outside-domain',
      undefined,
      `GLOBAL last_integer ${globalLast} is outside [start - 1, max] = [${settings.start - 1n}, ${settings.max}]`,
      { grants: true },
    );
  }
  checkGrants(snapshot, (kind, dc, message) => report(kind, dc, message, { grants: true }));

  const dcs = [
    ...new Set([...snapshot.grants.keys(), ...snapshot.states.keys(), ...statesAfter.keys()]),
  ].sort();
  for (const dc of dcs) {
    const grants = snapshot.grants.get(dc) ?? [];
    const first = snapshot.states.get(dc);
    // Judged as the allocator judges, where the snapshot names the incarnation.
    const { incarnation } = snapshot;
    if (
      'incarnation' in snapshot &&
      first?.incarnation !== undefined &&
      first.incarnation !== incarnation
    ) {
      report(
        'state-of-another-incarnation',
        dc,
        `the state of ${dc} (version ${first.version}) was written for another sequence of this name (incarnation ${first.incarnation}, this one ${incarnation ?? 'none'}): its rows were deleted by hand and the name created again, and IDs may be handed out twice; create a sequence under another name (docs/operations.md, "Data layout")`,
        { state: { dc, read: 'first' } },
      );
      continue;
    }
    if (first !== undefined) {
      // The state's own invariants rest on the state alone; the rest on the grants as well.
      const own = new Set(
        dcStateViolations(dc, first, { settings }).map((v) => `${v.kind} ${v.message}`),
      );
      const all = dcStateViolations(dc, first, { settings, grants, allGrants: true, globalLast });
      for (const v of all) {
        report(v.kind, dc, v.message, {
          state: { dc, read: 'first' },
          grants: !own.has(`${v.kind} ${v.message}`),
        });
      }
    }
    const outstanding = outstandingGrants(dc, grants, statesAfter.get(dc));
    if (outstanding !== undefined) {
      report('grants-outstanding', dc, outstanding, {
        grants: true,
        state: { dc, read: 'second' },
      });
    }
  }
  return violations;
}

/** The sequence-wide invariants of the grants: chain, well-formed, in the domain, disjoint. */
function checkGrants(
  snapshot: SequenceSnapshot,
  report: (kind: ViolationKind, dc: string, message: string) => void,
): void {
  const { settings, globalLast } = snapshot;
  const all: { readonly dc: string; readonly grant: Grant }[] = [];
  for (const [dc, grants] of [...snapshot.grants].sort(([a], [b]) => ascending(a, b))) {
    grants.forEach((grant, index) => {
      const name = `grant #${grant.number} of ${dc} [${grant.min}, ${grant.max}]`;
      if (grant.number !== index + 1) {
        report(
          'grant-chain-broken',
          dc,
          `${dc}'s grants are numbered ${grants.map((g) => g.number).join(', ')}; expected 1 to ${grants.length}`,
        );
      }
      if (grant.min > grant.max) {
        report('grant-malformed', dc, `${name} has min above max`);
        return;
      }
      if (grant.min < settings.start || grant.max > settings.max) {
        report(
          'grant-outside-domain',
          dc,
          `${name} is outside [start, max] = [${settings.start}, ${settings.max}]`,
        );
      }
      if (grant.max > globalLast) {
        report('grant-above-global', dc, `${name} ends above GLOBAL last_integer ${globalLast}`);
      }
      all.push({ dc, grant });
    });
  }

  // Sorted by first ID, grants are disjoint iff each starts above the highest ID seen before it.
  all.sort((a, b) => ascending(a.grant.min, b.grant.min));
  let highest: (typeof all)[number] | undefined;
  for (const entry of all) {
    if (highest !== undefined && entry.grant.min <= highest.grant.max) {
      report(
        'grants-overlap',
        entry.dc,
        `grant #${entry.grant.number} of ${entry.dc} [${entry.grant.min}, ${entry.grant.max}] overlaps grant #${highest.grant.number} of ${highest.dc} [${highest.grant.min}, ${highest.grant.max}]`,
      );
    }
    if (highest === undefined || entry.grant.max > highest.grant.max) highest = entry;
  }
}

/** Why `dc` has more than one grant waiting to be installed, or undefined if it has not. */
function outstandingGrants(
  dc: string,
  grants: readonly Grant[],
  state: DcState | undefined,
): string | undefined {
  const latest = grants.reduce((highest, grant) => Math.max(highest, grant.number), 0);
  const installed = state?.installedGrant ?? 0;
  if (latest <= installed + 1) return undefined;
  return state === undefined
    ? `${dc} has grants up to #${latest} but no DC state (each grant after #1 needs the one before installed)`
    : `${dc} has grants up to #${latest} but installed only #${installed} (at most one grant may wait to be installed)`;
}

/**
 * The unverified facts as one line per cause, e.g. `dc2's and dc3's states (read before and after
 * the grants): EACH_QUORUM read failed: …`.
 */
export function describeUnverified(facts: readonly UnverifiedFact[]): string[] {
  const byReason = new Map<string, UnverifiedFact[]>();
  for (const fact of facts) byReason.set(fact.reason, [...(byReason.get(fact.reason) ?? []), fact]);
  return [...byReason].map(([reason, group]) => `${describeFacts(group)}: ${reason}`);
}

/** The facts in a few words, e.g. `the grants and GLOBAL and dc3's state (read before the grants)`. */
export function describeFacts(facts: readonly UnverifiedFact[]): string {
  const parts: string[] = [];
  if (facts.some((f) => f.fact === 'grants')) parts.push('the grants and GLOBAL');
  const states = facts.filter((f) => f.fact === 'dc-state');
  const dcs = [...new Set(states.map((f) => f.dc ?? '?'))].sort();
  if (dcs.length > 0) {
    const reads = new Set(states.map((f) => f.read));
    const when =
      reads.size > 1
        ? 'read before and after the grants'
        : reads.has('first')
          ? 'read before the grants'
          : 'read after the grants';
    const names = dcs.map((dc) => `${dc}'s`);
    const list =
      names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
    parts.push(`${list} state${dcs.length === 1 ? '' : 's'} (${when})`);
  }
  return parts.join(' and ');
}
