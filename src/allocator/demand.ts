/** What a handle asks of its next block. */

import type { SequenceSettings } from '../store/port.js';
import type { Clock } from './clock.js';
import { Rate, blockSizeFor } from './sizing.js';

/** IDs a waiting call lacks; one object per wait, so equal counts stay apart. */
export interface Want {
  readonly count: number;
  readonly contiguous: boolean;
}

export class Demand {
  waiters = 0;
  /** IDs of every block that came, refused ones too. */
  acceptedIds = 0;
  lastBlockSize = 0;
  private readonly runsWanted = new Set<Want>();
  /** These size the next block but set no least size: they need not come from one block. */
  private readonly drawsWanted = new Set<Want>();
  private readonly drawRate = new Rate();
  /** Left out of the draw rate, so it measures draws, not the claims that let them through. */
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

  wait(want: Want | undefined): () => void {
    this.waiters++;
    const wanted = want?.contiguous === true ? this.runsWanted : this.drawsWanted;
    if (want !== undefined) wanted.add(want);
    return () => {
      this.waiters--;
      if (want !== undefined) wanted.delete(want);
    };
  }

  starving(): void {
    this.starvedSince ??= this.clock.now();
  }

  blockCame(size: number): void {
    if (this.starvedSince !== undefined) {
      this.starvedMs += this.clock.now() - this.starvedSince;
      this.starvedSince = undefined;
    }
    this.acceptedIds += size;
    this.lastBlockSize = size;
  }

  claimStarts(started: number): void {
    const starved =
      this.starvedMs + (this.starvedSince === undefined ? 0 : started - this.starvedSince);
    this.drawRate.sample(this.acceptedIds - this.held(), started - starved);
  }

  claimTook(ms: number): void {
    this.claimMs = this.claimMs === undefined ? ms : (ms + this.claimMs) / 2;
  }

  /** The longest take() run, or one ID per other waiting call (`draws`: all they lack). */
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
