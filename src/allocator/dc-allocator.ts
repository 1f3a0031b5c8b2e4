/**
 * The DC level of one sequence in one DC: {@link DcAllocator} joins the LOCAL_SERIAL level
 * (dc-claims.ts), the SERIAL level (dc-grants.ts), range requests (range-requests.ts) and what
 * they share (dc-context.ts). A range request is where the levels meet: the DC state at
 * LOCAL_SERIAL says whether a range is needed, SERIAL grants it, LOCAL_SERIAL installs it.
 */

import {
  ContentionError,
  SequenceExhaustedError,
  SequenceRecreatedError,
  StateRolledBackError,
} from '../errors.js';
import type { IdStore, SequenceSettings } from '../store/port.js';
import type { Logger } from '../logger.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import { DcClaims, type ClaimedBlock, type ClaimOptions } from './dc-claims.js';
import { DcContext, MAX_CAS_ATTEMPTS, newDcCounters, type DcCounters } from './dc-context.js';
import { DcGrants } from './dc-grants.js';
import { DcStateRow } from './dc-state-row.js';
import { hasPreloaded, remainingIn } from './dc-state.js';
import { FailureLog } from './failures.js';
import type { AllocatorObserver } from './observer.js';
import { RangeRequests, type KnownState } from './range-requests.js';
import { Watermarks, type RowMarks } from './watermarks.js';

export interface DcAllocatorOptions {
  readonly store: IdStore;
  readonly dc: string;
  readonly settings: SequenceSettings;
  /** Stamped on every state row opened; a row of another is refused. @default undefined */
  readonly incarnation?: string | undefined;
  /** @default real timers */
  readonly clock?: Clock | undefined;
  /** Waits between lost CAS races. @default `clock.sleep` */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  readonly log?: Logger | undefined;
  readonly onRangeInstalled?: (() => void) | undefined;
  /** Called at the read that shows the rows gone back, before the operation unwinds. */
  readonly onRolledBack?:
    ((error: StateRolledBackError | SequenceRecreatedError) => void) | undefined;
  readonly observer?: AllocatorObserver | undefined;
  /** Where the DC level counts; the handle's ledger keeps them across shard moves. @default own */
  readonly counters?: DcCounters | undefined;
  /** Failed range requests, logged once per episode. @default own ({@link rangeFailureLog}) */
  readonly failures?: FailureLog<'range'> | undefined;
  /** This grantee's rollback marks, shared by the process's handles. @default own marks */
  readonly marks?: RowMarks | undefined;
}

/** The log of sequence `name`'s failed range requests. */
export function rangeFailureLog(
  name: string,
  log: Logger | undefined,
  observer: AllocatorObserver | undefined,
): FailureLog<'range'> {
  const range = {
    failed:
      'requesting a DC range failed; the DC still serves its ranges, retrying in the background',
    recovered: 'requesting DC ranges works again',
  };
  return new FailureLog(log, { range }, observer && ((error) => observer.failed(name, error)));
}

/** One sequence in one DC; one instance per sequence handle. */
export class DcAllocator {
  readonly counters: DcCounters;
  readonly failures: FailureLog<'range'>;
  private readonly ctx: DcContext;
  private readonly grants: DcGrants;
  private readonly row: DcStateRow;
  private readonly claims: DcClaims;
  private readonly ranges: RangeRequests;
  private readonly observer: AllocatorObserver | undefined;
  /** Ops of claim writes of unknown fate that DcClaims holds. */
  private readonly unresolvedOps = new Set<string>();

  constructor(options: DcAllocatorOptions) {
    const clock = options.clock ?? SYSTEM_CLOCK;
    const observer = options.observer;
    this.observer = observer;
    this.counters = options.counters ?? newDcCounters();
    this.failures =
      options.failures ?? rangeFailureLog(options.settings.name, options.log, observer);
    this.ctx = new DcContext({
      store: options.store,
      dc: options.dc,
      settings: options.settings,
      incarnation: options.incarnation,
      clock,
      sleep: options.sleep ?? ((ms) => clock.sleep(ms)),
      counters: this.counters,
      seen: new Watermarks(options.settings.start - 1n, options.marks),
      onRolledBack: options.onRolledBack,
    });
    this.row = new DcStateRow(this.ctx, this.unresolvedOps);
    this.grants = new DcGrants(this.ctx, () => ({
      rate: this.row.dcRate,
      block: this.claims.blockAsk,
    }));
    this.claims = new DcClaims(this.ctx, this.row, this.grants, (known) => this.ensureRange(known));
    this.ranges = new RangeRequests({
      run: (known) => this.grantAndInstall(known),
      sequence: options.settings.name,
      dc: options.dc,
      clock,
      log: options.log,
      failures: this.failures,
      observer,
      onRangeInstalled: options.onRangeInstalled,
      wentBack: () => this.ctx.wentBack,
      exhausted: () => this.grants.exhausted !== undefined,
    });
  }

  private get sequence(): string {
    return this.ctx.sequence;
  }

  /** Takes sizes re-read after an alter; settings that move the domain never get here. */
  updateSettings(settings: SequenceSettings): void {
    this.ctx.settings = settings;
  }

  /**
   * Claims the next process block, getting a DC range first if the DC has none left. Lost races
   * retry while `options.keepTrying()` holds; unknown outcomes up to {@link MAX_CAS_ATTEMPTS} in
   * a row.
   * @throws {SerialUnavailableError} if a DC range was needed and SERIAL could not be reached.
   * @throws {SequenceExhaustedError} if the DC has no IDs left and the domain is spent.
   * @throws {ContentionError} once `keepTrying()` says no after a lost race.
   * @throws {InvariantError} or {@link StateRolledBackError} from a row read (nothing written).
   * @throws {StoreUnavailableError} if LOCAL_SERIAL cannot be reached.
   */
  async claimBlock(options: ClaimOptions = {}): Promise<ClaimedBlock> {
    const observer = this.observer;
    if (observer === undefined) return this.claims.claimBlock(options);
    const started = this.ctx.clock.now();
    try {
      return await this.claims.claimBlock(options);
    } finally {
      observer.blockClaimed(this.sequence, this.ctx.clock.now() - started);
    }
  }

  /**
   * Makes sure the DC has a preloaded range: installs a confirmed grant, or grants the next range
   * at SERIAL and installs it. Concurrent callers share one request.
   * @param known the DC state a claim just read, holding no ID to claim: the request starts from
   *   it, and ends once a later read shows the DC holding IDs again (a second grant request would
   *   only crowd SERIAL).
   * @throws as {@link claimBlock}, and {@link ContentionError} after {@link MAX_CAS_ATTEMPTS}.
   */
  ensureRange(known?: KnownState): Promise<void> {
    return this.ranges.ensure(known);
  }

  /** Starts one background range request unless one is in flight or waiting for its retry. */
  requestRangeInBackground(): void {
    this.ranges.inBackground();
  }

  /**
   * Gives back `[first, last]` by moving `lastInteger` back to `first - 1`, only if the state is
   * the one this process's own latest write left and `lastInteger` is still `last`. Retried only
   * after a write shown lost: one that might have been applied is never repeated, since others
   * may have claimed the IDs in between.
   * @returns how many IDs were returned (0 if they stay a gap).
   */
  returnBlock(first: bigint, last: bigint): Promise<bigint> {
    return this.claims.giveBack(first, last);
  }

  get dcRate(): number | undefined {
    return this.row.dcRate;
  }

  /** The domain is spent and this DC holds no grant not yet installed; final. */
  get exhausted(): SequenceExhaustedError | undefined {
    return this.grants.exhausted;
  }

  /**
   * A claim write in flight may have been committed unseen (outcome unknown, state unmoved):
   * leaving now would make its block a gap no counter shows.
   */
  get claimUnresolved(): boolean {
    return this.unresolvedOps.size > 0;
  }

  /** Stops background range requests; waits for the one in flight. */
  close(): Promise<void> {
    return this.ranges.close();
  }

  private async grantAndInstall(known?: KnownState): Promise<void> {
    const spent = this.grants.exhausted;
    if (spent !== undefined) throw spent;
    let given = known;
    for (let attempt = 1; ; attempt++) {
      // Read before the grants (dc-grants.ts relies on it).
      const state = given === undefined ? await this.row.read() : given.state;
      // A claim's request ends once another process of the DC brought IDs (see ensureRange).
      if (known !== undefined && given === undefined && remainingIn(state) > 0n) return;
      given = undefined;
      // The DC has its next range already: nothing to ask SERIAL, on the partition every DC shares.
      if (state !== undefined && hasPreloaded(state)) return;
      if (attempt === 1 && state === undefined) {
        const first = await this.grants.firstGrantLocally();
        if (first !== undefined) {
          await this.claims.install(first, undefined);
          return;
        }
      }
      const step = await this.grants.nextGrant(state, attempt);
      if (step.kind === 'install') {
        await this.claims.install(step.grant, state);
        return;
      }
      if (step.kind === 'reread') {
        attempt = step.attempt;
        continue;
      }
      // Another process may have installed grants since our state read; a fresh read decides.
      const fresh = await this.row.read();
      if ((fresh?.installedGrant ?? 0) + 1 < step.latest) {
        throw this.ctx.broken(
          `grant ${step.latest} exists but only grant ${fresh?.installedGrant ?? 0} is installed`,
        );
      }
      if (attempt >= MAX_CAS_ATTEMPTS) {
        throw new ContentionError(this.sequence, 'install a DC range', attempt);
      }
    }
  }
}
