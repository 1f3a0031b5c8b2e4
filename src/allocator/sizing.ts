/** Sizes that follow the load: a wrong rate changes a size within its bounds, never uniqueness. */

import { GRANT_BLOCKS } from '../settings/model.js';
import type { DcState } from '../store/port.js';

/** Weight of the newest sample. */
const SMOOTHING = 0.5;

/** A smoothed rate of IDs per second from samples of a running count. */
export class Rate {
  /** @param minSampleMs samples closer than this to the one before are skipped. */
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

/** Claims per second a DC's processes aim to stay under: Paxos rounds on one partition. */
export const DC_CLAIMS_PER_SECOND = 4;

/** Rates in IDs/s; `min` and `max` are `blockSize` and `maxBlockSize`. */
export interface BlockDemand {
  readonly rate: number | undefined;
  readonly claimIntervalMs: number;
  readonly waiting: number;
  readonly min: number;
  readonly max: number;
  readonly dcRate?: number | undefined;
  readonly claimMs?: number | undefined;
  readonly threshold?: number | undefined;
  readonly lostRaces?: number | undefined;
}

/** Lost races past this many no longer double a claim's least block. */
const CROWD_DOUBLINGS = 10;

/** Claim durations the rest of a block should last once the next claim starts. */
export const CLAIM_MARGIN = 2;

/**
 * The next block's size within `[min, max]`: the largest of what each demand needs
 * (docs/design.md, "Block sizes that follow the load").
 */
export function blockSizeFor(demand: BlockDemand): number {
  const { rate, claimIntervalMs, waiting, min, max, dcRate, claimMs } = demand;
  const { threshold = 0.5, lostRaces = 0 } = demand;
  const perMs = rate === undefined ? 0 : rate / 1_000;
  const forInterval = Math.ceil(perMs * claimIntervalMs);
  const forClaim =
    claimMs === undefined ? 0 : Math.ceil((perMs * claimMs * CLAIM_MARGIN) / (1 - threshold));
  const forDc = dcRate === undefined ? 0 : Math.ceil(dcRate / DC_CLAIMS_PER_SECOND);
  const forCrowd = min * 2 ** Math.min(lostRaces, CROWD_DOUBLINGS);
  const wanted = Math.max(forInterval, forClaim, forDc, waiting, forCrowd);
  return Math.min(max, Math.max(min, Number.isFinite(wanted) ? wanted : max));
}

type ReservedRange = Pick<DcState, 'lastInteger' | 'reservedMin' | 'reservedMax' | 'reservedGrant'>;

/** A running count of the IDs a DC's processes claimed, from the DC states read. */
export class DcUsage {
  total = 0;
  private last: ReservedRange | undefined;

  observe(state: ReservedRange): void {
    const last = this.last;
    if (last !== undefined) {
      if (state.reservedGrant === last.reservedGrant) {
        if (state.lastInteger > last.lastInteger) {
          this.total += Number(state.lastInteger - last.lastInteger);
        }
      } else if (state.reservedGrant === last.reservedGrant + 1) {
        this.total += Number(
          last.reservedMax - last.lastInteger + (state.lastInteger - state.reservedMin + 1n),
        );
      }
    }
    const { lastInteger, reservedMin, reservedMax, reservedGrant } = state;
    this.last = { lastInteger, reservedMin, reservedMax, reservedGrant };
  }
}

/** A grant takes at most 1/this of the IDs not granted yet (never less than `dcRangeSize`). */
export const GRANT_DOMAIN_SHARE = 8n;

/** The DC's rate in IDs/s; `min` and `max` are `dcRangeSize` and `maxDcRangeSize`. */
export interface GrantDemand {
  readonly rate: number | undefined;
  /** 0 for fixed DC ranges. */
  readonly autonomySeconds: number;
  readonly threshold: number;
  readonly min: bigint;
  readonly max: bigint;
  /** `max - GLOBAL.last_integer`. */
  readonly unGranted: bigint;
  readonly block: bigint;
}

/**
 * The next grant's size: `rate·T / (1 - threshold)` (docs/design.md, "DC ranges sized by
 * autonomy"), at least {@link GRANT_BLOCKS} blocks, within `[min, max]` and the domain's share.
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
