/** The draw loop of every allocator process and instance: tight, paced, or tight and untimed. */
import { setTimeout as sleep } from 'node:timers/promises';

import type { Sequence, SequenceStats } from '../../src/index.js';
import { countsBetween, type WorkerDraw } from './protocol.js';
import { Histogram, hrNow } from './stats.js';

const FAILURE_PAUSE_MS = 100;
/** Paced mode: a loop further behind than this gives up the missed IDs. */
const MAX_LAG_NS = 100e6;
export const MAX_FAILURE_MESSAGES = 3;

export interface DrawPlan {
  /** 0: tight (`await next()` in a loop); else IDs per second. */
  readonly ratePerSecond: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** `hrNow()` at the warm-up's start (loops of one command share it). */
  readonly start: number;
  /** False: tight, untimed, the clock read once per {@link COUNT_BATCH} calls. Default true. */
  readonly timed?: boolean;
}

/** Two clock reads cost more than the `await next()` they time, so untimed loops batch calls. */
export const COUNT_BATCH = 1_024;

export interface LoopResult {
  readonly draw: Omit<WorkerDraw, 'histogram' | 'rssMiB'>;
  readonly histogram: Histogram;
  readonly heldBefore: number;
  readonly heldAfter: number;
  readonly lastBlockSize: number | undefined;
  /** From the plan's start to the first ID; undefined if none, or untimed. */
  readonly firstIdNs: number | undefined;
  /** These two count the whole loop, warm-up included. */
  readonly serialReads: number;
  readonly issued: number;
}

/**
 * A loop's measured window. It opens at the warm-up's end, not at the first call after it: a
 * call blocked across the whole window must not leave a window of nanoseconds behind.
 */
class Window {
  readonly initial: SequenceStats;
  before: SequenceStats;
  measuring = false;
  failures = 0;
  warmupFailures = 0;
  readonly failureMessages = new Set<string>();

  constructor(
    private readonly handle: Sequence<number>,
    private readonly onMeasuring: (() => void) | undefined,
  ) {
    this.initial = this.before = handle.stats();
  }

  open(): void {
    if (this.measuring) return;
    this.measuring = true;
    this.before = this.handle.stats();
    this.onMeasuring?.();
  }

  async failed(error: unknown): Promise<void> {
    if (this.measuring) this.failures++;
    else this.warmupFailures++;
    await afterFailure(error, this.failureMessages);
  }

  /** @param heldBeforeExtra IDs to add to those held at the opening (an ID taken before it). */
  result(
    draw: Pick<LoopResult['draw'], 'ids' | 'seconds' | 'notIncreasing'>,
    histogram: Histogram,
    heldBeforeExtra: number,
    firstIdNs: number | undefined,
  ): LoopResult {
    const { initial, before } = this;
    const after = this.handle.stats();
    return {
      draw: {
        ids: draw.ids,
        seconds: draw.seconds,
        counts: countsBetween(before, after),
        warmupWaits: before.waits - initial.waits,
        failures: this.failures,
        warmupFailures: this.warmupFailures,
        notIncreasing: draw.notIncreasing,
        failureMessages: [...this.failureMessages],
      },
      histogram,
      heldBefore: before.remaining + heldBeforeExtra,
      heldAfter: after.remaining,
      lastBlockSize: after.blockSize > 0 ? after.blockSize : undefined,
      firstIdNs,
      serialReads: after.serialReads - initial.serialReads,
      issued: after.issued - initial.issued,
    };
  }
}

/**
 * Draws until the plan's window ends; `onMeasuring` runs when this loop's window opens. Paced
 * loops sleep whenever 1 ms ahead. Does not close the handle.
 */
export async function drawLoop(
  handle: Sequence<number>,
  plan: DrawPlan,
  onMeasuring?: () => void,
): Promise<LoopResult> {
  if (plan.timed === false) return countLoop(handle, plan, onMeasuring);
  const window = new Window(handle, onMeasuring);
  const histogram = new Histogram();
  const { start } = plan;
  const warmupEnd = start + plan.warmupMs * 1e6;
  const end = warmupEnd + plan.durationMs * 1e6;
  const paced = plan.ratePerSecond > 0;
  const interval = paced ? 1e9 / plan.ratePerSecond : 0;
  let due = hrNow();
  let measureEnd = start;
  let openingId = 0;
  let drawn = 0;
  let notIncreasing = 0;
  let last = -1;
  let firstIdAt: number | undefined;
  for (;;) {
    const t0 = hrNow();
    let id: number;
    try {
      id = await handle.next();
    } catch (error) {
      if (hrNow() >= warmupEnd) window.open();
      await window.failed(error);
      if (hrNow() < end) continue;
      measureEnd = hrNow();
      break;
    }
    const t1 = hrNow();
    firstIdAt ??= t1;
    if (id <= last) notIncreasing++;
    last = id;
    if (t1 >= warmupEnd && !window.measuring) {
      window.open();
      // The snapshot comes after this call, which counts: its ID was held before it.
      openingId = 1;
    }
    if (window.measuring) {
      // The call that crossed the warm-up's end counts whole: it may be the slowest.
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
  window.open(); // the whole window failed: it still counts from the warm-up's end
  const seconds = Math.max(0, measureEnd - warmupEnd) / 1e9;
  const firstIdNs = firstIdAt === undefined ? undefined : firstIdAt - start;
  return window.result({ ids: drawn, seconds, notIncreasing }, histogram, openingId, firstIdNs);
}

/** Keeps the first few distinct messages, then pauses as a caller backing off would. */
export async function afterFailure(error: unknown, messages: Set<string>): Promise<void> {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (messages.size < MAX_FAILURE_MESSAGES) messages.add(message);
  await sleep(FAILURE_PAUSE_MS);
}

/** The untimed loop: a batch that crossed the warm-up's end is not counted. */
async function countLoop(
  handle: Sequence<number>,
  plan: DrawPlan,
  onMeasuring?: () => void,
): Promise<LoopResult> {
  const window = new Window(handle, onMeasuring);
  const warmupEnd = plan.start + plan.warmupMs * 1e6;
  const end = warmupEnd + plan.durationMs * 1e6;
  let drawn = 0;
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
      await window.failed(error);
    }
    if (window.measuring) drawn += done;
    now = hrNow();
    if (now >= warmupEnd) window.open();
  }
  window.open();
  const seconds = Math.max(0, now - warmupEnd) / 1e9;
  return window.result({ ids: drawn, seconds, notIncreasing }, new Histogram(), 0, undefined);
}
