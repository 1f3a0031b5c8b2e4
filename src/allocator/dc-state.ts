/**
 * The DC state as a model: pure transitions (next state, version one up, op given) and the one
 * list of its invariants, enforced by the allocator before each write and reported by `check`.
 */

import type { DcState, Grant, SequenceSettings } from '../store/port.js';
import { mutated } from '../mutations.js';

/** Versions are compared as JavaScript numbers. */
export const MAX_VERSION = Number.MAX_SAFE_INTEGER;

/** Block `[first, last]`, cut from the range `[rangeMin, rangeMax]`. */
export interface BlockClaim {
  readonly first: bigint;
  readonly last: bigint;
  readonly rangeMin: bigint;
  readonly rangeMax: bigint;
}

/** A preloaded range exists iff the newest installed grant is the one after the reserved one. */
export function hasPreloaded(state: DcState): boolean {
  return state.installedGrant === state.reservedGrant + 1;
}

/** The highest ID the DC holds a range up to. */
export function topOf(state: DcState): bigint {
  return hasPreloaded(state) ? state.preloadedMax : state.reservedMax;
}

export function remainingIn(state: DcState | undefined): bigint {
  if (state === undefined) return 0n;
  const reserved = state.reservedMax - state.lastInteger;
  return hasPreloaded(state) ? reserved + state.preloadedMax - state.preloadedMin + 1n : reserved;
}

/** Whether the DC holds IDs to claim, all above `highest` (its whole reserved range counts). */
export function holdsIdsAbove(state: DcState, highest: bigint): boolean {
  const holds = state.lastInteger < state.reservedMax || hasPreloaded(state);
  return holds && state.reservedMin > highest;
}

/** Claims from the reserved range, else the preloaded one; undefined when the DC holds none. */
export function claim(
  state: DcState,
  blockSize: bigint,
  op: string,
): { readonly next: DcState; readonly block: BlockClaim } | undefined {
  if (state.lastInteger < state.reservedMax) {
    const first = state.lastInteger + 1n;
    const last = min(state.lastInteger + blockSize, state.reservedMax);
    return {
      next: { ...state, lastInteger: last, version: state.version + 1, op },
      block: { first, last, rangeMin: state.reservedMin, rangeMax: state.reservedMax },
    };
  }
  if (!hasPreloaded(state)) return undefined;
  const first = state.preloadedMin;
  const last = min(first + blockSize - 1n, state.preloadedMax);
  return {
    next: {
      ...state,
      reservedMin: state.preloadedMin,
      reservedMax: state.preloadedMax,
      reservedGrant: state.installedGrant,
      lastInteger: last,
      version: state.version + 1,
      op,
    },
    block: { first, last, rangeMin: state.preloadedMin, rangeMax: state.preloadedMax },
  };
}

/**
 * Installs confirmed grant `grant` as the preloaded range (the first one as a new state).
 * Undefined when `state` cannot take it now.
 * @throws {RangeError} naming the broken rule when the grant does not follow.
 */
export function installGrant(
  state: DcState | undefined,
  grant: Grant,
  op: string,
): DcState | undefined {
  if (state === undefined) {
    if (grant.number !== 1) {
      throw new RangeError(`grant ${grant.number} cannot be the first one installed`);
    }
    return onlyGrant(grant, grant.min - 1n, 1, op);
  }
  if (state.installedGrant >= grant.number || hasPreloaded(state)) return undefined;
  if (state.installedGrant !== grant.number - 1) {
    throw new RangeError(
      `grant ${grant.number} cannot follow installed grant ${state.installedGrant}`,
    );
  }
  if (grant.min <= state.reservedMax) {
    throw new RangeError(
      `grant ${grant.number} [${grant.min}, ${grant.max}] does not lie above the reserved range ending at ${state.reservedMax}`,
    );
  }
  return {
    ...state,
    preloadedMin: grant.min,
    preloadedMax: grant.max,
    installedGrant: grant.number,
    version: state.version + 1,
    op,
  };
}

/** {@link installGrant} then {@link claim}, as one transition (the version moves by one). */
export function installAndClaim(
  state: DcState | undefined,
  grant: Grant,
  blockSize: bigint,
  op: string,
): { readonly next: DcState; readonly block: BlockClaim } | undefined {
  const installed = installGrant(state, grant, op);
  const claimed = installed === undefined ? undefined : claim(installed, blockSize, op);
  if (claimed === undefined) return undefined;
  return { next: { ...claimed.next, version: (state?.version ?? 0) + 1 }, block: claimed.block };
}

/** Gives `[first, last]` back if nobody claimed after it; undefined if nothing can go back. */
export function giveBack(
  state: DcState,
  first: bigint,
  last: bigint,
  op: string,
): { readonly next: DcState; readonly returned: bigint } | undefined {
  if (state.lastInteger !== last) return undefined;
  const from = first > state.reservedMin ? first : state.reservedMin;
  if (from > last) return undefined;
  return {
    next: { ...state, lastInteger: from - 1n, version: state.version + 1, op },
    returned: last - from + 1n,
  };
}

/**
 * Why `state` is not of the sequence loaded with `incarnation`, if it is not (docs/design.md, "A
 * sequence's rows are never deleted").
 */
export function otherIncarnation(
  grantee: string,
  state: DcState,
  incarnation: string | undefined,
): string | undefined {
  if (state.incarnation === undefined || state.incarnation === incarnation) return undefined;
  return `the state row of "${grantee}" (version ${state.version}) was written for another sequence of this name (incarnation ${state.incarnation}, loaded ${incarnation ?? 'none'})`;
}

/** The state a retire leaves: `grant` spent to its end (docs/design.md, "Rows that went back"). */
export function retireTo(state: DcState | undefined, grant: Grant, op: string): DcState {
  const last = mutated('retire-keeps-last-integer') ? keptLast(state, grant) : grant.max;
  return onlyGrant(grant, last, (state?.version ?? 0) + 1, op);
}

function onlyGrant(grant: Grant, lastInteger: bigint, version: number, op: string): DcState {
  return {
    lastInteger,
    reservedMin: grant.min,
    reservedMax: grant.max,
    reservedGrant: grant.number,
    preloadedMin: grant.min,
    preloadedMax: grant.max,
    installedGrant: grant.number,
    version,
    op,
  };
}

/** The negative control 'retire-keeps-last-integer': last_integer kept within `grant`. */
function keptLast(state: DcState | undefined, grant: Grant): bigint {
  const last = state?.lastInteger ?? grant.min - 1n;
  return last < grant.min ? grant.min - 1n : min(last, grant.max);
}

/** Whether `state` is what {@link retireTo} writes for `grant`. */
export function spentAt(state: DcState | undefined, grant: Grant): boolean {
  return (
    state !== undefined &&
    state.installedGrant === grant.number &&
    state.reservedGrant === grant.number &&
    state.lastInteger === grant.max &&
    state.reservedMax === grant.max
  );
}

/** The invariants a DC state breaks; the messages below say each. */
export type DcStateViolationKind =
  | 'version-invalid'
  | 'range-outside-domain'
  | 'last-integer-outside-reserved'
  | 'grant-numbers-invalid'
  | 'preloaded-mismatch'
  | 'reserved-mismatch'
  | 'state-without-grant'
  | 'installed-grant-ahead'
  | 'state-above-global';

export interface DcStateViolation {
  readonly kind: DcStateViolationKind;
  readonly message: string;
}

export interface DcStateContext {
  readonly settings: Pick<SequenceSettings, 'start' | 'max'>;
  /** The DC's grants read after the state (all, or only the latest). */
  readonly grants?: readonly Grant[] | undefined;
  /** Whether `grants` holds every grant of the DC. */
  readonly allGrants?: boolean | undefined;
  readonly globalLast?: bigint | undefined;
}

/** Every invariant `s` breaks, in order: the allocator throws the first, `check` lists all. */
export function dcStateViolations(
  dc: string,
  s: DcState,
  context: DcStateContext,
): DcStateViolation[] {
  const out: DcStateViolation[] = [];
  const report = (kind: DcStateViolationKind, message: string) => out.push({ kind, message });
  // Grants start at `start`; `min` may lie below.
  const { start: low, max: high } = context.settings;
  const range = (a: bigint, b: bigint) => `[${a}, ${b}]`;

  if (!Number.isSafeInteger(s.version) || s.version < 1 || s.version > MAX_VERSION) {
    report('version-invalid', `${dc}'s state version ${s.version} is not a positive integer`);
  }
  if (s.reservedMin > s.reservedMax || s.reservedMin < low || s.reservedMax > high) {
    report(
      'range-outside-domain',
      `${dc}'s reserved range ${range(s.reservedMin, s.reservedMax)} is not within ${range(low, high)}`,
    );
  }
  if (s.preloadedMin > s.preloadedMax || s.preloadedMin < low || s.preloadedMax > high) {
    report(
      'range-outside-domain',
      `${dc}'s preloaded range ${range(s.preloadedMin, s.preloadedMax)} is not within ${range(low, high)}`,
    );
  }
  if (s.lastInteger < s.reservedMin - 1n || s.lastInteger > s.reservedMax) {
    report(
      'last-integer-outside-reserved',
      `${dc}'s last_integer ${s.lastInteger} is outside [reserved_min - 1, reserved_max] = ${range(s.reservedMin - 1n, s.reservedMax)}`,
    );
  }
  if (!Number.isSafeInteger(s.reservedGrant) || s.reservedGrant < 1) {
    report(
      'grant-numbers-invalid',
      `${dc}'s reserved grant ${s.reservedGrant} is not a positive integer`,
    );
  } else if (s.installedGrant !== s.reservedGrant && s.installedGrant !== s.reservedGrant + 1) {
    report(
      'grant-numbers-invalid',
      `${dc}'s installed_grant ${s.installedGrant} must be its reserved_grant ${s.reservedGrant} or one more`,
    );
  }
  if (hasPreloaded(s)) {
    if (s.preloadedMin <= s.reservedMax) {
      report(
        'preloaded-mismatch',
        `${dc}'s preloaded range ${range(s.preloadedMin, s.preloadedMax)} does not lie above its reserved range ${range(s.reservedMin, s.reservedMax)}`,
      );
    }
  } else if (s.preloadedMin !== s.reservedMin || s.preloadedMax !== s.reservedMax) {
    report(
      'preloaded-mismatch',
      `${dc} has nothing preloaded (installed_grant = reserved_grant = ${s.installedGrant}) but its preloaded range ${range(s.preloadedMin, s.preloadedMax)} differs from its reserved range ${range(s.reservedMin, s.reservedMax)}`,
    );
  }

  const top = topOf(s);
  if (context.globalLast !== undefined && top > context.globalLast) {
    report(
      'state-above-global',
      `${dc} holds IDs up to ${top}, above GLOBAL last_integer ${context.globalLast}`,
    );
  }

  const grants = context.grants;
  if (grants === undefined) return out;
  const latest = grants.reduce((highest, g) => Math.max(highest, g.number), 0);
  if (context.allGrants === true && s.installedGrant > latest) {
    report(
      'installed-grant-ahead',
      `${dc}'s state has installed_grant ${s.installedGrant} but its latest grant is #${latest}`,
    );
  }
  const named = (number: number, what: 'reserved' | 'preloaded', min: bigint, max: bigint) => {
    const grant = grants.find((g) => g.number === number);
    if (grant === undefined) {
      if (context.allGrants === true) {
        report(
          'state-without-grant',
          `${dc}'s ${what} range ${range(min, max)} names grant #${number}, which ${dc} does not have`,
        );
      }
      return;
    }
    if (grant.min !== min || grant.max !== max) {
      report(
        what === 'reserved' ? 'reserved-mismatch' : 'preloaded-mismatch',
        `${dc}'s ${what} range ${range(min, max)} differs from its grant #${number} ${range(grant.min, grant.max)}`,
      );
    }
  };
  named(s.reservedGrant, 'reserved', s.reservedMin, s.reservedMax);
  if (hasPreloaded(s)) named(s.installedGrant, 'preloaded', s.preloadedMin, s.preloadedMax);
  return out;
}

export function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
