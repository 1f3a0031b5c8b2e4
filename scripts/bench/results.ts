/**
 * What a benchmark run measured, raw: every run of every phase, before any summary. This is the
 * `raw` part of results.json; the report builder derives every figure and ratio from it.
 */
import type { LatencySummary } from './stats.js';

export const RESULTS_SCHEMA = 'idgen-cass-bench/1';

/** The options a run used, after defaults (see options.ts). */
export interface BenchSettings {
  readonly quick: boolean;
  /** Measured seconds per run of each cluster phase. */
  readonly durationSeconds: number;
  /** Seconds each allocator process draws before its measured window. */
  readonly warmupSeconds: number;
  readonly runs: number;
  readonly processesPerDc: number;
  readonly blockSizes: readonly number[];
  /** The block size of the steady-state figures and the burst test. */
  readonly steadyBlockSize: number;
  /** DC range size = this × block size. */
  readonly dcRangeBlocks: number;
  /** Paced mode: each process draws this many blocks per second. */
  readonly pacedBlocksPerSecond: number;
  /** Concurrent clients of the naive baseline's second configuration. */
  readonly naiveClients: number;
  /** Burst size = this × block size. */
  readonly burstFactor: number;
  /** Target milliseconds of one in-process sample. */
  readonly inProcessSampleMs: number;
  readonly out: string;
}

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  /** `SELECT release_version FROM system.local`, per DC. */
  readonly cassandra: Readonly<Record<string, string>>;
  /** e.g. "3 DCs × 1 node, on this machine". */
  readonly topology: string;
  /** 1, 5 and 15 minute load averages when the run started. */
  readonly loadAverage: readonly number[];
}

/** One candidate of the in-process comparison. */
export interface InProcessCandidate {
  readonly key: string;
  readonly label: string;
}

export interface InProcessResult {
  /** Where the idgen-cass candidates got their blocks from. */
  readonly idgenStore: string;
  readonly idgenBlockSize: number;
  readonly candidates: readonly InProcessCandidate[];
  /** One entry per run: nanoseconds per ID of each candidate, all measured in that run. */
  readonly runs: readonly Readonly<Record<string, number>>[];
  /** `next()`/`tryNext()` calls that found no ID, or blocks claimed, inside a timed loop (must be 0). */
  readonly refillsInLoops: number;
  /** Snowflake IDs generated back to back, and how many of them repeated an earlier one. */
  readonly snowflakeRepeats: { readonly generated: number; readonly repeated: number };
  /** Nanoseconds of one pair of `process.hrtime.bigint()` reads: included in every latency below. */
  readonly timerPairNs: number;
}

/** Counters of the allocators of one run, summed over its processes, measured window only. */
export interface AllocatorCounts {
  readonly waits: number;
  readonly blocksClaimed: number;
  readonly rangesGranted: number;
  readonly lwtWrites: number;
  readonly serialReads: number;
  readonly localSerialReads: number;
  readonly casRejections: number;
  readonly casUnknown: number;
  readonly errors: number;
}

export interface NaiveRun {
  readonly ids: number;
  readonly seconds: number;
  /** Conditional updates rejected because another client got there first. */
  readonly rejections: number;
  /** Timeouts and other failures (each retried). */
  readonly errors: number;
  /** Latency of one ID, retries included. */
  readonly latency: LatencySummary;
}

export interface NaiveConfig {
  readonly clients: number;
  readonly runs: readonly NaiveRun[];
}

export type DrawMode = 'tight' | 'paced';

export interface DrawRun {
  readonly processes: number;
  readonly ids: number;
  /** Measured window (mean over processes). */
  readonly seconds: number;
  /** Sum over processes of IDs ÷ that process's window. */
  readonly idsPerSecond: number;
  /** Latency of `next()`, all processes merged. */
  readonly latency: LatencySummary;
  /** Counters over the measured window (after warm-up). */
  readonly counts: AllocatorCounts;
  /** `next()` calls that waited during the warm-up. */
  readonly warmupWaits: number;
  /** Resident set size of each process at the end, MiB. */
  readonly rssMiB: readonly number[];
  /** `next()` calls of the measured window that threw (the process paused 100 ms and went on). */
  readonly failures: number;
  /** The same during the warm-up. */
  readonly warmupFailures: number;
  /** Their distinct messages (both phases), a few per process. */
  readonly failureMessages: readonly string[];
}

export interface DrawConfig {
  readonly blockSize: number;
  readonly dcRangeSize: number;
  readonly mode: DrawMode;
  /** Paced mode: target IDs per second of each process. */
  readonly ratePerProcess: number | undefined;
  readonly runs: readonly DrawRun[];
}

export interface BurstRun {
  readonly calls: number;
  /** IDs the process held when the burst arrived. */
  readonly heldBefore: number;
  readonly totalMs: number;
  /** Time from the burst's start until each call resolved. */
  readonly latency: LatencySummary;
  readonly counts: AllocatorCounts;
}

export interface BurstResult {
  readonly blockSize: number;
  readonly calls: number;
  readonly runs: readonly BurstRun[];
}

/** One cold start: a fresh `connect()` in one DC, then the first `next()`. */
export interface ColdStartSample {
  readonly dc: string;
  readonly connectMs: number;
  /** `connect()` to the first ID, in a DC with no range of the sequence yet (SERIAL grant). */
  readonly firstIdMs: number;
  /** The same for a second process of that DC, which finds a range installed. */
  readonly firstIdWarmDcMs: number;
}

export interface ClusterResult {
  readonly keyspace: string;
  /** How the allocator processes ran (compiled, or from source under tsx). */
  readonly workerRuntime: string;
  /** Resident memory of each allocator process right after `connect()`, MiB. */
  readonly rssAfterConnectMiB: readonly number[];
  readonly naive: readonly NaiveConfig[];
  readonly draws: readonly DrawConfig[];
  readonly burst: BurstResult;
  /** One array of samples per run. */
  readonly coldStart: readonly (readonly ColdStartSample[])[];
}

export interface RawResults {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly wallSeconds: number;
  readonly command: string;
  readonly settings: BenchSettings;
  readonly machine: MachineInfo;
  readonly inProcess: InProcessResult;
  readonly cluster: ClusterResult;
}
