/** What a handle asks of its next block. */

import type { SequenceSettings } from '../store/port.js';
import type { Clock } from './clock.js';
import { Rate, blockSizeFor } from './sizing.js';

/**
 * IDs a waiting call lacks: a take()'s run (`contiguous`, from one block) or a nextIds()'s rest.
 * Each wait adds its own object, so equal counts stay apart.
 */
export interface Want {
  readonly count: number;
  readonly contiguous: boolean;
}

export class Demand {
  /** Calls waiting for the refill in flight: while there are any, it keeps retrying. */
  waiters = 0;
  /** IDs of every block that came (refused ones too); minus those held, the IDs used so far. */
  acceptedIds = 0;
  lastBlockSize = 0;
  /** Runs waiting take() calls want, each from one block: the next block holds the longest. */
  private readonly runsWanted = new Set<Want>();
  /**
   * IDs each waiting nextIds() call lacks: they size the next block but set no least size, since
   * they need not come from one block (one holding them all could take a DC's whole range).
   */
  private readonly drawsWanted = new Set<Want>();
  private readonly drawRate = new Rate();
  /**
   * Time callers spent waiting with no ID held, left out of the draw rate so that it is the rate
   * of the draws, not of the claims that let them through.
   */
  private starvedMs = 0;
  private starvedSince: number | undefined;
  private claimMs: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly held: () => number,
  ) {}

  get rate(): number | undefined {
    return this.drawRate.perSecond;
  }

  /** A call waits, lacking `want` if given; the returned function ends the wait. */
  wait(want: Want | undefined): () => void {
    this.waiters++;
    const wanted = want?.contiguous === true ? this.runsWanted : this.drawsWanted;
    if (want !== undefined) wanted.add(want);
    return () => {
      this.waiters--;
      if (want !== undefined) wanted.delete(want);
    };
  }

  /** A call found no ID held: the draw rate's clock stops until a block comes. */
  starving(): void {
    this.starvedSince ??= this.clock.now();
  }

  /** A block of `size` IDs came; the draw rate's clock goes on. */
  blockCame(size: number): void {
    if (this.starvedSince !== undefined) {
      this.starvedMs += this.clock.now() - this.starvedSince;
      this.starvedSince = undefined;
    }
    this.acceptedIds += size;
    this.lastBlockSize = size;
  }

  /** Samples the draw rate, on a clock that stops while starved. */
  claimStarts(started: number): void {
    const starved =
      this.starvedMs + (this.starvedSince === undefined ? 0 : started - this.starvedSince);
    this.drawRate.sample(this.acceptedIds - this.held(), started - starved);
  }

  claimTook(ms: number): void {
    this.claimMs = this.claimMs === undefined ? ms : (ms + this.claimMs) / 2;
  }

  /**
   * The block the waiting calls need: the longest take() run, and one ID per other waiting call
   * beyond those held; with `draws`, all IDs a waiting nextIds() lacks (see drawsWanted).
   */
  idsWanted({ draws = false } = {}): number {
    let longest = 0;
    for (const run of this.runsWanted) longest = Math.max(longest, run.count);
    let single = this.waiters - this.runsWanted.size;
    if (draws) for (const draw of this.drawsWanted) single += draw.count - 1;
    return Math.max(longest, single - this.held());
  }

  blockSize(settings: SequenceSettings, dcRate: number | undefined, lostRaces: number): number {
    return blockSizeFor({
      rate: this.drawRate.perSecond,
      claimIntervalMs: settings.claimIntervalMs,
      waiting: this.idsWanted({ draws: true }),
      min: settings.blockSize,
      max: settings.maxBlockSize,
      dcRate,
      claimMs: this.claimMs,
      threshold: settings.threshold,
      lostRaces,
    });
  }
}
