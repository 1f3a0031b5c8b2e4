/**
 * The reads behind status (shared with the runway metrics, so both show the same) and check.
 * Check reads DC states (EACH_QUORUM), grants and GLOBAL (SERIAL, which also finishes a grant in
 * flight), DC states again. A consistent read that fails is done at LOCAL_QUORUM and the fact
 * marked unverified; the local DC's own states are then read at LOCAL_SERIAL, still consistent.
 */

import { readSettingsFound } from '../allocator/settings-writes.js';
import { SequenceNotFoundError, StoreUnavailableError } from '../errors.js';
import { dcOfGrantee, granteesOf } from '../names.js';
import { ascending } from '../order.js';
import { describeDriverError } from '../store/cassandra/errors.js';
import type { DcState, IdStore, OverviewReading, StoredSettings } from '../store/port.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import type { CheckSnapshot, UnverifiedFact } from './check.js';
import type { SequenceSnapshot, SerialProbe } from './status.js';

/** Where status reads other DCs' states when EACH_QUORUM fails: each through its own DC. */
export interface StatesInOtherDcs {
  readonly dcs: readonly string[];
  /** Sequence `name`'s DC states as `dc` holds them; throws if `dc` cannot be reached. */
  readonly read: (dc: string, name: string) => Promise<ReadonlyMap<string, DcState>>;
  /** DCs not reached earlier in the same status run, and why: not tried again. */
  readonly unreachable: Map<string, string>;
}

/** Read locally, or at SERIAL if not found there. */
export async function readStored(
  store: IdStore,
  keyspace: string,
  name: string,
): Promise<StoredSettings> {
  const stored = await readSettingsFound(store, name);
  if (stored === undefined) throw new SequenceNotFoundError(name, keyspace);
  return stored;
}

/**
 * Sequence `name`'s settings and grants (LOCAL_QUORUM), DC states (EACH_QUORUM, else locally and
 * through `elsewhere`) and usage counters. The name must be valid.
 * @throws {SequenceNotFoundError}, {@link StoreUnavailableError}.
 */
export async function readSnapshot(
  store: IdStore,
  keyspace: string,
  name: string,
  localDc: string,
  elsewhere?: StatesInOtherDcs,
): Promise<SequenceSnapshot> {
  const stored = await readStored(store, keyspace, name);
  // States first, so the grants read after them include every grant they name.
  const { states: local, notCurrent } = await readDcStatesCurrent(store, name);
  const { states, readInOwnDc, notReached } =
    notCurrent !== undefined && elsewhere !== undefined
      ? await readInOtherDcs(local, name, localDc, elsewhere)
      : { states: local, readInOwnDc: [], notReached: {} };
  const overview = await store.readGrantsOverview(name);
  if (overview === undefined) throw new SequenceNotFoundError(name, keyspace);
  // Counters outside the protocol: status goes on without them.
  const usage = await store.readDcUsage(name).catch(() => undefined);
  return {
    settings: stored.settings,
    incarnation: stored.incarnation,
    globalLast: overview.globalLast,
    grants: overview.grants,
    states,
    readAt: Date.now(),
    usage,
    statesNotCurrent:
      notCurrent === undefined
        ? undefined
        : { localDc, reason: notCurrent, readInOwnDc, notReached },
  };
}

/** `states` with each reachable DC of `elsewhere` replaced by what its own nodes hold. */
async function readInOtherDcs(
  states: ReadonlyMap<string, DcState>,
  name: string,
  localDc: string,
  elsewhere: StatesInOtherDcs,
) {
  const merged = new Map(states);
  const readInOwnDc: string[] = [];
  const dcOf = (grantee: string) => dcOfGrantee(grantee) ?? grantee;
  const tries = elsewhere.dcs
    .filter((dc) => dc !== localDc && !elsewhere.unreachable.has(dc))
    .map(async (dc) => {
      try {
        const theirs = await elsewhere.read(dc, name);
        for (const grantee of [...merged.keys()]) if (dcOf(grantee) === dc) merged.delete(grantee);
        for (const [grantee, state] of theirs) if (dcOf(grantee) === dc) merged.set(grantee, state);
        readInOwnDc.push(dc);
      } catch (error) {
        elsewhere.unreachable.set(dc, reasonOf(error));
      }
    });
  await Promise.all(tries);
  const notReached = Object.fromEntries(
    [...elsewhere.unreachable].filter(([dc]) => elsewhere.dcs.includes(dc)),
  );
  return { states: merged, readInOwnDc: readInOwnDc.sort(ascending), notReached };
}

/** Whether the store's SERIAL probe completes from `dc` within `timeoutMs`. Never throws. */
export async function probeSerial(
  store: IdStore,
  dc: string,
  timeoutMs: number,
): Promise<SerialProbe> {
  const started = Date.now();
  const failed = store.probeSerial().then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  const outcome = await settleWithin(failed, timeoutMs);
  const error = outcome === TIMED_OUT ? `no answer within ${timeoutMs} ms` : outcome;
  return { reachable: error === undefined, dc, tookMs: Date.now() - started, error };
}

/** A failed consistent read of the DC states; whether the local DC's were read anyway. */
interface StateReadFailure {
  readonly read: 'first' | 'second';
  readonly localVerified: boolean;
  readonly reason: string;
}

/**
 * Check's reads (see above); `clusterDcs`' missing states are facts too.
 * @throws {SequenceNotFoundError}, {@link StoreUnavailableError}.
 */
export async function readForCheck(
  store: IdStore,
  keyspace: string,
  name: string,
  dc: string,
  clusterDcs: readonly string[],
): Promise<CheckSnapshot> {
  const { settings, incarnation } = await readStored(store, keyspace, name);
  const failures: StateReadFailure[] = [];
  const unverified: UnverifiedFact[] = [];
  // Every shard the settings name; a shard no process picked yet has no row, a fact as well.
  const local = granteesOf(dc, settings.shards);
  const before = await statesForCheck(store, name, local, 'first', failures);
  const { value: overview, failed } = await consistentOrLocal((reading) =>
    store.readGrantsOverview(name, reading),
  );
  if (failed !== undefined) {
    const reason = `SERIAL read failed: ${failed}`;
    unverified.push({ fact: 'grants', dc: undefined, read: undefined, reason });
  }
  if (overview === undefined) throw new SequenceNotFoundError(name, keyspace);
  const after = await statesForCheck(store, name, local, 'second', failures);

  // Unverified whether or not a row was found: its absence is a fact too.
  const dcs = [
    ...new Set([
      ...before.keys(),
      ...after.keys(),
      ...overview.grants.keys(),
      ...[...clusterDcs, dc].flatMap((other) => granteesOf(other, settings.shards)),
    ]),
  ].sort();
  for (const failure of failures) {
    for (const other of dcs.filter((d) => !(local.includes(d) && failure.localVerified))) {
      unverified.push({ fact: 'dc-state', dc: other, read: failure.read, reason: failure.reason });
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
  store: IdStore,
  name: string,
  local: readonly string[],
  read: 'first' | 'second',
  failures: StateReadFailure[],
): Promise<ReadonlyMap<string, DcState>> {
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
 */
async function readDcStatesCurrent(
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
