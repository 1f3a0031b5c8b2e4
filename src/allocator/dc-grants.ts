/** The SERIAL level (docs/design.md, "Granting a DC range"); it never touches the DC state. */

import {
  SequenceExhaustedError,
  SerialUnavailableError,
  StoreUnavailableError,
} from '../errors.js';
import type { DcState, Grant, GrantFound, GrantView } from '../store/port.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';
import { MAX_CAS_ATTEMPTS, type DcContext } from './dc-context.js';
import { min, remainingIn } from './dc-state.js';
import { grantSizeFor, type GrantDemand as SizingDemand } from './sizing.js';
import { globalWentBack, grantsWentBack, type Floor } from './watermarks.js';

export type GrantDemand = Pick<SizingDemand, 'rate' | 'block'>;

/** A range request's next step: install `grant`, re-read the DC state, or start over. */
export type GrantStep =
  | { readonly kind: 'install'; readonly grant: Grant }
  | { readonly kind: 'behind'; readonly latest: number }
  | { readonly kind: 'reread'; readonly attempt: number };

export class DcGrants {
  /** Set, for good, once GLOBAL is at `max` with no grant pending for this DC. */
  exhausted: SequenceExhaustedError | undefined;

  constructor(
    private readonly ctx: DcContext,
    private readonly demand: () => GrantDemand,
  ) {}

  /**
   * The grant to install next on `state`: one granted but not installed, or a new one.
   * @throws {SequenceExhaustedError} if GLOBAL is at `max` and no grant is pending.
   */
  async nextGrant(state: DcState | undefined, attempt: number): Promise<GrantStep> {
    if (attempt === 1 && state === undefined) return this.blindFirstGrant();
    const installed = state?.installedGrant ?? 0;
    const view = await this.readGrants();
    const latest = view.latest;
    const latestNumber = latest?.number ?? 0;
    // The state was read before the grants: not a race but broken rows.
    if (latestNumber < installed) {
      throw this.ctx.broken(
        `latest grant ${latestNumber} is older than installed grant ${installed}`,
      );
    }
    if (state !== undefined) {
      this.ctx.checkState(state, { grants: latest && [latest], globalLast: view.globalLast });
    }
    if (latest !== undefined && latestNumber > installed) {
      if (latestNumber > installed + 1) return { kind: 'behind', latest: latestNumber };
      return { kind: 'install', grant: latest };
    }
    return this.sendBatches(installed, view.globalLast, false, attempt);
  }

  /** Grant 1 without SERIAL reads, on the highest GLOBAL known: the batch's condition decides. */
  private blindFirstGrant(): Promise<GrantStep> {
    return this.sendBatches(0, this.ctx.seen.floor().globalLast, true, 1);
  }

  /**
   * Batches for grant `installed + 1` until one is ours or fresh reads are needed; the first is
   * conditional on `globalLast` (`guessed`: not read at SERIAL), later ones on what a loss found.
   */
  private async sendBatches(
    installed: number,
    globalLast: bigint,
    guessed: boolean,
    attempt: number,
  ): Promise<GrantStep> {
    for (;;) {
      const { max } = this.ctx.settings;
      if (globalLast >= max) {
        // A grant made between the reads of the latest grant and GLOBAL may still be pending.
        const final = await this.readGrants();
        if ((final.latest?.number ?? 0) > installed) return { kind: 'reread', attempt };
        this.exhausted = new SequenceExhaustedError(this.ctx.sequence, max, globalLast);
        throw this.exhausted;
      }
      const grant: Grant = {
        number: installed + 1,
        min: globalLast + 1n,
        max: min(globalLast + this.sizeFrom(globalLast), max),
      };
      const floor = this.ctx.seen.floor();
      const last = await this.writeGrant(globalLast, grant);
      this.checkFound(last, floor);
      // A guessed batch cannot tell a starting peer's grant 1 from an older chain's whose state is
      // gone (reinstalling that would serve IDs twice): fresh reads decide.
      if (guessed && last.reported === 'rejected' && last.found?.grant !== undefined) {
        return { kind: 'reread', attempt };
      }
      if (isOurs(last.verdict)) {
        // Not counted when reported rejected: processes starting together send the same batch.
        if (last.reported !== 'rejected') this.ctx.counters.rangesGranted++;
        return { kind: 'install', grant };
      }
      if (attempt >= MAX_CAS_ATTEMPTS) {
        throw this.ctx.outOfAttempts('grant a DC range', attempt, last, 'serial');
      }
      // A guessed batch lost to what was there before it, not to a race: no backoff.
      if (last.reported === 'rejected' && !guessed) await this.ctx.backoff(attempt);
      guessed = false;
      const moved = this.globalAfterLoss(last);
      if (moved === undefined) return { kind: 'reread', attempt };
      globalLast = moved;
      attempt++;
    }
  }

  private sizeFrom(globalLast: bigint): bigint {
    const { rate, block } = this.demand();
    const settings = this.ctx.settings;
    return grantSizeFor({
      rate,
      autonomySeconds: settings.autonomySeconds,
      threshold: settings.threshold,
      min: settings.dcRangeSize,
      max: settings.maxDcRangeSize,
      unGranted: settings.max - globalLast,
      block,
    });
  }

  /** Grant 1 if a plain read shows it latest; safe without SERIAL (docs/design.md). */
  async firstGrantLocally(): Promise<Grant | undefined> {
    let view: GrantView | undefined;
    try {
      view = await this.ctx.store.readGrantsLocal(this.ctx.sequence, this.ctx.dc);
    } catch (error) {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    }
    if (view?.latest?.number !== 1) return undefined;
    // Each replica answers from one snapshot of the partition, where GLOBAL covers every grant.
    this.checkGrants(view);
    return view.latest;
  }

  explainFailure(error: unknown, state: DcState | undefined): unknown {
    if (error instanceof StoreUnavailableError && error.level === 'serial') {
      return new SerialUnavailableError(this.ctx.sequence, this.ctx.dc, remainingIn(state), {
        cause: error,
      });
    }
    return error;
  }

  private async readGrants(): Promise<GrantView> {
    this.ctx.counters.serialReads++;
    const floor = this.ctx.seen.floor();
    const view = await this.ctx.store.readGrants(this.ctx.sequence, this.ctx.dc);
    this.accept(view, grantsWentBack(floor, view));
    return view;
  }

  private async writeGrant(
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasResult<GrantFound>> {
    const { ctx } = this;
    ctx.assertRowsHeld();
    ctx.counters.lwtWrites++;
    const result = await runConditionalWrite<GrantFound>({
      write: () => ctx.store.grantRange(ctx.sequence, ctx.dc, expectedGlobalLast, grant),
      judge: (found) => judgeGrant(found, expectedGlobalLast, grant),
      reread: async () => {
        const view = await this.readGrants();
        let latest = view.latest;
        // Two Paxos rounds: the grant read may miss our batch that the GLOBAL read finishes. So
        // "lost" only once a grant read after a moved GLOBAL shows no grant `n`.
        if ((latest?.number ?? 0) < grant.number && view.globalLast !== expectedGlobalLast) {
          latest = (await this.readGrants()).latest;
        }
        if (latest !== undefined && latest.number > grant.number) {
          // Grant `n` exists and the DC moved past it; whose it was cannot be read back.
          return { globalLast: undefined, grant: undefined };
        }
        return {
          globalLast: view.globalLast,
          grant: latest?.number === grant.number ? latest : undefined,
        };
      },
    });
    ctx.count(result);
    return result;
  }

  /** Checks what a rejecting round found as {@link readGrants} checks its read. */
  private checkFound(last: CasResult<GrantFound>, floor: Floor): void {
    const globalLast = last.found?.globalLast;
    if (last.reported !== 'rejected' || globalLast === undefined) return;
    // GLOBAL only: grant `n` found, or not, says nothing of the latest grant.
    this.accept({ globalLast, latest: last.found?.grant }, globalWentBack(floor, globalLast));
  }

  /** Checks a view of the grant level, then raises the marks unless it `wentBack`. */
  private accept(view: GrantView, wentBack: string | undefined): void {
    this.checkGrants(view);
    if (wentBack !== undefined) throw this.ctx.rolledBack(wentBack);
    this.ctx.seen.raiseGrants(view);
  }

  /** GLOBAL as a losing round found it, if it found no grant `n`: the next batch's condition. */
  private globalAfterLoss(last: CasResult<GrantFound>): bigint | undefined {
    const globalLast = last.found?.globalLast;
    if (last.verdict !== 'lost' || last.found?.grant !== undefined) return undefined;
    return globalLast;
  }

  private checkGrants(view: GrantView): void {
    const { start, max: high } = this.ctx.settings;
    const dc = this.ctx.dc;
    if (view.globalLast < start - 1n || view.globalLast > high) {
      throw this.ctx.broken(
        `GLOBAL last_integer ${view.globalLast} is outside [${start - 1n}, ${high}]`,
      );
    }
    const g = view.latest;
    if (g === undefined) return;
    if (!Number.isSafeInteger(g.number) || g.number < 1) {
      throw this.ctx.broken(`DC "${dc}" grant number ${g.number} is not a positive integer`);
    }
    if (g.min > g.max || g.min < start || g.max > high) {
      throw this.ctx.broken(
        `DC "${dc}" grant ${g.number} [${g.min}, ${g.max}] is not within [${start}, ${high}]`,
      );
    }
    // The latest grant is read before GLOBAL, so even a grant made in between is covered.
    if (g.max > view.globalLast) {
      throw this.ctx.broken(
        `DC "${dc}" grant ${g.number} ends at ${g.max}, above GLOBAL last_integer ${view.globalLast}`,
      );
    }
  }
}

/**
 * Grant `n` is ours if it has our bounds (an identical one of the DC serves as well); lost if not,
 * or if absent with GLOBAL moved; else unknown.
 */
export function judgeGrant(
  found: GrantFound | undefined,
  expectedGlobalLast: bigint,
  grant: Grant,
): Judgement {
  if (found?.grant !== undefined) {
    return found.grant.min === grant.min && found.grant.max === grant.max ? 'ours' : 'lost';
  }
  if (found?.globalLast !== undefined && found.globalLast !== expectedGlobalLast) return 'lost';
  return 'unknown';
}
