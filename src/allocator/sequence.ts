/** The process level of one sequence: a double buffer of blocks, one refill in flight, close(). */

import assert from 'node:assert/strict';

import type { Logger } from '../logger.js';
import { InvariantError, SequenceRecreatedError, StateRolledBackError } from '../errors.js';
import { mutated } from '../mutations.js';
import type { IdStore } from '../store/port.js';
import type { IdKind, IdRange } from './block.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import { BlockBuffer } from './block-buffer.js';
import {
  checkCallOptions,
  throwIfAborted,
  waitWithinDeadline,
  type CallDeadline,
  type CallOptions,
} from './call-deadline.js';
import { BlockClaims } from './block-claims.js';
import type { ClaimedBlock } from './dc-claims.js';
import { Demand, type Want } from './demand.js';
import { HeldSettings, RE_READ_SETTINGS, largestBlockError } from './held-settings.js';
import { Ledger } from './ledger.js';
import { Lifecycle, type SequenceState } from './lifecycle.js';
import type { ClaimGate } from './dc-allocator.js';
import { timed, type AllocatorObserver } from './observer.js';
import type { SequenceStats } from './sequence-stats.js';
import { Shards, type Loaded } from './shards.js';
import type { RowMarks } from './watermarks.js';

export type { SequenceState } from './lifecycle.js';

export interface SequenceContext<T extends number | bigint> {
  readonly name: string;
  readonly store: IdStore;
  readonly dc: string;
  readonly keyspace: string;
  readonly ids: IdKind<T>;
  readonly logger?: Logger | undefined;
  readonly clock?: Clock | undefined;
  readonly callTimeoutMs: number;
  readonly observer?: AllocatorObserver | undefined;
  readonly marks?: ((grantee: string, start: bigint) => RowMarks) | undefined;
  readonly claimGate?: ClaimGate | undefined;
}

/** Every this many IDs served from memory, `next()` yields to I/O before it resolves. */
export const YIELD_EVERY_IDS = 512;

/** Unique, strictly increasing IDs of one sequence in this process; see {@link IdGen.sequence}. */
export class Sequence<T extends number | bigint> {
  readonly name: string;
  readonly dc: string;
  readonly bigint: boolean;
  /** Where this handle claims from: its DC, or a shard of it (`dc1/3`). */
  get grantee(): string {
    return this.shards.grantee;
  }

  private readonly log: Logger | undefined;
  private readonly clock: Clock;

  private readonly lifecycle: Lifecycle;
  private readonly shards: Shards;
  private threshold = 0;
  private readonly buffer = new BlockBuffer<T>(() => this.threshold);

  private loading: Promise<Loaded> | undefined;
  private servedSinceYield = 0;
  private closing: Promise<void> | undefined;
  private readonly ledger: Ledger;
  private readonly demand: Demand;
  private readonly settings: HeldSettings;
  private readonly claims: BlockClaims;

  /** @internal Use {@link IdGen.sequence}. */
  constructor(private readonly context: SequenceContext<T>) {
    this.name = context.name;
    this.lifecycle = new Lifecycle(context.name);
    this.dc = context.dc;
    this.bigint = context.ids.bigint;
    this.log = context.logger?.child({ sequence: context.name });
    this.clock = context.clock ?? SYSTEM_CLOCK;
    const { dc, keyspace, observer, marks, callTimeoutMs, claimGate } = context;
    const base = { name: this.name, store: context.store, clock: this.clock, log: this.log };
    const open = { isOpen: () => this.lifecycle.open, forfeit: this.forfeit.bind(this) };
    this.demand = new Demand(this.clock, () => this.buffer.remaining);
    this.settings = new HeldSettings({ ...base, ...open, keyspace, bigint: this.bigint });
    this.ledger = new Ledger({ ...base, observer, stats: () => this.stats() });
    this.shards = new Shards({
      ...{ ...base, ...open, dc, observer, marks, claimGate, ledger: this.ledger },
      onRangeInstalled: () => this.claims.rangeInstalled(),
      beforeFirstBlock: () => this.demand.acceptedIds === 0,
      highestAccepted: () => this.buffer.highestAccepted,
    });
    this.claims = new BlockClaims({
      ...{ ...base, ...open, callTimeoutMs, ledger: this.ledger, shards: this.shards },
      ...{ demand: this.demand, lifecycle: this.lifecycle },
      wantsPreload: () => this.buffer.wantsPreload,
      ensureLoaded: () => this.ensureLoaded(),
      refreshSettings: () => this.refreshSettings(),
      loaded: () => this.loaded,
      accept: (claimed) => this.acceptBlock(claimed),
      held: () => this.buffer.remaining,
    });
  }

  get state(): SequenceState {
    return this.lifecycle.state;
  }

  private get loaded(): Loaded | undefined {
    return this.shards.loaded;
  }

  /**
   * The next ID if this process holds one, else undefined (a refill starts in the background).
   * Never waits.
   * @example
   * ```ts
   * const id = orders.tryNext() ?? (await orders.next());
   * ```
   * @throws {ClosedError} after `close()`.
   */
  tryNext(): T | undefined {
    const buffer = this.buffer;
    let block = buffer.current;
    let id = block?.takeOne();
    if (id === undefined) {
      this.lifecycle.assertOpen();
      block = buffer.switchToPreloaded();
      id = block?.takeOne();
      if (id === undefined) {
        this.claims.inBackground();
        return undefined;
      }
    }
    if (block!.used >= buffer.preloadAt) this.preloadNextBlock();
    return id;
  }

  /**
   * The next ID, at once while this process holds IDs, else after the refill in flight. Failing
   * refills are retried until the call's deadline; then it rejects with the last failure.
   * @example
   * ```ts
   * const id = await orders.next({ timeoutMs: 200, signal: request.signal });
   * ```
   * @throws {ClosedError} after `close()`; {@link InvalidOptionError} for bad options.
   * @throws {DeadlineError} if no ID came in time (on lost races, `cause` is a ContentionError).
   * @throws {AbortedError} if `signal` fired first.
   * @throws {IdGenError} the refill's failure: {@link SequenceNotFoundError}, {@link
   * DomainNeedsBigIntError}, {@link SerialUnavailableError}, {@link SequenceExhaustedError}, …
   */
  async next(options?: CallOptions): Promise<T> {
    checkCallOptions(options);
    const id = this.tryNext();
    if (id !== undefined) {
      // Resuming as a microtask, a caller looping on next() would starve all I/O (the preload too).
      if (++this.servedSinceYield >= YIELD_EVERY_IDS) {
        this.servedSinceYield = 0;
        await this.clock.yieldToIo();
      }
      return id;
    }
    this.startWaiting();
    const call = this.callOf(options);
    return this.timed(async () => {
      for (;;) {
        await this.waitForRefill(call, options?.signal);
        const next = this.tryNext();
        if (next !== undefined) return next;
      }
    });
  }

  /**
   * @internal The HTTP service's draw of `count` increasing IDs, all or an error (then the IDs
   * taken are `waste.undelivered`); with `delivered`, issued only once it settles true.
   */
  async nextIds(count: number, options?: CallOptions, delivered?: Promise<boolean>): Promise<T[]> {
    checkCallOptions(options);
    assert(Number.isInteger(count) && count >= 1, `nextIds(${count}): not a count`);
    this.lifecycle.assertOpen();
    const signal = options?.signal;
    const call = this.callOf(options);
    const buffer = this.buffer;
    if ((buffer.current?.remaining ?? 0) === 0) buffer.switchToPreloaded();
    if (buffer.remaining < count && buffer.preloaded === undefined) {
      // The draw rate's clock goes on: the IDs held are still served.
      throwIfAborted(this.name, signal);
      this.ledger.waits++;
      await this.timed(() => this.waitForRefill(call, signal, { count, contiguous: false }));
    }
    const ids: T[] = [];
    let awaitingDelivery = false;
    try {
      while (ids.length < count) {
        throwIfAborted(this.name, signal);
        // Taken and counted in one step: stats() never sees it issued.
        const id = this.tryNext();
        if (id !== undefined) {
          ids.push(id);
          this.ledger.drawn(1);
          continue;
        }
        this.startWaiting();
        await this.timed(async () => {
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
      if (mutated('partial-next-ids') && ids.length > 0) return ids;
      this.ledger.wasted('undelivered', ids.length);
      throw error;
    } finally {
      if (!awaitingDelivery) this.ledger.undrawn(ids.length);
    }
    return ids;
  }

  /**
   * `count` contiguous IDs; a current block too short for them is skipped (counted as waste).
   * @throws {InvalidCountError} unless `count` is an integer from 1 to `maxBlockSize` and no
   * larger than the DC's ranges.
   * @throws everything {@link Sequence.next} throws.
   */
  take(count: number, options?: CallOptions): Promise<IdRange<T>> {
    return this.takeDelivered(count, options, undefined);
  }

  /** @internal The HTTP service's {@link Sequence.take}; `delivered` as for `nextIds`. */
  async takeDelivered(
    count: number,
    options: CallOptions | undefined,
    delivered: Promise<boolean> | undefined,
  ): Promise<IdRange<T>> {
    checkCallOptions(options);
    this.lifecycle.assertOpen();
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
    this.lifecycle.assertOpen();
    throwIfAborted(this.name, signal);
    const range = await this.takeRunOnSettings(count, signal, delivered);
    if (range !== undefined) return range;
    this.startWaiting();
    return this.timed(async () => {
      for (;;) {
        await this.waitForRefill(call, signal, { count, contiguous: true });
        this.lifecycle.assertOpen();
        throwIfAborted(this.name, signal);
        const run = await this.takeRunOnSettings(count, signal, delivered);
        if (run !== undefined) return run;
      }
    });
  }

  /**
   * Claims a block unless this process holds IDs, so that `tryNext()` succeeds right after.
   * @throws everything {@link Sequence.next} throws.
   */
  async ready(options?: CallOptions): Promise<void> {
    checkCallOptions(options);
    this.lifecycle.assertOpen();
    if (this.buffer.remaining === 0) {
      await this.waitForRefill(this.callOf(options), options?.signal);
    }
  }

  /** A frozen snapshot of this handle's counters. */
  stats(): SequenceStats {
    const { taken, remaining } = this.buffer;
    const { lastBlockSize: blockSize, rate: drawRate } = this.demand;
    const dcRate = this.loaded?.allocator.dcRate;
    return this.ledger.stats({ taken, remaining, blockSize, drawRate }, dcRate);
  }

  /** Stops handing out IDs at once, then gives the unused ones back. Idempotent; never rejects. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async takeRunOnSettings(
    count: number,
    signal: AbortSignal | undefined,
    delivered: Promise<boolean> | undefined,
  ): Promise<IdRange<T> | undefined> {
    let run = this.takeRun(count, false);
    if (run === RE_READ_SETTINGS) {
      await this.refreshSettings({ force: true });
      this.lifecycle.assertOpen();
      throwIfAborted(this.name, signal);
      run = this.takeRun(count, true);
      assert(run !== RE_READ_SETTINGS, 'takeRun asked for settings just re-read');
    }
    if (run !== undefined && delivered !== undefined) {
      this.ledger.drawn(count);
      this.ledger.settleDelivery(count, delivered);
    }
    return run;
  }

  /** `count` contiguous IDs held; undefined: a refill started; RE_READ_SETTINGS never with `reread`. */
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
      const refusal = this.settings.runRefusal(count, next, this.loaded!.settings, reread);
      if (refusal === RE_READ_SETTINGS) return refusal;
      if (refusal !== undefined) throw refusal;
      // Skip the short remainder only once the next block is here, so next() can still use it.
      if (next === undefined) break;
      const skipped = block.abandon();
      this.ledger.wasted('takeSkipped', skipped);
      block = buffer.switchToPreloaded();
    }
    this.claims.inBackground();
    return undefined;
  }

  /** The only place a claimed block enters the buffer; it must lie above every earlier one. */
  private acceptBlock(claimed: ClaimedBlock): void {
    const size = Number(claimed.last - claimed.first + 1n);
    if (this.lifecycle.rolledBack !== undefined) {
      this.ledger.wasted('dropped', size);
      throw this.lifecycle.rolledBack;
    }
    const block = this.context.ids.block(claimed.first, claimed.last, claimed.rangeSize);
    const highest = this.buffer.highestAccepted;
    this.demand.blockCame(block.size);
    this.settings.blockAccepted(block);
    if (!this.buffer.accept(block)) {
      this.ledger.wasted('refused', size);
      throw new InvariantError(
        this.name,
        `DC "${this.grantee}" gave this process block [${claimed.first}, ${claimed.last}], not above its earlier IDs (up to ${highest})`,
      );
    }
  }

  /** The rows went back or were recreated: others may claim the blocks held, so drop them. */
  private forfeit(error: StateRolledBackError | SequenceRecreatedError): void {
    if (this.lifecycle.rolledBack !== undefined) return;
    this.lifecycle.rolledBack = error;
    if (this.buffer.serving) {
      const dropped = this.buffer.changeMode('dropped');
      this.ledger.wasted('dropped', dropped);
    }
    this.log?.error({ err: error, dc: this.grantee }, error.message);
  }

  private preloadNextBlock(): void {
    this.buffer.preloadAt = Infinity;
    if (this.buffer.preloaded === undefined) this.claims.inBackground();
  }

  private startWaiting(): void {
    this.ledger.waits++;
    this.demand.starving();
  }

  private async refreshSettings({ force = false } = {}): Promise<void> {
    const settings = await this.settings.reread(() => this.loaded?.settings, force);
    if (settings === undefined) return;
    this.shards.updateSettings(settings);
    this.threshold = settings.threshold;
  }

  private timed<R>(wait: () => Promise<R>): Promise<R> {
    const observer = this.context.observer;
    return timed(
      this.clock,
      observer && ((ms, error) => observer.waited(this.name, ms, error)),
      wait,
    );
  }

  private callOf(options: CallOptions | undefined): CallDeadline {
    const timeoutMs = options?.timeoutMs ?? this.context.callTimeoutMs;
    return { timeoutMs, deadline: this.clock.now() + timeoutMs };
  }

  private async waitForRefill(
    call: CallDeadline,
    signal: AbortSignal | undefined,
    want?: Want,
  ): Promise<void> {
    const done = this.demand.wait(want);
    try {
      await waitWithinDeadline(this.claims.refill(), {
        sequence: this.name,
        ...call,
        signal,
        clock: this.clock,
        lastFailure: () => this.claims.lastFailure(),
      });
    } finally {
      done();
    }
  }

  private ensureLoaded(): Promise<Loaded> {
    if (this.loaded !== undefined) return Promise.resolve(this.loaded);
    this.lifecycle.assertOpen();
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(): Promise<Loaded> {
    this.lifecycle.to('loading');
    let loaded: Loaded;
    try {
      const stored = await this.settings.load();
      loaded = this.shards.open(stored.settings, stored.incarnation);
    } catch (error) {
      if (this.lifecycle.state === 'loading') this.lifecycle.to('idle');
      throw error;
    }
    this.threshold = loaded.settings.threshold;
    if (this.lifecycle.state === 'loading') this.lifecycle.to('ready');
    return loaded;
  }

  private async shutdown(): Promise<void> {
    this.lifecycle.to('closing');
    // Set aside before the first await, so the run given back starts after the last ID served.
    if (this.buffer.serving) this.buffer.changeMode('retired', mutated('serve-while-closing'));
    this.claims.wakeUp();
    await Promise.allSettled([this.loading, this.claims.inFlight]);
    await this.loaded?.allocator.close();
    try {
      if (this.lifecycle.rolledBack === undefined) {
        const wentBack = () => this.lifecycle.rolledBack !== undefined;
        await this.shards.giveBack(this.buffer.remaining, this.buffer.unusedRun(), wentBack);
      } else {
        this.ledger.wasted('dropped', this.buffer.remaining);
      }
      await this.ledger.reportNow(this.grantee);
    } finally {
      this.buffer.clear();
      this.lifecycle.to('closed');
    }
  }
}
