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
  SequenceRecreatedError,
  StoreUnavailableError,
} from '../errors.js';
import { dcOfGrantee, granteesOf } from '../names.js';
import type { AlterSequenceOptions } from '../settings/model.js';
import { pickSizes, validateChanges } from '../settings/resolve.js';
import type { FirstGrant, IdStore, SequenceSettings, StoredSettings } from '../store/port.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';

/**
 * A sequence's settings read at LOCAL_QUORUM or, when none are found there, at SERIAL. A create
 * that succeeds is committed at EACH_QUORUM; one that timed out may be committed in some DCs only
 * (neither its own commit nor the repair by the SERIAL read that settled it need reach a quorum of
 * every DC), and a local read then finds nothing for a sequence that exists. Without SERIAL (a DC
 * cut off) the local answer stands. Loading a sequence, status and check read settings so.
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

/** A read that failed, told apart from one that found nothing. */
const UNREAD: unique symbol = Symbol('unread');

/** How often an alter re-reads and retries when another alter changed the settings first. */
export const MAX_ALTER_ATTEMPTS = 5;

/**
 * The kinds of settings writes, each op prefixed with its own: a create that finds settings
 * written by another create knows it was not applied (an alter replaces a create's op, nothing
 * else does), while one that finds an alter's op cannot tell whose create the alter followed.
 * Ops written before the kinds were marked carry neither prefix.
 */
const CREATE_OP = 'create:';
const ALTER_OP = 'alter:';

/**
 * Who made a sequence, as far as its settings show: `this` create (its op found, or reported
 * applied); `another` (another create's op, or IDs other than this create's: it was never
 * applied); `unknown` (an alter's op, or one an older release wrote: this create may have been
 * applied, then altered). `another` also when a SERIAL read finds the sequence before this create
 * writes anything.
 */
export type SequenceCreator = 'this' | 'another' | 'unknown';

/**
 * Creates the sequence with `settings` (and `firstGrants`, in the same write); with
 * `ifNotExists`, an existing sequence's stored settings are returned instead.
 * @returns the settings stored (this create's, or, with `ifNotExists`, those found), and who made
 * the sequence.
 * @throws {SequenceExistsError} if it exists and not `ifNotExists`, saying whether another
 * create made it or whether this one did cannot be told (`createdBy`).
 * @throws {StoreUnavailableError} if SERIAL cannot be reached, or the write's outcome stayed
 * unknown (read the sequence to see whether it exists).
 */
export async function createSettings(
  store: IdStore,
  settings: SequenceSettings,
  keyspace: string,
  ifNotExists = false,
  firstGrants: readonly FirstGrant[] = [],
  localDc?: string,
): Promise<{ readonly settings: SequenceSettings; readonly creator: SequenceCreator }> {
  // A sequence a SERIAL read finds before this create sends anything was made by another: say
  // so for certain, with nothing written. Only a create that raced another write to the row
  // can be left unable to tell (an alter's op replaces a create's), not a routine re-run of
  // `seed --if-not-exists` on a sequence altered since. A read that fails leaves it to the
  // create's own write, which says what it could not reach (for "create sequence", as before).
  const existing = await store
    .readSequence(settings.name, 'serial')
    .catch((error: unknown): typeof UNREAD => {
      if (error instanceof StoreUnavailableError) return UNREAD;
      throw error;
    });
  // Made by another create before this one wrote anything: said for certain.
  const madeByAnother = (stored: StoredSettings) => {
    if (ifNotExists) return { settings: stored.settings, creator: 'another' } as const;
    throw new SequenceExistsError(settings.name, keyspace, [], 'another');
  };
  if (existing !== undefined && existing !== UNREAD) return madeByAnother(existing);
  // SERIAL says no sequence of this name exists: any state row of it is one left behind. With
  // SERIAL out of reach, rows found may be an existing sequence's, or left behind: say neither.
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
  // Another create's op is final; an alter's, whether reported rejected or unknown, may follow
  // ours: "exists, nothing changed" would be a guess.
  const creator = result.verdict === 'lost' ? 'another' : 'unknown';
  if (ifNotExists) return { settings: result.found.settings, creator };
  throw new SequenceExistsError(settings.name, keyspace, [], creator);
}

/**
 * The grantees (DC shards) that hold a state row of sequence `settings.name`, as plain reads in
 * this DC show them: every shard the new settings name, of every DC the keyspace replicates to
 * and of the DCs of `known` (the local DC, those given first grants). A create over such rows
 * starts GLOBAL again below the IDs they handed out (docs/design.md, "A sequence's rows are
 * never deleted"). Rows of another DC not yet replicated here, and of higher shards, are missed;
 * a process refuses those later by their incarnation.
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
  ours: ReadonlyMap<string, unknown>,
): Judgement {
  if (found === undefined) return 'unknown';
  return ours.has(found.op) ? 'ours' : 'lost';
}

/**
 * A create is ours if the settings found carry its op; lost if another create made them (they
 * carry another create's op, or IDs other than ours, which no alter changes: ours, `IF NOT
 * EXISTS`, can never apply); unknown otherwise: none found (ours may still be in flight), or an
 * alter's op (or an older release's), which may have replaced ours.
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

/** The error of a settings write whose outcome stayed unknown, naming the write. */
function unknownOutcome(operation: string, result: CasResult): StoreUnavailableError {
  const failure = result.rereadError ?? result.cause;
  // What failed, in its own words: the message of a StoreUnavailableError (the re-read's) would
  // repeat "Cassandra is unavailable at …", so its detail is taken instead.
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
