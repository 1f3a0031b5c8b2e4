/**
 * Messages between the benchmark and its allocator processes (scripts/bench/worker.ts), over
 * the IPC channel of `child_process.fork`. Plain JSON: numbers and strings only.
 */
import type { SequenceStats } from '../../src/index.js';
import { COUNT_KEYS } from './results.js';
import type { AllocatorCounts, BurstRun, DcStateTimings, DrawMode } from './results.js';
import { sum, type SerializedHistogram } from './stats.js';

/** Draw IDs of `sequence` for `warmupMs`, then for `durationMs` measured. */
export interface DrawCommand {
  readonly type: 'draw';
  readonly sequence: string;
  readonly mode: DrawMode;
  /** Paced mode: IDs per second; ignored when tight. */
  readonly ratePerSecond: number;
  readonly warmupMs: number;
  readonly durationMs: number;
}

/** Load one block of `sequence`, then ask for `calls` IDs at once. */
export interface BurstCommand {
  readonly type: 'burst';
  readonly sequence: string;
  readonly calls: number;
}

/**
 * Open `instances` allocator instances (each its own IdGen and store, sharing the process's one
 * driver client) on `sequence`, and have each draw for `warmupMs`, then `durationMs` measured.
 */
export interface ScaleCommand {
  readonly type: 'scale';
  readonly sequence: string;
  readonly instances: number;
  /** IDs per second of each instance; 0 draws tight. */
  readonly ratePerInstance: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** False: tight and untimed (IDs/s only); see `DrawPlan.timed`. Default true. */
  readonly timed?: boolean;
}

export type WorkerCommand = DrawCommand | BurstCommand | ScaleCommand | { readonly type: 'exit' };

export interface WorkerDraw {
  readonly ids: number;
  readonly seconds: number;
  readonly histogram: SerializedHistogram;
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly rssMiB: number;
  /** `next()` calls of the measured window that threw; the process waited 100 ms and went on. */
  readonly failures: number;
  readonly warmupFailures: number;
  /** IDs not above the one before (must be 0: IDs of one handle strictly increase). */
  readonly notIncreasing: number;
  readonly failureMessages: readonly string[];
}

/**
 * A scale worker samples its event loop's delay with a timer every this many ms; shorter delays
 * are not seen, which is far below a store round trip.
 */
export const LOOP_DELAY_RESOLUTION_MS = 10;

export interface LoopDelay {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** What one process's instances measured in a scale command, summed over them. */
export interface WorkerScaleDraw {
  readonly instances: number;
  readonly ids: number;
  readonly idsPerSecond: number;
  readonly instanceSeconds: number;
  readonly claimedIds: number;
  readonly lastBlockSizes: readonly number[];
  readonly histogram: SerializedHistogram;
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly failures: number;
  readonly warmupFailures: number;
  readonly notIncreasing: number;
  readonly failureMessages: readonly string[];
  readonly dcState: DcStateTimings;
  /** CPU seconds (user + system) this process used from the first window's opening to the end. */
  readonly cpuSeconds: number;
  /** How late the event loop ran in the window (`monitorEventLoopDelay`); null: no sample. */
  readonly loopDelay?: LoopDelay | null;
  /** The latest first ID of the process's instances, ms after the start; null: none drew. */
  readonly slowestFirstIdMs: number | null;
  readonly withoutId: number;
  readonly serialReads: number;
}

export type WorkerMessage =
  | {
      readonly type: 'ready';
      readonly pid: number;
      readonly connectMs: number;
      /** Resident memory after `connect()`, before any sequence, MiB. */
      readonly rssMiB: number;
    }
  | { readonly type: 'drawn'; readonly result: WorkerDraw }
  | { readonly type: 'burst'; readonly result: BurstRun }
  | { readonly type: 'scaled'; readonly result: WorkerScaleDraw }
  | { readonly type: 'failed'; readonly message: string };

/** @throws when an ID was not above the one before it on its handle (`of` names it): a bug. */
export function checkIncreasing(draws: readonly { notIncreasing: number }[], of: string): void {
  const notIncreasing = sum(draws.map((d) => d.notIncreasing));
  if (notIncreasing > 0) {
    throw new Error(`${notIncreasing} IDs were not above the one before in their ${of}: a bug`);
  }
}

/** The counters that moved between two stats snapshots of one handle. */
export function countsBetween(before: SequenceStats, after: SequenceStats): AllocatorCounts {
  return Object.fromEntries(
    COUNT_KEYS.map((key) => [key, after[key] - before[key]]),
  ) as AllocatorCounts;
}

export function addCounts(all: readonly AllocatorCounts[]): AllocatorCounts {
  return Object.fromEntries(
    COUNT_KEYS.map((key) => [key, sum(all.map((counts) => counts[key]))]),
  ) as AllocatorCounts;
}
