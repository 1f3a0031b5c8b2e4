/** Retiring a DC's ranges after its rows went back (docs/design.md, "Rows that went back"). */

import { randomUUID } from 'node:crypto';

import {
  ContentionError,
  InvariantError,
  SequenceRecreatedError,
  RETIRE_OPERATION,
} from '../errors.js';
import { granteesOf } from '../names.js';
import type { DcState, Grant, IdStore, StoredSettings } from '../store/port.js';
import { isOurs, runConditionalWrite, unknownOutcome } from './cas.js';
import { judgeStateWrite } from './dc-state-row.js';
import { otherIncarnation, remainingIn, retireTo, spentAt, topOf } from './dc-state.js';

export const MAX_RETIRE_ATTEMPTS = 5;

const RETIRE_OP = 'retire:';

export function isRetireOp(op: string | undefined): boolean {
  return op?.startsWith(RETIRE_OP) === true;
}

/**
 * Whose write left a partition spent, as the rows show: none (`no-grant`), nobody's now
 * (`already-spent`), this retire's, another's, or unknown (a write of ours may have applied).
 */
export type RetireOutcome =
  'no-grant' | 'already-spent' | 'retired' | 'spent-by-another' | 'spent-unknown';

/** What retiring did to one state partition of the DC. */
export interface RetiredState {
  readonly grantee: string;
  /** The range retired: the latest grant read at SERIAL. */
  readonly grant: Grant | undefined;
  readonly before: DcState | undefined;
  readonly outcome: RetireOutcome;
  readonly retired: boolean;
  /** IDs the partition still held that this retire took out of use. */
  readonly gap: bigint;
}

/** Retires every state partition of `dc` (run in `dc`); throws as {@link IdGen.retireDcRanges}. */
export async function retireDcRanges(
  store: IdStore,
  stored: StoredSettings,
  dc: string,
): Promise<readonly RetiredState[]> {
  const { settings, incarnation } = stored;
  const out: RetiredState[] = [];
  // Shards only grow: these are every partition the DC ever had.
  for (const grantee of granteesOf(dc, settings.shards)) {
    const retired = await retireOne(store, settings.name, grantee, incarnation);
    out.push(retired);
    // Outside the protocol: a failure only leaves the usage counters short.
    if (retired.gap > 0n) {
      await store
        .addDcUsage(settings.name, grantee, { retired: Number(retired.gap) })
        .catch(() => undefined);
    }
  }
  return out;
}

interface Attempt {
  readonly before: DcState | undefined;
  readonly latest: Grant;
  readonly next: DcState;
  applied: boolean;
  /** Another op found at its version: never applied. */
  lost: boolean;
  /** Written over a state already spent: it retires nothing. */
  readonly seal: boolean;
}

/**
 * Retires one partition. Its last write is its own, applied, even on a spent partition (a seal):
 * a write accepted by a minority would otherwise be committed by the next round, reopening IDs.
 */
async function retireOne(
  store: IdStore,
  sequence: string,
  grantee: string,
  incarnation: string | undefined,
): Promise<RetiredState> {
  const attempts: Attempt[] = [];
  let first: DcState | undefined;
  const note = (state: DcState | undefined) => {
    if (state === undefined) return;
    for (const a of attempts) {
      if (state.op === a.next.op) a.applied = true;
      else if (state.version === a.next.version) a.lost = true;
    }
  };
  const done = (grant: Grant | undefined, outcome: RetireOutcome): RetiredState => {
    const applied = attempts.filter((a) => a.applied);
    const gap = applied.reduce((sum, a) => sum + gapOf(a.before, a.latest), 0n);
    return { grantee, grant, before: first, outcome, retired: outcome === 'retired', gap };
  };
  for (let attempt = 1; attempt <= MAX_RETIRE_ATTEMPTS; attempt++) {
    // The state before the grants: then `installed > latest` means lost grants.
    const before = await store.readDcState(sequence, grantee);
    if (attempt === 1) first = before;
    note(before);
    // Another sequence's row: its IDs came from grants this GLOBAL does not cover.
    const other = before && otherIncarnation(grantee, before, incarnation);
    if (other !== undefined) {
      throw new SequenceRecreatedError(sequence, `${other}; nothing was retired there`);
    }
    const { latest, globalLast } = await store.readGrants(sequence, grantee);
    checkGrantLevel(sequence, grantee, before, latest, globalLast);
    if (latest === undefined) return done(latest, 'no-grant');
    const seal = spentAt(before, latest);
    const op = `${RETIRE_OP}${randomUUID()}`;
    const next: DcState = { ...retireTo(before, latest, op), incarnation };
    const current: Attempt = { before, latest, next, applied: false, lost: false, seal };
    attempts.push(current);
    const result = await runConditionalWrite<DcState>({
      write: () => store.writeDcState(sequence, grantee, before, next),
      judge: (found) => judgeStateWrite(found, next),
      reread: () => store.readDcState(sequence, grantee),
    });
    note(result.found);
    if (isOurs(result.verdict)) {
      current.applied = true;
      return done(latest, seal ? spentBy(attempts) : 'retired');
    }
    if (result.verdict === 'unknown' && result.found === undefined) {
      const operation = `retire the ranges of ${grantee}`;
      throw unknownOutcome('local_serial', operation, result, 'retiring again is safe');
    }
  }
  throw new ContentionError(sequence, RETIRE_OPERATION, MAX_RETIRE_ATTEMPTS);
}

function spentBy(attempts: readonly Attempt[]): RetireOutcome {
  const retiring = attempts.filter((a) => !a.seal);
  if (retiring.length === 0) return 'already-spent';
  if (retiring.some((a) => a.applied)) return 'retired';
  return retiring.every((a) => a.lost) ? 'spent-by-another' : 'spent-unknown';
}

/** Refuses a grant level that went back: a new grant could overlap IDs handed out already. */
function checkGrantLevel(
  sequence: string,
  grantee: string,
  state: DcState | undefined,
  latest: Grant | undefined,
  globalLast: bigint,
): void {
  const refuse = (detail: string) => {
    throw new InvariantError(
      sequence,
      `${detail}: the grant level (committed at SERIAL) went back, and retiring ${grantee}'s ranges cannot make a new grant safe`,
    );
  };
  if (latest !== undefined && latest.max > globalLast) {
    refuse(`${grantee}'s grant ${latest.number} ends at ${latest.max}, above GLOBAL ${globalLast}`);
  }
  if (state === undefined) return;
  if (state.installedGrant > (latest?.number ?? 0)) {
    refuse(
      `${grantee}'s state installed grant ${state.installedGrant}, but its latest grant at SERIAL is ${latest?.number ?? 'none'}`,
    );
  }
  const top = topOf(state);
  if (top > globalLast)
    refuse(`${grantee}'s state holds IDs up to ${top}, above GLOBAL ${globalLast}`);
}

function gapOf(state: DcState | undefined, latest: Grant): bigint {
  const notInstalled = latest.number > (state?.installedGrant ?? 0);
  return remainingIn(state) + (notInstalled ? latest.max - latest.min + 1n : 0n);
}
