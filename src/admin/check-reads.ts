/**
 * The reads `check` rests on, in the order check.ts needs: DC states (EACH_QUORUM), grants and
 * GLOBAL (SERIAL, which also finishes a grant in flight), DC states again. A consistent read that
 * fails is done at LOCAL_QUORUM and the fact marked unverified; the local DC's own states are
 * then read at LOCAL_SERIAL, still consistent.
 */

import { SequenceNotFoundError, StoreUnavailableError } from '../errors.js';
import { granteesOf } from '../names.js';
import { describeDriverError } from '../store/cassandra/errors.js';
import type { DcState, IdStore, OverviewReading, StoredSettings } from '../store/port.js';
import type { CheckSnapshot, UnverifiedFact } from './check.js';

export interface CheckReadContext {
  readonly store: IdStore;
  /** The local DC, whose states can be read at LOCAL_SERIAL. */
  readonly dc: string;
  /** Every DC of the cluster: a DC's missing state is a fact as well. */
  readonly clusterDcs: readonly string[];
  readonly keyspace: string;
}

/** A failed consistent read of the DC states; whether the local DC's were read anyway. */
interface StateReadFailure {
  readonly read: 'first' | 'second';
  readonly localVerified: boolean;
  readonly reason: string;
}

/**
 * @throws {SequenceNotFoundError} if the grants partition is gone; {@link StoreUnavailableError}
 *   when even a local read fails.
 */
export async function readForCheck(
  context: CheckReadContext,
  stored: StoredSettings,
): Promise<CheckSnapshot> {
  const { settings, incarnation } = stored;
  const name = settings.name;
  const failures: StateReadFailure[] = [];
  const unverified: UnverifiedFact[] = [];
  // Every shard the settings name; a shard no process picked yet has no row, a fact as well.
  const local = granteesOf(context.dc, settings.shards);
  const before = await statesForCheck(context, name, local, 'first', failures);
  const { value: overview, failed } = await consistentOrLocal((reading) =>
    context.store.readGrantsOverview(name, reading),
  );
  if (failed !== undefined) {
    const reason = `SERIAL read failed: ${failed}`;
    unverified.push({ fact: 'grants', dc: undefined, read: undefined, reason });
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

/** The DC states at EACH_QUORUM, or locally (`local`'s at LOCAL_SERIAL) if that fails. */
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

/**
 * Every DC's state at EACH_QUORUM, or, if that fails, at LOCAL_QUORUM with the reason. Never at a
 * serial level: no client touches another DC's state at one.
 * @throws {StoreUnavailableError} when even the local read fails.
 */
export async function readDcStatesCurrent(
  store: IdStore,
  name: string,
): Promise<{ states: ReadonlyMap<string, DcState>; notCurrent: string | undefined }> {
  const read = await consistentOrLocal((reading) => store.readDcStatesOverview(name, reading));
  return {
    states: read.value,
    notCurrent: read.failed === undefined ? undefined : `EACH_QUORUM read failed: ${read.failed}`,
  };
}

/** `read('consistent')`, or `read('local')` and why the consistent read was unavailable. */
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
