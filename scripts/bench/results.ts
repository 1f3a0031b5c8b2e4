/**
 * What a benchmark run measured, raw: every run of every phase, before any summary. This is the
 * `raw` part of results.json; the report builder derives every figure and ratio from it.
 */
import type { LatencySummary } from './stats.js';

export const RESULTS_SCHEMA = 'idgen-cass-bench/1';

/** The options a run used, after defaults (see options.ts). */
export interface BenchSettings {
  readonly quick: boolean;
  readonly durationSeconds: number;
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
  readonly naiveClients: number;
  /** Burst size = this × block size. */
  readonly burstFactor: number;
  readonly inProcessSampleMs: number;
  readonly scale: boolean;
  readonly scaleOnly: boolean;
  readonly scaleInstances: readonly number[];
  readonly scaleSeconds: number;
  /** Seconds each instance draws before its measured window (adaptive blocks grow here). */
  readonly scaleWarmupSeconds: number;
  readonly scaleRuns: number;
  /** Fixed-rate mode: IDs per second of each DC, shared evenly by its instances. */
  readonly scaleRatePerDc: number;
  readonly scaleVariants: readonly string[];
  readonly http: boolean;
  readonly httpOnly: boolean;
  readonly httpSeconds: number;
  /** Seconds each load runs unmeasured first (JIT, adaptive blocks). */
  readonly httpWarmupSeconds: number;
  /** autocannon connections per service; the library gets as many concurrent loops per DC. */
  readonly httpConnections: number;
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
  /** e.g. "3 DCs × 3 nodes, Paxos v2, commitlog_sync batch, all on this machine". */
  readonly topology: string;
  /** 1, 5 and 15 minute load averages when the run started. */
  readonly loadAverage: readonly number[];
}

export interface InProcessCandidate {
  readonly key: string;
  readonly label: string;
}

export interface InProcessResult {
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

/** The `stats()` counters of a run, summed over its processes, measured window only. */
export const COUNT_KEYS = [
  'waits',
  'blocksClaimed',
  'rangesGranted',
  'lwtWrites',
  'serialReads',
  'localSerialReads',
  'casRejections',
  'casUnknown',
  'errors',
] as const;
export type AllocatorCounts = Readonly<Record<(typeof COUNT_KEYS)[number], number>>;

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
  readonly seconds: number;
  /** Sum over processes of IDs ÷ that process's window. */
  readonly idsPerSecond: number;
  readonly latency: LatencySummary;
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly rssMiB: readonly number[];
  /** `next()` calls of the measured window that threw (the process paused 100 ms and went on). */
  readonly failures: number;
  readonly warmupFailures: number;
  /** Their distinct messages (both phases), a few per process. */
  readonly failureMessages: readonly string[];
}

export interface DrawConfig {
  readonly blockSize: number;
  readonly dcRangeSize: number;
  readonly mode: DrawMode;
  readonly ratePerProcess: number | undefined;
  readonly runs: readonly DrawRun[];
}

export interface BurstRun {
  readonly calls: number;
  /** IDs the process held when the burst arrived. */
  readonly heldBefore: number;
  readonly totalMs: number;
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
  /** Replicas per DC of the keyspace; absent in results of runs that used 1 everywhere. */
  readonly replication?: Readonly<Record<string, number>> | undefined;
  readonly workerRuntime: string;
  /** Resident memory of each allocator process right after `connect()`, MiB. */
  readonly rssAfterConnectMiB: readonly number[];
  readonly naive: readonly NaiveConfig[];
  readonly draws: readonly DrawConfig[];
  readonly burst: BurstResult;
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
  readonly scale?: ScaleResult | undefined;
  readonly http?: HttpResult | undefined;
}

export interface Timing {
  readonly count: number;
  readonly totalNs: number;
}

/**
 * The DC-state calls of allocator instances, timed at the store: each block claim is a
 * LOCAL_SERIAL read and a LOCAL_SERIAL conditional write; a lost race is a read, a rejected
 * write and the backoff before the next read. Unknown writes: outcome not told (timeouts);
 * backoffs: from a rejected write's answer to the same instance's next DC-state call.
 */
export const TIMING_KEYS = [
  'reads',
  'appliedWrites',
  'rejectedWrites',
  'unknownWrites',
  'backoffs',
] as const;
export type DcStateTimings = Readonly<Record<(typeof TIMING_KEYS)[number], Timing>>;

/**
 * `tight`: `await next()` in a loop per instance; `rate`: a fixed total rate per DC, split
 * evenly; `count`: tight and untimed, at N = 1 only, for the rate against the in-process loop.
 */
export type ScaleMode = 'tight' | 'rate' | 'count';

export interface ScaleVariantInfo {
  readonly key: string;
  readonly label: string;
  readonly adaptive: boolean;
  /**
   * The options given to `createSequence` (adaptive ones only where this build has them); the
   * domain, where one is given, by name.
   */
  readonly options: Readonly<Record<string, number | string>>;
  /** The numeric settings the sequence got, defaults filled in (`claimIntervalMs`, …). */
  readonly settings: Readonly<Record<string, number>>;
}

export interface ScaleDcRun {
  readonly dc: string;
  readonly instances: number;
  readonly ids: number;
  readonly idsPerSecond: number;
  readonly seconds: number;
  /** IDs that came into the instances during the window: drawn plus the change in IDs held. */
  readonly claimedIds: number;
  /** Each instance's last block size at the window's end (empty where `stats()` lacks it). */
  readonly lastBlockSizes: readonly number[];
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly failures: number;
  readonly warmupFailures: number;
  readonly dcState: DcStateTimings;
  /**
   * The latest first ID of the DC's instances that drew one, ms after they all started on the
   * fresh sequence (null: none drew); absent in results of older builds, as the two below.
   */
  readonly slowestFirstIdMs?: number | null;
  /** Instances of the DC that drew no ID in the whole run. */
  readonly withoutId?: number;
  /** Grant reads at SERIAL of the DC's instances in the whole run, warm-up included. */
  readonly serialReads?: number;
}

export interface ScaleRun {
  readonly processes: number;
  readonly dcs: readonly ScaleDcRun[];
  readonly latency: LatencySummary;
  readonly failureMessages: readonly string[];
  /** CPU seconds the worker processes used in the window, summed. */
  readonly workerCpuSeconds: number;
  /** Share of the machine's cores busy during the window (0–1), from `os.cpus()`. */
  readonly machineBusy: number;
  /**
   * How late the worker processes' event loops ran in the window: the largest p99 and the
   * largest maximum of any process, ms. Null if none took a sample; absent in older results.
   */
  readonly loopDelay?: { readonly p99Ms: number; readonly maxMs: number } | null;
}

export interface ScaleConfig {
  readonly mode: ScaleMode;
  readonly variant: string;
  readonly instancesPerDc: number;
  readonly ratePerInstance: number | undefined;
  readonly runs: readonly ScaleRun[];
}

export interface ScaleResult {
  readonly variants: readonly ScaleVariantInfo[];
  /** Variants that could not run, with why (results of builds without adaptive sizing). */
  readonly skipped: readonly string[];
  readonly layout: string;
  readonly configs: readonly ScaleConfig[];
}

/**
 * One DC's share of one load of the HTTP phase: its `idgen-cass serve` under autocannon, or the
 * library called in the benchmark's process.
 */
export interface HttpDcLoad {
  readonly dc: string;
  /** Requests answered 2xx (library: calls that returned IDs), measured window only. */
  readonly ok: number;
  /** IDs those answers held. */
  readonly ids: number;
  readonly seconds: number;
  /** Requests answered with another status (library: calls that threw). */
  readonly non2xx: number;
  /** Connection errors and timeouts (autocannon's `errors`); 0 for the library. */
  readonly errors: number;
  /** Latency of the 2xx answers (library: of the calls that returned), ns. */
  readonly latency: LatencySummary;
  /** A few distinct error codes or messages of the failed requests or calls. */
  readonly failureMessages: readonly string[];
}

export interface HttpLoad {
  readonly dcs: readonly HttpDcLoad[];
  readonly latency: LatencySummary;
}

/** One run of one count: the service and the library, measured one after the other. */
export interface HttpRun {
  readonly service: HttpLoad;
  readonly library: HttpLoad;
}

export interface HttpCountResult {
  /** IDs per request (`?count=`) and per library call (`next()` for 1, `take(n)` above). */
  readonly count: number;
  readonly runs: readonly HttpRun[];
}

export interface HttpServiceInfo {
  readonly dc: string;
  /** From spawning it to its first `/readyz` 200, ms. */
  readonly readyMs: number;
  /** Its exit code after SIGTERM (0 expected); null when it had to be killed or never ran. */
  readonly exitCode: number | null;
}

export interface HttpResult {
  readonly sequenceOptions: Readonly<Record<string, string | number>>;
  readonly serviceRuntime: string;
  readonly autocannon: string;
  readonly services: readonly HttpServiceInfo[];
  readonly counts: readonly HttpCountResult[];
  /**
   * The IDs the services handed out in the warm-ups (every DC, count and run; the measured
   * windows read no body), and how many of them repeated.
   */
  readonly uniqueness: { readonly ids: number; readonly duplicates: number };
  /** Why the phase stopped early, when it did; what it measured before is kept. */
  readonly failure?: string | undefined;
}
