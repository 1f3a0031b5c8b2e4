/**
 * `check`, pure: the invariants (docs/design.md) one sequence's rows break. Reads race writers: a
 * state is judged against the grants with the FIRST read of the states (the grants it names never
 * change, GLOBAL only grows), "at most one grant waiting" with the SECOND (installed_grant grows).
 */

import { dcStateViolations, type DcStateViolationKind } from '../allocator/dc-state.js';
import { InvariantError } from '../errors.js';
import { ascending } from '../order.js';
import { validateStoredSettings } from '../settings/resolve.js';
import type { DcState, Grant } from '../store/port.js';
import type { SequenceSnapshot } from './status.js';

/** A fact read locally because its consistent read failed. */
export interface UnverifiedFact {
  /** `grants`: GLOBAL and every grant; `dc-state`: `dc`'s state, read before or after them. */
  readonly fact: 'grants' | 'dc-state';
  readonly dc: string | undefined;
  readonly read: 'first' | 'second' | undefined;
  /** The consistent read that failed, and its error. */
  readonly reason: string;
}

/** One sequence's reads, and which were local. */
export interface CheckSnapshot extends SequenceSnapshot {
  /** The DC states read after the grants (`states`: before them). @default `states` */
  readonly statesAfter?: ReadonlyMap<string, DcState> | undefined;
  /** Facts read locally; violations resting on one are unconfirmed. @default none */
  readonly unverified?: readonly UnverifiedFact[] | undefined;
}

export type ViolationKind =
  | 'settings-invalid'
  | 'global-outside-domain'
  | 'grant-malformed'
  | 'grant-outside-domain'
  | 'grant-above-global'
  | 'grants-overlap'
  | 'grant-chain-broken'
  | 'grants-outstanding'
  | 'state-of-another-incarnation'
  | DcStateViolationKind;

/** One broken invariant, with the numbers that break it. */
export interface Violation {
  readonly kind: ViolationKind;
  readonly sequence: string;
  /** Undefined for sequence-wide violations. */
  readonly dc: string | undefined;
  readonly message: string;
  /** False when it rests on facts read locally (`unverified`): a lagging replica may be all. */
  readonly confirmed: boolean;
  readonly unverified: readonly UnverifiedFact[];
}

/** `violated` only on confirmed violations; `incomplete` when some facts are unverified. */
export type CheckVerdict = 'ok' | 'violated' | 'incomplete';

export function checkVerdict(
  violations: readonly Violation[],
  unverified: readonly UnverifiedFact[],
): CheckVerdict {
  if (violations.some((v) => v.confirmed)) return 'violated';
  return unverified.length > 0 || violations.length > 0 ? 'incomplete' : 'ok';
}

/** What a violation rests on besides the settings. */
interface Basis {
  readonly grants?: boolean;
  readonly state?: { readonly dc: string; readonly read: 'first' | 'second' };
}

/**
 * Every invariant one sequence's rows break: grants disjoint, inside `[start, max]`, at or below
 * GLOBAL and numbered 1, 2, 3… per DC; at most one grant per DC waiting to be installed; every
 * DC-state invariant. Pure.
 * @returns the violations, sequence-wide ones first.
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
    // As the allocator judges, where the snapshot names the incarnation.
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

function checkGrants(
  snapshot: SequenceSnapshot,
  report: (kind: ViolationKind, dc: string, message: string) => void,
): void {
  const { settings, globalLast } = snapshot;
  const all: { readonly dc: string; readonly grant: Grant; readonly name: string }[] = [];
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
      all.push({ dc, grant, name });
    });
  }

  // Sorted by first ID, grants are disjoint iff each starts above the highest ID seen before it.
  all.sort((a, b) => ascending(a.grant.min, b.grant.min));
  let highest: (typeof all)[number] | undefined;
  for (const entry of all) {
    if (highest !== undefined && entry.grant.min <= highest.grant.max) {
      report('grants-overlap', entry.dc, `${entry.name} overlaps ${highest.name}`);
    }
    if (highest === undefined || entry.grant.max > highest.grant.max) highest = entry;
  }
}

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

/** One line per cause. */
export function describeUnverified(facts: readonly UnverifiedFact[]): string[] {
  const byReason = new Map<string, UnverifiedFact[]>();
  for (const fact of facts) byReason.set(fact.reason, [...(byReason.get(fact.reason) ?? []), fact]);
  return [...byReason].map(([reason, group]) => `${describeFacts(group)}: ${reason}`);
}

/** The facts in a few words, e.g. `dc2's and dc3's states (read after the grants)`. */
export function describeFacts(facts: readonly UnverifiedFact[]): string {
  const parts: string[] = [];
  if (facts.some((f) => f.fact === 'grants')) parts.push('the grants and GLOBAL');
  const states = facts.filter((f) => f.fact === 'dc-state');
  const dcs = [...new Set(states.map((f) => f.dc ?? '?'))].sort();
  if (dcs.length > 0) {
    const reads = new Set(states.map((f) => f.read));
    const when = reads.size > 1 ? 'before and after' : reads.has('first') ? 'before' : 'after';
    const names = dcs.map((dc) => `${dc}'s`);
    const list =
      names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
    parts.push(`${list} state${dcs.length === 1 ? '' : 's'} (read ${when} the grants)`);
  }
  return parts.join(' and ');
}
