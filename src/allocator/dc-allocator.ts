/** The DC level of one sequence in one DC: block claims, grants, and the range requests between. */

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
import { FailureLog, type FailureSink } from './failures.js';
import { timed, type AllocatorObserver } from './observer.js';
import { RangeRequests, type KnownState } from './range-requests.js';
import { Watermarks, type RowMarks } from './watermarks.js';

export interface DcAllocatorOptions {
  readonly store: IdStore;
  readonly dc: string;
  readonly settings: SequenceSettings;
  /** Stamped on every state row opened; a row of another is refused. */
  readonly incarnation?: string | undefined;
  readonly clock?: Clock | undefined;
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  readonly log?: Logger | undefined;
  readonly onRangeInstalled?: (() => void) | undefined;
  readonly onRolledBack?:
    ((error: StateRolledBackError | SequenceRecreatedError) => void) | undefined;
  readonly observer?: AllocatorObserver | undefined;
  /** Kept across shard moves by the handle's ledger. */
  readonly counters?: DcCounters | undefined;
  readonly failures?: FailureSink<'range'> | undefined;
  readonly marks?: RowMarks | undefined;
  readonly claimGate?: ClaimGate | undefined;
}

/** Asked before each block claim: rejects with the reason none may be claimed from the DC now. */
export type ClaimGate = () => Promise<void>;

export const RANGE_FAILURE = {
  failed:
    'requesting a DC range failed; the DC still serves its ranges, retrying in the background',
  recovered: 'requesting DC ranges works again',
};

export class DcAllocator {
  readonly counters: DcCounters;
  private readonly ctx: DcContext;
  private readonly grants: DcGrants;
  private readonly row: DcStateRow;
  private readonly claims: DcClaims;
  private readonly ranges: RangeRequests;
  private readonly observer: AllocatorObserver | undefined;
  private readonly claimGate: ClaimGate | undefined;

  constructor(options: DcAllocatorOptions) {
    const clock = options.clock ?? SYSTEM_CLOCK;
    const observer = options.observer;
    this.observer = observer;
    this.claimGate = options.claimGate;
    this.counters = options.counters ?? newDcCounters();
    const name = options.settings.name;
    const failures =
      options.failures ??
      new FailureLog(
        options.log,
        { range: RANGE_FAILURE },
        observer && ((error) => observer.failed(name, error)),
      );
    this.ctx = new DcContext({
      ...options,
      clock,
      sleep: options.sleep ?? ((ms) => clock.sleep(ms)),
      counters: this.counters,
      seen: new Watermarks(options.settings.start - 1n, options.marks),
    });
    this.row = new DcStateRow(this.ctx);
    this.grants = new DcGrants(this.ctx, () => ({
      rate: this.dcRate,
      block: this.claims.blockAsk,
    }));
    this.claims = new DcClaims(this.ctx, this.row, this.grants, (known) => this.ensureRange(known));
    const { dc, log, onRangeInstalled } = options;
    this.ranges = new RangeRequests({
      ...{ dc, log, onRangeInstalled, clock, observer, failures },
      sequence: options.settings.name,
      run: (known) => this.grantAndInstall(known),
      wentBack: () => this.ctx.wentBack,
      exhausted: () => this.grants.exhausted !== undefined,
    });
  }

  updateSettings(settings: SequenceSettings): void {
    this.ctx.settings = settings;
  }

  async claimBlock(options: ClaimOptions = {}): Promise<ClaimedBlock> {
    await this.claimGate?.();
    const observer = this.observer;
    const report = observer && ((ms: number) => observer.blockClaimed(this.ctx.sequence, ms));
    return timed(this.ctx.clock, report, () => this.claims.claimBlock(options));
  }

  /**
   * Makes sure the DC has a preloaded range; callers share one request. With `known` (a claim's
   * empty state) it ends once a read shows the DC holding IDs again.
   */
  ensureRange(known?: KnownState): Promise<void> {
    return this.ranges.ensure(known);
  }

  requestRangeInBackground(): void {
    this.ranges.inBackground();
  }

  returnBlock(first: bigint, last: bigint): Promise<bigint> {
    return this.claims.giveBack(first, last);
  }

  get dcRate(): number | undefined {
    return this.row.dcRate;
  }

  get exhausted(): SequenceExhaustedError | undefined {
    return this.grants.exhausted;
  }

  /** A claim write of unknown outcome may yet commit: leaving now would hide its block. */
  get claimUnresolved(): boolean {
    return this.row.unresolvedOps.size > 0;
  }

  close(): Promise<void> {
    return this.ranges.close();
  }

  private async grantAndInstall(known?: KnownState): Promise<void> {
    const spent = this.grants.exhausted;
    if (spent !== undefined) throw spent;
    let given = known;
    for (let attempt = 1; ; attempt++) {
      // Before the grants (dc-grants.ts relies on it).
      const state = given === undefined ? await this.row.read() : given.state;
      // A claim's request ends once another process of the DC brought IDs (see ensureRange).
      if (known !== undefined && given === undefined && remainingIn(state) > 0n) return;
      given = undefined;
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
      // Another process may have installed grants since: a fresh read decides.
      const fresh = await this.row.read();
      if ((fresh?.installedGrant ?? 0) + 1 < step.latest) {
        throw this.ctx.broken(
          `grant ${step.latest} exists but only grant ${fresh?.installedGrant ?? 0} is installed`,
        );
      }
      if (attempt >= MAX_CAS_ATTEMPTS) {
        throw new ContentionError(this.ctx.sequence, 'install a DC range', attempt);
      }
    }
  }
}
