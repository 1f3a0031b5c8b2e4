/** The reads behind status, shared with the runway metrics so both show the same. */
import { readSettingsFound } from '../allocator/settings-writes.js';
import { SequenceNotFoundError } from '../errors.js';
import type { DcState, IdStore, StoredSettings } from '../store/port.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import { dcOfGrantee } from '../names.js';
import { ascending } from '../order.js';
import { readDcStatesCurrent, reasonOf } from './check-reads.js';
import type { SequenceSnapshot, SerialProbe } from './status.js';

/**
 * Where to read other DCs' states when EACH_QUORUM fails: each through its own DC (LOCAL_QUORUM
 * there is current for its own rows).
 */
export interface StatesInOtherDcs {
  readonly dcs: readonly string[];
  /** Sequence `name`'s DC states as `dc` holds them; throws if `dc` cannot be reached. */
  readonly read: (dc: string, name: string) => Promise<ReadonlyMap<string, DcState>>;
  /** DCs not reached earlier in the same status run, and why: not tried again. */
  readonly unreachable: Map<string, string>;
}

/** Sequence `name`'s settings, read locally, or at SERIAL if none are found there. */
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
 * Sequence `name`'s settings and grants (LOCAL_QUORUM), DC states ({@link readDcStatesCurrent},
 * then `elsewhere`) and usage counters. The name must be valid.
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
  const read = await readDcStatesCurrent(store, name);
  const { notCurrent } = read;
  let states = read.states;
  let readInOwnDc: readonly string[] = [];
  let notReached: Readonly<Record<string, string>> = {};
  if (notCurrent !== undefined && elsewhere !== undefined) {
    ({ states, readInOwnDc, notReached } = await readInOtherDcs(states, name, localDc, elsewhere));
  }
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
    elsewhere.dcs.flatMap((dc) => {
      const why = elsewhere.unreachable.get(dc);
      return why === undefined ? [] : [[dc, why]];
    }),
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
