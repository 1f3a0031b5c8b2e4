/**
 * Creating and altering a sequence's settings: conditional writes at SERIAL, classified like
 * every other write (cas.ts), so that a write applied but reported rejected or unknown is
 * still recognised as ours by the op it carries.
 */

import { randomUUID } from 'node:crypto';

import {
  ALTER_OPERATION,
  ContentionError,
  SequenceExistsError,
  SequenceNotFoundError,
  StoreUnavailableError,
} from '../errors.js';
import { pickSizes, validateChanges, type AlterSequenceOptions } from '../options.js';
import type { FirstGrant, IdStore, SequenceSettings, StoredSettings } from '../store/port.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';

/** How often an alter re-reads and retries when another alter changed the settings first. */
export const MAX_ALTER_ATTEMPTS = 5;

/**
 * Creates the sequence with `settings` (and `firstGrants`, in the same write); with
 * `ifNotExists`, an existing sequence's stored settings are returned instead.
 * @throws {SequenceExistsError} if it exists (created by another write) and not `ifNotExists`.
 * @throws {StoreUnavailableError} if SERIAL cannot be reached, or the write's outcome stayed
 * unknown (read the sequence to see whether it exists).
 */
export async function createSettings(
  store: IdStore,
  settings: SequenceSettings,
  keyspace: string,
  ifNotExists = false,
  firstGrants: readonly FirstGrant[] = [],
): Promise<SequenceSettings> {
  const op = randomUUID();
  const result = await runConditionalWrite<StoredSettings>({
    write: () => store.createSequence(settings, op, firstGrants),
    judge: (found) => judgeSettingsWrite(found, op),
    reread: () => store.readSequence(settings.name, 'serial'),
  });
  if (isOurs(result.verdict)) return settings;
  if (result.verdict === 'lost') {
    if (ifNotExists && result.found !== undefined) return result.found.settings;
    // Another op after an unknown outcome: another create, or ours and then an alter (which
    // writes its own op). Nothing tells which, so "exists, nothing changed" would be a guess.
    if (result.reported === 'unknown') throw unknownOutcome('create sequence', result);
    throw new SequenceExistsError(settings.name, keyspace);
  }
  throw unknownOutcome('create sequence', result);
}

/**
 * Changes the sizes of sequence `name`. Each attempt validates the changes against the settings
 * it read and writes only if they are still the ones read (their op), so two concurrent alters
 * can never combine into settings neither validated (e.g. a block larger than the DC range).
 * @returns the settings this alter wrote: its last attempt's, or those of an earlier attempt
 * whose op a later round found (not the settings read with that op: CassandraStore reads them
 * after the round, and another alter may have landed in between).
 * @throws {InvalidOptionError} if the changes do not fit the current settings.
 * @throws {SequenceNotFoundError} if it does not exist.
 * @throws {ContentionError} if other alters kept changing the settings first.
 * @throws {StoreUnavailableError} if SERIAL cannot be reached, or the write's outcome stayed unknown.
 */
export async function alterSettings(
  store: IdStore,
  name: string,
  changes: AlterSequenceOptions,
  keyspace: string,
): Promise<SequenceSettings> {
  // Every attempt's op, with the settings it wrote: a later attempt's round may find an earlier
  // one's write committed. What that attempt wrote is known; settings found with its op need not
  // be it (CassandraStore reads them apart from a rejecting round's op, and an alter can land
  // in between).
  const ours = new Map<string, SequenceSettings>();
  for (let attempt = 1; attempt <= MAX_ALTER_ATTEMPTS; attempt++) {
    // At SERIAL after a lost race: a LOCAL_QUORUM read could still show the settings it lost to.
    // And before "not found": a create that timed out may be committed in other DCs only.
    const current =
      (await store.readSequence(name, attempt === 1 ? 'local' : 'serial')) ??
      (attempt === 1 ? await store.readSequence(name, 'serial') : undefined);
    if (current === undefined) throw new SequenceNotFoundError(name, keyspace);
    const normalized = validateChanges(changes, current.settings);
    const next = Object.freeze({ ...current.settings, ...normalized });
    const sizes = pickSizes(next);
    const op = randomUUID();
    ours.set(op, next);
    const result = await runConditionalWrite<StoredSettings>({
      write: () => store.alterSequence(name, current.op, sizes, op),
      judge: (found) => judgeSettingsWrite(found, ours),
      reread: () => store.readSequence(name, 'serial'),
    });
    // Applied, or an op of ours found (maybe an earlier attempt's): what that attempt wrote.
    if (isOurs(result.verdict)) return ours.get(result.found?.op ?? op) ?? next;
    if (result.verdict === 'unknown') throw unknownOutcome('alter sequence', result);
    // Another op after an unknown outcome, and not the one ours was conditional on: another
    // alter won, or ours was applied and another alter came after it. Trying again would write
    // ours over that one (or refuse a change already made, as shards below the count reached).
    if (result.reported === 'unknown' && result.found?.op !== current.op) {
      throw unknownOutcome('alter sequence', result);
    }
  }
  throw new ContentionError(name, ALTER_OPERATION, MAX_ALTER_ATTEMPTS);
}

/**
 * Ours if the settings found carry one of our ops; lost if they carry another (a settings write
 * is conditional on the op before it, so ours can no longer apply, though it may have been
 * applied before: the callers tell by what was reported); unknown if none were found after a
 * create (ours may still be in flight).
 */
function judgeSettingsWrite(
  found: StoredSettings | undefined,
  ours: string | ReadonlyMap<string, unknown>,
): Judgement {
  if (found === undefined) return 'unknown';
  const own = typeof ours === 'string' ? found.op === ours : ours.has(found.op);
  return own ? 'ours' : 'lost';
}

/** The error of a settings write whose outcome stayed unknown, naming the write. */
function unknownOutcome(operation: string, result: CasResult): StoreUnavailableError {
  const failure = result.rereadError ?? result.cause;
  const why =
    failure === undefined
      ? ''
      : `${failure instanceof Error ? failure.message : String(failure)}; `;
  return new StoreUnavailableError(
    'serial',
    operation,
    `${why}the conditional write may or may not have been applied, and its outcome could not be read back; read the sequence to see which before trying again`,
    { cause: result.cause },
  );
}
