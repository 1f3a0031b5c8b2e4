/**
 * The allocator a process holds: sequence handles and sequence management over one store. It
 * knows no metrics: it reports to an {@link IdGenMonitor}, which src/connect.ts fills.
 */

import { checkLogger, type Logger } from '../logger.js';

import {
  ClosedError,
  InvalidOptionError,
  SequenceExistsError,
  SequenceNotFoundError,
} from '../errors.js';
import {
  checkBooleanOption,
  checkKeys,
  everyKeyOf,
  validateName,
  validateSequenceName,
} from '../options.js';
import {
  checkFirstRangeDcs,
  defaultFirstRanges,
  resolveFirstGrants,
} from '../settings/first-ranges.js';
import type { AlterSequenceOptions, CreateSequenceOptions } from '../settings/model.js';
import { checkChanges, idSpaceDifferences, resolveSequenceSettings } from '../settings/resolve.js';
import type { FirstGrant, IdStore, SequenceSettings } from '../store/port.js';
import { BIGINT_IDS, NUMBER_IDS } from './block.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import type { AllocatorObserver } from './observer.js';
import { sumCounts, withFormer } from './ledger.js';
import { retireDcRanges, type RetiredState } from './retire.js';
import { alterSettings, createSettings } from './settings-writes.js';
import { Sequence } from './sequence.js';
import type { SequenceStats } from './sequence-stats.js';
import { RowMarks } from './watermarks.js';

/** What `connect()` gives {@link IdGen}. */
export interface IdGenOptions {
  /** Closed by {@link IdGen.close}. */
  readonly store: IdStore;
  /** This process's datacenter: the DC whose state its sequences claim blocks from. */
  readonly dc: string;
  /** For messages. */
  readonly keyspace: string;
  /**
   * Receives warnings about failed refills, once per episode, as `logger.child({ sequence })`.
   * @default undefined (silent)
   */
  readonly logger?: Logger | undefined;
  /** @internal @default real timers */
  readonly clock?: Clock | undefined;
  /**
   * How long `next()`, `take()` and `ready()` wait for IDs by default, in ms.
   * @default 10000
   */
  readonly callTimeoutMs?: number | undefined;
  /** @internal Builds what the allocator reports to. @default nothing is reported */
  readonly monitor?: ((parts: IdGenMonitorParts) => IdGenMonitor) | undefined;
}

/** What an {@link IdGen} reports to beside its handles' counters. */
export interface IdGenMonitor extends AllocatorObserver {
  /** Follows `handle` from now on. */
  track(handle: Sequence<number> | Sequence<bigint>): void;
  /** Stops the monitor's own work; called once the handles closed, before the store closes. */
  close(): Promise<void>;
}

/** What {@link IdGenOptions.monitor} is given of the allocator. */
export interface IdGenMonitorParts {
  readonly store: IdStore;
  readonly dc: string;
  readonly keyspace: string;
  readonly clock: Clock;
  readonly logger: Logger | undefined;
}

/** Defaults of {@link IdGenOptions}. */
export const ID_GEN_DEFAULTS = Object.freeze({ callTimeoutMs: 10_000 });

/** What {@link IdGen.stats} returns. */
export interface IdGenStats {
  readonly dc: string;
  /**
   * One entry per sequence opened: the handle {@link IdGen.sequence} returns now. Its counters
   * include those of the handles it replaced, so none goes back; rates, block sizes and
   * `lastError` are the current handle's.
   */
  readonly sequences: readonly {
    readonly name: string;
    readonly bigint: boolean;
    readonly stats: SequenceStats;
  }[];
  /** The counters of `sequences`, summed (`waste` cause by cause); rates and sizes left out. */
  readonly totals: Readonly<
    Omit<SequenceStats, 'lastError' | 'blockSize' | 'drawRate' | 'dcRate' | 'waste'> & {
      readonly waste: SequenceStats['waste'];
    }
  >;
}

/** How a handle represents IDs. */
export interface SequenceHandleOptions {
  /**
   * Hand out bigints: needed for domains beyond 2^53-1 (`int63`, large `custom` ones).
   * @default false
   */
  readonly bigint?: boolean | undefined;
}

const HANDLE_KEYS = everyKeyOf<SequenceHandleOptions>()(['bigint']);
/** The options the allocator shares with the exported `IdGen` (src/connect.ts). */
export const SHARED_ID_GEN_KEYS = [
  'store',
  'dc',
  'keyspace',
  'logger',
  'clock',
  'callTimeoutMs',
] as const;
const ID_GEN_KEYS = everyKeyOf<IdGenOptions>()([...SHARED_ID_GEN_KEYS, 'monitor']);
/** Tells an {@link IdStore} from a mistake (the type checks the rest); not a conformance test. */
function isStore(value: unknown): value is IdStore {
  const store = value as Partial<Record<keyof IdStore, unknown>> | null | undefined;
  return (
    typeof store?.readSequence === 'function' &&
    typeof store.writeDcState === 'function' &&
    typeof store.grantRange === 'function' &&
    typeof store.close === 'function'
  );
}

/**
 * Checks the allocator's own options, before connecting, so a bad one is named even when
 * Cassandra cannot be reached.
 * @returns `callTimeoutMs`, or its default.
 * @throws {InvalidOptionError} naming `callTimeoutMs` or `logger`.
 */
export function checkAllocatorOptions(
  options: Pick<IdGenOptions, 'callTimeoutMs' | 'logger'>,
): number {
  const callTimeoutMs = options.callTimeoutMs ?? ID_GEN_DEFAULTS.callTimeoutMs;
  if (typeof callTimeoutMs !== 'number' || !(callTimeoutMs >= 0) || callTimeoutMs === Infinity) {
    throw new InvalidOptionError(
      'callTimeoutMs',
      callTimeoutMs,
      'a finite number of milliseconds, at least 0',
    );
  }
  checkLogger('logger', options.logger);
  return callTimeoutMs;
}

/**
 * Unique integer IDs for this process, from sequences shared by every DC. The package exports
 * it with the `metrics` option added (src/connect.ts).
 *
 * @example
 * ```ts
 * const ids = await connect({ contactPoints: ['10.0.0.1'], localDataCenter: 'dc1', keyspace: 'idgen' });
 * await ids.createSequence('orders', { domain: 'int32' });
 * const orders = ids.sequence('orders');
 * const id = await orders.next();
 * await ids.close();
 * ```
 */
export class IdGen {
  /** This process's datacenter. */
  readonly dc: string;
  /** The keyspace holding the tables. */
  readonly keyspace: string;

  readonly #store: IdStore;
  readonly #logger: Logger | undefined;
  readonly #clock: Clock | undefined;
  readonly #callTimeoutMs: number;
  readonly #sequences = new Map<string, Sequence<number> | Sequence<bigint>>();
  /** Replaced while still closing: close() waits for them; stats() counts them until closed. */
  readonly #replaced = new Set<Sequence<number> | Sequence<bigint>>();
  /** Counters of the closed handles each key's handle replaced, so no counter goes back. */
  readonly #formerCounts = new Map<string, SequenceStats>();
  /** Kept after close(): `waste.notReturned` is only known once every handle closed. */
  #finalStats: IdGenStats | undefined;
  /** Rollback marks per sequence and grantee, shared so one handle's findings stop the next. */
  readonly #marks = new Map<string, RowMarks>();
  readonly #monitor: IdGenMonitor | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: IdGenOptions) {
    checkKeys(options, ID_GEN_KEYS);
    if (!isStore(options.store)) {
      throw new InvalidOptionError(
        'store',
        options.store,
        "an IdStore (connect() builds one; idgen-cass/testing's MemoryStore for tests)",
        'kind',
      );
    }
    validateName('datacenter', options.dc);
    validateName('keyspace', options.keyspace);
    this.#store = options.store;
    this.dc = options.dc;
    this.keyspace = options.keyspace;
    this.#logger = options.logger;
    this.#clock = options.clock;
    this.#callTimeoutMs = checkAllocatorOptions(options);
    // Last: nothing is registered on the user's registry when another option is refused.
    this.#monitor = options.monitor?.({
      store: this.#store,
      dc: this.dc,
      keyspace: this.keyspace,
      clock: this.#clock ?? SYSTEM_CLOCK,
      logger: this.#logger,
    });
  }

  /**
   * The handle of sequence `name` in this process; the same handle for the same name and type.
   * Nothing is read until the first ID is asked for.
   * @example
   * ```ts
   * const orders = ids.sequence('orders');                     // Sequence<number>
   * const events = ids.sequence('events', { bigint: true });   // Sequence<bigint>
   * ```
   * @throws {InvalidNameError} if `name` is not 1 to 48 letters, digits or `_` starting with a
   * letter.
   * @throws {ClosedError} after `close()`.
   */
  sequence(name: string, options?: { readonly bigint?: false | undefined }): Sequence<number>;
  sequence(name: string, options: { readonly bigint: true }): Sequence<bigint>;
  sequence(name: string, options?: SequenceHandleOptions): Sequence<number> | Sequence<bigint>;
  sequence(name: string, options: SequenceHandleOptions = {}): Sequence<number> | Sequence<bigint> {
    this.#assertOpen();
    validateSequenceName(name);
    checkKeys(options, HANDLE_KEYS);
    checkBooleanOption('bigint', options.bigint);
    const bigint = options.bigint === true;
    const key = `${name}/${bigint ? 'bigint' : 'number'}`;
    const existing = this.#sequences.get(key);
    // A handle closed on its own is replaced: a closed handle can never serve again.
    if (existing !== undefined && existing.state !== 'closing' && existing.state !== 'closed') {
      return existing;
    }
    if (existing?.state === 'closing') {
      // Its give-back still needs the store and its counts still move: folded once closed.
      this.#replaced.add(existing);
      void existing.close().finally(() => {
        if (this.#replaced.delete(existing)) this.#fold(key, existing);
      });
    } else if (existing !== undefined) {
      this.#fold(key, existing);
    }
    const context = {
      name,
      store: this.#store,
      dc: this.dc,
      keyspace: this.keyspace,
      logger: this.#logger,
      clock: this.#clock,
      callTimeoutMs: this.#callTimeoutMs,
      observer: this.#monitor,
      marks: (grantee: string, start: bigint) => {
        const key = `${name}\u0000${grantee}`;
        let marks = this.#marks.get(key);
        if (marks === undefined) this.#marks.set(key, (marks = new RowMarks(start - 1n)));
        return marks;
      },
    };
    const handle = bigint
      ? new Sequence({ ...context, ids: BIGINT_IDS })
      : new Sequence({ ...context, ids: NUMBER_IDS });
    this.#sequences.set(key, handle);
    this.#monitor?.track(handle);
    return handle;
  }

  /**
   * Creates sequence `name` in every DC (needs every DC reachable).
   * @example
   * ```ts
   * await ids.createSequence('orders', { domain: 'int32', dcRangeSize: 1_000_000 });
   * ```
   * @returns the settings stored (with `ifNotExists`, those of the existing sequence).
   * @throws {InvalidNameError} for a bad name; {@link InvalidOptionError} for a bad option.
   * @throws {SequenceExistsError} if it exists and `ifNotExists` is not set, or is set and the
   * existing `domain`, `min`, `max` or `start` differs from one given; nothing is changed. Its
   * `createdBy` is `unknown` when an alter rewrote the settings since, so this create, though
   * reported failed, may have been applied first.
   * @throws {StoreUnavailableError} if some DC cannot be reached.
   */
  async createSequence(
    name: string,
    options: CreateSequenceOptions = {},
  ): Promise<SequenceSettings> {
    return (await this.createSequenceGranting(name, options)).settings;
  }

  /** @internal {@link IdGen.createSequence}, with the first ranges it wrote, for `seed`. */
  async createSequenceGranting(
    name: string,
    options: CreateSequenceOptions = {},
  ): Promise<{
    readonly settings: SequenceSettings;
    readonly firstGrants: readonly FirstGrant[];
    /** Whether this create made it; undefined when an alter rewrote the settings since. */
    readonly created: boolean | undefined;
  }> {
    this.#assertOpen();
    const settings = resolveSequenceSettings(name, options);
    // A list given is refused if bad before any read, then checked against the replication.
    const given = options.firstRanges;
    const firstGrants = resolveFirstGrants(
      settings,
      given ?? defaultFirstRanges(settings, await this.#store.readReplicaDcs()),
    );
    if (given !== undefined && firstGrants.length > 0) {
      checkFirstRangeDcs(given, await this.#store.readReplicaDcs());
    }
    const { settings: stored, creator } = await createSettings(
      this.#store,
      settings,
      this.keyspace,
      options.ifNotExists === true,
      firstGrants,
      this.dc,
    );
    // An existing sequence's first ranges are not shown as this create's.
    if (creator !== 'this') {
      const differences = idSpaceDifferences(options, settings, stored);
      if (differences.length > 0) throw new SequenceExistsError(name, this.keyspace, differences);
    }
    const created = creator === 'unknown' ? undefined : creator === 'this';
    return { settings: stored, firstGrants: created === true ? firstGrants : [], created };
  }

  /**
   * Changes the sizes, threshold, claim interval, autonomy target or shards of sequence `name`,
   * checked against the stored settings and written only if nobody changed them meanwhile. Running
   * handles take them at their first claim 10 s or more after their last read (shards excepted);
   * new handles at once.
   * @example
   * ```ts
   * await ids.alterSequence('orders', { blockSize: 5_000 });
   * ```
   * @returns the settings after the change.
   * @throws {InvalidNameError} for a bad name; {@link InvalidOptionError} for a bad change.
   * @throws {SequenceNotFoundError} if it does not exist.
   * @throws {ContentionError} if concurrent alters kept changing the settings first.
   * @throws {StoreUnavailableError} if some DC cannot be reached.
   */
  async alterSequence(name: string, changes: AlterSequenceOptions): Promise<SequenceSettings> {
    this.#assertOpen();
    validateSequenceName(name);
    checkChanges(changes);
    return alterSettings(this.#store, name, changes, this.keyspace);
  }

  /**
   * Retires the ranges this process's DC holds for sequence `name` after its rows went back
   * (docs/operations.md, "When rows went back"): the IDs the DC still held become a gap, and its
   * next claim asks for a grant above every ID granted. Stop the sequence's processes in this DC
   * first. Safe to repeat. Each result's `outcome` says whose write left its partition spent.
   * @example
   * ```ts
   * for (const s of await ids.retireDcRanges('orders')) console.log(s.grantee, s.outcome, s.gap);
   * ```
   * @throws {InvalidNameError} for a bad name; {@link SequenceNotFoundError} if it does not exist.
   * @throws {InvariantError} if the grant level itself went back (nothing is written).
   * @throws {ContentionError} if the DC's processes kept writing its state first.
   * @throws {StoreUnavailableError} if SERIAL or LOCAL_SERIAL cannot be reached, or a write's
   * outcome stayed unknown (run it again).
   */
  async retireDcRanges(name: string): Promise<readonly RetiredState[]> {
    this.#assertOpen();
    // At SERIAL: the shard count only grows, and a local read could miss the latest alter.
    validateSequenceName(name);
    const stored = await this.#store.readSequence(name, 'serial');
    if (stored === undefined) throw new SequenceNotFoundError(name, this.keyspace);
    return retireDcRanges(this.#store, stored, this.dc);
  }

  /**
   * Every sequence's settings, sorted by name.
   * @example
   * ```ts
   * for (const s of await ids.listSequences()) console.log(s.name, s.max);
   * ```
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  async listSequences(): Promise<readonly SequenceSettings[]> {
    this.#assertOpen();
    return this.#store.listSequences();
  }

  /**
   * The settings of sequence `name`.
   * @example
   * ```ts
   * const { blockSize } = await ids.readSequence('orders');
   * ```
   * @throws {InvalidNameError} for a bad name.
   * @throws {SequenceNotFoundError} if it does not exist.
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  async readSequence(name: string): Promise<SequenceSettings> {
    this.#assertOpen();
    validateSequenceName(name);
    const stored = await this.#store.readSequence(name);
    if (stored === undefined) throw new SequenceNotFoundError(name, this.keyspace);
    return stored.settings;
  }

  /**
   * A snapshot of every open handle's counters, and their totals; once {@link close} has ended,
   * the final ones (close()'s give-backs counted).
   * @example
   * ```ts
   * const { totals, sequences } = ids.stats();
   * console.log(totals.remaining, sequences.map((s) => s.name));
   * ```
   */
  stats(): IdGenStats {
    if (this.#finalStats !== undefined) return this.#finalStats;
    const closing = [...this.#replaced];
    const sequences = [...this.#sequences].map(([key, handle]) => {
      const former = this.#formerCounts.get(key);
      const replaced = closing
        .filter((other) => other.name === handle.name && other.bigint === handle.bigint)
        .map((h) => h.stats());
      return {
        name: handle.name,
        bigint: handle.bigint,
        stats: withFormer(handle.stats(), former, replaced),
      };
    });
    const { counts: totals, waste } = sumCounts(sequences.map(({ stats }) => stats));
    return Object.freeze({
      dc: this.dc,
      sequences: Object.freeze(sequences),
      totals: Object.freeze({
        ...totals,
        waste: Object.freeze(waste),
      }) as unknown as IdGenStats['totals'],
    });
  }

  /**
   * Closes every handle (returning unused IDs where possible), stops the runway polls of
   * `metrics` (the metrics stay registered, with their last values), then closes the store.
   * Idempotent; later calls on this object throw {@link ClosedError}.
   * @example
   * ```ts
   * process.on('SIGTERM', () => void ids.close());
   * ```
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    try {
      const handles = [...this.#sequences.values(), ...this.#replaced];
      await Promise.allSettled(handles.map((s) => s.close()));
      await this.#monitor?.close();
    } finally {
      this.#finalStats = this.stats();
      this.#sequences.clear();
      this.#replaced.clear();
      await this.#store.close();
    }
  }

  #fold(key: string, handle: Sequence<number> | Sequence<bigint>): void {
    this.#formerCounts.set(key, withFormer(handle.stats(), this.#formerCounts.get(key), []));
  }

  #assertOpen(): void {
    if (this.#closing !== undefined) throw new ClosedError();
  }
}
