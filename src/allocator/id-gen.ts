/** Sequence handles and sequence management over one store; metrics come in as a monitor. */

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
  milliseconds,
  validateName,
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
import type { ClaimGate } from './dc-allocator.js';
import type { AllocatorObserver } from './observer.js';
import { sumCounts, withFormer } from './ledger.js';
import { retireDcRanges, type RetiredState } from './retire.js';
import { alterSettings, createSettings } from './settings-writes.js';
import { Sequence, type SequenceContext } from './sequence.js';
import type { SequenceStats } from './sequence-stats.js';
import { RowMarks } from './watermarks.js';

/** What `connect()` gives {@link IdGen}. */
export interface IdGenOptions {
  /** Closed by {@link IdGen.close}. */
  readonly store: IdStore;
  readonly dc: string;
  readonly keyspace: string;
  /** @default undefined (silent) */
  readonly logger?: Logger | undefined;
  readonly clock?: Clock | undefined;
  /** How long `next()`, `take()` and `ready()` wait for IDs by default, in ms. @default 10000 */
  readonly callTimeoutMs?: number | undefined;
  readonly monitor?: ((parts: IdGenMonitorParts) => IdGenMonitor) | undefined;
  /** Awaited before each block claim (connect() watches durability). */
  readonly claimGate?: ClaimGate | undefined;
}

/** What an {@link IdGen} reports to beside its handles' counters. */
export interface IdGenMonitor extends AllocatorObserver {
  track(handle: Sequence<number> | Sequence<bigint>): void;
  /** Called once the handles closed, before the store closes. */
  close(): Promise<void>;
}

export type IdGenMonitorParts = Readonly<
  Pick<IdGenOptions, 'store' | 'dc' | 'keyspace'> & { clock: Clock; logger: Logger | undefined }
>;

export const ID_GEN_DEFAULTS = Object.freeze({ callTimeoutMs: 10_000 });

/** What {@link IdGen.stats} returns. */
export interface IdGenStats {
  readonly dc: string;
  /** Per sequence opened; counters include those of the handles it replaced. */
  readonly sequences: readonly {
    readonly name: string;
    readonly bigint: boolean;
    readonly stats: SequenceStats;
  }[];
  readonly totals: Readonly<
    Omit<SequenceStats, 'lastError' | 'blockSize' | 'drawRate' | 'dcRate' | 'waste'> & {
      readonly waste: SequenceStats['waste'];
    }
  >;
}

export interface SequenceHandleOptions {
  /** Hand out bigints, as domains beyond 2^53-1 need. @default false */
  readonly bigint?: boolean | undefined;
}

const HANDLE_KEYS = everyKeyOf<SequenceHandleOptions>()(['bigint']);
export const SHARED_ID_GEN_KEYS = [
  'store',
  'dc',
  'keyspace',
  'logger',
  'clock',
  'callTimeoutMs',
] as const;
const ID_GEN_KEYS = everyKeyOf<IdGenOptions>()([...SHARED_ID_GEN_KEYS, 'monitor', 'claimGate']);
/** Tells an {@link IdStore} from a mistake; not a conformance test. */
function isStore(value: unknown): value is IdStore {
  const store = value as Partial<Record<keyof IdStore, unknown>> | null | undefined;
  return (
    typeof store?.readSequence === 'function' &&
    typeof store.writeDcState === 'function' &&
    typeof store.grantRange === 'function' &&
    typeof store.close === 'function'
  );
}

/** Checks these options before connecting; returns `callTimeoutMs` or its default. */
export function checkAllocatorOptions(
  options: Pick<IdGenOptions, 'callTimeoutMs' | 'logger'>,
): number {
  const fallback = ID_GEN_DEFAULTS.callTimeoutMs;
  const callTimeoutMs = milliseconds('callTimeoutMs', options.callTimeoutMs, fallback);
  checkLogger('logger', options.logger);
  return callTimeoutMs;
}

/** Unique integer IDs for this process, from sequences shared by every DC; see `connect()`. */
export class IdGen {
  readonly dc: string;
  readonly keyspace: string;

  readonly #store: IdStore;
  readonly #handles: Omit<SequenceContext<number>, 'name' | 'ids' | 'marks'>;
  readonly #sequences = new Map<string, Sequence<number> | Sequence<bigint>>();
  /** Replaced while closing: close() waits for them, stats() counts them until closed. */
  readonly #replaced = new Set<Sequence<number> | Sequence<bigint>>();
  /** Counters of the closed handles each key's handle replaced: no counter goes back. */
  readonly #formerCounts = new Map<string, SequenceStats>();
  #finalStats: IdGenStats | undefined;
  /** Rollback marks per sequence and grantee: one handle's findings stop the next. */
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
    const { store, dc, keyspace, logger, clock, claimGate } = options;
    this.#store = store;
    this.dc = dc;
    this.keyspace = keyspace;
    const callTimeoutMs = checkAllocatorOptions(options);
    // Last: nothing is registered on the user's registry when another option is refused.
    const observer = options.monitor?.({
      store,
      dc,
      keyspace,
      logger,
      clock: clock ?? SYSTEM_CLOCK,
    });
    this.#monitor = observer;
    this.#handles = { store, dc, keyspace, logger, clock, callTimeoutMs, observer, claimGate };
  }

  /**
   * The handle of sequence `name`, the same for the same name and type; reads nothing yet.
   * @throws {InvalidNameError} for a bad name; {@link ClosedError} after `close()`.
   */
  sequence(name: string, options?: { readonly bigint?: false | undefined }): Sequence<number>;
  sequence(name: string, options: { readonly bigint: true }): Sequence<bigint>;
  sequence(name: string, options?: SequenceHandleOptions): Sequence<number> | Sequence<bigint>;
  sequence(name: string, options: SequenceHandleOptions = {}): Sequence<number> | Sequence<bigint> {
    this.#assertOpen();
    validateName('sequence', name);
    checkKeys(options, HANDLE_KEYS);
    checkBooleanOption('bigint', options.bigint);
    const bigint = options.bigint === true;
    const key = `${name}/${bigint ? 'bigint' : 'number'}`;
    const existing = this.#sequences.get(key);
    if (existing !== undefined && existing.state !== 'closing' && existing.state !== 'closed') {
      return existing;
    }
    if (existing?.state === 'closing') {
      // Its give-back still needs the store: folded once closed.
      this.#replaced.add(existing);
      void existing.close().finally(() => {
        if (this.#replaced.delete(existing)) this.#fold(key, existing);
      });
    } else if (existing !== undefined) {
      this.#fold(key, existing);
    }
    const context = {
      ...this.#handles,
      name,
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
   * Creates sequence `name` in every DC; returns the settings stored (with `ifNotExists`, the
   * existing ones).
   * @example
   * ```ts
   * await ids.createSequence('orders', { domain: 'int32', dcRangeSize: 1_000_000 });
   * ```
   * @throws {InvalidNameError}, {@link InvalidOptionError} for a bad name or option.
   * @throws {SequenceExistsError} if it exists, unless `ifNotExists` and its ID space matches.
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
    if (creator !== 'this') {
      const differences = idSpaceDifferences(options, settings, stored);
      if (differences.length > 0) throw new SequenceExistsError(name, this.keyspace, differences);
    }
    const created = creator === 'unknown' ? undefined : creator === 'this';
    return { settings: stored, firstGrants: created === true ? firstGrants : [], created };
  }

  /**
   * Changes the tunable settings of sequence `name` if nobody changed them meanwhile; running
   * handles take them within {@link SETTINGS_REFRESH_MS}. Returns the settings after the change.
   * @throws {InvalidNameError}, {@link InvalidOptionError} for a bad name or change.
   * @throws {SequenceNotFoundError}; {@link ContentionError} if concurrent alters kept winning.
   * @throws {StoreUnavailableError} if some DC cannot be reached.
   */
  async alterSequence(name: string, changes: AlterSequenceOptions): Promise<SequenceSettings> {
    this.#assertOpen();
    validateName('sequence', name);
    checkChanges(changes);
    return alterSettings(this.#store, name, changes, this.keyspace);
  }

  /**
   * After rows went back (docs/operations.md), retires the ranges this DC holds for `name`: their
   * IDs become a gap. Stop the sequence's processes in this DC first. Safe to repeat.
   * @throws {InvalidNameError}; {@link SequenceNotFoundError}; {@link ContentionError}.
   * @throws {InvariantError} if the grant level itself went back (nothing is written).
   * @throws {StoreUnavailableError} if SERIAL or LOCAL_SERIAL is unreachable or an outcome
   * stayed unknown (run it again).
   */
  async retireDcRanges(name: string): Promise<readonly RetiredState[]> {
    this.#assertOpen();
    validateName('sequence', name);
    // At SERIAL: a local read could miss the latest alter of the shard count.
    const stored = await this.#store.readSequence(name, 'serial');
    if (stored === undefined) throw new SequenceNotFoundError(name, this.keyspace);
    return retireDcRanges(this.#store, stored, this.dc);
  }

  /**
   * Every sequence's settings, sorted by name.
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  async listSequences(): Promise<readonly SequenceSettings[]> {
    this.#assertOpen();
    return this.#store.listSequences();
  }

  /**
   * The settings of sequence `name`.
   * @throws {InvalidNameError}; {@link SequenceNotFoundError}; {@link StoreUnavailableError}.
   */
  async readSequence(name: string): Promise<SequenceSettings> {
    this.#assertOpen();
    validateName('sequence', name);
    const stored = await this.#store.readSequence(name);
    if (stored === undefined) throw new SequenceNotFoundError(name, this.keyspace);
    return stored.settings;
  }

  /** Every handle's counters and their totals; after {@link close}, the final ones. */
  stats(): IdGenStats {
    if (this.#finalStats !== undefined) return this.#finalStats;
    const closing = [...this.#replaced];
    const sequences = [...this.#sequences].map(([key, handle]) => {
      const former = this.#formerCounts.get(key);
      const replaced = closing
        .filter((other) => other.name === handle.name && other.bigint === handle.bigint)
        .map((h) => h.stats());
      const stats = withFormer(handle.stats(), former, replaced);
      return { name: handle.name, bigint: handle.bigint, stats };
    });
    const { counts: totals, waste } = sumCounts(sequences.map(({ stats }) => stats));
    const all = Object.freeze({ ...totals, waste: Object.freeze(waste) });
    return Object.freeze({
      dc: this.dc,
      sequences: Object.freeze(sequences),
      totals: all as unknown as IdGenStats['totals'],
    });
  }

  /** Closes every handle, the monitor, then the store. Idempotent; later calls throw. */
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
