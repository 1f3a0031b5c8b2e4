/** Shared helpers of the unit tests: processes over one MemoryStore, logs, settling. */
import { pino, type Logger } from 'pino';
import { expect } from 'vitest';

import { IdGen } from '../../src/allocator/id-gen.js';
import type { Sequence } from '../../src/allocator/sequence.js';
import type { CreateSequenceOptions } from '../../src/settings/model.js';
import { MemoryStore } from '../../src/store/memory.js';
import { StoreUnavailableError } from '../../src/errors.js';
import type {
  CasOutcome,
  DcState,
  IdStore,
  OverviewReading,
  SequenceSettings,
  StoredSettings,
} from '../../src/store/port.js';

export const KEYSPACE = 'unit';

/** One allocator process in `dc`. */
export function processIn(store: MemoryStore, dc = 'dc1', logger?: Logger): IdGen {
  return new IdGen({ store, dc, keyspace: KEYSPACE, logger });
}

/** A store with sequence `name` created, and a first process in dc1. */
export async function withSequence(
  options: CreateSequenceOptions,
  name = 'orders',
): Promise<{ store: MemoryStore; ids: IdGen; settings: SequenceSettings }> {
  const store = new MemoryStore({ keyspace: KEYSPACE });
  const ids = processIn(store);
  const settings = await ids.createSequence(name, options);
  return { store, ids, settings };
}

/**
 * Lets every pending promise chain run (MemoryStore calls only yield to microtasks), so
 * background refills finish. Works with fake timers as it schedules no timer.
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 2_000; i++) await Promise.resolve();
}

/**
 * Lets the next DC-state write (a block claim) through and holds the one after it until the
 * returned function is called: a call that needs two more blocks gets one, then waits.
 */
export function holdSecondClaim(store: MemoryStore): () => void {
  let release = () => {};
  store.faults.push(
    { op: 'writeDcState', effect: 'delay', until: Promise.resolve() },
    {
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
    },
  );
  return () => release();
}

/** `count` IDs from `next()`, one after another. */
export async function draw<T extends number | bigint>(
  seq: Sequence<T>,
  count: number,
): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < count; i++) out.push(await seq.next());
  return out;
}

/** IDs from `next()` until it rejects; returns them and the error. */
export async function drawUntilError<T extends number | bigint>(
  seq: Sequence<T>,
  limit = 100_000,
): Promise<{ ids: T[]; error: unknown }> {
  const ids: T[] = [];
  for (let i = 0; i < limit; i++) {
    try {
      ids.push(await seq.next());
    } catch (error) {
      return { ids, error };
    }
  }
  throw new Error(`next() did not fail within ${limit} IDs`);
}

export function expectStrictlyIncreasing(ids: readonly (number | bigint)[]): void {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i]! > ids[i - 1]!)) {
      expect.fail(`IDs not strictly increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
    }
  }
}

export function expectUnique(ids: readonly (number | bigint)[]): void {
  const seen = new Set<string>();
  for (const id of ids) {
    const key = String(id);
    if (seen.has(key)) expect.fail(`ID ${key} handed out twice`);
    seen.add(key);
  }
}

export function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

export interface LogRecord {
  readonly level: number;
  readonly msg: string;
  readonly sequence?: string;
  readonly [key: string]: unknown;
}

/** A pino logger that keeps its records in memory. */
export function capturingLogger(): { logger: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const logger = pino(
    { level: 'debug' },
    {
      write(line: string) {
        records.push(JSON.parse(line) as LogRecord);
      },
    },
  );
  return { logger, records };
}

export const WARN = 40;
export const INFO = 30;

/** A DC state row with sensible defaults: one grant [1, 100] installed, nothing claimed. */
export function dcState(overrides: Partial<DcState> = {}): DcState {
  return {
    lastInteger: 0n,
    reservedMin: 1n,
    reservedMax: 100n,
    reservedGrant: 1,
    preloadedMin: 1n,
    preloadedMax: 100n,
    installedGrant: 1,
    version: 1,
    op: 'crafted',
    ...overrides,
  };
}

/** Counts of the store's conditional writes, to show an operation wrote nothing. */
export function writes(store: MemoryStore): { grantRange: number; writeDcState: number } {
  return { grantRange: store.calls.grantRange, writeDcState: store.calls.writeDcState };
}

/**
 * Asserts that sequence `orders` holds the first ranges of dc1 and dc2 with 2 shards each, 100
 * IDs each and contiguous from 1, and nothing else granted.
 */
export async function expectFirstRangesOfTwoDcs(store: MemoryStore): Promise<void> {
  const overview = await store.readGrantsOverview('orders');
  expect(overview?.globalLast).toBe(400n);
  expect(Object.fromEntries(overview?.grants ?? [])).toEqual({
    dc1: [{ number: 1, min: 1n, max: 100n }],
    'dc1/1': [{ number: 1, min: 101n, max: 200n }],
    dc2: [{ number: 1, min: 201n, max: 300n }],
    'dc2/1': [{ number: 1, min: 301n, max: 400n }],
  });
}

/**
 * `store` with the rejections of its alters reported as CassandraStore reports them: an UPDATE's
 * rejection returns only the column of its condition, so the round's `settings_op` comes with
 * the rest of the settings read at SERIAL afterwards. `between` runs in that gap (another
 * alter can land there).
 */
export function cassandraLikeAlters(store: MemoryStore, between: () => Promise<void>): IdStore {
  const alterSequence = async (
    ...args: Parameters<IdStore['alterSequence']>
  ): Promise<CasOutcome<StoredSettings>> => {
    const outcome = await store.alterSequence(...args);
    if (outcome.kind !== 'rejected' || outcome.found === undefined) return outcome;
    await between();
    const stored = await store.readSequence(args[0], 'serial');
    return {
      kind: 'rejected',
      found: stored && { ...stored, op: outcome.found.op },
    };
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'alterSequence') return alterSequence;
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

/** The driver's message for an EACH_QUORUM read while a DC is cut off. */
export const EACH_QUORUM_FAILS =
  'Not enough replicas available for query at consistency EACH_QUORUM (1 required but only 0 alive)';

/**
 * `store` as seen from one DC while another is cut off: the consistent (EACH_QUORUM) read of the
 * DC states fails, as it does for every DC's state then (each is replicated in every DC); every
 * other call goes through. `seenHere` makes the local read's states lag, as another DC's may.
 */
export function eachQuorumFails(
  store: MemoryStore,
  seenHere: (states: Map<string, DcState>) => void = () => undefined,
): IdStore {
  const readDcStatesOverview = async (
    sequence: string,
    reading?: OverviewReading,
  ): Promise<ReadonlyMap<string, DcState>> => {
    if (reading === 'consistent') {
      throw new StoreUnavailableError('local', 'read DC states overview', EACH_QUORUM_FAILS, {
        cause: new Error(EACH_QUORUM_FAILS),
      });
    }
    const states = new Map(await store.readDcStatesOverview(sequence));
    seenHere(states);
    return states;
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'readDcStatesOverview') return readDcStatesOverview;
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}
