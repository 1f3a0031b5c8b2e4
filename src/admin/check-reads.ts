/**
 * The reads `check` rests on, in the order its rules need (check.ts): the DC states, then the
 * grants, then the DC states again, each as consistently as the cluster allows right now.
 *
 * - DC states at EACH_QUORUM: a quorum in every DC, so each DC's own quorum, which its
 *   LOCAL_QUORUM commits reach; a DC state read so cannot be older than the DC's last write.
 * - Grants and GLOBAL at SERIAL: a Paxos read over every DC, which also finishes a grant in
 *   flight.
 *
 * When a consistent read fails (a DC cut off: EACH_QUORUM fails for every DC's state, since each
 * is replicated everywhere; SERIAL unreachable from a minority), the same rows are read locally
 * (LOCAL_QUORUM: another DC's rows may lag) and the fact is marked unverified. The local DC's
 * own states (the DC's, and each of its shards' on a sharded sequence) are then read at
 * LOCAL_SERIAL, the level they are written at, from their own DC: still consistent.
 */

import { SequenceNotFoundError, StoreUnavailableError } from '../errors.js';
import { granteesOf } from '../names.js';
import { describeDriverError } from '../store/cassandra/errors.js';
import type { DcState, IdStore, StoredSettings } from '../store/port.js';
import type { CheckSnapshot, UnverifiedFact } from './check.js';

/** Where the reads run from. */
export interface CheckReadContext {
  readonly store: IdStore;
  /** The local DC, whose state can be read at LOCAL_SERIAL. */
  readonly dc: string;
  /** Every DC of the cluster: a DC's missing state is a fact as well. */
  readonly clusterDcs: readonly string[];
  /** Keyspace, for errors. */
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
  let overview;
  try {
    overview = await store.readGrantsOverview(name, 'consistent');
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    overview = await store.readGrantsOverview(name, 'local');
    unverified.push({
      fact: 'grants',
      dc: undefined,
      read: undefined,
      reason: `SERIAL read failed: ${reasonOf(error)}`,
    });
  }
  if (overview === undefined) throw new SequenceNotFoundError(name, context.keyspace);
  const after = await statesForCheck(context, name, local, 'second', failures);

  // A failed consistent read leaves every DC's state unverified (the local DC's excepted when
  // their LOCAL_SERIAL reads worked), whether or not a row was found: its absence is a fact too.
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
  /**
   * Why the states could not be read current (the EACH_QUORUM read failed, so they were read at
   * LOCAL_QUORUM, where other DCs' rows may lag); undefined when they were.
   */
  readonly notCurrent: string | undefined;
}

/**
 * Every DC's state at EACH_QUORUM (a quorum in every DC, so each DC's own, which its commits
 * reach: current), or, when that read fails (a DC cut off fails it for every DC's state, each
 * being replicated everywhere), at LOCAL_QUORUM with the reason. `check` and `status` both read
 * the DC states so (neither at a serial level: no client touches another DC's state at one).
 * @throws {StoreUnavailableError} when even the local read fails.
 */
export async function readDcStatesCurrent(store: IdStore, name: string): Promise<DcStatesRead> {
  try {
    return { states: await store.readDcStatesOverview(name, 'consistent'), notCurrent: undefined };
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    return {
      states: await store.readDcStatesOverview(name, 'local'),
      notCurrent: `EACH_QUORUM read failed: ${reasonOf(error)}`,
    };
  }
}

/**
 * The cause of a failed read in a few words: the driver's own message when there is one, else
 * what failed (never the advice a {@link StoreUnavailableError} wraps it in), else the error's
 * message.
 */
export function reasonOf(error: unknown): string {
  if (error instanceof StoreUnavailableError) {
    return error.cause === undefined ? error.detail : describeDriverError(error.cause);
  }
  return error instanceof Error ? error.message : String(error);
}
