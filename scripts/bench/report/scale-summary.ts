/**
 * The summary of the scale phase: one row per mode, N and block policy (every figure a median
 * of runs with its spread), where throughput stops growing with N and what was saturated
 * there, the measured cost of a claim and of a lost race, and how many processes one DC-state
 * partition serves. Pure.
 */
import type {
  DcStateTimings,
  InProcessResult,
  ScaleConfig,
  ScaleMode,
  ScaleResult,
  ScaleRun,
} from '../results.js';
import { figure, latencyFigures, sum, type Figure, type LatencyFigures } from '../stats.js';
import { addTimings, meanNs } from '../timings.js';

export interface ScaleRow {
  readonly mode: ScaleMode;
  readonly variant: string;
  readonly label: string;
  readonly adaptive: boolean;
  readonly instancesPerDc: number;
  /** Rate mode: the target of each instance, IDs/s. */
  readonly ratePerInstance: number | undefined;
  readonly dcs: number;
  /** All DCs together. */
  readonly idsPerSecond: Figure;
  readonly idsPerSecondPerInstance: Figure;
  /** Rate mode: IDs/s ÷ the target of all DCs. */
  readonly shareOfTarget: Figure;
  /** Blocks claimed per second on one DC-state partition, mean over the DCs. */
  readonly claimsPerSecondPerDc: Figure;
  /** The same on the busiest DC's partition. */
  readonly busiestClaimsPerSecond: Figure;
  /** CAS retries (lost races) per block claimed, all DCs. */
  readonly retriesPerClaim: Figure;
  readonly latency: LatencyFigures;
  /** `next()` calls that waited in the measured window, all DCs. */
  readonly waits: Figure;
  readonly waitsTotal: number;
  /** `next()` calls that threw, summed over runs. */
  readonly failures: number;
  readonly warmupFailures: number;
  /** Failed operations in the measured windows (`stats().errors`), summed over runs. */
  readonly storeErrors: number;
  /** Conditional writes with an unknown outcome, summed over runs. */
  readonly casUnknown: number;
  /** IDs claimed ÷ blocks claimed: the block size the policy chose, on average. */
  readonly meanBlockSize: Figure;
  /** Smallest and largest last block of any instance at the window's end (NaN if not reported). */
  readonly lastBlockMin: Figure;
  readonly lastBlockMax: Figure;
  /** One claim's DC-state read plus its applied write, mean. */
  readonly claimNs: Figure;
  /** One lost race: the rejected write and the backoff before the next attempt, mean. */
  readonly lostRaceNs: Figure;
  /** A DC-state read, an applied write and a backoff after a lost race, each a mean. */
  readonly readNs: Figure;
  readonly appliedWriteNs: Figure;
  readonly backoffNs: Figure;
  /**
   * How late the allocator processes' event loops ran: the worst process's p99 and maximum, ms
   * (NaN where the results lack it).
   */
  readonly loopDelayP99Ms: Figure;
  readonly loopDelayMaxMs: Figure;
  /** Share of the machine's cores busy in the window. */
  readonly machineBusy: Figure;
  /** Cores the allocator processes used in the window. */
  readonly workerCores: Figure;
  /**
   * The latest first ID of any instance that drew one, ms after they all started on the fresh
   * sequence (NaN where the results lack it or none drew): how long the cold start took.
   */
  readonly slowestFirstIdMs: Figure;
  /** Instances that drew no ID in a whole run, summed over runs. */
  readonly withoutId: number;
  /** Grant reads at SERIAL (`stats().serialReads`) per instance in the whole run, warm-up included. */
  readonly serialReadsPerInstance: Figure;
  readonly failureMessages: readonly string[];
}

/** Where one policy's throughput stops growing with N, and what was saturated there. */
export interface ScalingLimit {
  readonly mode: ScaleMode;
  readonly variant: string;
  readonly label: string;
  /** IDs/s (median) at each N, ascending. */
  readonly points: readonly { readonly n: number; readonly idsPerSecond: number }[];
  /** The last N before the first step that gained less than {@link GROWTH}; undefined: it kept growing. */
  readonly stopsAt: number | undefined;
  /** The N after it, whose row says why. */
  readonly next: number | undefined;
  readonly cause: LimitCause | undefined;
}

export type LimitCause = 'partition' | 'cpu' | 'neither';

/** One "processes per partition" estimate at one claim interval. */
export interface PartitionEstimate {
  readonly claimIntervalSeconds: number;
  /** The most claims/s measured on one partition × the interval. */
  readonly processes: number;
  /** The claims/s the measured costs allow one partition × the interval. */
  readonly processesFromCosts: number;
}

export interface ScaleSummary {
  readonly rows: readonly ScaleRow[];
  readonly limits: readonly ScalingLimit[];
  /** The most claims per second one partition completed, and where. */
  readonly partitionMax:
    | { readonly claimsPerSecond: number; readonly row: ScaleRow; readonly retriesPerClaim: number }
    | undefined;
  /** The smallest N measured, where claims contend least. */
  readonly uncontendedAt: number;
  /** Claim cost there: every run at that N pooled. */
  readonly uncontendedClaimNs: number;
  /** Lost-race cost, every run that lost one pooled. */
  readonly lostRaceNs: number;
  /** The part of it that occupies the partition: the rejected write. */
  readonly lostRaceRoundNs: number;
  readonly lostRaces: number;
  /**
   * Claims/s one partition allows if its rounds run one at a time: 1 ÷ (claim cost + r × the
   * partition's part of a lost race), r the CAS retries per claim where the most were measured.
   */
  readonly claimsPerSecondFromCosts: number;
  readonly estimates: readonly PartitionEstimate[];
  /** Per policy: tight IDs/s of one instance at N = 1 ÷ in-process `await next()` IDs/s, per run. */
  readonly tightVsInProcess: readonly {
    readonly variant: string;
    readonly label: string;
    readonly adaptive: boolean;
    /** From the untimed loop (`count`); false: from the timed tight loop (older runs). */
    readonly untimed: boolean;
    readonly idsPerSecondPerInstance: Figure;
    /** `next()` calls that waited in the window, all DCs. */
    readonly waits: Figure;
    readonly value: Figure;
  }[];
}

/** A step in N must raise IDs/s by at least this factor to count as growth. */
export const GROWTH = 1.1;
/** Above this share of the machine's cores busy, the CPU is taken as the limit. */
export const CPU_SATURATED = 0.85;
/** Claims per second within this share of the measured maximum: the partition is the limit. */
export const PARTITION_SATURATED = 0.8;
/** Claim intervals the estimate is given for, seconds (plus the adaptive default, if any). */
export const ESTIMATE_INTERVALS_SECONDS: readonly number[] = [1, 10, 60];

const rate = (part: number, seconds: number): number => (seconds > 0 ? part / seconds : NaN);

/** Claims per second of each DC's partition in one run. */
function claimsPerSecond(run: ScaleRun): number[] {
  return run.dcs.map((d) => rate(d.counts.blocksClaimed, d.seconds));
}

function pooled(runs: readonly ScaleRun[]): DcStateTimings {
  return addTimings(runs.flatMap((r) => r.dcs.map((d) => d.dcState)));
}

/** Read plus applied write, mean; NaN when no claim was timed. */
export function claimCostNs(t: DcStateTimings): number {
  return meanNs(t.reads) + meanNs(t.appliedWrites);
}

/**
 * Rejected write plus backoff, mean; NaN when no race was lost. No read: a claim that lost goes
 * on from the state its rejected write returned.
 */
export function lostRaceCostNs(t: DcStateTimings): number {
  const backoff = t.backoffs.count > 0 ? meanNs(t.backoffs) : 0;
  return meanNs(t.rejectedWrites) + backoff;
}

/** `pick` (min or max) of every instance's last block in `run`; NaN when none was reported. */
function extreme(run: ScaleRun, pick: (...values: number[]) => number): number {
  const sizes = run.dcs.flatMap((d) => d.lastBlockSizes);
  return sizes.length === 0 ? NaN : pick(...sizes);
}

function summarizeRow(config: ScaleConfig, scale: ScaleResult): ScaleRow {
  const { runs } = config;
  const variant = scale.variants.find((v) => v.key === config.variant);
  const all = (run: ScaleRun, pick: (d: ScaleRun['dcs'][number]) => number) =>
    sum(run.dcs.map(pick));
  const total = (run: ScaleRun) => all(run, (d) => d.idsPerSecond);
  const dcs = runs[0]?.dcs.length ?? 0;
  return {
    mode: config.mode,
    variant: config.variant,
    label: variant?.label ?? config.variant,
    adaptive: variant?.adaptive ?? false,
    instancesPerDc: config.instancesPerDc,
    ratePerInstance: config.ratePerInstance,
    dcs,
    idsPerSecond: figure(runs.map(total)),
    idsPerSecondPerInstance: figure(runs.map((r) => total(r) / all(r, (d) => d.instances))),
    shareOfTarget: figure(
      runs.map((r) =>
        config.ratePerInstance === undefined
          ? NaN
          : total(r) / (config.ratePerInstance * all(r, (d) => d.instances)),
      ),
    ),
    claimsPerSecondPerDc: figure(runs.map((r) => sum(claimsPerSecond(r)) / r.dcs.length)),
    busiestClaimsPerSecond: figure(runs.map((r) => Math.max(...claimsPerSecond(r)))),
    retriesPerClaim: figure(
      runs.map((r) => {
        const claims = all(r, (d) => d.counts.blocksClaimed);
        return claims > 0 ? all(r, (d) => d.counts.casRejections) / claims : NaN;
      }),
    ),
    latency: latencyFigures(runs),
    waits: figure(runs.map((r) => all(r, (d) => d.counts.waits))),
    waitsTotal: sum(runs.map((r) => all(r, (d) => d.counts.waits))),
    failures: sum(runs.map((r) => all(r, (d) => d.failures))),
    warmupFailures: sum(runs.map((r) => all(r, (d) => d.warmupFailures))),
    storeErrors: sum(runs.map((r) => all(r, (d) => d.counts.errors))),
    casUnknown: sum(runs.map((r) => all(r, (d) => d.counts.casUnknown))),
    meanBlockSize: figure(
      runs.map((r) => {
        const claims = all(r, (d) => d.counts.blocksClaimed);
        return claims > 0 ? all(r, (d) => d.claimedIds) / claims : NaN;
      }),
    ),
    lastBlockMin: figure(runs.map((r) => extreme(r, Math.min))),
    lastBlockMax: figure(runs.map((r) => extreme(r, Math.max))),
    claimNs: figure(runs.map((r) => claimCostNs(pooled([r])))),
    lostRaceNs: figure(runs.map((r) => lostRaceCostNs(pooled([r])))),
    readNs: figure(runs.map((r) => meanNs(pooled([r]).reads))),
    appliedWriteNs: figure(runs.map((r) => meanNs(pooled([r]).appliedWrites))),
    backoffNs: figure(runs.map((r) => meanNs(pooled([r]).backoffs))),
    loopDelayP99Ms: figure(runs.map((r) => r.loopDelay?.p99Ms ?? NaN)),
    loopDelayMaxMs: figure(runs.map((r) => r.loopDelay?.maxMs ?? NaN)),
    machineBusy: figure(runs.map((r) => r.machineBusy)),
    workerCores: figure(
      runs.map((r) => r.workerCpuSeconds / (sum(r.dcs.map((d) => d.seconds)) / r.dcs.length)),
    ),
    slowestFirstIdMs: figure(runs.map(slowestFirstIdMs)),
    withoutId: sum(runs.map((r) => all(r, (d) => d.withoutId ?? 0))),
    serialReadsPerInstance: figure(
      runs.map((r) => all(r, (d) => d.serialReads ?? NaN) / all(r, (d) => d.instances)),
    ),
    failureMessages: [...new Set(runs.flatMap((r) => r.failureMessages))],
  };
}

/** A run's latest first ID over its DCs, ms; NaN if no DC reports one. */
function slowestFirstIdMs(run: ScaleRun): number {
  const known = run.dcs.flatMap((d) =>
    d.slowestFirstIdMs === undefined || d.slowestFirstIdMs === null ? [] : [d.slowestFirstIdMs],
  );
  return known.length === 0 ? NaN : Math.max(...known);
}

/**
 * The last N before throughput stopped growing by {@link GROWTH} per step, from (N, IDs/s)
 * points; undefined when every step grew.
 */
export function stopsScalingAt(
  points: readonly { readonly n: number; readonly idsPerSecond: number }[],
): { stopsAt: number; next: number } | undefined {
  const sorted = [...points].sort((a, b) => a.n - b.n);
  for (let i = 0; i + 1 < sorted.length; i++) {
    if (!(sorted[i + 1]!.idsPerSecond >= GROWTH * sorted[i]!.idsPerSecond)) {
      return { stopsAt: sorted[i]!.n, next: sorted[i + 1]!.n };
    }
  }
  return undefined;
}

/**
 * What was saturated at a row where throughput stopped growing: the DC-state partition (lost
 * races, calls that threw, or claims near the most any partition completed), else the CPU
 * (the machine's cores nearly all busy), else neither.
 */
export function limitCause(row: ScaleRow, partitionMaxClaimsPerSecond: number): LimitCause {
  if (
    row.failures + row.warmupFailures > 0 ||
    row.retriesPerClaim.median >= 1 ||
    row.busiestClaimsPerSecond.median >= PARTITION_SATURATED * partitionMaxClaimsPerSecond
  ) {
    return 'partition';
  }
  if (row.machineBusy.median >= CPU_SATURATED) return 'cpu';
  return 'neither';
}

/**
 * Claims/s of a partition whose rounds run one at a time, each claim taking `claimNs` and each
 * of its `retriesPerClaim` lost races another `lostRoundNs`.
 */
export function claimsPerSecondFromCosts(
  claimNs: number,
  retriesPerClaim: number,
  lostRoundNs: number,
): number {
  const races = Number.isFinite(retriesPerClaim) && retriesPerClaim > 0 ? retriesPerClaim : 0;
  return 1e9 / (claimNs + (races > 0 ? races * lostRoundNs : 0));
}

/**
 * Processes one partition serves at each claim interval: claims/s it completed at most (and
 * claims/s its costs allow) × the interval.
 */
export function partitionEstimates(
  claimsPerSecond: number,
  fromCosts: number,
  intervalsSeconds: readonly number[],
): PartitionEstimate[] {
  return [...new Set(intervalsSeconds)]
    .sort((a, b) => a - b)
    .map((claimIntervalSeconds) => ({
      claimIntervalSeconds,
      processes: Math.floor(claimsPerSecond * claimIntervalSeconds),
      processesFromCosts: Math.floor(fromCosts * claimIntervalSeconds),
    }));
}

export function summarizeScale(scale: ScaleResult, inProcess: InProcessResult): ScaleSummary {
  const adaptiveClaimIntervalMs = scale.variants.find((v) => v.adaptive)?.settings[
    'claimIntervalMs'
  ];
  const rows = scale.configs.map((c) => summarizeRow(c, scale));
  let partitionMax: ScaleSummary['partitionMax'];
  for (const row of rows) {
    const claims = row.busiestClaimsPerSecond.median;
    if (
      Number.isFinite(claims) &&
      (partitionMax === undefined || claims > partitionMax.claimsPerSecond)
    ) {
      partitionMax = { claimsPerSecond: claims, row, retriesPerClaim: row.retriesPerClaim.median };
    }
  }
  const limits: ScalingLimit[] = [];
  for (const mode of ['tight', 'rate'] as const) {
    for (const variant of scale.variants) {
      const mine = rows
        .filter((r) => r.mode === mode && r.variant === variant.key)
        .sort((a, b) => a.instancesPerDc - b.instancesPerDc);
      if (mine.length === 0) continue;
      const points = mine.map((r) => ({
        n: r.instancesPerDc,
        idsPerSecond: r.idsPerSecond.median,
      }));
      const stop = mode === 'tight' ? stopsScalingAt(points) : undefined;
      const nextRow = mine.find((r) => r.instancesPerDc === stop?.next);
      limits.push({
        mode,
        variant: variant.key,
        label: variant.label,
        points,
        stopsAt: stop?.stopsAt,
        next: stop?.next,
        cause:
          nextRow === undefined
            ? undefined
            : limitCause(nextRow, partitionMax?.claimsPerSecond ?? Infinity),
      });
    }
  }
  const uncontendedAt = Math.min(...scale.configs.map((c) => c.instancesPerDc));
  const leastContended = scale.configs.filter((c) => c.instancesPerDc === uncontendedAt);
  const everyRun = scale.configs.flatMap((c) => c.runs);
  const lost = pooled(everyRun);
  const intervals = [...ESTIMATE_INTERVALS_SECONDS];
  if (adaptiveClaimIntervalMs !== undefined) intervals.push(adaptiveClaimIntervalMs / 1000);
  const inProcessNext = inProcess.runs.map((run) => 1e9 / (run['next'] ?? NaN));
  const tightVsInProcess = scale.variants.flatMap((variant) => {
    // The untimed loop where the run has it: the in-process loop times its loops, not its calls.
    const at1 = (mode: ScaleMode) =>
      scale.configs.find(
        (c) => c.mode === mode && c.variant === variant.key && c.instancesPerDc === 1,
      );
    const config = at1('count') ?? at1('tight');
    if (config === undefined) return [];
    const n = Math.min(config.runs.length, inProcessNext.length);
    const perInstance = (run: ScaleRun) =>
      sum(run.dcs.map((d) => d.idsPerSecond)) / sum(run.dcs.map((d) => d.instances));
    return [
      {
        variant: variant.key,
        label: variant.label,
        adaptive: variant.adaptive,
        untimed: config.mode === 'count',
        idsPerSecondPerInstance: figure(config.runs.slice(0, n).map(perInstance)),
        waits: figure(config.runs.slice(0, n).map((r) => sum(r.dcs.map((d) => d.counts.waits)))),
        value: figure(
          Array.from({ length: n }, (_, i) => perInstance(config.runs[i]!) / inProcessNext[i]!),
        ),
      },
    ];
  });
  const uncontendedClaimNs = claimCostNs(pooled(leastContended.flatMap((c) => c.runs)));
  const lostRaceRoundNs = meanNs(lost.rejectedWrites);
  const fromCosts = claimsPerSecondFromCosts(
    uncontendedClaimNs,
    partitionMax?.retriesPerClaim ?? 0,
    lostRaceRoundNs,
  );
  return {
    rows,
    limits,
    partitionMax,
    uncontendedAt,
    uncontendedClaimNs,
    lostRaceNs: lostRaceCostNs(lost),
    lostRaceRoundNs,
    lostRaces: lost.rejectedWrites.count,
    claimsPerSecondFromCosts: fromCosts,
    estimates:
      partitionMax === undefined
        ? []
        : partitionEstimates(partitionMax.claimsPerSecond, fromCosts, intervals),
    tightVsInProcess,
  };
}
