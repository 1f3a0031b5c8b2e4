/**
 * The process level of one sequence: its lifecycle, a double buffer of blocks
 * (block-buffer.ts), single-flight refills that retry failures that pass, callers waiting up to
 * their deadline (call-deadline.ts), and close(). The DC level (grants, the DC state, its
 * background range requests) is {@link DcAllocator}'s; stats() merges the two levels' counters
 * (sequence-stats.ts).
 */

import assert from 'node:assert/strict';

import type { Logger } from '../logger.js';

import {
  AbortedError,
  ClosedError,
  ContentionError,
  DomainNeedsBigIntError,
  InvalidCountError,
  InvariantError,
  SequenceNotFoundError,
  SequenceRecreatedError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import { mutated } from '../mutations.js';
import { MAX_SAFE_ID } from '../settings/model.js';
import { validateStoredSettings } from '../settings/resolve.js';
import type { IdStore, SequenceSettings, StoredSettings } from '../store/port.js';
import type { Block, IdKind, IdRange } from './block.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import { BlockBuffer } from './block-buffer.js';
import { checkCallOptions, waitWithinDeadline, type CallOptions } from './call-deadline.js';
import type { ClaimedBlock } from './dc-allocator.js';
import { Ledger } from './ledger.js';
import type { AllocatorObserver } from './observer.js';
import type { SequenceStats } from './sequence-stats.js';
import { readSettingsFound } from './settings-writes.js';
import { Shards, type Loaded } from './shards.js';
import { Rate, blockSizeFor } from './sizing.js';
import type { RowMarks } from './watermarks.js';

/**
 * Lifecycle of a {@link Sequence}:
 *
 * | state | meaning | next states |
 * |---|---|---|
 * | `idle` | settings not loaded (never used, or the last load failed) | `loading`, `closing` |
 * | `loading` | reading the settings from the store | `ready`, `idle` (load failed), `closing` |
 * | `ready` | settings loaded; IDs are served and blocks refilled | `closing` |
 * | `closing` | `close()` called: from that moment no ID is taken (a call in flight may still resolve with one taken before); in-flight refills finish, the unused IDs go back, the usage counters get a last report | `closed` |
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
  /** Told of waits, claim and range-request durations, and failures (metrics). @default none */
  readonly observer?: AllocatorObserver | undefined;
  /**
   * The process's rollback marks of a grantee's rows, shared by its handles of the sequence, so
   * that a handle opened after another saw the rows sees what that one saw (watermarks.ts).
   * @default marks of each DC allocator's own
   */
  readonly marks?: ((grantee: string, start: bigint) => RowMarks) | undefined;
}

/**
 * Retries of a block claim that failed for a reason that passes (a replica paused or down,
 * SERIAL unreachable while the DC needs a range): the first after about 50 ms, doubling up to
 * 2 s. Lost races are retried inside the DC level with a shorter backoff (dc-allocator.ts).
 * A claim retries while a caller waits for it or, for a claim nobody waits for (a preload), for
 * up to `callTimeoutMs` after it started: a preload never spins against a dead store, and the
 * next call that needs IDs starts a new claim.
 */
const CLAIM_RETRY_FIRST_MS = 50;
const CLAIM_RETRY_MAX_MS = 2_000;

/**
 * A claim re-reads the settings (one LOCAL_QUORUM read) when they were read longer ago than
 * this, so an alter reaches a process that draws IDs within this long plus one claim interval.
 */
export const SETTINGS_REFRESH_MS = 10_000;
/**
 * One `next()` served from the IDs held in this many yields to I/O before it resolves: a yield
 * costs about a microsecond, a few nanoseconds per ID spread over this many.
 */
export const YIELD_EVERY_IDS = 512;

/** takeRun's answer when it cannot decide on the settings held (see runRefusal). */
const RE_READ_SETTINGS = Symbol('re-read the settings');

/** The refusal of a count above the largest block, naming the setting that bounds it. */
function largestBlockError(count: number, settings: SequenceSettings): InvalidCountError {
  const fixed = settings.maxBlockSize === settings.blockSize;
  return new InvalidCountError(count, settings.maxBlockSize, fixed ? 'block' : 'maxBlock');
}
interface CallDeadline {
  readonly timeoutMs: number;
  /** `clock.now()` at which the call gives up. */
  readonly deadline: number;
}

/**
 * IDs a waiting call lacks: a take()'s run (`contiguous`, from one block) or a nextIds()'s rest.
 * Each wait adds its own object, so equal counts stay apart.
 */
interface Want {
  readonly count: number;
  readonly contiguous: boolean;
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
  /**
   * Where this handle claims from: its DC, or the shard of it (`dc1/3`) it picked when it loaded
   * the settings, or moved to before its first block (see {@link SequenceSettings.shards}). Its
   * DC until then.
   */
  get grantee(): string {
    return this.shards.grantee;
  }

  private readonly store: IdStore;
  private readonly keyspace: string;
  private readonly ids: IdKind<T>;
  private readonly log: Logger | undefined;
  private readonly clock: Clock;
  private readonly callTimeoutMs: number;
  private readonly observer: AllocatorObserver | undefined;

  private lifecycle: SequenceState = 'idle';
  private readonly shards: Shards;
  private threshold = 0;
  private readonly buffer = new BlockBuffer<T>(() => this.threshold);
  /**
   * Set when the DC's rows went back, or the sequence was created again: nothing is served or
   * claimed any more.
   */
  private rolledBack: StateRolledBackError | SequenceRecreatedError | undefined;
  /** The incarnation of the sequence loaded (StoredSettings.incarnation); it never changes. */
  private incarnation: string | undefined;

  private loading: Promise<Loaded> | undefined;
  private claiming: Promise<void> | undefined;
  /** IDs `next()` served since it last yielded to I/O. */
  private servedSinceYield = 0;
  /** The error of the claim attempt that failed last, while the claim retries; cleared on success. */
  private claimFailure: Error | undefined;
  /** Races the claim in flight lost in a row (it retries them); the cause a late caller is given. */
  private lostRaces = 0;
  /** Ends the claim's retry pause at once (close() and rangeInstalled() call it). */
  private wakeClaim: (() => void) | undefined;
  /** A DC range was installed since the claim in flight began its current attempt. */
  private rangeArrived = false;
  private closing: Promise<void> | undefined;
  private readonly ledger: Ledger;
  /** Calls waiting for the refill in flight: while there are any, it keeps retrying. */
  private waiters = 0;
  /** The runs waiting take() calls want, each from one block: the next block holds the longest. */
  private readonly runsWanted = new Set<Want>();
  /**
   * The IDs each waiting nextIds() call still lacks. They need not come from one block, so they
   * size the next block (one claim serves a large call, not a queue of small ones) but set no
   * least size for it: a block that must hold them all could take a DC's whole range.
   */
  private readonly drawsWanted = new Set<Want>();
  /** IDs of every block accepted; minus those held, the IDs used so far (the rate's count). */
  private acceptedIds = 0;
  /** This process's draw rate, sampled when a claim starts: sizes adaptive blocks. */
  private readonly drawRate = new Rate();
  /**
   * Time the callers spent waiting with no ID held, which the draw rate leaves out: a loop that
   * spends a block at once and then waits for the next has the rate of its draws, not of the
   * claims that let them through (which shrinks with the blocks: they grew only about fourfold
   * per claim). `starvedSince`: since when callers wait now, if they do.
   */
  private starvedMs = 0;
  private starvedSince: number | undefined;
  private lastBlockSize = 0;
  /** How long claims took, ms, smoothed as rates are (sizing.ts); undefined before the first. */
  private claimMs: number | undefined;
  /** `clock.now()` when the settings were last read. */
  private settingsReadAt = 0;
  /**
   * Orders settings reads and accepted blocks (see runRefusal): a tick per block accepted and
   * per settings read started; `settingsReadTick` is the start of the read whose settings are
   * held, so a read that started earlier than those never replaces them.
   */
  private ticks = 0;
  private settingsReadTick = 0;
  private readonly acceptTicks = new WeakMap<Block<T>, number>();

  /**
   * Not for users: get a handle with {@link IdGen.sequence}. Kept in the declarations: without
   * it they would declare a public constructor that takes nothing.
   */
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
    this.observer = context.observer;
    this.ledger = new Ledger({
      name: context.name,
      store: context.store,
      clock: this.clock,
      log: this.log,
      observer: context.observer,
      stats: () => this.stats(),
    });
    this.shards = new Shards({
      name: context.name,
      dc: context.dc,
      store: context.store,
      clock: this.clock,
      log: this.log,
      observer: context.observer,
      marks: context.marks,
      ledger: this.ledger,
      onRangeInstalled: () => this.rangeInstalled(),
      onRolledBack: (error) => this.forfeit(error),
      isOpen: () => this.isOpen(),
      beforeFirstBlock: () => this.acceptedIds === 0,
      highestAccepted: () => this.buffer.highestAccepted,
    });
  }

  /** Where the handle is in its lifecycle; see {@link SequenceState}. */
  get state(): SequenceState {
    return this.lifecycle;
  }

  /** The settings and the DC allocator in use; undefined until loaded. */
  private get loaded(): Loaded | undefined {
    return this.shards.loaded;
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
    const buffer = this.buffer;
    const block = buffer.current;
    if (block !== undefined) {
      const id = block.takeOne();
      if (id !== undefined) {
        if (block.used >= buffer.preloadAt) this.preloadNextBlock();
        return id;
      }
    }
    return this.takeFromPreloaded();
  }

  /**
   * The next ID. Resolves at once while this process holds IDs; otherwise waits for the one
   * refill in flight (loading the settings first on the first call). A refill that fails for a
   * reason that passes (a replica paused, lost races, SERIAL unreachable) is retried; the call
   * waits up to its deadline (one deadline for the whole call), then rejects with the refill's
   * last error, or {@link DeadlineError} if that was only lost races.
   * @example
   * ```ts
   * const id = await ids.sequence('orders').next();
   * const soon = await orders.next({ timeoutMs: 200, signal: request.signal });
   * ```
   * @throws {ClosedError} after `close()`.
   * @throws {InvalidOptionError} for an unknown key, a `timeoutMs` below 0 or a `signal` that is
   * no AbortSignal, on every call that passes them (call-deadline.ts, `checkCallOptions`).
   * @throws {DeadlineError} if no ID came within the deadline and no refill failed; its `cause`
   * is a {@link ContentionError} if the claim kept losing races (they are retried until then,
   * never thrown by themselves).
   * @throws {AbortedError} if `signal` fired first.
   * @throws {SequenceNotFoundError} if the sequence does not exist.
   * @throws {DomainNeedsBigIntError} if IDs may exceed 2^53-1 and the handle is number-typed.
   * @throws {SerialUnavailableError} if the DC's ranges are spent and SERIAL is unreachable.
   * @throws {SequenceExhaustedError} if every ID of the domain has been handed out.
   * @throws {IdGenError} other typed failures of the refill (store unavailable, broken
   * invariants, rows that went back).
   */
  async next(options?: CallOptions): Promise<T> {
    if (options !== undefined) checkCallOptions(options);
    const id = this.tryNext();
    if (id !== undefined) {
      // `await next()` of an ID held resumes its caller as a microtask, so a caller that loops on
      // it would never yield to I/O while IDs last: the replies to this handle's preload, to
      // other handles' claims and to everything else the process does would wait until the
      // block is spent. One call in YIELD_EVERY_IDS yields to the event loop first.
      if (++this.servedSinceYield >= YIELD_EVERY_IDS) {
        this.servedSinceYield = 0;
        await this.clock.yieldToIo();
      }
      return id;
    }
    this.startWaiting();
    const call = this.callOf(options);
    return this.timedWait(async () => {
      for (;;) {
        await this.waitForRefill(call, options?.signal);
        const next = this.tryNext();
        if (next !== undefined) return next;
      }
    });
  }

  /**
   * @internal The HTTP service's draw of several IDs (src/serve/served-sequences.ts): `count`
   * IDs, strictly increasing, not necessarily contiguous, from the IDs held while they last and
   * then from the blocks {@link Sequence.next} waits for, under one deadline for the whole call.
   * Not public: `count` is only asserted (the service's schema bounds it first), and its
   * accounting of IDs taken but not yet handed out serves the service's responses.
   *
   * Its caller gets either all of them or an error, so a call that fails costs what it took:
   * - `signal` is looked at before each ID, so a caller that is gone takes no more (next() hands
   *   out an ID held whatever the signal).
   * - When the process holds fewer than `count` IDs and its next block is not here yet, the call
   *   waits for that block before it takes any: a refill that fails (the domain spent, the store
   *   unreachable, the deadline, the signal) then costs no ID, and the IDs held stay for the
   *   next caller.
   * - A call that fails once it took IDs (a later block did not come within the deadline, the
   *   signal fired, the domain ran out) hands them to nobody, then or later: they are counted as
   *   wasted (`waste.undelivered`), not issued. While the call runs they are neither.
   * - With `delivered`, the IDs of a call that succeeds stay neither issued nor wasted until it
   *   settles: issued if it resolves true (the response reached its caller's connection),
   *   `waste.undelivered` if false or rejected. The service decides once the response is
   *   written or abandoned, so that `issued` still only grows; the promise must settle.
   * @throws everything {@link Sequence.next} throws.
   */
  async nextIds(count: number, options?: CallOptions, delivered?: Promise<boolean>): Promise<T[]> {
    if (options !== undefined) checkCallOptions(options);
    assert(Number.isInteger(count) && count >= 1, `nextIds(${count}): not a count`);
    // Before the wait below is counted, as next() and take() refuse before theirs.
    this.assertOpen();
    const signal = options?.signal;
    const call = this.callOf(options);
    const buffer = this.buffer;
    // A spent (or no) current block makes way for the preloaded one, as tryNext() would do, so
    // that a block claimed now has a place to go.
    if ((buffer.current?.remaining ?? 0) === 0) buffer.switchToPreloaded();
    if (buffer.remaining < count && buffer.preloaded === undefined) {
      // The wait joins the one refill in flight or starts it, as next() does once the IDs held
      // are spent: a claim starts or runs only while nothing is preloaded, and its block is
      // accepted as the preloaded one, above the IDs held, which are taken first. Only once:
      // after it the call takes what the two blocks hold and waits as next() does for more.
      // The draw rate's clock goes on (startWaiting stops it): the IDs held are still served.
      throwIfAborted(this.name, signal);
      this.ledger.waited();
      await this.timedWait(() => this.waitForRefill(call, signal, { count, contiguous: false }));
    }
    const ids: T[] = [];
    // Whether the IDs stay drawn (neither issued nor wasted) until `delivered` settles.
    let awaitingDelivery = false;
    try {
      while (ids.length < count) {
        throwIfAborted(this.name, signal);
        // Taken and counted in one synchronous step: stats() never sees an ID of this call as
        // issued (next() may yield to I/O between the two).
        const id = this.tryNext();
        if (id !== undefined) {
          ids.push(id);
          this.ledger.drawn(1);
          continue;
        }
        this.startWaiting();
        await this.timedWait(async () => {
          const want = { count: count - ids.length, contiguous: false };
          do {
            await this.waitForRefill(call, signal, want);
          } while (this.buffer.remaining === 0);
        });
      }
      if (delivered !== undefined) {
        awaitingDelivery = true;
        this.ledger.settleDelivery(ids.length, delivered);
      }
    } catch (error) {
      // A negative control (mutations.ts) hands the caller the IDs taken so far.
      if (mutated('partial-next-ids') && ids.length > 0) return ids;
      this.ledger.wasted('undelivered', ids.length);
      throw error;
    } finally {
      if (!awaitingDelivery) this.ledger.undrawn(ids.length);
    }
    return ids;
  }

  /**
   * `count` contiguous IDs. If the current block has fewer left, its remainder is skipped
   * (counted in `wasted`) and the run comes from the next block, so IDs stay increasing.
   * @example
   * ```ts
   * const { first, last } = await orders.take(100); // last - first === 99
   * ```
   * @throws {InvalidCountError} unless `count` is an integer from 1 to the largest block size
   * (`maxBlockSize`), or when the DC's ranges are now smaller than `count`; nothing is skipped.
   * Both are decided on settings read within the last {@link SETTINGS_REFRESH_MS} (or re-read
   * for it), so that an alter that raised them reaches a process whose every take() it refused.
   * @throws {ClosedError} after `close()`; {@link AbortedError} once `signal` fired, looked at
   * after each await before the run is taken; and everything {@link Sequence.next} throws.
   */
  take(count: number, options?: CallOptions): Promise<IdRange<T>> {
    return this.takeDelivered(count, options, undefined);
  }

  /**
   * @internal The HTTP service's {@link Sequence.take}: as for {@link Sequence.nextIds}, with
   * `delivered` the run is neither issued nor wasted until it settles (issued if true, else
   * `waste.undelivered`).
   */
  async takeDelivered(
    count: number,
    options: CallOptions | undefined,
    delivered: Promise<boolean> | undefined,
  ): Promise<IdRange<T>> {
    if (options !== undefined) checkCallOptions(options);
    this.assertOpen();
    const call = this.callOf(options);
    const signal = options?.signal;
    let { settings } = await this.ensureLoaded();
    if (Number.isInteger(count) && count > settings.maxBlockSize) {
      await this.refreshSettings();
      settings = this.loaded?.settings ?? settings;
    }
    if (!Number.isInteger(count) || count < 1 || count > settings.maxBlockSize) {
      throw largestBlockError(count, settings);
    }
    this.assertOpen();
    // The signal may have fired during the awaits above: a caller gone takes no ID held (the
    // HTTP service's caller that hung up, docs/service.md, "Endpoints").
    throwIfAborted(this.name, signal);
    const range = await this.takeRunOnSettings(count, signal, delivered);
    if (range !== undefined) return range;
    this.startWaiting();
    return this.timedWait(async () => {
      for (;;) {
        await this.waitForRefill(call, signal, { count, contiguous: true });
        this.assertOpen();
        throwIfAborted(this.name, signal);
        const run = await this.takeRunOnSettings(count, signal, delivered);
        if (run !== undefined) return run;
      }
    });
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
    if (options !== undefined) checkCallOptions(options);
    this.assertOpen();
    if (this.buffer.remaining === 0) {
      await this.waitForRefill(this.callOf(options), options?.signal);
    }
  }

  /** A frozen snapshot of this handle's counters, process and DC level merged; see {@link SequenceStats}. */
  stats(): SequenceStats {
    return this.ledger.stats(
      {
        taken: this.buffer.taken,
        remaining: this.buffer.remaining,
        blockSize: this.lastBlockSize,
        drawRate: this.drawRate.perSecond,
      },
      this.loaded?.allocator,
    );
  }

  /**
   * Stops the handle: from this moment no ID is handed out (new calls and calls waiting for a
   * refill throw {@link ClosedError}); in-flight refills finish, and the unused IDs go back to
   * the DC if nobody claimed after them (docs/design.md, "Returning a block"). Never rejects;
   * idempotent.
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
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') {
      throw new ClosedError(this.name);
    }
    if (this.rolledBack !== undefined) throw this.rolledBack;
  }

  /** The slow half of `tryNext()`: switch to the preloaded block, or start a refill. */
  private takeFromPreloaded(): T | undefined {
    this.assertOpen();
    const block = this.buffer.switchToPreloaded();
    const id = block?.takeOne();
    if (block === undefined || id === undefined) {
      this.refillInBackground();
      return undefined;
    }
    if (block.used >= this.buffer.preloadAt) this.preloadNextBlock();
    return id;
  }

  /**
   * {@link takeRun}, re-reading the settings once first when it cannot decide on the ones held
   * (then the open check again: close() may have begun during the read).
   */
  private async takeRunOnSettings(
    count: number,
    signal: AbortSignal | undefined,
    delivered: Promise<boolean> | undefined,
  ): Promise<IdRange<T> | undefined> {
    const run = this.takeRun(count, false);
    if (run !== RE_READ_SETTINGS) return this.awaitDelivery(run, count, delivered);
    await this.refreshSettings({ force: true });
    this.assertOpen();
    throwIfAborted(this.name, signal);
    const decided = this.takeRun(count, true);
    assert(decided !== RE_READ_SETTINGS, 'takeRun asked for settings just re-read');
    return this.awaitDelivery(decided, count, delivered);
  }

  /**
   * `run`, its `count` IDs kept out of issued until `delivered` settles; called in the same
   * synchronous step as the take, so that stats() never sees them issued first.
   */
  private awaitDelivery(
    run: IdRange<T> | undefined,
    count: number,
    delivered: Promise<boolean> | undefined,
  ): IdRange<T> | undefined {
    if (run !== undefined && delivered !== undefined) {
      this.ledger.drawn(count);
      this.ledger.settleDelivery(count, delivered);
    }
    return run;
  }

  /**
   * `count` contiguous IDs from the blocks held, skipping a remainder too short for them once the
   * next block is here; undefined (a refill started) if they hold none. {@link RE_READ_SETTINGS}
   * when whether to go on depends on settings not yet read (never with `reread`).
   * @throws {InvalidCountError} when no block can hold the run (see {@link runRefusal}).
   */
  private takeRun(
    count: number,
    reread: boolean,
  ): IdRange<T> | undefined | typeof RE_READ_SETTINGS {
    const buffer = this.buffer;
    let block = buffer.current;
    if (block === undefined || block.remaining === 0) block = buffer.switchToPreloaded();
    while (block !== undefined) {
      const range = block.takeRange(count);
      if (range !== undefined) {
        if (block.used >= buffer.preloadAt) this.preloadNextBlock();
        return range;
      }
      const next = buffer.preloaded;
      const refusal = this.runRefusal(count, next, reread);
      if (refusal === RE_READ_SETTINGS) return refusal;
      if (refusal !== undefined) throw refusal;
      // Skip the short remainder only once the next block is here, so next() can still use it.
      if (next === undefined) break;
      const skipped = block.abandon();
      this.ledger.wasted('takeSkipped', skipped);
      block = buffer.switchToPreloaded();
    }
    this.refillInBackground();
    return undefined;
  }

  /**
   * Why take() must not go on for a run the current block cannot hold: by skipping to `next`, or
   * by claiming another block. Either would only burn block after block (each a gap) when no
   * block can hold the run, so the count is refused, on settings read within
   * {@link SETTINGS_REFRESH_MS} (or just re-read):
   * - above the largest block (an alter lowered `maxBlockSize` since take() checked the count);
   * - above the DC's ranges: `next` is too small too, comes from a range smaller than the run,
   *   and the settings say the DC's ranges stay that small (`dcRangeSize` lowered). Settings
   *   that say they are large enough decide only if read after `next` came (an alter raised
   *   `dcRangeSize` since `next`'s range was granted: skipping burns at most the DC's ranges
   *   granted before it); read before, they may predate an alter that lowered it, and are re-read.
   */
  private runRefusal(
    count: number,
    next: Block<T> | undefined,
    reread: boolean,
  ): InvalidCountError | typeof RE_READ_SETTINGS | undefined {
    const { settings } = this.loaded!;
    const recent = reread || this.clock.now() - this.settingsReadAt < SETTINGS_REFRESH_MS;
    const smallRange =
      next !== undefined && next.size < count && next.rangeSize < BigInt(count)
        ? new InvalidCountError(count, Number(next.rangeSize), 'range')
        : undefined;
    // The range first: with ranges that small, a larger block would not help.
    if (smallRange !== undefined && count > settings.dcRangeSize) {
      return recent ? smallRange : RE_READ_SETTINGS;
    }
    if (count > settings.maxBlockSize) {
      return recent ? largestBlockError(count, settings) : RE_READ_SETTINGS;
    }
    if (smallRange === undefined) return undefined;
    if (this.settingsReadTick > (this.acceptTicks.get(next!) ?? Infinity)) return undefined;
    // A re-read that failed leaves the settings as old as before: refused, as by the range.
    return reread ? smallRange : RE_READ_SETTINGS;
  }

  /**
   * The only place a claimed block enters the buffer: it must lie above every block before it.
   * A block that arrives once close() was called is set aside for the give-back; one that
   * arrives after the rows went back is dropped.
   */
  private acceptBlock(claimed: ClaimedBlock): void {
    const size = Number(claimed.last - claimed.first + 1n);
    if (this.rolledBack !== undefined) {
      // The rows were found gone back while this claim was in flight: its block may be claimed
      // again by others, as may the blocks dropped then.
      this.ledger.wasted('dropped', size);
      throw this.rolledBack;
    }
    const block = this.ids.block(claimed.first, claimed.last, claimed.rangeSize);
    const highest = this.buffer.highestAccepted;
    if (this.starvedSince !== undefined) {
      this.starvedMs += this.clock.now() - this.starvedSince;
      this.starvedSince = undefined;
    }
    this.acceptedIds += block.size;
    this.lastBlockSize = block.size;
    this.acceptTicks.set(block, ++this.ticks);
    if (!this.buffer.accept(block)) {
      this.ledger.wasted('refused', size);
      throw new InvariantError(
        this.name,
        `DC "${this.grantee}" gave this process block [${claimed.first}, ${claimed.last}], not above its earlier IDs (up to ${highest})`,
      );
    }
  }

  /**
   * The rows went back (or belong to another sequence of this name): the blocks this process
   * holds may be claimed again by others, so none of them is served or given back any more.
   */
  private forfeit(error: StateRolledBackError | SequenceRecreatedError): void {
    if (this.rolledBack !== undefined) return;
    this.rolledBack = error;
    if (this.buffer.serving) {
      const dropped = this.buffer.changeMode('dropped');
      this.ledger.wasted('dropped', dropped);
    }
    this.log?.error({ err: error, dc: this.grantee }, error.message);
  }

  private preloadNextBlock(): void {
    this.buffer.preloadAt = Infinity;
    if (this.buffer.preloaded === undefined) this.refillInBackground();
  }

  private refillInBackground(): void {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') return;
    // claim() records, counts and logs failures; whoever needs the IDs awaits the refill itself.
    this.refill().catch(ignore);
  }

  /** Single-flight block claim: every caller shares the claim in flight. */
  private refill(): Promise<void> {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') {
      return Promise.reject(new ClosedError(this.name));
    }
    if (this.rolledBack !== undefined) return Promise.reject(this.rolledBack);
    this.claiming ??= this.claim().finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  /**
   * Claims one block, retrying failures that pass (see {@link isTransient}) with a growing pause
   * while {@link keepTrying} says so. Rejects on any other failure, which every waiting caller
   * then gets; a lost-race {@link ContentionError} only when nobody waits any more.
   */
  private async claim(): Promise<void> {
    const started = this.clock.now();
    // Past its window a claim still tries again when a DC range arrived during it (see
    // rangeInstalled): the failure it would give up on may be for want of that range.
    const goesOn = () => this.keepTrying(started) || (this.rangeArrived && this.isOpen());
    // What an earlier claim gave up on is not why this one has brought nothing yet: a caller
    // whose deadline passes during it would get an outage that has ended (lastClaimFailure).
    this.claimFailure = undefined;
    this.lostRaces = 0;
    // On a clock that stops while callers wait with no ID held.
    const starved =
      this.starvedMs + (this.starvedSince === undefined ? 0 : started - this.starvedSince);
    this.drawRate.sample(this.acceptedIds - this.buffer.remaining, started - starved);
    this.shards.claimStarts();
    // The DC level asks after each lost race.
    const keepTrying = () => {
      this.lostRaces++;
      return !this.shards.lostRace() && this.keepTrying(started);
    };
    for (let attempt = 1; ; attempt++) {
      let failure: Error;
      this.rangeArrived = false;
      try {
        const first = await this.ensureLoaded();
        await this.refreshSettings();
        this.assertOpen();
        const { allocator, settings } = this.loaded ?? first;
        const size = () =>
          blockSizeFor({
            rate: this.drawRate.perSecond,
            claimIntervalMs: settings.claimIntervalMs,
            waiting: this.idsWanted({ draws: true }),
            min: settings.blockSize,
            max: settings.maxBlockSize,
            dcRate: allocator.dcRate,
            claimMs: this.claimMs,
            threshold: settings.threshold,
            lostRaces: this.lostRaces,
          });
        const claimed = await allocator.claimBlock({
          keepTrying,
          size,
          need: () => this.idsWanted(),
        });
        this.acceptBlock(claimed);
        this.timeClaim(this.clock.now() - started);
        this.ledger.reportNowAndThen(this.grantee);
        this.claimFailure = undefined;
        this.lostRaces = 0;
        this.ledger.failures.recovered('claim', { dc: this.grantee });
        // Not once closing: close() would wait for a round at SERIAL it no longer needs.
        if (claimed.rangeLow && this.isOpen()) allocator.requestRangeInBackground();
        return;
      } catch (error) {
        if (await this.shards.movedAfterLostRaces(error)) continue;
        if (error instanceof StateRolledBackError) {
          this.ledger.failures.record(error);
          this.forfeit(error);
        } else if (!(error instanceof ClosedError)) {
          this.ledger.failures.failed('claim', error, {
            dc: this.grantee,
            localIds: this.buffer.remaining,
          });
        }
        if (await this.shards.movedFromSpent(error)) continue;
        if (!isTransient(error) || !goesOn()) throw error;
        this.claimFailure = failure = error;
        if (await this.shards.movedFromEmpty(error)) continue;
      }
      const cap = Math.min(CLAIM_RETRY_MAX_MS, CLAIM_RETRY_FIRST_MS * 2 ** (attempt - 1));
      if (!this.rangeArrived) await this.pauseClaim(cap * (0.5 + Math.random() / 2));
      this.assertOpen();
      // A pause that began before the preload's time was up can end after it.
      if (!goesOn()) throw failure;
    }
  }

  /** Smooths the durations of claims as {@link Rate} smooths rates: half the newest. */
  private timeClaim(ms: number): void {
    this.claimMs = this.claimMs === undefined ? ms : (ms + this.claimMs) / 2;
  }

  /**
   * Whether a claim started at `started` goes on after a failure that passes: while the handle
   * is open and a caller waits for it, or, with nobody waiting (a preload), for `callTimeoutMs`.
   */
  private keepTrying(started: number): boolean {
    if (!this.isOpen()) return false;
    return this.waiters > 0 || this.clock.now() - started < this.callTimeoutMs;
  }

  /** Whether blocks may still be claimed: not closing, closed or rolled back. */
  private isOpen(): boolean {
    const closing = this.lifecycle === 'closing' || this.lifecycle === 'closed';
    return !closing && this.rolledBack === undefined;
  }

  /**
   * The DC allocator installed a range. A claim in flight hears of it: one pausing after a failure
   * tries again at once, and even past its window (a preload's), since it may have failed for want
   * of this range; were it to give up at the end of its pause, the process would hold no IDs until
   * a caller waited. With no claim in flight, one starts if the process wants its next block, so
   * a preload that failed for want of a range does not wait for the block to be spent.
   */
  private rangeInstalled(): void {
    if (this.lifecycle !== 'ready') return;
    if (this.claiming !== undefined) {
      this.rangeArrived = true;
      this.wakeClaim?.();
    } else if (this.buffer.wantsPreload) {
      this.refillInBackground();
    }
  }

  /** A call found no ID held and waits: counted, and the draw rate's clock stops (starvedMs). */
  private startWaiting(): void {
    this.ledger.waited();
    this.starvedSince ??= this.clock.now();
  }

  /**
   * How large a block the calls waiting now need: the longest run a take() waits for, and one ID
   * for every other waiting call beyond the IDs held. `draws`: a waiting nextIds() wants all the
   * IDs it lacks, not one (for the size asked, not for the least size; see drawsWanted).
   */
  private idsWanted({ draws = false } = {}): number {
    let longest = 0;
    for (const run of this.runsWanted) longest = Math.max(longest, run.count);
    let single = this.waiters - this.runsWanted.size;
    if (draws) for (const draw of this.drawsWanted) single += draw.count - 1;
    return Math.max(longest, single - this.buffer.remaining);
  }

  /** Why the claim in flight has not brought IDs yet, if it failed or keeps losing races. */
  private lastClaimFailure(): Error | undefined {
    if (this.claimFailure !== undefined || this.lostRaces === 0) return this.claimFailure;
    return new ContentionError(this.name, 'claim a block', this.lostRaces);
  }

  /**
   * Re-reads the settings if they are older than {@link SETTINGS_REFRESH_MS}, so that an alter
   * reaches running processes. Only sizes may change; settings that break the rules or move the
   * domain are refused as at load ({@link InvariantError}). A failed read keeps the settings
   * held (they are only sizes) and is tried again at the next claim. `force`: whatever their
   * age (take() deciding whether a block is older than the settings, see runRefusal).
   */
  private async refreshSettings({ force = false } = {}): Promise<void> {
    const now = this.clock.now();
    if (this.loaded === undefined) return;
    if (!force && now - this.settingsReadAt < SETTINGS_REFRESH_MS) return;
    const tick = ++this.ticks;
    let stored: StoredSettings | undefined;
    try {
      stored = await this.store.readSequence(this.name);
    } catch (error) {
      this.log?.debug({ err: error }, 'could not re-read the settings; keeping the ones held');
      return;
    }
    // Sequences are never dropped: a loaded one missing from a local read is a read that
    // missed it (see readSettingsToLoad), like a failed one.
    if (stored === undefined) return;
    // Only a create writes the incarnation, once: another one is another sequence of this name.
    // The IDs held may be the new one's too, so they go, as when rows went back.
    if (stored.incarnation !== this.incarnation) {
      const error = new SequenceRecreatedError(
        this.name,
        `it was created again while this process used it (incarnation ${stored.incarnation ?? 'none'}, loaded ${this.incarnation ?? 'none'})`,
      );
      this.forfeit(error);
      throw error;
    }
    const { settings } = stored;
    this.checkSettings(settings);
    // A take() and a claim may re-read at once: the read that started last wins. And the shard
    // may have moved during the read: the settings go to the allocator in use now.
    const held = this.loaded;
    if (tick < this.settingsReadTick) return;
    const before = held.settings;
    for (const key of ['domain', 'min', 'max', 'start'] as const) {
      if (settings[key] !== before[key]) {
        throw new InvariantError(
          this.name,
          `settings: ${key} changed from ${String(before[key])} to ${String(settings[key])} while in use`,
        );
      }
    }
    this.settingsReadAt = now;
    this.settingsReadTick = tick;
    this.shards.updateSettings(settings);
    this.threshold = settings.threshold;
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

  /**
   * Runs the waiting part of a call and tells the observer how long it took and how it ended;
   * without an observer, only runs it.
   */
  private async timedWait<R>(wait: () => Promise<R>): Promise<R> {
    const observer = this.observer;
    if (observer === undefined) return wait();
    const started = this.clock.now();
    let failure: unknown;
    try {
      return await wait();
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      observer.waited(this.name, this.clock.now() - started, failure);
    }
  }

  /** The call's timeout and its deadline on the clock: one deadline however often it waits. */
  private callOf(options: CallOptions | undefined): CallDeadline {
    // Checked by checkCallOptions when the call began.
    const timeoutMs = options?.timeoutMs ?? this.callTimeoutMs;
    return { timeoutMs, deadline: this.clock.now() + timeoutMs };
  }

  /**
   * Waits for the refill in flight (starting one if needed) until the call's deadline
   * (call-deadline.ts); the refill carries on either way, and retries while anyone waits.
   */
  private async waitForRefill(
    call: CallDeadline,
    signal: AbortSignal | undefined,
    want?: Want,
  ): Promise<void> {
    this.waiters++;
    const wanted = want?.contiguous === true ? this.runsWanted : this.drawsWanted;
    if (want !== undefined) wanted.add(want);
    try {
      await waitWithinDeadline(this.refill(), {
        sequence: this.name,
        ...call,
        signal,
        clock: this.clock,
        lastFailure: () => this.lastClaimFailure(),
      });
    } finally {
      this.waiters--;
      if (want !== undefined) wanted.delete(want);
    }
  }

  private ensureLoaded(): Promise<Loaded> {
    if (this.loaded !== undefined) return Promise.resolve(this.loaded);
    this.assertOpen();
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  /** The settings, found locally or at SERIAL ({@link readSettingsFound}). */
  private async readSettingsToLoad(): Promise<StoredSettings | undefined> {
    return readSettingsFound(this.store, this.name);
  }

  private async load(): Promise<Loaded> {
    this.transition('loading');
    let loaded: Loaded;
    try {
      const stored = await this.readSettingsToLoad();
      if (stored === undefined) throw new SequenceNotFoundError(this.name, this.keyspace);
      const { settings } = stored;
      this.checkSettings(settings);
      this.incarnation = stored.incarnation;
      this.settingsReadAt = this.clock.now();
      this.settingsReadTick = ++this.ticks;
      loaded = this.shards.open(settings, stored.incarnation);
    } catch (error) {
      if (this.lifecycle === 'loading') this.transition('idle');
      throw error;
    }
    this.threshold = loaded.settings.threshold;
    if (this.lifecycle === 'loading') this.transition('ready');
    return loaded;
  }

  /** The rules stored settings must keep before anything is allocated from them. */
  private checkSettings(settings: SequenceSettings): void {
    validateStoredSettings(settings);
    if (settings.name !== this.name) {
      throw new InvariantError(this.name, `settings name is ${JSON.stringify(settings.name)}`);
    }
    if (!this.ids.bigint && settings.max > MAX_SAFE_ID) {
      throw new DomainNeedsBigIntError(this.name, settings.max);
    }
  }

  private async shutdown(): Promise<void> {
    this.transition('closing');
    // From here on no ID leaves the process: the blocks held are set aside before the first
    // await, so neither tryNext()'s fast path nor a waiting next() can take from them, and the
    // run given back starts after the last ID handed out.
    if (this.buffer.serving) this.buffer.changeMode('retired', mutated('serve-while-closing'));
    this.wakeClaim?.();
    // Refills started before close() finish first, so the blocks they bring can go back too.
    await Promise.allSettled([this.loading, this.claiming]);
    // Loaded by now if it ever will be: its background range requests stop here.
    await this.loaded?.allocator.close();
    try {
      if (this.rolledBack === undefined) await this.returnUnused();
      else {
        // Found gone back while closing, after the blocks were set aside: dropped, not given back.
        this.ledger.wasted('dropped', this.buffer.remaining);
      }
      await this.ledger.reportNow(this.grantee);
    } finally {
      this.buffer.clear();
      this.transition('closed');
    }
  }

  private async returnUnused(): Promise<void> {
    const allocator = this.loaded?.allocator;
    const held = this.buffer.remaining;
    const run = this.buffer.unusedRun();
    if (allocator === undefined || run === undefined) return;
    let returned = 0n;
    try {
      returned = await allocator.returnBlock(run.first, run.last);
    } catch (error) {
      // Rows found gone back: the allocator told forfeit(), which logged it.
      if (error instanceof StateRolledBackError) this.ledger.failures.record(error);
      else this.ledger.failures.failed('return', error, { dc: this.grantee });
    }
    // Held when the rows were found gone back: dropped, as by a claim that found it.
    const cause = this.rolledBack !== undefined ? 'dropped' : 'notReturned';
    this.ledger.wasted(cause, held - Number(returned));
    this.log?.debug(
      {
        dc: this.grantee,
        first: String(run.first),
        last: String(run.last),
        returned: String(returned),
      },
      'closed',
    );
  }
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

/**
 * @throws {AbortedError} for sequence `name` once `signal` fired: checked before a call waits or
 * takes IDs, and again after each of its awaits.
 */
function throwIfAborted(name: string, signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new AbortedError(name, { cause: signal.reason });
}
