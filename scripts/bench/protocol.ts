/**
 * Messages between the benchmark and its allocator processes (scripts/bench/worker.ts), over
 * the IPC channel of `child_process.fork`. Plain JSON: numbers and strings only.
 */
import type { SequenceStats } from '../../src/index.js';
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

/** What one process measured in its window. */
export interface WorkerDraw {
  readonly ids: number;
  readonly seconds: number;
  readonly histogram: SerializedHistogram;
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly rssMiB: number;
  /** `next()` calls of the measured window that threw; the process waited 100 ms and went on. */
  readonly failures: number;
  /** The same during the warm-up. */
  readonly warmupFailures: number;
  /** IDs not above the one before (must be 0: IDs of one handle strictly increase). */
  readonly notIncreasing: number;
  /** The distinct messages of the calls that threw, at most a few. */
  readonly failureMessages: readonly string[];
}

/**
 * A scale worker samples its event loop's delay with a timer every this many ms; shorter delays
 * are not seen, which is far below a store round trip.
 */
export const LOOP_DELAY_RESOLUTION_MS = 10;

/** Percentiles of an event loop's delay, ms. */
export interface LoopDelay {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** What one process's instances measured in a scale command, summed over them. */
export interface WorkerScaleDraw {
  readonly instances: number;
  readonly ids: number;
  /** Sum over instances of IDs ÷ that instance's window. */
  readonly idsPerSecond: number;
  /** Sum over instances of their windows, seconds. */
  readonly instanceSeconds: number;
  /** Drawn plus the change in IDs held, summed over instances. */
  readonly claimedIds: number;
  /** Each instance's last block size at the window's end, where `stats()` reports it. */
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
  /**
   * How late the process's event loop ran in the measured window (`monitorEventLoopDelay`), ms;
   * null if it took no sample. Absent from older builds.
   */
  readonly loopDelay?: LoopDelay | null;
  /** The latest first ID of this process's instances that drew one, ms after the start; null: none drew. */
  readonly slowestFirstIdMs: number | null;
  /** Instances that drew no ID in the whole run, warm-up included. */
  readonly withoutId: number;
  /** Grant reads at SERIAL of the whole run, warm-up included, summed over instances. */
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

const COUNT_KEYS: readonly (keyof AllocatorCounts)[] = [
  'waits',
  'blocksClaimed',
  'rangesGranted',
  'lwtWrites',
  'serialReads',
  'localSerialReads',
  'casRejections',
  'casUnknown',
  'errors',
];

/** The counters that moved between two stats snapshots of one handle. */
export function countsBetween(before: SequenceStats, after: SequenceStats): AllocatorCounts {
  return Object.fromEntries(
    COUNT_KEYS.map((key) => [key, after[key] - before[key]]),
  ) as unknown as AllocatorCounts;
}

/** Sum of several processes' counters. */
export function addCounts(all: readonly AllocatorCounts[]): AllocatorCounts {
  return Object.fromEntries(
    COUNT_KEYS.map((key) => [key, sum(all.map((counts) => counts[key]))]),
  ) as unknown as AllocatorCounts;
}
