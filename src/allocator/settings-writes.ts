/**
 * Creating and altering settings: conditional writes at SERIAL, classified like every other
 * write (cas.ts), so that one applied but reported rejected or unknown is recognised by its op.
 */

import { randomUUID } from 'node:crypto';

import {
  ALTER_OPERATION,
  ContentionError,
  SequenceExistsError,
  SequenceNotFoundError,
  SequenceRecreatedError,
  StoreUnavailableError,
} from '../errors.js';
import { dcOfGrantee, granteesOf } from '../names.js';
import type { AlterSequenceOptions } from '../settings/model.js';
import { pickSizes, validateChanges } from '../settings/resolve.js';
import type { FirstGrant, IdStore, SequenceSettings, StoredSettings } from '../store/port.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';

/**
 * Settings read at LOCAL_QUORUM or, when none are found there, at SERIAL: a create that timed
 * out may be committed in some DCs only, so a local miss does not prove absence. Without SERIAL
 * (a DC cut off) the local answer stands.
 */
export async function readSettingsFound(
  store: IdStore,
  name: string,
): Promise<StoredSettings | undefined> {
  const local = await store.readSequence(name);
  if (local !== undefined) return local;
  try {
    return await store.readSequence(name, 'serial');
  } catch (error) {
    if (error instanceof StoreUnavailableError) return undefined;
    throw error;
  }
}

const UNREAD: unique symbol = Symbol('unread');

/** Attempts of an alter while other alters change the settings first. */
export const MAX_ALTER_ATTEMPTS = 5;

/**
 * Op prefixes per kind of settings write: a create that finds another create's op knows it was
 * not applied (only an alter replaces a create's op); one that finds an alter's op cannot tell.
 */
const CREATE_OP = 'create:';
const ALTER_OP = 'alter:';

/**
 * Who made a sequence, as the settings show: `this` create (its op found, or reported applied);
 * `another` (another create's op or other IDs, so this one never applied, or found at SERIAL
 * before writing); `unknown` (an alter's op: this create may have applied, then been altered).
 */
export type SequenceCreator = 'this' | 'another' | 'unknown';

/**
 * Creates the sequence with `settings` and `firstGrants` in one write; with `ifNotExists`, an
 * existing sequence's stored settings are returned instead.
 * @returns the settings stored, and who made the sequence.
 * @throws {SequenceExistsError} if it exists and not `ifNotExists` (`createdBy` says who).
 * @throws {StoreUnavailableError} if SERIAL cannot be reached, or the write's outcome stayed
 * unknown.
 */
export async function createSettings(
  store: IdStore,
  settings: SequenceSettings,
  keyspace: string,
  ifNotExists = false,
  firstGrants: readonly FirstGrant[] = [],
  localDc?: string,
): Promise<{ readonly settings: SequenceSettings; readonly creator: SequenceCreator }> {
  // A sequence found at SERIAL before anything is written was made by another, for certain (so a
  // re-run of an idempotent seed is not left unsure). A failed read leaves it to the write.
  const existing = await store
    .readSequence(settings.name, 'serial')
    .catch((error: unknown): typeof UNREAD => {
      if (error instanceof StoreUnavailableError) return UNREAD;
      throw error;
    });
  const madeByAnother = (stored: StoredSettings) => {
    if (ifNotExists) return { settings: stored.settings, creator: 'another' } as const;
    throw new SequenceExistsError(settings.name, keyspace, [], 'another');
  };
  if (existing !== undefined && existing !== UNREAD) return madeByAnother(existing);
  // SERIAL says no such sequence: any state row of it is left behind. Without SERIAL, say neither.
  const leftover = await leftoverStates(store, settings, [
    localDc,
    ...firstGrants.map(({ grantee }) => grantee),
  ]);
  if (leftover.length > 0 && existing === UNREAD) {
    throw new StoreUnavailableError(
      'serial',
      'create sequence',
      `whether sequence "${settings.name}" exists could not be read at SERIAL, and state rows of it do (${leftover.join(', ')}); nothing was written; create it again once SERIAL is reachable`,
    );
  }
  if (leftover.length > 0) {
    // Unless a create came in between, and its processes wrote them: then it exists.
    const now = await store.readSequence(settings.name, 'serial');
    if (now !== undefined) return madeByAnother(now);
    throw new SequenceRecreatedError(
      settings.name,
      `no sequence of this name exists, but state rows of one do (${leftover.join(', ')}); nothing was written`,
    );
  }
  const op = `${CREATE_OP}${randomUUID()}`;
  const result = await runConditionalWrite<StoredSettings>({
    write: () => store.createSequence(settings, op, firstGrants),
    judge: (found) => judgeCreate(found, op, settings),
    reread: () => store.readSequence(settings.name, 'serial'),
  });
  if (isOurs(result.verdict)) return { settings, creator: 'this' };
  // Nothing found (a re-read that failed, or a create still in flight): nothing to tell from.
  if (result.found === undefined) throw unknownOutcome('create sequence', result);
  // Another create's op is final; an alter's may follow ours, so "exists" would be a guess.
  const creator = result.verdict === 'lost' ? 'another' : 'unknown';
  if (ifNotExists) return { settings: result.found.settings, creator };
  throw new SequenceExistsError(settings.name, keyspace, [], creator);
}

/**
 * The grantees holding a state row of `settings.name` as plain reads here show them (every shard
 * of the keyspace's DCs and of `known`): a create over them would start GLOBAL below IDs they
 * handed out (docs/design.md, "A sequence's rows are never deleted"). Rows missed here are
 * refused later by their incarnation.
 */
async function leftoverStates(
  store: IdStore,
  settings: SequenceSettings,
  known: readonly (string | undefined)[],
): Promise<string[]> {
  const dcs = [
    ...((await store.readReplicaDcs()) ?? []),
    ...known.flatMap((grantee) => dcOfGrantee(grantee) ?? []),
  ];
  const grantees = [...new Set(dcs)].flatMap((dc) => granteesOf(dc, settings.shards));
  return [...(await store.readDcStatesOf(settings.name, grantees)).keys()].sort();
}

/**
 * Changes the sizes of sequence `name`. Each attempt validates the changes against the settings
 * it read and writes only if they are still those (their op), so concurrent alters never combine
 * into settings neither validated.
 * @returns the settings this alter wrote (its last attempt's, or an earlier one's found applied).
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
  // Every attempt's op with what it wrote: a later round may find an earlier attempt committed,
  // and settings read with its op need not be what it wrote.
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
    const op = `${ALTER_OP}${randomUUID()}`;
    ours.set(op, next);
    const result = await runConditionalWrite<StoredSettings>({
      write: () => store.alterSequence(name, current.op, sizes, op),
      judge: (found) => judgeSettingsWrite(found, ours),
      reread: () => store.readSequence(name, 'serial'),
    });
    // Applied, or an op of ours found (maybe an earlier attempt's): what that attempt wrote.
    if (isOurs(result.verdict)) return ours.get(result.found?.op ?? op) ?? next;
    if (result.verdict === 'unknown') throw unknownOutcome('alter sequence', result);
    // Another op after an unknown outcome: another alter won, or came after ours. Retrying would
    // write over it.
    if (result.reported === 'unknown' && result.found?.op !== current.op) {
      throw unknownOutcome('alter sequence', result);
    }
  }
  throw new ContentionError(name, ALTER_OPERATION, MAX_ALTER_ATTEMPTS);
}

/**
 * Ours if the settings carry one of our ops; lost if another (ours, conditional on the op before,
 * can no longer apply, though it may have); unknown if none were found after a create.
 */
function judgeSettingsWrite(
  found: StoredSettings | undefined,
  ours: ReadonlyMap<string, unknown>,
): Judgement {
  if (found === undefined) return 'unknown';
  return ours.has(found.op) ? 'ours' : 'lost';
}

/**
 * A create is ours if the settings carry its op; lost if another create made them (its op, or
 * other IDs); unknown otherwise: none found yet, or an alter's op that may have replaced ours.
 */
function judgeCreate(
  found: StoredSettings | undefined,
  op: string,
  settings: SequenceSettings,
): Judgement {
  if (found === undefined) return 'unknown';
  if (found.op === op) return 'ours';
  if (found.op.startsWith(CREATE_OP)) return 'lost';
  const { domain, min, max, start } = found.settings;
  const sameIds =
    domain === settings.domain &&
    min === settings.min &&
    max === settings.max &&
    start === settings.start;
  return sameIds ? 'unknown' : 'lost';
}

function unknownOutcome(operation: string, result: CasResult): StoreUnavailableError {
  const failure = result.rereadError ?? result.cause;
  const words =
    failure instanceof StoreUnavailableError
      ? failure.detail
      : failure instanceof Error
        ? failure.message
        : String(failure);
  const why = failure === undefined ? '' : `${words}; `;
  return new StoreUnavailableError(
    'serial',
    operation,
    `${why}the conditional write may or may not have been applied, and its outcome could not be read back; read the sequence to see which before trying again`,
    { cause: result.cause },
  );
}
