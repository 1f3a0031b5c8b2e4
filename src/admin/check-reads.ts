/**
 * The reads `check` rests on, in the order check.ts needs: DC states, grants, DC states again.
 * DC states at EACH_QUORUM (which includes each DC's own quorum, so none is older than its DC's
 * last write); grants and GLOBAL at SERIAL (which also finishes a grant in flight). When a
 * consistent read fails, the rows are read at LOCAL_QUORUM and the fact marked unverified; the
 * local DC's own states are then read at LOCAL_SERIAL, still consistent.
 */

import { SequenceNotFoundError, StoreUnavailableError } from '../errors.js';
import { granteesOf } from '../names.js';
import { describeDriverError } from '../store/cassandra/errors.js';
import type { DcState, IdStore, OverviewReading, StoredSettings } from '../store/port.js';
import type { CheckSnapshot, UnverifiedFact } from './check.js';

/** Where the reads run from. */
export interface CheckReadContext {
  readonly store: IdStore;
  /** The local DC, whose states can be read at LOCAL_SERIAL. */
  readonly dc: string;
  /** Every DC of the cluster: a DC's missing state is a fact as well. */
  readonly clusterDcs: readonly string[];
  /** For errors. */
  readonly keyspace: string;
}

/** A consistent read of the DC states that failed, and whether the local DC's were read anyway. */
interface StateReadFailure {
  readonly read: 'first' | 'second';
  readonly localVerified: boolean;
  readonly reason: string;
}

/**
 * Reads `stored.settings.name`'s DC states, grants and DC states again for `checkSequence`.
 * @throws {SequenceNotFoundError} if the grants partition is gone; {@link StoreUnavailableError}
 *   when even a local read fails.
 */
export async function readForCheck(
  context: CheckReadContext,
  stored: StoredSettings,
): Promise<CheckSnapshot> {
  const { store } = context;
  const { settings, incarnation } = stored;
  const name = settings.name;
  const failures: StateReadFailure[] = [];
  const unverified: UnverifiedFact[] = [];
  // Every shard the settings name; a shard no process picked yet has no row, a fact as well.
  const local = granteesOf(context.dc, settings.shards);
  const before = await statesForCheck(context, name, local, 'first', failures);
  const grantsRead = await consistentOrLocal((reading) => store.readGrantsOverview(name, reading));
  const overview = grantsRead.value;
  if (grantsRead.failed !== undefined) {
    unverified.push({
      fact: 'grants',
      dc: undefined,
      read: undefined,
      reason: `SERIAL read failed: ${grantsRead.failed}`,
    });
  }
  if (overview === undefined) throw new SequenceNotFoundError(name, context.keyspace);
  const after = await statesForCheck(context, name, local, 'second', failures);

  // Unverified whether or not a row was found: its absence is a fact too.
  const dcs = [
    ...new Set([
      ...before.keys(),
      ...after.keys(),
      ...overview.grants.keys(),
      ...[...context.clusterDcs, context.dc].flatMap((dc) => granteesOf(dc, settings.shards)),
    ]),
  ].sort();
  for (const failure of failures) {
    for (const dc of dcs.filter((dc) => !(local.includes(dc) && failure.localVerified))) {
      unverified.push({ fact: 'dc-state', dc, read: failure.read, reason: failure.reason });
    }
  }
  return {
    settings,
    incarnation,
    globalLast: overview.globalLast,
    grants: overview.grants,
    states: before,
    statesAfter: after,
    unverified,
    readAt: Date.now(),
  };
}

/**
 * The DC states at EACH_QUORUM, or locally (and those of `local`, the local DC and its shards, at
 * LOCAL_SERIAL) if that fails.
 */
async function statesForCheck(
  context: CheckReadContext,
  name: string,
  local: readonly string[],
  read: 'first' | 'second',
  failures: StateReadFailure[],
): Promise<ReadonlyMap<string, DcState>> {
  const { store } = context;
  const current = await readDcStatesCurrent(store, name);
  if (current.notCurrent === undefined) return current.states;
  const states = new Map(current.states);
  let localVerified = false;
  try {
    for (const grantee of local) {
      const own = await store.readDcState(name, grantee);
      if (own === undefined) states.delete(grantee);
      else states.set(grantee, own);
    }
    localVerified = true;
  } catch (localError) {
    if (!(localError instanceof StoreUnavailableError)) throw localError;
  }
  failures.push({ read, localVerified, reason: current.notCurrent });
  return states;
}

/** Every DC's state as {@link readDcStatesCurrent} read it. */
export interface DcStatesRead {
  readonly states: ReadonlyMap<string, DcState>;
  /** Why the EACH_QUORUM read failed (read at LOCAL_QUORUM instead); undefined if it did not. */
  readonly notCurrent: string | undefined;
}

/**
 * Every DC's state at EACH_QUORUM (current), or, when that fails, at LOCAL_QUORUM with the
 * reason. Never at a serial level: no client touches another DC's state at one.
 * @throws {StoreUnavailableError} when even the local read fails.
 */
export async function readDcStatesCurrent(store: IdStore, name: string): Promise<DcStatesRead> {
  const read = await consistentOrLocal((reading) => store.readDcStatesOverview(name, reading));
  return {
    states: read.value,
    notCurrent: read.failed === undefined ? undefined : `EACH_QUORUM read failed: ${read.failed}`,
  };
}

/**
 * `read('consistent')`, or, when the store is unavailable for it, `read('local')` and why the
 * consistent read failed.
 * @throws {StoreUnavailableError} when the local read fails too.
 */
async function consistentOrLocal<T>(
  read: (reading: OverviewReading) => Promise<T>,
): Promise<{ readonly value: T; readonly failed: string | undefined }> {
  try {
    return { value: await read('consistent'), failed: undefined };
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    return { value: await read('local'), failed: reasonOf(error) };
  }
}

/** The cause of a failed read in a few words, without the advice an error wraps it in. */
export function reasonOf(error: unknown): string {
  if (error instanceof StoreUnavailableError) {
    return error.cause === undefined ? error.detail : describeDriverError(error.cause);
  }
  return error instanceof Error ? error.message : String(error);
}
