/**
 * The reads behind status, over the store port alone: a sequence's overview (settings, grants,
 * DC states) and the SERIAL probe. {@link Admin.status} and the runway metrics both use them, so
 * the gauges show what `idgen-cass status` shows.
 */
import { readSettingsFound } from '../allocator/settings-writes.js';
import { SequenceNotFoundError } from '../errors.js';
import type { IdStore } from '../store/port.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import { readDcStatesCurrent } from './check-reads.js';
import type { SequenceSnapshot, SerialProbe } from './status.js';

/**
 * Reads sequence `name`'s settings, grants, DC states and usage counters for status, as seen
 * from `localDc`. Settings and grants are read at LOCAL_QUORUM; the DC states as `check` reads
 * them ({@link readDcStatesCurrent}): at EACH_QUORUM, or where that fails (a DC cut off) at
 * LOCAL_QUORUM, and then the snapshot says so (`statesNotCurrent`): the rows of DCs other than
 * `localDc` may lag. The name must be valid.
 * @throws {SequenceNotFoundError}, {@link StoreUnavailableError}.
 */
export async function readSnapshot(
  store: IdStore,
  keyspace: string,
  name: string,
  localDc: string,
): Promise<SequenceSnapshot> {
  // At SERIAL too when none are found locally: a create may be committed in other DCs only.
  const stored = await readSettingsFound(store, name);
  if (stored === undefined) throw new SequenceNotFoundError(name, keyspace);
  // States first: a grant a state refers to was made before the state was written, so the
  // grants read after it include it (unless a replica lags).
  const { states, notCurrent } = await readDcStatesCurrent(store, name);
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
    statesNotCurrent: notCurrent === undefined ? undefined : { localDc, reason: notCurrent },
  };
}

/**
 * Whether a SERIAL round completes from `dc` within `timeoutMs` (the store's probe, on a
 * partition no sequence uses). Never throws.
 */
export async function probeSerial(
  store: IdStore,
  dc: string,
  timeoutMs: number,
): Promise<SerialProbe> {
  const started = Date.now();
  const result = (error: string | undefined): SerialProbe => ({
    reachable: error === undefined,
    dc,
    tookMs: Date.now() - started,
    error,
  });
  const read = store.probeSerial().then(
    () => undefined,
    (error: unknown) => error,
  );
  const outcome = await settleWithin(read, timeoutMs);
  if (outcome === TIMED_OUT) return result(`no answer within ${timeoutMs} ms`);
  if (outcome === undefined) return result(undefined);
  return result(outcome instanceof Error ? outcome.message : String(outcome));
}
