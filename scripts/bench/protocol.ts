/** Messages between the benchmark and its allocator processes (worker.ts) over IPC: plain JSON. */
import type { SequenceStats } from '../../src/index.js';
import { COUNT_KEYS } from './results.js';
import type { AllocatorCounts, BurstRun, DrawMode, DrawRun, ScaleDcRun } from './results.js';
import { sum, sums, type SerializedHistogram } from './stats.js';

export interface DrawCommand {
  readonly type: 'draw';
  readonly sequence: string;
  readonly mode: DrawMode;
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

export interface ScaleCommand {
  readonly type: 'scale';
  readonly sequence: string;
  readonly instances: number;
  /** 0 draws tight. */
  readonly ratePerInstance: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** See `DrawPlan.timed`. */
  readonly timed?: boolean;
}

export type WorkerCommand = DrawCommand | BurstCommand | ScaleCommand | { readonly type: 'exit' };

/** One process's draw; `notIncreasing` counts IDs not above the one before (must be 0). */
export type WorkerDraw = Omit<DrawRun, 'processes' | 'idsPerSecond' | 'latency' | 'rssMiB'> & {
  readonly histogram: SerializedHistogram;
  readonly rssMiB: number;
  readonly notIncreasing: number;
};

/** A scale worker samples its event loop's delay with a timer every this many ms. */
export const LOOP_DELAY_RESOLUTION_MS = 10;

export type LoopDelay = Readonly<{ p50Ms: number; p99Ms: number; maxMs: number }>;

/** What one process's instances measured in a scale command, summed over them. */
export type WorkerScaleDraw = Omit<
  ScaleDcRun,
  'dc' | 'seconds' | 'slowestFirstIdMs' | 'withoutId' | 'serialReads'
> &
  Pick<WorkerDraw, 'histogram' | 'notIncreasing' | 'failureMessages'> & {
    /** Sum of the instances' windows. */
    readonly instanceSeconds: number;
    /** CPU seconds (user + system) from the first window's opening to the end. */
    readonly cpuSeconds: number;
    readonly loopDelay?: LoopDelay | null;
    readonly slowestFirstIdMs: number | null;
    readonly withoutId: number;
    readonly serialReads: number;
  };

export type WorkerMessage =
  | Readonly<{ type: 'ready'; pid: number; connectMs: number; rssMiB: number }>
  | Readonly<{ type: 'drawn'; result: WorkerDraw }>
  | Readonly<{ type: 'burst'; result: BurstRun }>
  | Readonly<{ type: 'scaled'; result: WorkerScaleDraw }>
  | Readonly<{ type: 'failed'; message: string }>;

/** @throws when an ID was not above the one before it on its handle (`of` names it): a bug. */
export function checkIncreasing(draws: readonly { notIncreasing: number }[], of: string): void {
  const notIncreasing = sum(draws.map((d) => d.notIncreasing));
  if (notIncreasing > 0) {
    throw new Error(`${notIncreasing} IDs were not above the one before in their ${of}: a bug`);
  }
}

export function countsBetween(before: SequenceStats, after: SequenceStats): AllocatorCounts {
  return Object.fromEntries(
    COUNT_KEYS.map((key) => [key, after[key] - before[key]]),
  ) as AllocatorCounts;
}

export const addCounts = (all: readonly AllocatorCounts[]): AllocatorCounts =>
  sums(all, COUNT_KEYS);
