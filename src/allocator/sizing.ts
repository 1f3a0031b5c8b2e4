/**
 * Sizes that follow the load: how many IDs a process asks for in its next block, and how many a
 * DC asks for in its next grant. Sizes only: every block and grant is still claimed by the same
 * conditional writes, cut to what the DC range or the domain has left, and checked against the
 * DC-state invariants; a wrong rate (a clock jump, a burst) only makes a size larger or smaller
 * within the stored bounds, never an ID twice. Rates are measured on the allocator's local,
 * monotonic {@link Clock}; no clock is shared between processes.
 */

/** Weight of the newest sample in a smoothed rate: half, so a change of load shows within a few claims. */
const SMOOTHING = 0.5;
/** Samples over less time than this are added to the next one (a rate over microseconds means nothing). */
const MIN_SAMPLE_MS = 1;

/**
 * A rate of IDs per second, smoothed over samples: `sample(total, now)` gives a running count
 * (IDs handed out so far, ever growing) and the time; the rate is the smoothed increase per
 * second between samples. Undefined until two samples lie {@link MIN_SAMPLE_MS} apart.
 */
export class Rate {
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
    if (elapsed < MIN_SAMPLE_MS) return;
    const rate = (Math.max(0, total - last.total) * 1_000) / elapsed;
    this.smoothed =
      this.smoothed === undefined ? rate : SMOOTHING * rate + (1 - SMOOTHING) * this.smoothed;
    this.last = { total, at: now };
  }
}

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
}

/**
 * The next block's size: enough for `claimIntervalMs` at the measured rate, and for every call
 * waiting now (a burst gets one larger block instead of queueing behind several small ones),
 * within `[min, max]`. `min` when nothing is known yet (and with fixed blocks, `min = max`).
 */
export function blockSizeFor(demand: BlockDemand): number {
  const { rate, claimIntervalMs, waiting, min, max } = demand;
  const forInterval = rate === undefined ? 0 : Math.ceil((rate * claimIntervalMs) / 1_000);
  const wanted = Math.max(forInterval, waiting);
  return Math.min(max, Math.max(min, Number.isFinite(wanted) ? wanted : max));
}
