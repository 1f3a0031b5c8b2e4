/**
 * Retiring a DC's ranges after its rows went back (docs/design.md, "Rows that went back"): each
 * state partition of the DC is set to its latest grant, spent to the end, so the next claim asks
 * SERIAL for a grant above every ID ever granted. Safe because grants and GLOBAL are committed
 * at SERIAL, so a majority of DCs holds them whatever one DC lost, and every ID the DC handed out
 * lies in one of its grants; nothing the DC state says is trusted.
 */

import { randomUUID } from 'node:crypto';

import {
  ContentionError,
  InvariantError,
  SequenceRecreatedError,
  RETIRE_OPERATION,
  StoreUnavailableError,
} from '../errors.js';
import { granteesOf } from '../names.js';
import type { DcState, Grant, IdStore, StoredSettings } from '../store/port.js';
import { isOurs, runConditionalWrite } from './cas.js';
import { judgeStateWrite } from './dc-state-row.js';
import { otherIncarnation, remainingIn, retireTo, spentAt, topOf } from './dc-state.js';

/** How often one state partition is read and written again when another write came first. */
export const MAX_RETIRE_ATTEMPTS = 5;

/** The prefix of a retire's ops, so that status can tell a retire's write from claims. */
const RETIRE_OP = 'retire:';

export function isRetireOp(op: string | undefined): boolean {
  return op?.startsWith(RETIRE_OP) === true;
}

/**
 * Whose write left a partition spent at its latest grant, as far as the rows show (a write can
 * be applied yet reported rejected or unknown; only its op, or another op at the version it
 * would have taken, tells):
 * - `no-grant`: the DC has no grant yet; nothing written.
 * - `already-spent`: spent when first read; the retire wrote it again (see {@link retireOne}).
 * - `retired`: spent by a write of this retire.
 * - `spent-by-another`: spent by another writer; each write of this one was shown lost.
 * - `spent-unknown`: another op in the rows and a write of this one neither found nor shown
 *   lost: it may have been applied then replaced, so its gap is unknown.
 */
export type RetireOutcome =
  'no-grant' | 'already-spent' | 'retired' | 'spent-by-another' | 'spent-unknown';

/** What retiring did to one state partition of the DC (the DC itself, or one of its shards). */
export interface RetiredState {
  /** The DC (shard 0), or `dc/k` for shard k. */
  readonly grantee: string;
  /** The latest grant read at SERIAL: the range retired; undefined if the DC has none yet. */
  readonly grant: Grant | undefined;
  /** The state as this retire first read it at LOCAL_SERIAL. */
  readonly before: DcState | undefined;
  readonly outcome: RetireOutcome;
  readonly retired: boolean;
  /**
   * IDs the partition still held (reserved rest, preloaded range, an uninstalled latest grant)
   * that this retire's applied writes took out of use: a gap. 0 unless `retired`.
   */
  readonly gap: bigint;
}

/**
 * Retires the ranges of every state partition of `dc`. Must run from a client whose local DC is
 * `dc`, with the sequence's processes there stopped: a running process holds blocks from the old
 * state, which could be handed out again.
 * @throws {InvariantError} if the grant level itself looks gone back (a DC state installed a
 * grant SERIAL does not show, or holds IDs above GLOBAL): no retiring makes that safe.
 * @throws {ContentionError} if writes kept coming first (processes of the DC still run).
 * @throws {StoreUnavailableError} if LOCAL_SERIAL or SERIAL cannot be reached, or a write's
 * outcome stayed unknown (retiring again is safe).
 */
export async function retireDcRanges(
  store: IdStore,
  stored: StoredSettings,
  dc: string,
): Promise<readonly RetiredState[]> {
  const { settings, incarnation } = stored;
  const out: RetiredState[] = [];
  // Shards only grow, so the settings read now name every state partition the DC ever had.
  for (const grantee of granteesOf(dc, settings.shards)) {
    const retired = await retireOne(store, settings.name, grantee, incarnation);
    out.push(retired);
    // The gap in the DC's usage counters. Outside the protocol: a failure only leaves them short.
    if (retired.gap > 0n) {
      await store
        .addDcUsage(settings.name, grantee, { retired: Number(retired.gap) })
        .catch(() => undefined);
    }
  }
  return out;
}

/** One write of a retire: the state it was conditional on, and the state it would write. */
interface Attempt {
  readonly before: DcState | undefined;
  readonly latest: Grant;
  readonly next: DcState;
  applied: boolean;
  /** Another op found at the version it would have taken: never applied, and never will be. */
  lost: boolean;
  /** Written over a state already spent at `latest`: it retires nothing (see retireOne). */
  readonly seal: boolean;
}

/**
 * Retires one state partition. Its last write is always one of its own, applied, even on a
 * partition already spent (a seal: the same state, one version up): a stopped process's write
 * (say a give-back) may sit accepted by a minority, unseen by the LOCAL_SERIAL read, and the
 * next round would commit it, reopening IDs handed out before the rows went back. The retire's
 * own round either commits that write first (its condition fails, and it retries) or is
 * committed at a newer ballot, after which the older write never is.
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
    // The state first, then the grants, as a range request reads them: installed grants never
    // outrun the latest grant, so with this order `installed > latest` means lost grants.
    const before = await store.readDcState(sequence, grantee);
    if (attempt === 1) first = before;
    note(before);
    // A row of another sequence of this name cannot be retired into this one: its IDs were
    // handed out from grants this sequence's GLOBAL no longer covers.
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
      throw new StoreUnavailableError(
        'local_serial',
        `retire the ranges of ${grantee}`,
        'the conditional write may or may not have been applied, and its outcome could not be read back; retiring again is safe',
        { cause: result.cause },
      );
    }
    // Another op found: another write came first or after, or ours is in flight. Read again.
  }
  throw new ContentionError(sequence, RETIRE_OPERATION, MAX_RETIRE_ATTEMPTS);
}

function spentBy(attempts: readonly Attempt[]): RetireOutcome {
  const retiring = attempts.filter((a) => !a.seal);
  if (retiring.length === 0) return 'already-spent';
  if (retiring.some((a) => a.applied)) return 'retired';
  return retiring.every((a) => a.lost) ? 'spent-by-another' : 'spent-unknown';
}

/**
 * Refuses a grant level that went back (GLOBAL below the DC's latest grant, an installed grant
 * SERIAL does not show, IDs above GLOBAL): grants committed at SERIAL were lost, so a new grant
 * could overlap IDs handed out already.
 */
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
