/** The `raw` part of results.json: every run of every phase; the report derives all else. */
import type { LatencySummary } from './stats.js';

export const RESULTS_SCHEMA = 'idgen-cass-bench/1';

/** Progress, one line at a time, on stderr. */
export type { Log } from '../cluster/nodes.js';

export interface BenchSettings {
  readonly quick: boolean;
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly runs: number;
  readonly processesPerDc: number;
  readonly blockSizes: readonly number[];
  readonly steadyBlockSize: number;
  readonly dcRangeBlocks: number;
  readonly pacedBlocksPerSecond: number;
  readonly naiveClients: number;
  readonly burstFactor: number;
  readonly inProcessSampleMs: number;
  readonly scale: boolean;
  readonly scaleOnly: boolean;
  readonly scaleInstances: readonly number[];
  readonly scaleSeconds: number;
  readonly scaleWarmupSeconds: number;
  readonly scaleRuns: number;
  readonly scaleRatePerDc: number;
  readonly http: boolean;
  readonly httpOnly: boolean;
  readonly httpSeconds: number;
  readonly httpWarmupSeconds: number;
  readonly httpConnections: number;
  readonly out: string;
}

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly cassandra: Readonly<Record<string, string>>;
  readonly topology: string;
  readonly loadAverage: readonly number[];
}

export type InProcessCandidate = Readonly<{ key: string; label: string }>;

export interface InProcessResult {
  readonly idgenStore: string;
  readonly idgenBlockSize: number;
  readonly candidates: readonly InProcessCandidate[];
  readonly runs: readonly Readonly<Record<string, number>>[];
  readonly refillsInLoops: number;
  readonly snowflakeRepeats: Readonly<{ generated: number; repeated: number }>;
  readonly timerPairNs: number;
}

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
  readonly rejections: number;
  readonly errors: number;
  readonly latency: LatencySummary;
}

export type NaiveConfig = Readonly<{ clients: number; runs: readonly NaiveRun[] }>;

export type DrawMode = 'tight' | 'paced';

export interface DrawRun {
  readonly processes: number;
  readonly ids: number;
  readonly seconds: number;
  readonly idsPerSecond: number;
  readonly latency: LatencySummary;
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly rssMiB: readonly number[];
  readonly failures: number;
  readonly warmupFailures: number;
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
  readonly heldBefore: number;
  readonly totalMs: number;
  readonly latency: LatencySummary;
  readonly counts: AllocatorCounts;
}

export type BurstResult = Readonly<{ blockSize: number; calls: number; runs: readonly BurstRun[] }>;

/** One cold start: a fresh `connect()` in one DC, then the first `next()`. */
export interface ColdStartSample {
  readonly dc: string;
  readonly connectMs: number;
  readonly firstIdMs: number;
  readonly firstIdWarmDcMs: number;
}

export interface ClusterResult {
  readonly keyspace: string;
  readonly replication?: Readonly<Record<string, number>> | undefined;
  readonly workerRuntime: string;
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

export type Timing = Readonly<{ count: number; totalNs: number }>;

/**
 * DC-state calls timed at the store; a backoff runs from a rejected write's answer to the same
 * instance's next DC-state call.
 */
export const TIMING_KEYS = [
  'reads',
  'appliedWrites',
  'rejectedWrites',
  'unknownWrites',
  'backoffs',
] as const;
export type DcStateTimings = Readonly<Record<(typeof TIMING_KEYS)[number], Timing>>;

/** `rate`: a fixed total rate per DC; `count`: tight and untimed, at N = 1 only. */
export type ScaleMode = 'tight' | 'rate' | 'count';

/** Optional fields are absent in results of older builds. */
export interface ScaleDcRun {
  readonly dc: string;
  readonly instances: number;
  readonly ids: number;
  readonly idsPerSecond: number;
  readonly seconds: number;
  readonly claimedIds: number;
  readonly lastBlockSizes: readonly number[];
  readonly counts: AllocatorCounts;
  readonly warmupWaits: number;
  readonly failures: number;
  readonly warmupFailures: number;
  readonly dcState: DcStateTimings;
  readonly slowestFirstIdMs?: number | null;
  readonly withoutId?: number;
  readonly serialReads?: number;
}

export interface ScaleRun {
  readonly processes: number;
  readonly dcs: readonly ScaleDcRun[];
  readonly latency: LatencySummary;
  readonly failureMessages: readonly string[];
  readonly workerCpuSeconds: number;
  readonly machineBusy: number;
  readonly loopDelay?: { readonly p99Ms: number; readonly maxMs: number } | null;
}

export interface ScaleConfig {
  readonly mode: ScaleMode;
  /** The block policy of results of runs that compared several; absent: the defaults. */
  readonly variant?: string;
  readonly instancesPerDc: number;
  readonly ratePerInstance: number | undefined;
  readonly runs: readonly ScaleRun[];
}

export interface ScaleResult {
  readonly layout: string;
  /** The sequence settings stored with the defaults, numeric ones. */
  readonly settings?: Readonly<Record<string, number>>;
  /** Instead of `settings` in results of runs that compared block policies. */
  readonly variants?: readonly Readonly<{ key: string; settings: Record<string, number> }>[];
  readonly configs: readonly ScaleConfig[];
}

export interface HttpDcLoad {
  readonly dc: string;
  readonly ok: number;
  readonly ids: number;
  readonly seconds: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly latency: LatencySummary;
  readonly failureMessages: readonly string[];
}

export type HttpLoad = Readonly<{ dcs: readonly HttpDcLoad[]; latency: LatencySummary }>;

export type HttpRun = Readonly<{ service: HttpLoad; library: HttpLoad }>;

export type HttpCountResult = Readonly<{ count: number; runs: readonly HttpRun[] }>;

export type HttpServiceInfo = Readonly<{ dc: string; readyMs: number; exitCode: number | null }>;

/** One service with a small `maxPendingRequests` under far more connections than that. */
export interface HttpOverload {
  readonly dc: string;
  readonly maxPendingRequests: number;
  readonly connections: number;
  readonly count: number;
  readonly seconds: number;
  readonly ok: number;
  /** Answered 503 `IDGEN_OVERLOADED` with a `Retry-After` header. */
  readonly overloaded: number;
  /** Every other non-2xx answer, and connection errors. */
  readonly other: number;
  readonly failureMessages: readonly string[];
  readonly rssSampleMs: number;
  /** The service's RSS, sampled during the second before the load, then during it. */
  readonly rssBeforeMiB: readonly number[];
  readonly rssMiB: readonly number[];
  /** Of the IDs in 2xx answers, on a sequence of its own. */
  readonly uniqueness: { readonly ids: number; readonly duplicates: number };
}

export interface HttpResult {
  readonly sequenceOptions: Readonly<Record<string, string | number>>;
  readonly serviceRuntime: string;
  readonly autocannon: string;
  readonly services: readonly HttpServiceInfo[];
  readonly counts: readonly HttpCountResult[];
  /** Absent in results of older builds, and when the phase stopped before it. */
  readonly overload?: HttpOverload | undefined;
  readonly uniqueness: { readonly ids: number; readonly duplicates: number };
  readonly failure?: string | undefined;
}
