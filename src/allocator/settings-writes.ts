/** Creating and altering settings: conditional writes at SERIAL, recognised by their op. */

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
import {
  isOurs,
  runConditionalWrite,
  unknownOutcome,
  type CasResult,
  type Judgement,
} from './cas.js';

/** Settings read locally, else at SERIAL: a create that timed out may be elsewhere only. */
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

/** The settings that fix which IDs a sequence hands out; only the sizes may change. */
export const ID_SPACE_KEYS = ['domain', 'min', 'max', 'start'] as const;

export const MAX_ALTER_ATTEMPTS = 5;

/** A create finding another create's op was not applied; one finding an alter's cannot tell. */
const CREATE_OP = 'create:';
const ALTER_OP = 'alter:';

/** Who made a sequence; `unknown` when an alter's op hides whether this create applied. */
export type SequenceCreator = 'this' | 'another' | 'unknown';

/**
 * Creates the sequence and its first grants in one write; returns the settings stored (with
 * `ifNotExists`, an existing sequence's) and who made it. Throws as {@link IdGen.createSequence}.
 */
export async function createSettings(
  store: IdStore,
  settings: SequenceSettings,
  keyspace: string,
  ifNotExists = false,
  firstGrants: readonly FirstGrant[] = [],
  localDc?: string,
): Promise<{ readonly settings: SequenceSettings; readonly creator: SequenceCreator }> {
  // Found at SERIAL before writing: made by another, for certain. A failed read leaves it open.
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
  // No such sequence at SERIAL: any state row of it is left behind.
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
    // Unless a create came in between and its processes wrote them.
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
  if (result.found === undefined) throw unknownAt('create sequence', result);
  const creator = result.verdict === 'lost' ? 'another' : 'unknown';
  if (ifNotExists) return { settings: result.found.settings, creator };
  throw new SequenceExistsError(settings.name, keyspace, [], creator);
}

/**
 * The grantees a plain read shows holding a state row of the sequence: a create over them would
 * start GLOBAL below IDs they handed out (docs/design.md, "A sequence's rows are never deleted").
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

/** Changes the sizes of `name`; throws as {@link IdGen.alterSequence}. */
export async function alterSettings(
  store: IdStore,
  name: string,
  changes: AlterSequenceOptions,
  keyspace: string,
): Promise<SequenceSettings> {
  // What each attempt wrote: a later round may find an earlier attempt committed.
  const ours = new Map<string, SequenceSettings>();
  for (let attempt = 1; attempt <= MAX_ALTER_ATTEMPTS; attempt++) {
    // At SERIAL after a lost race (a local read could show what it lost to) and before "not found".
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
    if (isOurs(result.verdict)) return ours.get(result.found?.op ?? op) ?? next;
    if (result.verdict === 'unknown') throw unknownAt('alter sequence', result);
    // Another op after an unknown outcome may have come after ours: retrying would write over it.
    if (result.reported === 'unknown' && result.found?.op !== current.op) {
      throw unknownAt('alter sequence', result);
    }
  }
  throw new ContentionError(name, ALTER_OPERATION, MAX_ALTER_ATTEMPTS);
}

const unknownAt = (operation: string, result: CasResult) =>
  unknownOutcome('serial', operation, result, 'read the sequence to see which before trying again');

/** Ours if the settings carry one of our ops, lost if another, unknown if none were found. */
function judgeSettingsWrite(
  found: StoredSettings | undefined,
  ours: ReadonlyMap<string, unknown>,
): Judgement {
  if (found === undefined) return 'unknown';
  return ours.has(found.op) ? 'ours' : 'lost';
}

/** A create is ours if its op is found, lost if another create's or other IDs, else unknown. */
function judgeCreate(
  found: StoredSettings | undefined,
  op: string,
  settings: SequenceSettings,
): Judgement {
  if (found === undefined) return 'unknown';
  if (found.op === op) return 'ours';
  if (found.op.startsWith(CREATE_OP)) return 'lost';
  const sameIds = ID_SPACE_KEYS.every((key) => found.settings[key] === settings[key]);
  return sameIds ? 'unknown' : 'lost';
}
