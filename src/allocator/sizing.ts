/**
 * Sizes that follow the load: a process's next block, a DC's next grant. Sizes only: every block
 * and grant is still claimed by the same conditional writes and invariants, so a wrong rate (a
 * clock jump, a burst) changes a size within the stored bounds, never hands an ID twice. Rates
 * use the local monotonic {@link Clock}; no clock is shared between processes.
 */

import { GRANT_BLOCKS } from '../settings/model.js';

/** Weight of the newest sample: a change of load shows within a few claims. */
const SMOOTHING = 0.5;

/** A smoothed rate of IDs per second from samples of a running count. */
export class Rate {
  /** @param minSampleMs samples closer than this to the one before are folded into the next. */
  constructor(private readonly minSampleMs = 1) {}

  private last: { readonly total: number; readonly at: number } | undefined;
  private smoothed: number | undefined;

  get perSecond(): number | undefined {
    return this.smoothed;
  }

  sample(total: number, now: number): void {
    const last = this.last;
    if (last === undefined) {
      this.last = { total, at: now };
      return;
    }
    const elapsed = now - last.at;
    if (elapsed < this.minSampleMs) return;
    const rate = (Math.max(0, total - last.total) * 1_000) / elapsed;
    this.smoothed =
      this.smoothed === undefined ? rate : SMOOTHING * rate + (1 - SMOOTHING) * this.smoothed;
    this.last = { total, at: now };
  }
}

/**
 * The claims per second all processes of one DC aim to stay under together: a DC's claims are
 * Paxos rounds on one partition, whose throughput is small.
 */
export const DC_CLAIMS_PER_SECOND = 4;

/** What {@link blockSizeFor} sizes a process's next block from. */
export interface BlockDemand {
  /** The process's draw rate, IDs/s. */
  readonly rate: number | undefined;
  readonly claimIntervalMs: number;
  /** IDs the calls waiting right now still need beyond what the process holds. */
  readonly waiting: number;
  /** `blockSize` and `maxBlockSize`. */
  readonly min: number;
  readonly max: number;
  readonly dcRate?: number | undefined;
  /** How long this process's recent claims took, ms (smoothed). */
  readonly claimMs?: number | undefined;
  readonly threshold?: number | undefined;
  /** Races the claim being sized has lost so far. */
  readonly lostRaces?: number | undefined;
}

/** Lost races past this many no longer double a claim's least block (2^10 × `min`). */
const CROWD_DOUBLINGS = 10;

/** Claim durations the rest of a block should last once the next claim starts. */
export const CLAIM_MARGIN = 2;

/**
 * The next block's size, the largest of:
 * - enough for `claimIntervalMs` at the process's rate;
 * - enough that the `(1 - threshold)` left when the next claim starts lasts {@link CLAIM_MARGIN}
 *   claims, so calls do not wait at every block when claims are slow;
 * - the DC's rate ÷ {@link DC_CLAIMS_PER_SECOND}, so a DC's processes do not crowd its partition;
 * - every call waiting now (a burst gets one larger block, not several small ones);
 * - `min` doubled per race the claim lost: others claim from the same partition, so the process
 *   puts its next claim off (most needed before any rate is known);
 *
 * within `[min, max]`; `min` when nothing is known yet.
 */
export function blockSizeFor(demand: BlockDemand): number {
  const {
    rate,
    claimIntervalMs,
    waiting,
    min,
    max,
    dcRate,
    claimMs,
    threshold = 0.5,
    lostRaces = 0,
  } = demand;
  const perMs = rate === undefined ? 0 : rate / 1_000;
  const forInterval = Math.ceil(perMs * claimIntervalMs);
  const forClaim =
    claimMs === undefined ? 0 : Math.ceil((perMs * claimMs * CLAIM_MARGIN) / (1 - threshold));
  const forDc = dcRate === undefined ? 0 : Math.ceil(dcRate / DC_CLAIMS_PER_SECOND);
  const forCrowd = min * 2 ** Math.min(lostRaces, CROWD_DOUBLINGS);
  const wanted = Math.max(forInterval, forClaim, forDc, waiting, forCrowd);
  return Math.min(max, Math.max(min, Number.isFinite(wanted) ? wanted : max));
}

/**
 * A running count of the IDs a DC's processes claimed, from the DC states this process reads
 * (no other process's clock is needed). A give-back counts as nothing; a state that skipped
 * grants starts the count afresh.
 */
export class DcUsage {
  total = 0;
  private last:
    | {
        readonly lastInteger: bigint;
        readonly grant: number;
        readonly max: bigint;
        readonly min: bigint;
      }
    | undefined;

  observe(state: {
    readonly lastInteger: bigint;
    readonly reservedMin: bigint;
    readonly reservedMax: bigint;
    readonly reservedGrant: number;
  }): void {
    const last = this.last;
    if (last !== undefined) {
      if (state.reservedGrant === last.grant) {
        if (state.lastInteger > last.lastInteger) {
          this.total += Number(state.lastInteger - last.lastInteger);
        }
      } else if (state.reservedGrant === last.grant + 1) {
        this.total += Number(
          last.max - last.lastInteger + (state.lastInteger - state.reservedMin + 1n),
        );
      }
    }
    this.last = {
      lastInteger: state.lastInteger,
      grant: state.reservedGrant,
      max: state.reservedMax,
      min: state.reservedMin,
    };
  }
}

/** A grant takes at most 1/this of the IDs not granted yet (never less than `dcRangeSize`). */
export const GRANT_DOMAIN_SHARE = 8n;

/** What {@link grantSizeFor} sizes a DC's next grant from. */
export interface GrantDemand {
  /** The DC's rate, IDs/s. */
  readonly rate: number | undefined;
  /** 0 for fixed DC ranges. */
  readonly autonomySeconds: number;
  readonly threshold: number;
  /** `dcRangeSize` and `maxDcRangeSize`. */
  readonly min: bigint;
  readonly max: bigint;
  /** `max - GLOBAL.last_integer`. */
  readonly unGranted: bigint;
  /** The block size the requesting process last asked for; 0 if none yet. */
  readonly block: bigint;
}

/**
 * The next grant's size: `r·T / (1 - threshold)` for the DC's rate `r` and autonomy target `T`,
 * which keeps `r·T` IDs in the DC even just before the next grant arrives (docs/design.md, "DC
 * ranges sized by autonomy"); at least {@link GRANT_BLOCKS} of the requester's blocks; clamped to
 * `[min, max]` and to 1/{@link GRANT_DOMAIN_SHARE} of the IDs not granted yet, never below `min`.
 */
export function grantSizeFor(demand: GrantDemand): bigint {
  const { rate, autonomySeconds, threshold, min, max, unGranted, block } = demand;
  const forAutonomy =
    autonomySeconds === 0 || rate === undefined || !(rate > 0)
      ? 0
      : Math.ceil((rate * autonomySeconds) / (1 - threshold));
  const forBlocks = block * GRANT_BLOCKS;
  let size = Number.isFinite(forAutonomy) && forAutonomy < Number(max) ? BigInt(forAutonomy) : max;
  if (size < forBlocks) size = forBlocks;
  if (size > max) size = max;
  const share = unGranted / GRANT_DOMAIN_SHARE;
  if (size > share) size = share;
  if (size < min) size = min;
  return size;
}
