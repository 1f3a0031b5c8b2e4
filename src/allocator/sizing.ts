/**
 * Sizes that follow the load: how many IDs a process asks for in its next block, and how many a
 * DC asks for in its next grant. Sizes only: every block and grant is still claimed by the same
 * conditional writes, cut to what the DC range or the domain has left, and checked against the
 * DC-state invariants; a wrong rate (a clock jump, a burst) only makes a size larger or smaller
 * within the stored bounds, never an ID twice. Rates are measured on the allocator's local,
 * monotonic {@link Clock}; no clock is shared between processes.
 */

import { GRANT_BLOCKS } from '../settings/model.js';

/** Weight of the newest sample in a smoothed rate: half, so a change of load shows within a few claims. */
const SMOOTHING = 0.5;

/**
 * A rate of IDs per second, smoothed over samples: `sample(total, now)` gives a running count
 * (IDs handed out so far, ever growing) and the time; the rate is the smoothed increase per
 * second between samples. Undefined until two samples lie `minSampleMs` apart.
 */
export class Rate {
  /**
   * @param minSampleMs samples closer than this to the one before are added to the next one (a
   * rate over microseconds means nothing).
   */
  constructor(private readonly minSampleMs = 1) {}

  private last: { readonly total: number; readonly at: number } | undefined;
  private smoothed: number | undefined;

  /** IDs per second, or undefined before it could be measured. */
  get perSecond(): number | undefined {
    return this.smoothed;
  }

  /** Records that `total` IDs had been used by `now` (ms on a monotonic clock). */
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
 * The claims per second all processes of one DC aim to stay under together: a process's block
 * holds at least the DC's rate ÷ this. Claims of a DC are Paxos rounds on one partition: the
 * benchmark measured at most 24 a second there on its 2 shared cores, and retries per claim grew
 * with every claimer added (bench/REPORT.md, "Scale"). Sized by its own rate alone, each of N
 * processes claims every `claimIntervalMs`, so the DC's claims grow with N; sized by the DC's
 * rate too, they stay near this many whatever N is.
 */
export const DC_CLAIMS_PER_SECOND = 4;

/** What {@link blockSizeFor} sizes a process's next block from. */
export interface BlockDemand {
  /** The process's draw rate, IDs per second; undefined before it was measured. */
  readonly rate: number | undefined;
  /** The time between claims to aim for, ms. */
  readonly claimIntervalMs: number;
  /** IDs the calls waiting right now still need beyond what the process holds. */
  readonly waiting: number;
  /** The stored bounds: `blockSize` and `maxBlockSize`. */
  readonly min: number;
  readonly max: number;
  /**
   * The rate at which the DC's processes claim IDs, as this process measured it from the DC
   * states it read; undefined before it was measured.
   */
  readonly dcRate?: number | undefined;
  /** How long this process's recent claims took, ms (smoothed); undefined before the first. */
  readonly claimMs?: number | undefined;
  /** The share of a block used before the next one is claimed (the stored `threshold`). */
  readonly threshold?: number | undefined;
  /** Races the claim being sized has lost so far (0 on its first attempt). */
  readonly lostRaces?: number | undefined;
}

/** Lost races past this many no longer double a claim's least block (2^10 × `min`). */
const CROWD_DOUBLINGS = 10;

/**
 * How many times a claim's duration the part of a block left when the next claim starts should
 * last: a claim is timed after it ends, and the next one may lose more races.
 */
export const CLAIM_MARGIN = 2;

/**
 * The next block's size, the largest of:
 * - enough for `claimIntervalMs` at the process's measured rate;
 * - enough for the next claim to arrive in time: the next block is claimed once `threshold` of
 *   this one is used, so the rest, `(1 - threshold)` of it, must last {@link CLAIM_MARGIN}
 *   claims at the measured rate. Under lost races or a slow cluster a claim can take longer than
 *   a block lasts, and calls wait at every block. The rate leaves those waits out (it is the
 *   draws' rate while IDs were held, sequence.ts), so one claim later the block outlasts its
 *   successor's claim;
 * - the DC's rate ÷ {@link DC_CLAIMS_PER_SECOND}, so that many processes of one DC do not
 *   crowd its state partition with claims;
 * - every call waiting now (a burst gets one larger block instead of queueing behind several
 *   small ones);
 * - `min` doubled for every race the claim has lost: a lost race shows other processes claiming
 *   from the same state partition, where each claim waits behind the rounds of the others, so
 *   the process puts its next claim off. It matters most before the rate is known: on a fresh
 *   sequence every process claims `min` at once, spends it at once in a tight loop and claims
 *   again into the same crowd;
 *
 * within `[min, max]`. `min` when nothing is known yet (and with fixed blocks, `min = max`).
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
 * The IDs a DC's processes have claimed, as a running count, from the DC states one process
 * reads: `last_integer` moves forward within the reserved range, and on to the next grant when
 * the range switches. A give-back (it moves `last_integer` back) counts as nothing; a state that
 * skipped grants, or a first read, starts the count afresh. Any process of the DC sees the
 * claims of all of them, so no process needs the others' clocks.
 */
export class DcUsage {
  /** IDs claimed in the DC since this process first read its state. */
  total = 0;
  private last:
    | {
        readonly lastInteger: bigint;
        readonly grant: number;
        readonly max: bigint;
        readonly min: bigint;
      }
    | undefined;

  /** Counts what the DC claimed between the state read before and `state`. */
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

/** A grant may take at most this share of the IDs not granted yet (but never less than `dcRangeSize`). */
export const GRANT_DOMAIN_SHARE = 8n;

/** What {@link grantSizeFor} sizes a DC's next grant from. */
export interface GrantDemand {
  /** The DC's rate, IDs per second; undefined before it was measured. */
  readonly rate: number | undefined;
  /** The autonomy target in seconds; 0 for fixed DC ranges. */
  readonly autonomySeconds: number;
  /** The share of a range used before the next one is requested. */
  readonly threshold: number;
  /** The stored bounds: `dcRangeSize` and `maxDcRangeSize`. */
  readonly min: bigint;
  readonly max: bigint;
  /** IDs of the domain not granted to any DC yet (`max - GLOBAL.last_integer`). */
  readonly unGranted: bigint;
  /** The block size the requesting process last asked for; 0 if none yet. */
  readonly block: bigint;
}

/**
 * The next grant's size. With an autonomy target `T` and the DC's rate `r`: the DC asks for its
 * next range when `threshold` of the reserved one is used, and holds least just before that
 * grant arrives, `(1 - threshold)` of its reserved range; so a grant of `r·T / (1 - threshold)`
 * keeps `r·T` IDs in the DC at all times, enough to serve a partition of `T` alone. Clamped to
 * `[min, max]` and to an eighth of the IDs not granted yet (never below `min`, so a small domain
 * is shared as with fixed sizes). With or without a target, at least {@link GRANT_BLOCKS} of the
 * requester's blocks, within the same bounds. `min` with no target or no rate yet, and blocks
 * small against `min` (fixed DC ranges, `max = min`, always get `min`).
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
