/**
 * The scale phase summarised: a row per mode, N and block policy; where throughput stops growing
 * and what was saturated; claim and lost-race costs; processes one DC-state partition serves.
 */
import type {
  DcStateTimings,
  InProcessResult,
  ScaleConfig,
  ScaleDcRun,
  ScaleMode,
  ScaleResult,
  ScaleRun,
} from '../results.js';
import { figure, latencyFigures, sum } from '../stats.js';
import { addTimings, meanNs } from '../timings.js';

export type ScaleRow = Readonly<ReturnType<typeof summarizeRow>>;
export type ScaleSummary = Readonly<ReturnType<typeof summarizeScale>>;
export type LimitCause = 'partition' | 'cpu' | 'neither';
export type ScalingLimit = ReturnType<typeof scalingLimits>[number];

interface Point {
  readonly n: number;
  readonly idsPerSecond: number;
}

const LIMIT_MODES: readonly ScaleMode[] = ['tight', 'rate'];
/** A step in N must raise IDs/s by at least this factor to count as growth. */
export const GROWTH = 1.1;
/** Above this share of the machine's cores busy, the CPU is taken as the limit. */
export const CPU_SATURATED = 0.85;
/** Claims per second within this share of the measured maximum: the partition is the limit. */
export const PARTITION_SATURATED = 0.8;
/** Claim intervals of the estimate, seconds (plus the adaptive default, if any). */
export const ESTIMATE_INTERVALS_SECONDS: readonly number[] = [1, 10, 60];

const rate = (part: number, seconds: number): number => (seconds > 0 ? part / seconds : NaN);
const claimsPerSecond = (run: ScaleRun): number[] =>
  run.dcs.map((d) => rate(d.counts.blocksClaimed, d.seconds));
const pooled = (runs: readonly ScaleRun[]): DcStateTimings =>
  addTimings(runs.flatMap((r) => r.dcs.map((d) => d.dcState)));
const all = (run: ScaleRun, pick: (d: ScaleDcRun) => number): number => sum(run.dcs.map(pick));

export function claimCostNs(t: DcStateTimings): number {
  return meanNs(t.reads) + meanNs(t.appliedWrites);
}

/** No read: a claim that lost goes on from the state its rejected write returned. */
export function lostRaceCostNs(t: DcStateTimings): number {
  return meanNs(t.rejectedWrites) + (t.backoffs.count > 0 ? meanNs(t.backoffs) : 0);
}

function extreme(run: ScaleRun, pick: (...values: number[]) => number): number {
  const sizes = run.dcs.flatMap((d) => d.lastBlockSizes);
  return sizes.length === 0 ? NaN : pick(...sizes);
}

function slowestFirstIdMs(run: ScaleRun): number {
  const known = run.dcs.map((d) => d.slowestFirstIdMs ?? NaN).filter((ms) => !Number.isNaN(ms));
  return known.length === 0 ? NaN : Math.max(...known);
}

function summarizeRow(config: ScaleConfig, scale: ScaleResult) {
  const { runs, ratePerInstance } = config;
  const variant = scale.variants.find((v) => v.key === config.variant);
  const over = (f: (run: ScaleRun) => number) => figure(runs.map(f));
  const total = (pick: (d: ScaleDcRun) => number) => sum(runs.map((r) => all(r, pick)));
  const timed = (f: (t: DcStateTimings) => number) => over((r) => f(pooled([r])));
  const ids = (r: ScaleRun) => all(r, (d) => d.idsPerSecond);
  const instances = (r: ScaleRun) => all(r, (d) => d.instances);
  const perClaim = (r: ScaleRun, of: (d: ScaleDcRun) => number) => {
    const claims = all(r, (d) => d.counts.blocksClaimed);
    return claims > 0 ? all(r, of) / claims : NaN;
  };
  return {
    mode: config.mode,
    variant: config.variant,
    label: variant?.label ?? config.variant,
    adaptive: variant?.adaptive ?? false,
    instancesPerDc: config.instancesPerDc,
    ratePerInstance,
    dcs: runs[0]?.dcs.length ?? 0,
    idsPerSecond: over(ids),
    idsPerSecondPerInstance: over((r) => ids(r) / instances(r)),
    shareOfTarget: over((r) =>
      ratePerInstance === undefined ? NaN : ids(r) / (ratePerInstance * instances(r)),
    ),
    claimsPerSecondPerDc: over((r) => sum(claimsPerSecond(r)) / r.dcs.length),
    busiestClaimsPerSecond: over((r) => Math.max(...claimsPerSecond(r))),
    retriesPerClaim: over((r) => perClaim(r, (d) => d.counts.casRejections)),
    latency: latencyFigures(runs),
    waits: over((r) => all(r, (d) => d.counts.waits)),
    waitsTotal: total((d) => d.counts.waits),
    failures: total((d) => d.failures),
    warmupFailures: total((d) => d.warmupFailures),
    storeErrors: total((d) => d.counts.errors),
    casUnknown: total((d) => d.counts.casUnknown),
    meanBlockSize: over((r) => perClaim(r, (d) => d.claimedIds)),
    lastBlockMin: over((r) => extreme(r, Math.min)),
    lastBlockMax: over((r) => extreme(r, Math.max)),
    claimNs: timed(claimCostNs),
    lostRaceNs: timed(lostRaceCostNs),
    readNs: timed((t) => meanNs(t.reads)),
    appliedWriteNs: timed((t) => meanNs(t.appliedWrites)),
    backoffNs: timed((t) => meanNs(t.backoffs)),
    loopDelayP99Ms: over((r) => r.loopDelay?.p99Ms ?? NaN),
    loopDelayMaxMs: over((r) => r.loopDelay?.maxMs ?? NaN),
    machineBusy: over((r) => r.machineBusy),
    workerCores: over(
      (r) => r.workerCpuSeconds / (sum(r.dcs.map((d) => d.seconds)) / r.dcs.length),
    ),
    slowestFirstIdMs: over(slowestFirstIdMs),
    withoutId: total((d) => d.withoutId ?? 0),
    serialReadsPerInstance: over((r) => all(r, (d) => d.serialReads ?? NaN) / instances(r)),
    failureMessages: [...new Set(runs.flatMap((r) => r.failureMessages))],
  };
}

/** The last N before throughput stopped growing by {@link GROWTH}; undefined if it kept growing. */
export function stopsScalingAt(
  points: readonly Point[],
): { stopsAt: number; next: number } | undefined {
  const sorted = [...points].sort((a, b) => a.n - b.n);
  for (let i = 0; i + 1 < sorted.length; i++) {
    if (!(sorted[i + 1]!.idsPerSecond >= GROWTH * sorted[i]!.idsPerSecond)) {
      return { stopsAt: sorted[i]!.n, next: sorted[i + 1]!.n };
    }
  }
  return undefined;
}

/** What was saturated where throughput stopped growing: the partition, the CPU or neither. */
export function limitCause(row: ScaleRow, partitionMaxClaimsPerSecond: number): LimitCause {
  if (
    row.failures + row.warmupFailures > 0 ||
    row.retriesPerClaim.median >= 1 ||
    row.busiestClaimsPerSecond.median >= PARTITION_SATURATED * partitionMaxClaimsPerSecond
  ) {
    return 'partition';
  }
  return row.machineBusy.median >= CPU_SATURATED ? 'cpu' : 'neither';
}

/** Claims/s of a partition whose rounds run one at a time. */
export function claimsPerSecondFromCosts(
  claimNs: number,
  retriesPerClaim: number,
  lostRoundNs: number,
): number {
  const races = Number.isFinite(retriesPerClaim) && retriesPerClaim > 0 ? retriesPerClaim : 0;
  return 1e9 / (claimNs + (races > 0 ? races * lostRoundNs : 0));
}

/** Processes one partition serves at each claim interval: claims/s × the interval. */
export function partitionEstimates(
  claimsPerSecond: number,
  fromCosts: number,
  intervalsSeconds: readonly number[],
) {
  return [...new Set(intervalsSeconds)]
    .sort((a, b) => a - b)
    .map((claimIntervalSeconds) => ({
      claimIntervalSeconds,
      processes: Math.floor(claimsPerSecond * claimIntervalSeconds),
      processesFromCosts: Math.floor(fromCosts * claimIntervalSeconds),
    }));
}

function scalingLimits(
  scale: ScaleResult,
  rows: readonly ScaleRow[],
  partitionMaxClaimsPerSecond: number,
) {
  return LIMIT_MODES.flatMap((mode) =>
    scale.variants.flatMap((variant) => {
      const mine = rows
        .filter((r) => r.mode === mode && r.variant === variant.key)
        .sort((a, b) => a.instancesPerDc - b.instancesPerDc);
      if (mine.length === 0) return [];
      const points = mine.map((r) => ({
        n: r.instancesPerDc,
        idsPerSecond: r.idsPerSecond.median,
      }));
      const stop = mode === 'tight' ? stopsScalingAt(points) : undefined;
      const nextRow = mine.find((r) => r.instancesPerDc === stop?.next);
      return [
        {
          mode,
          variant: variant.key,
          label: variant.label,
          points,
          stopsAt: stop?.stopsAt,
          next: stop?.next,
          cause: nextRow && limitCause(nextRow, partitionMaxClaimsPerSecond),
        },
      ];
    }),
  );
}

/**
 * Per policy: IDs/s of one instance at N = 1 ÷ in-process `await next()` IDs/s, per run; from
 * the untimed loop where the run has it, as the in-process loop does not time each call.
 */
function tightVsInProcess(scale: ScaleResult, inProcess: InProcessResult) {
  const inProcessNext = inProcess.runs.map((run) => 1e9 / (run['next'] ?? NaN));
  return scale.variants.flatMap((variant) => {
    const at1 = (mode: ScaleMode) =>
      scale.configs.find(
        (c) => c.mode === mode && c.variant === variant.key && c.instancesPerDc === 1,
      );
    const config = at1('count') ?? at1('tight');
    if (config === undefined) return [];
    const runs = config.runs.slice(0, Math.min(config.runs.length, inProcessNext.length));
    const perInstance = (run: ScaleRun) =>
      all(run, (d) => d.idsPerSecond) / all(run, (d) => d.instances);
    return [
      {
        variant: variant.key,
        label: variant.label,
        adaptive: variant.adaptive,
        untimed: config.mode === 'count',
        idsPerSecondPerInstance: figure(runs.map(perInstance)),
        waits: figure(runs.map((r) => all(r, (d) => d.counts.waits))),
        value: figure(runs.map((r, i) => perInstance(r) / inProcessNext[i]!)),
      },
    ];
  });
}

export function summarizeScale(scale: ScaleResult, inProcess: InProcessResult) {
  const rows = scale.configs.map((c) => summarizeRow(c, scale));
  let partitionMax: { claimsPerSecond: number; row: ScaleRow; retriesPerClaim: number } | undefined;
  for (const row of rows) {
    const claims = row.busiestClaimsPerSecond.median;
    if (Number.isFinite(claims) && claims > (partitionMax?.claimsPerSecond ?? -Infinity)) {
      partitionMax = { claimsPerSecond: claims, row, retriesPerClaim: row.retriesPerClaim.median };
    }
  }
  const uncontendedAt = Math.min(...scale.configs.map((c) => c.instancesPerDc));
  const leastContended = scale.configs.filter((c) => c.instancesPerDc === uncontendedAt);
  const lost = pooled(scale.configs.flatMap((c) => c.runs));
  const adaptiveClaimIntervalMs = scale.variants.find((v) => v.adaptive)?.settings[
    'claimIntervalMs'
  ];
  const intervals = [...ESTIMATE_INTERVALS_SECONDS];
  if (adaptiveClaimIntervalMs !== undefined) intervals.push(adaptiveClaimIntervalMs / 1000);
  const uncontendedClaimNs = claimCostNs(pooled(leastContended.flatMap((c) => c.runs)));
  const lostRaceRoundNs = meanNs(lost.rejectedWrites);
  const fromCosts = claimsPerSecondFromCosts(
    uncontendedClaimNs,
    partitionMax?.retriesPerClaim ?? 0,
    lostRaceRoundNs,
  );
  return {
    rows,
    limits: scalingLimits(scale, rows, partitionMax?.claimsPerSecond ?? Infinity),
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
    tightVsInProcess: tightVsInProcess(scale, inProcess),
  };
}
