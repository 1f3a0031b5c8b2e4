/**
 * Retiring a DC's ranges after its rows went back (docs/design.md, "Rows that went back"): each
 * state partition of the DC is set to its latest grant, spent to the end, so that the DC's next
 * claim asks SERIAL for a new grant, above every ID any DC was ever granted.
 *
 * Why this is safe where the DC state is not: grants and GLOBAL are committed at SERIAL, so a
 * majority of DCs holds them even when every replica of one DC lost writes or was restored from
 * a backup. Every ID the DC ever handed out lies in one of its grants, and the latest grant read
 * at SERIAL is at least the newest one it installed; nothing the DC state says is trusted.
 */

import { randomUUID } from 'node:crypto';

import {
  ContentionError,
  InvariantError,
  RETIRE_OPERATION,
  StoreUnavailableError,
} from '../errors.js';
import { granteesOf } from '../names.js';
import type { DcState, Grant, IdStore, SequenceSettings } from '../store/port.js';
import { isOurs, runConditionalWrite } from './cas.js';
import { remainingIn, retireTo, spentAt, topOf } from './dc-state.js';

/** How often one state partition is read and written again when another write came first. */
export const MAX_RETIRE_ATTEMPTS = 5;

/** What retiring did to one state partition of the DC (the DC itself, or one of its shards). */
export interface RetiredState {
  /** The DC (shard 0), or `dc/k` for shard k. */
  readonly grantee: string;
  /** The latest grant read at SERIAL: the range retired; undefined if the DC has none yet. */
  readonly grant: Grant | undefined;
  /** The state as read at LOCAL_SERIAL before; undefined if there was none. */
  readonly before: DcState | undefined;
  /** False when there was nothing to retire: no grant yet, or already spent at its latest grant. */
  readonly retired: boolean;
  /**
   * IDs the partition still held (the rest of its reserved range, its preloaded range, and its
   * latest grant if it was not installed), which nobody will hand out from now on: a gap.
   */
  readonly gap: bigint;
}

/**
 * Retires the ranges of every state partition of `dc` for sequence `settings.name`. Must run
 * from a client whose local DC is `dc` (its writes are LOCAL_SERIAL rounds among `dc`'s
 * replicas), with the sequence's processes in `dc` stopped: a process still running holds
 * blocks from the old state, and those may be handed out again.
 * @throws {InvariantError} if the grant level itself looks gone back (a DC state installed a
 * grant SERIAL does not show, or holds IDs above GLOBAL): no retiring makes that safe.
 * @throws {ContentionError} if writes kept coming first (processes of the DC still run).
 * @throws {StoreUnavailableError} if LOCAL_SERIAL or SERIAL cannot be reached, or a write's
 * outcome stayed unknown (retiring again is safe).
 */
export async function retireDcRanges(
  store: IdStore,
  settings: SequenceSettings,
  dc: string,
): Promise<readonly RetiredState[]> {
  const out: RetiredState[] = [];
  // Shards only grow, so the settings read now name every state partition the DC ever had.
  for (const grantee of granteesOf(dc, settings.shards)) {
    out.push(await retireOne(store, settings.name, grantee));
  }
  return out;
}

async function retireOne(store: IdStore, sequence: string, grantee: string): Promise<RetiredState> {
  for (let attempt = 1; attempt <= MAX_RETIRE_ATTEMPTS; attempt++) {
    // The state first, then the grants, as a range request reads them: installed grants never
    // outrun the latest grant, so with this order `installed > latest` means lost grants.
    const before = await store.readDcState(sequence, grantee);
    const { latest, globalLast } = await store.readGrants(sequence, grantee);
    checkGrantLevel(sequence, grantee, before, latest, globalLast);
    if (latest === undefined || spentAt(before, latest)) {
      return { grantee, grant: latest, before, retired: false, gap: 0n };
    }
    const op = randomUUID();
    const next = retireTo(before, latest, op);
    const result = await runConditionalWrite<DcState>({
      write: () => store.writeDcState(sequence, grantee, before, next),
      judge: (found) => (found === undefined ? 'unknown' : found.op === op ? 'ours' : 'lost'),
      reread: () => store.readDcState(sequence, grantee),
    });
    if (isOurs(result.verdict)) {
      return { grantee, grant: latest, before, retired: true, gap: gapOf(before, latest) };
    }
    if (result.verdict === 'unknown') {
      throw new StoreUnavailableError(
        'local_serial',
        `retire the ranges of ${grantee}`,
        'the conditional write may or may not have been applied, and its outcome could not be read back; retiring again is safe',
        { cause: result.cause },
      );
    }
    // Lost: another write came first (a process of the DC, or another retire). Read again.
  }
  throw new ContentionError(sequence, RETIRE_OPERATION, MAX_RETIRE_ATTEMPTS);
}

/**
 * Refuses what a retire cannot make safe: a grant level that went back. GLOBAL below the DC's
 * latest grant, a state that installed a grant SERIAL does not show, or a state holding IDs
 * above GLOBAL all mean grants committed at SERIAL were lost, so a new grant could overlap IDs
 * handed out already.
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

/** IDs the state held, plus the latest grant if it was not installed yet. */
function gapOf(state: DcState | undefined, latest: Grant): bigint {
  const notInstalled = latest.number > (state?.installedGrant ?? 0);
  return remainingIn(state) + (notInstalled ? latest.max - latest.min + 1n : 0n);
}
