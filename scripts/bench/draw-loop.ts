/**
 * The measured draw loop every allocator process and instance of the benchmark runs: `await
 * next()` as fast as it can, or at a set rate, timing every call after the warm-up; or, for
 * throughput alone, tight and untimed.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { Sequence, SequenceStats } from '../../src/index.js';
import { countsBetween, type WorkerDraw } from './protocol.js';
import { Histogram, hrNow } from './stats.js';

/** After a failed `next()` the loop pauses this long, as a caller backing off would. */
const FAILURE_PAUSE_MS = 100;
/** Paced mode: a loop that fell further behind than this gives up the missed IDs. */
const MAX_LAG_NS = 100e6;
export const MAX_FAILURE_MESSAGES = 3;

export interface DrawPlan {
  /** 0: tight (`await next()` in a loop); else IDs per second. */
  readonly ratePerSecond: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** `process.hrtime` nanoseconds the warm-up started at (loops of one command share it). */
  readonly start: number;
  /**
   * False: tight only, no call timed and the clock read once per {@link COUNT_BATCH} calls, so
   * the loop is `await next()` and a counter; its histogram stays empty. Default true.
   */
  readonly timed?: boolean;
}

/**
 * Calls between clock reads of an untimed loop. Two clock reads (one call's timing) cost more
 * than the `await next()` they time, so a timed loop measures its timer as much as the library.
 */
export const COUNT_BATCH = 1_024;

/** A draw with the IDs the handle held when its window opened and closed. */
export interface LoopResult {
  readonly draw: Omit<WorkerDraw, 'histogram' | 'rssMiB'>;
  readonly histogram: Histogram;
  readonly heldBefore: number;
  readonly heldAfter: number;
  /** `stats().blockSize` at the window's end (the size adaptive blocks chose); undefined: none. */
  readonly lastBlockSize: number | undefined;
  /**
   * Nanoseconds from the plan's start to the loop's first ID; undefined if it drew none (or it
   * is the untimed loop, which reads no clock per call). A cold start of many instances shows
   * here: every one of them needs a claim, and a DC range first.
   */
  readonly firstIdNs: number | undefined;
  /** Grant reads at SERIAL (`stats().serialReads`) of the whole loop, warm-up included. */
  readonly serialReads: number;
  /** IDs the handle handed out in the whole loop, warm-up included (`stats().issued`). */
  readonly issued: number;
}

/**
 * Draws from `handle` until the plan's window ends; `onMeasuring` runs once, when this loop's
 * window opens. Tight: `await next()` of an ID the handle holds resumes as a microtask (the
 * library yields to I/O once per 512 of them). Paced: sleeps whenever it is 1 ms ahead (a
 * timer, never a busy wait). Does not close the handle.
 */
export async function drawLoop(
  handle: Sequence<number>,
  plan: DrawPlan,
  onMeasuring?: () => void,
): Promise<LoopResult> {
  if (plan.timed === false) return countLoop(handle, plan, onMeasuring);
  const histogram = new Histogram();
  const initial = handle.stats();
  const { start } = plan;
  const warmupEnd = start + plan.warmupMs * 1e6;
  const end = warmupEnd + plan.durationMs * 1e6;
  const paced = plan.ratePerSecond > 0;
  const interval = paced ? 1e9 / plan.ratePerSecond : 0;
  let due = hrNow();
  let measuring = false;
  let before = initial;
  // The window opens at the warm-up's end, not at the first call after it: a call blocked
  // across the whole window must not leave a window of nanoseconds behind.
  const measureStart = warmupEnd;
  let measureEnd = start;
  let openingId = 0;
  const open = (): void => {
    if (measuring) return;
    measuring = true;
    before = handle.stats();
    onMeasuring?.();
  };
  let drawn = 0;
  let failures = 0;
  let warmupFailures = 0;
  const failureMessages = new Set<string>();
  let notIncreasing = 0;
  let last = -1;
  let firstIdAt: number | undefined;

  for (;;) {
    const t0 = hrNow();
    let id: number;
    try {
      id = await handle.next();
    } catch (error) {
      if (hrNow() >= warmupEnd) open();
      if (measuring) failures++;
      else warmupFailures++;
      await afterFailure(error, failureMessages);
      if (hrNow() < end) continue;
      measureEnd = hrNow();
      break;
    }
    const t1 = hrNow();
    firstIdAt ??= t1;
    if (id <= last) notIncreasing++;
    last = id;
    if (t1 >= warmupEnd && !measuring) {
      open();
      // The snapshot comes after this call, which counts: its ID was held before it.
      openingId = 1;
    }
    if (measuring) {
      // A call that ends in the window counts with its whole latency, the one that crossed the
      // warm-up's end included: it may be the slowest.
      histogram.record(t1 - t0);
      drawn++;
      if (t1 >= end) {
        measureEnd = t1;
        break;
      }
    }
    if (paced) {
      due += interval;
      if (t1 - due > MAX_LAG_NS) due = t1;
      else if (due - t1 > 1e6) await sleep((due - t1) / 1e6);
    }
  }
  open(); // the whole window failed: it still counts from the warm-up's end
  return loopResult(handle, initial, before, histogram, {
    ids: drawn,
    seconds: Math.max(0, measureEnd - measureStart) / 1e9,
    failures,
    warmupFailures,
    notIncreasing,
    failureMessages,
    heldBeforeExtra: openingId,
    firstIdNs: firstIdAt === undefined ? undefined : firstIdAt - start,
  });
}

/** Keeps `error` among the first few distinct messages, then pauses as a caller backing off would. */
export async function afterFailure(error: unknown, messages: Set<string>): Promise<void> {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (messages.size < MAX_FAILURE_MESSAGES) messages.add(message);
  await sleep(FAILURE_PAUSE_MS);
}

/** What {@link loopResult} takes from a loop besides the stats it reads itself. */
interface LoopTally extends Omit<LoopResult['draw'], 'counts' | 'warmupWaits' | 'failureMessages'> {
  readonly failureMessages: ReadonlySet<string>;
  /** IDs to add to those held at the window's opening (an ID taken before the snapshot). */
  readonly heldBeforeExtra: number;
  readonly firstIdNs: number | undefined;
}

/** A loop's result: its tally, and the counters between `before` and now. */
function loopResult(
  handle: Sequence<number>,
  initial: SequenceStats,
  before: SequenceStats,
  histogram: Histogram,
  tally: LoopTally,
): LoopResult {
  const after = handle.stats();
  return {
    draw: {
      ids: tally.ids,
      seconds: tally.seconds,
      counts: countsBetween(before, after),
      warmupWaits: before.waits - initial.waits,
      failures: tally.failures,
      warmupFailures: tally.warmupFailures,
      notIncreasing: tally.notIncreasing,
      failureMessages: [...tally.failureMessages],
    },
    histogram,
    heldBefore: before.remaining + tally.heldBeforeExtra,
    heldAfter: after.remaining,
    lastBlockSize: after.blockSize > 0 ? after.blockSize : undefined,
    firstIdNs: tally.firstIdNs,
    serialReads: after.serialReads - initial.serialReads,
    issued: after.issued - initial.issued,
  };
}

/**
 * The untimed tight loop: batches of {@link COUNT_BATCH} `await next()` with the clock read
 * between batches, so the window closes at most one batch late. A failed call ends its batch
 * and pauses as the timed loop does.
 */
async function countLoop(
  handle: Sequence<number>,
  plan: DrawPlan,
  onMeasuring?: () => void,
): Promise<LoopResult> {
  const initial = handle.stats();
  const warmupEnd = plan.start + plan.warmupMs * 1e6;
  const end = warmupEnd + plan.durationMs * 1e6;
  let measuring = false;
  let before = initial;
  // From the warm-up's end, as the timed loop: a batch that crossed it is not counted.
  const measureStart = warmupEnd;
  let drawn = 0;
  let failures = 0;
  let warmupFailures = 0;
  const failureMessages = new Set<string>();
  let notIncreasing = 0;
  let last = -1;
  let now = hrNow();
  while (now < end) {
    let done = 0;
    try {
      for (; done < COUNT_BATCH; done++) {
        const id = await handle.next();
        if (id <= last) notIncreasing++;
        last = id;
      }
    } catch (error) {
      if (measuring) failures++;
      else warmupFailures++;
      await afterFailure(error, failureMessages);
    }
    if (measuring) drawn += done;
    now = hrNow();
    if (!measuring && now >= warmupEnd) {
      measuring = true;
      before = handle.stats();
      onMeasuring?.();
    }
  }
  if (!measuring) {
    before = handle.stats();
    onMeasuring?.();
  }
  return loopResult(handle, initial, before, new Histogram(), {
    ids: drawn,
    seconds: Math.max(0, now - measureStart) / 1e9,
    failures,
    warmupFailures,
    notIncreasing,
    failureMessages,
    heldBeforeExtra: 0,
    firstIdNs: undefined,
  });
}
