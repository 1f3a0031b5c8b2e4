/**
 * The per-process handle of one sequence: a double buffer of blocks in front of the DC
 * protocol ({@link DcAllocator}).
 */

import assert from 'node:assert/strict';

import type { Logger } from '../logger.js';

import {
  AbortedError,
  ClosedError,
  ContentionError,
  DeadlineError,
  DomainNeedsBigIntError,
  InvalidCountError,
  InvalidOptionError,
  InvariantError,
  SequenceExhaustedError,
  SequenceNotFoundError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import { MAX_SAFE_ID, validateStoredSettings } from '../options.js';
import type { IdStore, SequenceSettings } from '../store/port.js';
import type { Block, IdKind, IdRange } from './block.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import { mutated } from './mutations.js';
import {
  DcAllocator,
  type AllocatorCounters,
  type ClaimedBlock,
  type RangeListener,
} from './dc-allocator.js';

/**
 * Lifecycle of a {@link Sequence}:
 *
 * | state | meaning | next states |
 * |---|---|---|
 * | `idle` | settings not loaded (never used, or the last load failed) | `loading`, `closing` |
 * | `loading` | reading the settings from the store | `ready`, `idle` (load failed), `closing` |
 * | `ready` | settings loaded; IDs are served and blocks refilled | `closing` |
 * | `closing` | `close()` called: from that moment no ID is handed out; in-flight refills finish, the unused IDs go back | `closed` |
 * | `closed` | nothing held; every call throws {@link ClosedError} | – |
 */
export type SequenceState = 'idle' | 'loading' | 'ready' | 'closing' | 'closed';

const TRANSITIONS: Readonly<Record<SequenceState, readonly SequenceState[]>> = {
  idle: ['loading', 'closing'],
  loading: ['ready', 'idle', 'closing'],
  ready: ['closing'],
  closing: ['closed'],
  closed: [],
};

/** A snapshot of one handle's counters, since it was created. */
export interface SequenceStats {
  /** IDs this process holds and has not handed out: current block plus preloaded block. */
  readonly remaining: number;
  /** Blocks claimed from the DC (confirmed claims only). */
  readonly blocksClaimed: number;
  /** DC ranges this process got granted at SERIAL. */
  readonly rangesGranted: number;
  /** `next()`/`take()` calls that found no local ID and had to wait for a refill. */
  readonly waits: number;
  /**
   * Failed operations: block claims, DC range requests and block returns (a claim that failed
   * because its range request failed counts twice).
   */
  readonly errors: number;
  /** Conditional writes whose condition did not hold (lost races). */
  readonly casRejections: number;
  /** Conditional writes that timed out with an unknown outcome. */
  readonly casUnknown: number;
  /**
   * IDs this process claimed (or may have claimed) and will never hand out: unresolved CAS
   * timeouts, block remainders skipped by `take()`, and unused IDs not returned on close.
   */
  readonly wasted: number;
  /** Conditional writes sent (SERIAL and LOCAL_SERIAL). */
  readonly lwtWrites: number;
  /** Reads of the grant level at SERIAL. */
  readonly serialReads: number;
  /** Reads of the DC state at LOCAL_SERIAL. */
  readonly localSerialReads: number;
  /** The most recent failure, if any. */
  readonly lastError: Error | undefined;
}

/** What {@link IdGen} gives a handle. */
export interface SequenceContext<T extends number | bigint> {
  readonly name: string;
  readonly store: IdStore;
  readonly dc: string;
  readonly keyspace: string;
  readonly ids: IdKind<T>;
  readonly logger?: Logger | undefined;
  /** @internal Timers; the simulation replaces them. @default real timers */
  readonly clock?: Clock | undefined;
  /** Default deadline of a call that waits for IDs, in ms. */
  readonly callTimeoutMs: number;
}

/** How long a call may wait for IDs, and how it can be cancelled. */
export interface CallOptions {
  /**
   * Milliseconds the call may wait for a refill before it rejects (with the refill's last
   * error, or {@link DeadlineError}); the refill itself carries on.
   * @default the `callTimeoutMs` option of `connect()` (10 000)
   */
  readonly timeoutMs?: number | undefined;
  /** Rejects the call with {@link AbortedError} when it fires; the refill carries on. */
  readonly signal?: AbortSignal | undefined;
}

/** Retries of a failed DC range request: the first after about 1 s, doubling up to 30 s. */
const RANGE_RETRY_FIRST_MS = 1_000;
const RANGE_RETRY_MAX_MS = 30_000;
/**
 * Retries of a block claim that failed for a reason that passes (a replica paused or down,
 * lost races, SERIAL unreachable while the DC needs a range): the first after about 50 ms,
 * doubling up to 2 s, for as long as the handle is open. Callers wait up to their deadline.
 */
const CLAIM_RETRY_FIRST_MS = 50;
const CLAIM_RETRY_MAX_MS = 2_000;

type FailureKind = 'claim' | 'range' | 'return';

const FAILURE_MESSAGES: Readonly<Record<FailureKind, string>> = {
  claim: 'claiming a block failed; the IDs this process holds are still served',
  range: 'requesting a DC range failed; the DC still serves its ranges, retrying in the background',
  return: 'returning unused IDs on close failed; they stay a gap',
};

const RECOVERY_MESSAGES: Readonly<Record<FailureKind, string>> = {
  claim: 'claiming blocks works again',
  range: 'requesting DC ranges works again',
  return: 'returning unused IDs works again',
};

interface Loaded {
  readonly settings: SequenceSettings;
  readonly allocator: DcAllocator;
}

/**
 * Hands out unique IDs of one sequence in this process, strictly increasing.
 *
 * IDs come from the current block; a preloaded block waits behind it. When `threshold` of the
 * current block is used and nothing is preloaded, one background claim loads the next block;
 * when a claim leaves the DC's reserved range past `threshold` with no preloaded range, one
 * background request grants the DC its next range. At most one of each is in flight; callers
 * that need IDs meanwhile share it. Get a handle from {@link IdGen.sequence}.
 *
 * @example
 * ```ts
 * const orders = ids.sequence('orders');
 * const id = orders.tryNext() ?? (await orders.next());
 * const { first, last } = await orders.take(50);
 * ```
 */
export class Sequence<T extends number | bigint> {
  /** The sequence's name. */
  readonly name: string;
  /** This process's datacenter. */
  readonly dc: string;
  /** Whether IDs are bigints (else JavaScript numbers). */
  readonly bigint: boolean;

  private readonly store: IdStore;
  private readonly keyspace: string;
  private readonly ids: IdKind<T>;
  private readonly log: Logger | undefined;
  private readonly clock: Clock;
  private readonly callTimeoutMs: number;
  /** The error of the claim attempt that failed last, while the claim retries; cleared on success. */
  private claimFailure: Error | undefined;
  /** Ends the claim's retry pause at once (close() calls it). */
  private wakeClaim: (() => void) | undefined;

  private lifecycle: SequenceState = 'idle';
  private loaded: Loaded | undefined;
  private threshold = 0;
  /** The block IDs are taken from. */
  private current: Block<T> | undefined;
  /** The next block, claimed ahead of need; taken into use once `current` is spent. */
  private preloaded: Block<T> | undefined;
  /**
   * Blocks set aside by `close()`, in the order they were claimed (including any that arrive
   * while closing): never served again, only given back.
   */
  private retired: Block<T>[] = [];
  /** Set when the DC's rows went back: nothing is served or claimed any more. */
  private rolledBack: StateRolledBackError | undefined;
  /** `current.used` at which the next block is claimed in the background; Infinity: not now. */
  private preloadAt = Infinity;
  /** Highest ID of any block this process claimed: every new block must lie above it. */
  private highestClaimed = -1n;

  private loading: Promise<Loaded> | undefined;
  private claiming: Promise<void> | undefined;
  private backgroundRange: Promise<void> | undefined;
  /** Cancels the pending retry of a failed DC range request. */
  private rangeRetryTimer: (() => void) | undefined;
  private rangeRetries = 0;
  private exhausted: SequenceExhaustedError | undefined;
  private closing: Promise<void> | undefined;
  /** Which kinds of failure are ongoing: each is logged when it starts and when it ends. */
  private readonly failing: Record<FailureKind, boolean> = {
    claim: false,
    range: false,
    return: false,
  };
  private readonly counters: AllocatorCounters & {
    waits: number;
    errors: number;
    lastError: Error | undefined;
  } = {
    blocksClaimed: 0,
    rangesGranted: 0,
    waits: 0,
    errors: 0,
    casRejections: 0,
    casUnknown: 0,
    wasted: 0,
    lwtWrites: 0,
    serialReads: 0,
    localSerialReads: 0,
    lastError: undefined,
  };
  private readonly rangeListener: RangeListener = {
    succeeded: () => {
      this.rangeRetries = 0;
      this.clearRangeRetry();
      this.recovered('range');
      // A preload that failed for want of a range gets its chance now, not when the block is spent.
      const block = this.current;
      if (
        this.preloaded === undefined &&
        block !== undefined &&
        block.used >= this.preloadPoint(block)
      ) {
        this.refillInBackground();
      }
    },
    failed: (error) => {
      if (error instanceof StateRolledBackError) {
        this.forfeit(error);
        return;
      }
      if (error instanceof SequenceExhaustedError) {
        this.record(error);
        if (this.exhausted === undefined) {
          this.exhausted = error;
          this.log?.warn(
            { dc: this.dc, localIds: this.localRemaining(), globalLast: error.globalLast },
            'the sequence is exhausted; the IDs left in this DC are still served',
          );
        }
        return;
      }
      this.failed('range', error);
      this.scheduleRangeRetry();
    },
  };

  /** @internal Use {@link IdGen.sequence}. */
  constructor(context: SequenceContext<T>) {
    this.name = context.name;
    this.dc = context.dc;
    this.store = context.store;
    this.keyspace = context.keyspace;
    this.ids = context.ids;
    this.bigint = context.ids.bigint;
    this.log = context.logger?.child({ sequence: context.name });
    this.clock = context.clock ?? SYSTEM_CLOCK;
    this.callTimeoutMs = context.callTimeoutMs;
  }

  /** Where the handle is in its lifecycle; see {@link SequenceState}. */
  get state(): SequenceState {
    return this.lifecycle;
  }

  /**
   * The next ID if this process holds one, else undefined (and a refill starts in the
   * background). Never waits and never touches Cassandra on the way.
   * @example
   * ```ts
   * const id = orders.tryNext() ?? (await orders.next());
   * ```
   * @throws {ClosedError} after `close()`.
   */
  tryNext(): T | undefined {
    const block = this.current;
    if (block !== undefined) {
      const id = block.takeOne();
      if (id !== undefined) {
        if (block.used >= this.preloadAt) this.preloadNextBlock();
        return id;
      }
    }
    return this.takeFromPreloaded();
  }

  /**
   * The next ID. Resolves at once while this process holds IDs; otherwise waits for the one
   * refill in flight (loading the settings first on the first call). A refill that fails for a
   * reason that passes (a replica paused, lost races, SERIAL unreachable) is retried; the call
   * waits up to its deadline, then rejects with the refill's last error.
   * @example
   * ```ts
   * const id = await ids.sequence('orders').next();
   * const soon = await orders.next({ timeoutMs: 200, signal: request.signal });
   * ```
   * @throws {ClosedError} after `close()`.
   * @throws {DeadlineError} if no ID came within the deadline and no refill failed.
   * @throws {AbortedError} if `signal` fired first.
   * @throws {SequenceNotFoundError} if the sequence does not exist.
   * @throws {DomainNeedsBigIntError} if IDs may exceed 2^53-1 and the handle is number-typed.
   * @throws {SerialUnavailableError} if the DC's ranges are spent and SERIAL is unreachable.
   * @throws {SequenceExhaustedError} if every ID of the domain has been handed out.
   * @throws {IdGenError} other typed failures of the refill (store unavailable, contention,
   * broken invariants).
   */
  async next(options?: CallOptions): Promise<T> {
    let id = this.tryNext();
    if (id !== undefined) return id;
    this.counters.waits++;
    const deadline = this.deadlineOf(options);
    for (;;) {
      await this.waitForRefill(deadline, options?.signal);
      id = this.tryNext();
      if (id !== undefined) return id;
    }
  }

  /**
   * `count` contiguous IDs. If the current block has fewer left, its remainder is skipped
   * (counted in `wasted`) and the run comes from the next block, so IDs stay increasing.
   * @example
   * ```ts
   * const { first, last } = await orders.take(100); // last - first === 99
   * ```
   * @throws {InvalidCountError} unless `count` is an integer from 1 to the block size; nothing
   * is written.
   * @throws {ClosedError} after `close()`; and everything {@link Sequence.next} throws.
   */
  async take(count: number, options?: CallOptions): Promise<IdRange<T>> {
    this.assertOpen();
    const deadline = this.deadlineOf(options);
    const { settings } = await this.ensureLoaded();
    if (!Number.isInteger(count) || count < 1 || count > settings.blockSize) {
      throw new InvalidCountError(count, settings.blockSize);
    }
    let waited = false;
    for (;;) {
      this.assertOpen();
      const range = this.takeRun(count);
      if (range !== undefined) return range;
      if (!waited) {
        this.counters.waits++;
        waited = true;
      }
      await this.waitForRefill(deadline, options?.signal);
    }
  }

  /**
   * Loads the settings and claims a block unless this process already holds IDs, so that
   * `tryNext()` succeeds right after.
   * @example
   * ```ts
   * await orders.ready();
   * ```
   * @throws everything {@link Sequence.next} throws.
   */
  async ready(options?: CallOptions): Promise<void> {
    this.assertOpen();
    if (this.localRemaining() === 0) {
      await this.waitForRefill(this.deadlineOf(options), options?.signal);
    }
  }

  /** A frozen snapshot of this handle's counters; see {@link SequenceStats}. */
  stats(): SequenceStats {
    return Object.freeze({ remaining: this.localRemaining(), ...this.counters });
  }

  /**
   * Stops the handle: new calls throw {@link ClosedError}, calls waiting for a refill reject
   * with it, in-flight refills finish, and the unused IDs go back to the DC if nobody claimed
   * after them (docs/design.md, "Returning a block"). Never rejects; idempotent.
   * @example
   * ```ts
   * await orders.close();
   * ```
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private transition(to: SequenceState): void {
    assert(
      TRANSITIONS[this.lifecycle].includes(to),
      `sequence "${this.name}": ${this.lifecycle} -> ${to} is not a transition`,
    );
    this.lifecycle = to;
  }

  private assertOpen(): void {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') throw new ClosedError();
    if (this.rolledBack !== undefined) throw this.rolledBack;
  }

  private localRemaining(): number {
    return (this.current?.remaining ?? 0) + (this.preloaded?.remaining ?? 0);
  }

  /** The slow half of `tryNext()`: switch to the preloaded block, or start a refill. */
  private takeFromPreloaded(): T | undefined {
    this.assertOpen();
    const block = this.switchToPreloaded();
    const id = block?.takeOne();
    if (block === undefined || id === undefined) {
      this.refillInBackground();
      return undefined;
    }
    if (block.used >= this.preloadAt) this.preloadNextBlock();
    return id;
  }

  private takeRun(count: number): IdRange<T> | undefined {
    let block = this.current;
    if (block === undefined || block.remaining === 0) block = this.switchToPreloaded();
    while (block !== undefined) {
      const range = block.takeRange(count);
      if (range !== undefined) {
        if (block.used >= this.preloadAt) this.preloadNextBlock();
        return range;
      }
      // Skip the short remainder only once the next block is here, so next() can still use it.
      const next = this.preloaded;
      if (next === undefined) break;
      // A block cut from a range smaller than `count` cannot hold the run, nor can any block after
      // it while the DC's ranges stay that small (`dcRangeSize` was lowered): skipping blocks
      // would only burn them.
      if (next.size < count && next.rangeSize < BigInt(count)) {
        throw new InvalidCountError(count, Number(next.rangeSize), 'range');
      }
      this.counters.wasted += block.abandon();
      block = this.switchToPreloaded();
    }
    this.refillInBackground();
    return undefined;
  }

  /** The only place `current` changes while open: the preloaded block takes over. */
  private switchToPreloaded(): Block<T> | undefined {
    const next = this.preloaded;
    if (next === undefined) return undefined;
    assert(
      this.current === undefined || this.current.remaining === 0,
      'switching blocks while the current one has IDs left',
    );
    this.current = next;
    this.preloaded = undefined;
    this.preloadAt = this.preloadPoint(next);
    return next;
  }

  /** How many IDs of `block` are used when the next block is claimed: `threshold` of it. */
  private preloadPoint(block: Block<T>): number {
    return Math.max(1, Math.ceil(this.threshold * block.size));
  }

  /**
   * The only place `preloaded` is filled: a claimed block, which must lie above all before. A
   * block that arrives once `close()` was called is set aside for the give-back instead.
   */
  private acceptBlock(claimed: ClaimedBlock): void {
    if (claimed.first <= this.highestClaimed) {
      this.counters.wasted += Number(claimed.last - claimed.first + 1n);
      throw new InvariantError(
        this.name,
        `DC "${this.dc}" gave this process block [${claimed.first}, ${claimed.last}], not above its earlier IDs (up to ${this.highestClaimed})`,
      );
    }
    this.highestClaimed = claimed.last;
    const block = this.ids.block(claimed.first, claimed.last, claimed.rangeSize);
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') {
      this.retired.push(block);
      return;
    }
    assert(this.preloaded === undefined, 'a block arrived while another one is preloaded');
    this.preloaded = block;
  }

  /**
   * The rows went back: the blocks this process holds may be claimed again by others, so none
   * of them is served or given back any more.
   */
  private forfeit(error: StateRolledBackError): void {
    this.record(error);
    if (this.rolledBack !== undefined) return;
    this.rolledBack = error;
    this.counters.wasted += this.localRemaining();
    this.current = undefined;
    this.preloaded = undefined;
    this.preloadAt = Infinity;
    this.clearRangeRetry();
    this.log?.error({ err: error, dc: this.dc }, error.message);
  }

  private preloadNextBlock(): void {
    this.preloadAt = Infinity;
    if (this.preloaded === undefined) this.refillInBackground();
  }

  private refillInBackground(): void {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') return;
    // claim() records, counts and logs failures; whoever needs the IDs awaits refill() itself.
    this.refill().catch(ignore);
  }

  /** Single-flight block claim: every caller shares the claim in flight. */
  private refill(): Promise<void> {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') {
      return Promise.reject(new ClosedError());
    }
    if (this.rolledBack !== undefined) return Promise.reject(this.rolledBack);
    this.claiming ??= this.claim().finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  /**
   * Claims one block, retrying failures that pass (see {@link isTransient}) with a growing pause
   * for as long as the handle is open. Rejects on any other failure, which every waiting caller
   * then gets.
   */
  private async claim(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { allocator } = await this.ensureLoaded();
        this.assertOpen();
        const claimed = await allocator.claimBlock();
        this.acceptBlock(claimed);
        this.claimFailure = undefined;
        this.recovered('claim');
        if (claimed.rangeLow) this.requestRangeInBackground();
        return;
      } catch (error) {
        if (error instanceof StateRolledBackError) this.forfeit(error);
        else if (!(error instanceof ClosedError)) this.failed('claim', error);
        if (!isTransient(error) || this.lifecycle === 'closing' || this.lifecycle === 'closed') {
          throw error;
        }
        this.claimFailure = error;
      }
      const cap = Math.min(CLAIM_RETRY_MAX_MS, CLAIM_RETRY_FIRST_MS * 2 ** (attempt - 1));
      await this.pauseClaim(cap * (0.5 + Math.random() / 2));
      this.assertOpen();
    }
  }

  /** Sleeps `ms` unless close() wakes it first. */
  private pauseClaim(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const cancel = this.clock.after(ms, () => {
        this.wakeClaim = undefined;
        resolve();
      });
      this.wakeClaim = () => {
        cancel();
        this.wakeClaim = undefined;
        resolve();
      };
    });
  }

  private deadlineOf(options: CallOptions | undefined): number {
    const timeoutMs = options?.timeoutMs ?? this.callTimeoutMs;
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
      throw new InvalidOptionError('timeoutMs', timeoutMs, 'a number of milliseconds, at least 0');
    }
    return timeoutMs;
  }

  /**
   * Waits for the refill in flight (starting one if needed), at most `timeoutMs` and until
   * `signal` fires. At the deadline it rejects with the error the refill keeps failing with, if
   * any, else with {@link DeadlineError}; the refill carries on either way.
   */
  private waitForRefill(timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    const refill = this.refill();
    if (signal?.aborted === true) {
      return Promise.reject(new AbortedError(this.name, { cause: signal.reason }));
    }
    return new Promise<void>((resolve, reject) => {
      const cancelTimer = this.clock.after(timeoutMs, () => {
        done();
        reject(this.claimFailure ?? new DeadlineError(this.name, timeoutMs));
      });
      const onAbort = () => {
        done();
        reject(new AbortedError(this.name, { cause: signal?.reason }));
      };
      const done = () => {
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      refill.then(
        () => {
          done();
          resolve();
        },
        (error: unknown) => {
          done();
          reject(error);
        },
      );
    });
  }

  private ensureLoaded(): Promise<Loaded> {
    if (this.loaded !== undefined) return Promise.resolve(this.loaded);
    this.assertOpen();
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(): Promise<Loaded> {
    this.transition('loading');
    let loaded: Loaded;
    try {
      const settings = (await this.store.readSequence(this.name))?.settings;
      if (settings === undefined) throw new SequenceNotFoundError(this.name, this.keyspace);
      validateStoredSettings(settings);
      if (settings.name !== this.name) {
        throw new InvariantError(this.name, `settings name is ${JSON.stringify(settings.name)}`);
      }
      if (!this.ids.bigint && settings.max > MAX_SAFE_ID) {
        throw new DomainNeedsBigIntError(this.name, settings.max);
      }
      const allocator = new DcAllocator({
        store: this.store,
        dc: this.dc,
        settings,
        counters: this.counters,
        rangeListener: this.rangeListener,
        sleep: (ms) => this.clock.sleep(ms),
      });
      loaded = { settings, allocator };
    } catch (error) {
      if (this.lifecycle === 'loading') this.transition('idle');
      throw error;
    }
    this.loaded = loaded;
    this.threshold = loaded.settings.threshold;
    if (this.lifecycle === 'loading') this.transition('ready');
    return loaded;
  }

  private requestRangeInBackground(): void {
    if (
      this.lifecycle !== 'ready' ||
      this.rolledBack !== undefined ||
      this.loaded === undefined ||
      this.exhausted !== undefined ||
      this.backgroundRange !== undefined ||
      this.rangeRetryTimer !== undefined
    ) {
      return;
    }
    // Failures arrive through rangeListener, which records them and schedules the retry.
    this.backgroundRange = this.loaded.allocator
      .ensureRange()
      .catch(ignore)
      .finally(() => {
        this.backgroundRange = undefined;
      });
  }

  private scheduleRangeRetry(): void {
    if (this.lifecycle !== 'ready' || this.rangeRetryTimer !== undefined) return;
    const base = RANGE_RETRY_FIRST_MS * 2 ** this.rangeRetries;
    this.rangeRetries++;
    const delay = Math.min(RANGE_RETRY_MAX_MS, base * (0.5 + Math.random()));
    this.rangeRetryTimer = this.clock.after(delay, () => {
      this.rangeRetryTimer = undefined;
      this.requestRangeInBackground();
    });
  }

  private clearRangeRetry(): void {
    if (this.rangeRetryTimer === undefined) return;
    this.rangeRetryTimer();
    this.rangeRetryTimer = undefined;
  }

  private record(error: unknown): void {
    this.counters.errors++;
    this.counters.lastError = error instanceof Error ? error : new Error(String(error));
  }

  private failed(kind: FailureKind, error: unknown): void {
    this.record(error);
    if (this.failing[kind]) return;
    this.failing[kind] = true;
    this.log?.warn(
      { err: error, dc: this.dc, localIds: this.localRemaining() },
      FAILURE_MESSAGES[kind],
    );
  }

  private recovered(kind: FailureKind): void {
    if (!this.failing[kind]) return;
    this.failing[kind] = false;
    this.log?.info({ dc: this.dc }, RECOVERY_MESSAGES[kind]);
  }

  private async shutdown(): Promise<void> {
    this.transition('closing');
    // From here on no ID leaves the process: the blocks held are set aside before the first
    // await, so neither tryNext()'s fast path nor a waiting next() can take from them, and the
    // run given back starts after the last ID handed out.
    this.retired = [this.current, this.preloaded].filter(
      (block): block is Block<T> => block !== undefined,
    );
    if (!mutated('serve-while-closing')) {
      this.current = undefined;
      this.preloaded = undefined;
    }
    this.preloadAt = Infinity;
    this.clearRangeRetry();
    this.wakeClaim?.();
    // Refills started before close() finish first, so the blocks they bring can go back too.
    await Promise.allSettled([this.loading, this.claiming, this.backgroundRange]);
    try {
      if (this.rolledBack === undefined) await this.returnUnused();
    } finally {
      this.retired = [];
      this.current = undefined;
      this.preloaded = undefined;
      this.clearRangeRetry();
      this.transition('closed');
    }
  }

  private async returnUnused(): Promise<void> {
    const allocator = this.loaded?.allocator;
    const held = this.retired.reduce((sum, block) => sum + block.remaining, 0);
    const run = unusedRun(this.retired);
    if (allocator === undefined || run === undefined) return;
    let returned = 0n;
    try {
      returned = await allocator.returnBlock(run.first, run.last);
    } catch (error) {
      this.failed('return', error);
    }
    this.counters.wasted += held - Number(returned);
    this.log?.debug(
      { dc: this.dc, first: String(run.first), last: String(run.last), returned: String(returned) },
      'closed',
    );
  }
}

/**
 * The unused IDs of `blocks` (in claim order) that end at the highest one claimed, as one run:
 * the last block's unused IDs, extended backwards over earlier blocks while they are contiguous
 * and the later block is wholly unused. Only such a run can be given back, since the DC's
 * `last_integer` must still be its end.
 */
function unusedRun(
  blocks: readonly Block<number | bigint>[],
): { first: bigint; last: bigint } | undefined {
  let index = blocks.length - 1;
  const top = blocks[index];
  if (top === undefined || top.remaining === 0) return undefined;
  let first = top.nextUnused;
  for (index--; index >= 0; index--) {
    const block = blocks[index]!;
    const after = blocks[index + 1]!;
    if (after.used > 0 || block.last + 1n !== after.first || block.remaining === 0) break;
    first = block.nextUnused;
  }
  return { first, last: top.last };
}

/**
 * Failures that pass without anyone acting: the store unreachable at the level needed (a replica
 * paused, a node restarting, SERIAL cut off while the DC needs a range) and lost races. Every
 * other failure (broken rows, a missing sequence, a spent domain, rows that went back) is final
 * for the calls waiting on it.
 */
function isTransient(
  error: unknown,
): error is StoreUnavailableError | SerialUnavailableError | ContentionError {
  return (
    error instanceof StoreUnavailableError ||
    error instanceof SerialUnavailableError ||
    error instanceof ContentionError
  );
}

function ignore(): void {
  // Failure already recorded where it happened.
}
