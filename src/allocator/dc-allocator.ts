/**
 * The DC level of docs/design.md for one sequence in one DC, against the {@link IdStore} port:
 * {@link DcAllocator} puts its two levels together.
 *
 * - dc-claims.ts, the LOCAL_SERIAL level: block claims, grant installs, give-backs, over the DC
 *   state row as dc-state-row.ts reads and writes it.
 * - dc-grants.ts, the SERIAL level: the grants, shared by every DC; the grant batch.
 * - range-requests.ts: range requests, one at a time, and the double buffering's background one.
 * - dc-context.ts: what both levels share; among it the latch that stops every write once a read
 *   showed the rows gone back (watermarks.ts).
 *
 * A range request ({@link DcAllocator.ensureRange}) is where the levels meet: the DC state, read
 * at LOCAL_SERIAL, says whether a range is needed; SERIAL grants it; LOCAL_SERIAL installs it.
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

// Named here too for the modules that import them from the DC allocator.
export { BACKOFF_MAX_MS, type DcCounters } from './dc-context.js';
export type { ClaimedBlock, ClaimOptions } from './dc-claims.js';
export { judgeStateWrite } from './dc-state-row.js';

export interface DcAllocatorOptions {
  readonly store: IdStore;
  readonly dc: string;
  readonly settings: SequenceSettings;
  /**
   * The incarnation of the sequence loaded (`StoredSettings.incarnation`): every state row this
   * allocator opens carries it, and a state row that carries another is refused
   * ({@link SequenceRecreatedError}). @default undefined
   */
  readonly incarnation?: string | undefined;
  /** Timers for backoffs and retries. @default real timers */
  readonly clock?: Clock | undefined;
  /** Waits between lost CAS races; tests may replace it. @default `clock.sleep` */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  /** Receives range failures, once per episode. */
  readonly log?: Logger | undefined;
  /** Called when a range request installed a range (a preload that waited for it may go now). */
  readonly onRangeInstalled?: (() => void) | undefined;
  /**
   * Called when a read shows the rows gone back, or a state row of another incarnation, at that
   * read, before the operation that made it unwinds: the process level drops what it holds, and
   * every block this allocator hands up from then on (a claim whose write was on the wire) finds
   * it told.
   */
  readonly onRolledBack?:
    ((error: StateRolledBackError | SequenceRecreatedError) => void) | undefined;
  /** Told how long claims and range requests take, and of every failure. @default none */
  readonly observer?: AllocatorObserver | undefined;
  /**
   * The allocator of another shard this one takes over from (a handle that moved before its
   * first block, sequence.ts): its counters and failure log go on here, so the handle's stats
   * count what it did on every shard. @default none
   */
  readonly continues?: DcAllocator | undefined;
  /**
   * The rollback marks of this grantee's rows as the process saw them, shared by the process's
   * handles of the sequence (watermarks.ts). @default marks of this allocator's own
   */
  readonly marks?: RowMarks | undefined;
}

/** One sequence in one DC; one instance per sequence handle. */
export class DcAllocator {
  /** What this DC level did; see {@link DcCounters}. */
  readonly counters: DcCounters;
  /** Range requests that failed; logged once per episode. */
  readonly failures: FailureLog<'range'>;
  private readonly ctx: DcContext;
  private readonly grants: DcGrants;
  private readonly row: DcStateRow;
  private readonly claims: DcClaims;
  private readonly ranges: RangeRequests;
  private readonly observer: AllocatorObserver | undefined;
  /** Ops of claim writes of unknown fate that DcClaims holds (the simulation reads it too). */
  private readonly unresolvedOps = new Set<string>();

  constructor(options: DcAllocatorOptions) {
    const clock = options.clock ?? SYSTEM_CLOCK;
    const observer = options.observer;
    this.observer = observer;
    this.counters = options.continues?.counters ?? newDcCounters();
    this.failures =
      options.continues?.failures ??
      new FailureLog(
        options.log,
        {
          range: {
            failed:
              'requesting a DC range failed; the DC still serves its ranges, retrying in the background',
            recovered: 'requesting DC ranges works again',
          },
        },
        observer && ((error) => observer.failed(options.settings.name, error)),
      );
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

  /**
   * Takes the sizes of settings re-read after an alter (the process level re-reads them, see
   * sequence.ts); claims and range requests from now on use them. The domain (`min`, `max`,
   * `start`) never changes: settings that move it are refused before they get here.
   */
  updateSettings(settings: SequenceSettings): void {
    this.ctx.settings = settings;
  }

  /**
   * Claims the next process block from the DC state, getting a DC range first if the DC has
   * none left. Lost races back off (full jitter, growing to {@link BACKOFF_MAX_MS}) and retry
   * while `options.keepTrying()` holds; unknown outcomes are retried from a fresh read, up to
   * {@link MAX_CAS_ATTEMPTS} in a row.
   * @throws {SerialUnavailableError} if a DC range was needed and SERIAL could not be reached.
   * @throws {SequenceExhaustedError} if the DC has no IDs left and the domain is spent.
   * @throws {ContentionError} once `keepTrying()` says no after a lost race.
   * @throws {InvariantError} if a row read breaks an invariant (nothing is written).
   * @throws {StateRolledBackError} if a row read is older than one seen before.
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
   * Makes sure the DC has a preloaded range: installs a confirmed grant that is not installed yet,
   * or grants the DC its next range at SERIAL and installs it. Does nothing if a preloaded range
   * exists. Concurrent callers share one request.
   * @param known the DC state as a claim just read it, holding no ID to claim: the request
   *   starts from it instead of reading it again, and ends as soon as a later read shows the DC
   *   holding IDs again (another process of the DC got the range first: the claim needs IDs,
   *   not a preload, and a second grant request at SERIAL would only add to the crowd there).
   *   A caller that joins a request in flight shares that request's reads and its end.
   * @throws {StoreUnavailableError} `level: 'serial'` if SERIAL cannot be reached.
   * @throws {SequenceExhaustedError} if GLOBAL is at `max` and no grant is pending.
   * @throws {ContentionError} after {@link MAX_CAS_ATTEMPTS} writes that were not ours.
   * @throws {InvariantError} if a row read breaks an invariant (nothing is written).
   * @throws {StateRolledBackError} if a row read is older than one seen before.
   */
  ensureRange(known?: KnownState): Promise<void> {
    return this.ranges.ensure(known);
  }

  /**
   * Starts one background range request unless one is in flight or waiting to be retried, the
   * domain is spent, or the allocator is closed. A failed request is retried after about 1 s,
   * doubling up to 30 s, until one succeeds.
   */
  requestRangeInBackground(): void {
    this.ranges.inBackground();
  }

  /**
   * Gives back `[first, last]`, unused IDs this process holds, by moving the DC's `lastInteger`
   * back to `first - 1`, only if the state is the one this process's own latest write left
   * (its op) and `lastInteger` is still `last`: any other writer since, a claim, an install or
   * a retire (whose state also ends at a grant's end), leaves the run a gap.
   * Retried only after a write shown to be lost: a give-back that might have been applied is
   * never repeated, since another process may have claimed the same IDs in between.
   * @returns how many IDs were returned (0 if they stay a gap).
   */
  returnBlock(first: bigint, last: bigint): Promise<bigint> {
    return this.claims.giveBack(first, last);
  }

  /**
   * The DC's claim rate in IDs/s, measured from the DC states this process read (sizing.ts);
   * undefined until two reads lay a second apart.
   */
  get dcRate(): number | undefined {
    return this.row.dcRate;
  }

  /** The domain is spent and this DC holds no grant not yet installed; never changes again. */
  get exhausted(): SequenceExhaustedError | undefined {
    return this.grants.exhausted;
  }

  /**
   * A write of the claim in flight may have been committed without this process knowing (its
   * outcome stayed unknown, the state unmoved when read back): leaving now would make its
   * block a gap no counter shows.
   */
  get claimUnresolved(): boolean {
    return this.unresolvedOps.size > 0;
  }

  /** Stops background range requests and their retries; waits for the one in flight. */
  close(): Promise<void> {
    return this.ranges.close();
  }

  /**
   * The body of one range request (see ensureRange): the DC state at LOCAL_SERIAL says whether a
   * range is still needed, the grant level at SERIAL gives one, and it is installed here.
   */
  private async grantAndInstall(known?: KnownState): Promise<void> {
    const spent = this.grants.exhausted;
    if (spent !== undefined) throw spent;
    let given = known;
    for (let attempt = 1; ; attempt++) {
      // Read before the grants (dc-grants.ts relies on it). A state the caller read was too.
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
