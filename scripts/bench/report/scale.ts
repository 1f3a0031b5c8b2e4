/**
 * "## 4. Scale", summarised and written as tables: a row per mode and N; where tight throughput
 * stops growing and what was saturated; claim and lost-race costs; processes one DC-state
 * partition serves.
 */
import { BACKOFF_MAX_MS } from '../../../src/allocator/dc-context.js';
import { COUNT_BATCH } from '../draw-loop.js';
import { LOOP_DELAY_RESOLUTION_MS } from '../protocol.js';
import type {
  DcStateTimings,
  InProcessResult,
  RawResults,
  ScaleConfig,
  ScaleDcRun,
  ScaleMode,
  ScaleResult,
  ScaleRun,
} from '../results.js';
import { figure, latencyFigures, sum } from '../stats.js';
import { addTimings, meanNs } from '../timings.js';
import {
  formatCount,
  formatNs,
  formatPercent,
  formatRate,
  grid,
  latencyColumns,
  plural,
  quoted,
  significant,
  table,
  withSpread,
  type Column,
} from './format.js';

export type ScaleRow = Readonly<ReturnType<typeof summarizeRow>>;
export type ScaleSummary = Readonly<ReturnType<typeof summarizeScale>>;
export type LimitCause = 'partition' | 'cpu' | 'neither';

/** Results of runs that compared block policies: only the default policy's rows are read. */
const DEFAULT_POLICY = 'adaptive';
/** A step in N must raise IDs/s by at least this factor to count as growth. */
export const GROWTH = 1.1;
/** Above this share of the machine's cores busy, the CPU is taken as the limit. */
export const CPU_SATURATED = 0.85;
/** Claims per second within this share of the measured maximum: the partition is the limit. */
export const PARTITION_SATURATED = 0.8;
/** Claim intervals of the estimate, seconds (plus the stored `claimIntervalMs`). */
export const ESTIMATE_INTERVALS_SECONDS: readonly number[] = [1, 10, 60];

const rate = (part: number, seconds: number): number => (seconds > 0 ? part / seconds : NaN);
const claimsPerSecond = (run: ScaleRun): number[] =>
  run.dcs.map((d) => rate(d.counts.blocksClaimed, d.seconds));
const pooled = (runs: readonly ScaleRun[]): DcStateTimings =>
  addTimings(runs.flatMap((r) => r.dcs.map((d) => d.dcState)));
const all = (run: ScaleRun, pick: (d: ScaleDcRun) => number): number => sum(run.dcs.map(pick));
const perInstance = (r: ScaleRun) => all(r, (d) => d.idsPerSecond) / all(r, (d) => d.instances);

export const claimCostNs = (t: DcStateTimings): number => meanNs(t.reads) + meanNs(t.appliedWrites);

/** No read: a claim that lost goes on from the state its rejected write returned. */
export const lostRaceCostNs = (t: DcStateTimings): number =>
  meanNs(t.rejectedWrites) + (t.backoffs.count > 0 ? meanNs(t.backoffs) : 0);

/** `pick` of `values`; NaN when there are none. */
const pickOf = (values: readonly number[], pick: (...values: number[]) => number): number =>
  values.length === 0 ? NaN : pick(...values);
const lastBlocks = (run: ScaleRun): number[] => run.dcs.flatMap((d) => d.lastBlockSizes);

function summarizeRow(config: ScaleConfig) {
  const { runs, ratePerInstance } = config;
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
    instancesPerDc: config.instancesPerDc,
    idsPerSecond: over(ids),
    idsPerSecondPerInstance: over(perInstance),
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
    lastBlockMin: over((r) => pickOf(lastBlocks(r), Math.min)),
    lastBlockMax: over((r) => pickOf(lastBlocks(r), Math.max)),
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
    slowestFirstIdMs: over((r) =>
      pickOf(
        r.dcs.map((d) => d.slowestFirstIdMs ?? NaN).filter((ms) => !Number.isNaN(ms)),
        Math.max,
      ),
    ),
    withoutId: total((d) => d.withoutId ?? 0),
    serialReadsPerInstance: over((r) => all(r, (d) => d.serialReads ?? NaN) / instances(r)),
    failureMessages: [...new Set(runs.flatMap((r) => r.failureMessages))],
  };
}

/** The last N before throughput stopped growing by {@link GROWTH}; undefined if it kept growing. */
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

/** The settings stored for the measured policy. */
export function scaleSettings(scale: ScaleResult): Readonly<Record<string, number>> {
  return scale.settings ?? scale.variants?.find((v) => v.key === DEFAULT_POLICY)?.settings ?? {};
}

export function summarizeScale(scale: ScaleResult, inProcess: InProcessResult) {
  const configs = scale.configs.filter((c) => (c.variant ?? DEFAULT_POLICY) === DEFAULT_POLICY);
  const rows = configs.map(summarizeRow);
  const sorted = (mode: ScaleMode) =>
    rows.filter((r) => r.mode === mode).sort((a, b) => a.instancesPerDc - b.instancesPerDc);
  const partitionMax: ScaleRow | undefined = rows
    .filter((r) => Number.isFinite(r.busiestClaimsPerSecond.median))
    .sort((a, b) => b.busiestClaimsPerSecond.median - a.busiestClaimsPerSecond.median)[0];
  const busiest = partitionMax?.busiestClaimsPerSecond.median ?? Infinity;
  const tight = sorted('tight');
  const points = tight.map((r) => ({ n: r.instancesPerDc, idsPerSecond: r.idsPerSecond.median }));
  const stop = stopsScalingAt(points);
  const limitRow = tight.find((r) => r.instancesPerDc === stop?.next);
  const uncontendedAt = Math.min(...configs.map((c) => c.instancesPerDc));
  const lost = pooled(configs.flatMap((c) => c.runs));
  const uncontendedClaimNs = claimCostNs(
    pooled(configs.filter((c) => c.instancesPerDc === uncontendedAt).flatMap((c) => c.runs)),
  );
  const lostRaceRoundNs = meanNs(lost.rejectedWrites);
  const retries = partitionMax?.retriesPerClaim.median ?? 0;
  const fromCosts = claimsPerSecondFromCosts(uncontendedClaimNs, retries, lostRaceRoundNs);
  const claimIntervalMs = scaleSettings(scale)['claimIntervalMs'];
  // Per run: one instance's IDs/s at N = 1 ÷ in-process `await next()` IDs/s; from the untimed
  // loop where the run has it, as the in-process loop does not time each call either.
  const at1 = (mode: ScaleMode) => configs.find((c) => c.mode === mode && c.instancesPerDc === 1);
  const single = at1('count') ?? at1('tight');
  const inProcessNext = inProcess.runs.map((run) => 1e9 / (run['next'] ?? NaN));
  const singleRuns = single?.runs.slice(0, inProcessNext.length) ?? [];
  return {
    rows,
    limit: {
      points,
      stopsAt: stop?.stopsAt,
      row: limitRow,
      cause: limitRow && limitCause(limitRow, busiest),
    },
    shortOfRate: sorted('rate')
      .filter(
        (r) =>
          r.failures + r.warmupFailures > 0 || r.waitsTotal > 0 || r.shareOfTarget.median < 0.99,
      )
      .map((r) => r.instancesPerDc),
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
        : partitionEstimates(busiest, fromCosts, [
            ...ESTIMATE_INTERVALS_SECONDS,
            ...(claimIntervalMs === undefined ? [] : [claimIntervalMs / 1000]),
          ]),
    claimIntervalMs,
    single:
      single === undefined
        ? undefined
        : {
            untimed: single.mode === 'count',
            idsPerSecondPerInstance: figure(singleRuns.map(perInstance)),
            waits: figure(singleRuns.map((r) => all(r, (d) => d.counts.waits))),
            vsInProcess: figure(singleRuns.map((r, i) => perInstance(r) / inProcessNext[i]!)),
          },
  };
}

const TIGHT_NOTE =
  'Instances of one process share its event loop: a tight loop resumes as microtasks while its block lasts and yields to I/O once per 512 IDs, ' +
  "so the replies to the other instances' refills wait for that loop's turn on a crowded event loop. " +
  'IDs/s is all instances of all DCs together.';

function errors(row: ScaleRow): string {
  const extra = [
    ...(row.storeErrors > 0 ? [`${formatCount(row.storeErrors)} failed store operations`] : []),
    ...(row.casUnknown > 0 ? [`${formatCount(row.casUnknown)} unknown CAS outcomes`] : []),
  ];
  return `${row.warmupFailures} / ${row.failures}${extra.length > 0 ? `; ${extra.join(', ')}` : ''}`;
}

function firstIds(row: ScaleRow): string {
  const slowest = withSpread(row.slowestFirstIdMs, (v) => formatNs(v * 1e6));
  return row.withoutId > 0 ? `${slowest} (${formatCount(row.withoutId)} drew none)` : slowest;
}

function blockSizes(row: ScaleRow): string {
  const mean = withSpread(row.meanBlockSize, (v) => formatCount(Math.round(v)));
  const [low, high] = [row.lastBlockMin.median, row.lastBlockMax.median];
  if (!Number.isFinite(low) || !Number.isFinite(high)) return mean;
  return `${mean} (last ${low === high ? formatCount(low) : `${formatCount(low)}–${formatCount(high)}`})`;
}

function rowsTable(rows: readonly ScaleRow[], mode: ScaleMode): string[] {
  const columns: Column<ScaleRow>[] = [
    ['instances per DC', (row) => formatCount(row.instancesPerDc)],
    ['IDs/s (all DCs)', (row) => withSpread(row.idsPerSecond, formatRate)],
    mode === 'rate' && ['share of target', (row) => withSpread(row.shareOfTarget, formatPercent)],
    ['claims/s per DC partition', (row) => withSpread(row.claimsPerSecondPerDc, significant)],
    ['CAS retries per claim', (row) => withSpread(row.retriesPerClaim, significant)],
    ...latencyColumns((row: ScaleRow) => row.latency),
    ['waits after warm-up', (row) => withSpread(row.waits, formatCount)],
    ['errors: `next()` threw (warm-up / measured)', errors],
    ['slowest first ID (instances that drew none)', firstIds],
    [
      'grant reads at SERIAL per instance',
      (r) => withSpread(r.serialReadsPerInstance, significant),
    ],
    ['mean block size', blockSizes],
  ];
  return table(columns, rows);
}

/** "×2.1 from N = 1 to 4, ×1.02 to 16". */
function growth(points: ScaleSummary['limit']['points']): string {
  const steps = points.slice(1).map((to, i) => {
    const from = points[i]!;
    const factor = `×${significant(to.idsPerSecond / from.idsPerSecond)}`;
    return i === 0 ? `${factor} from N = ${from.n} to ${to.n}` : `${factor} to ${to.n}`;
  });
  return steps.join(', ') || `${formatRate(points[0]?.idsPerSecond ?? NaN)} at one N only`;
}

type Finding = readonly [measure: string, value: string];

function findings(scale: ScaleSummary, raw: RawResults): Finding[] {
  const { limit, partitionMax: max, single, shortOfRate: short } = scale;
  const row = limit.row;
  const cause = { partition: 'the DC-state partition', cpu: 'the CPU', neither: 'neither' };
  const everyNs = 1e9 / (max?.busiestClaimsPerSecond.median ?? NaN);
  const busy = everyNs / (max?.claimNs.median ?? NaN);
  const retries = max?.retriesPerClaim.median ?? NaN;
  const all: (Finding | false)[] = [
    ['tight: IDs/s as N grows', growth(limit.points)],
    row === undefined && [
      'tight: stops growing',
      `no: it grew by ${significant(GROWTH)}× or more each step`,
    ],
    row !== undefined && ['tight: stops growing after', `N = ${limit.stopsAt ?? NaN}`],
    row !== undefined && [
      `tight: the limit at N = ${row.instancesPerDc}`,
      `${cause[limit.cause ?? 'neither']}: busiest partition ${significant(row.busiestClaimsPerSecond.median)} claims/s, ${significant(row.retriesPerClaim.median)} CAS retries per claim, ${formatCount(row.warmupFailures + row.failures)} calls threw; the ${raw.machine.cores} cores ${formatPercent(row.machineBusy.median)} busy, ${significant(row.workerCores.median)} used by the allocator processes`,
    ],
    [
      'fixed rate',
      short.length === 0
        ? 'the full rate at every N, no `next()` call waited after warm-up or threw'
        : `short of the rate, waiting or throwing at N = ${short.join(', ')}`,
    ],
    [
      `claim (read + write), ${plural(scale.uncontendedAt, 'instance')} per DC`,
      formatNs(scale.uncontendedClaimNs),
    ],
    ['claim on the busiest partition', formatNs(max?.claimNs.median ?? NaN)],
    [
      'lost race (rejected write + backoff)',
      `${formatNs(scale.lostRaceNs)}, over ${formatCount(scale.lostRaces)} lost races in all runs`,
    ],
    max !== undefined && [
      'C: the most claims/s measured on one partition',
      `${significant(max.busiestClaimsPerSecond.median)} (${max.mode === 'tight' ? 'tight' : 'fixed rate'}, N = ${max.instancesPerDc}, ${significant(retries)} CAS retries per claim): one claim every ${formatNs(everyNs)}, ${significant(busy)}× a claim's latency there, ${busy <= 1.5 ? 'so close to what the partition can do here' : 'so a lower bound (its claimers were held back elsewhere)'}`,
    ],
    max !== undefined && [
      "C' = 1 ÷ (t_claim + r × t_race), from the costs",
      `1 ÷ (${formatNs(scale.uncontendedClaimNs)} + ${significant(Number.isFinite(retries) ? retries : 0)} × ${formatNs(scale.lostRaceRoundNs)}) = ${significant(scale.claimsPerSecondFromCosts)} claims/s`,
    ],
    single !== undefined && [
      `one instance per DC, tight${single.untimed ? ' and untimed' : ''}, ÷ in-process \`await next()\``,
      `${withSpread(single.idsPerSecondPerInstance, formatRate)}, ${withSpread(single.waits, formatCount)} waits: ${withSpread(single.vsInProcess, formatPercent)} (goal: 25 % or more)`,
    ],
  ];
  return all.filter((finding) => finding !== false);
}

export function renderScale(raw: RawResults, summary: ScaleSummary | undefined): string[] {
  const result = raw.scale;
  if (summary === undefined || result === undefined) return [];
  const { settings } = raw;
  const stored = Object.entries(scaleSettings(result))
    .filter(([k]) => k !== 'min' && k !== 'max' && k !== 'start')
    .map(([k, n]) => `${k} ${formatCount(n)}`)
    .join(', ');
  const perInstance = settings.scaleInstances
    .map((n) => `${formatRate(settings.scaleRatePerDc / n)} at N = ${n}`)
    .join(', ');
  const titles = {
    tight: ['Tight: every instance `await next()` in a loop', TIGHT_NOTE],
    rate: [
      `Fixed total rate: ${formatRate(settings.scaleRatePerDc)} per DC, split evenly over its instances`,
      `Each instance draws at the DC's rate ÷ N (${perInstance}), sleeping on a timer whenever it is 1 ms ahead and giving up what it missed beyond 100 ms; share of target is IDs/s ÷ the rate of all DCs.`,
    ],
  } as const;
  const ns = (pick: (r: ScaleRow) => number) => (r: ScaleRow) => formatNs(pick(r));
  const claimTimes = summary.rows.filter(
    (r) => r.mode === 'tight' && Number.isFinite(r.loopDelayP99Ms.median),
  );
  const messages = [...new Set(summary.rows.flatMap((r) => r.failureMessages))];
  return [
    '## 4. Scale',
    '',
    `N allocator instances per DC (N = ${settings.scaleInstances.join(', ')}; ${result.layout}) draw from a fresh sequence per configuration with the library's default settings (stored: ${stored}), tight and at a fixed total rate, ${settings.scaleWarmupSeconds} s of warm-up (adaptive blocks grow there), then ${settings.scaleSeconds} s measured; ${plural(settings.scaleRuns, 'run')}. ` +
      "Claims/s and CAS retries are counted per DC partition from `stats()` (`blocksClaimed`, `casRejections`, summed over the DC's instances); waits and errors are after warm-up unless said. " +
      'All instances of a configuration start at once on a fresh sequence, so each needs a block claim, and each that finds its DC without a range a grant read at SERIAL (two SERIAL statements on the grants partition every DC shares).',
    '',
    ...(['tight', 'rate'] as const).flatMap((mode) => {
      const rows = summary.rows.filter((r) => r.mode === mode);
      const [title, note] = titles[mode];
      return rows.length === 0 ? [] : [`### ${title}`, '', note, '', ...rowsTable(rows, mode)];
    }),
    '### What it shows',
    '',
    ...grid(['measure', 'value'], findings(summary, raw)),
    `The limit is read at the first tight step that gains less than ${significant(GROWTH)}×: the partition if \`next()\` threw, a claim lost one race or more on average, or its busiest partition reached ${formatPercent(PARTITION_SATURATED)} of C; else the CPU if the machine was ${formatPercent(CPU_SATURATED)} busy or more. ` +
      "A claim is a read of the DC state (LOCAL_QUORUM, or LOCAL_SERIAL when that shows nothing to claim) and a LOCAL_SERIAL conditional write, timed at each instance's store; a lost race goes on from the state its rejection returned, with no read. " +
      `Mean block size is the IDs that came into the instances in the window (drawn plus the change in IDs held) ÷ the blocks they claimed; "last" is the range of the instances' last blocks at the window's end (\`stats().blockSize\`). The one-instance loop ${summary.single?.untimed === false ? 'times every call, the in-process one does not' : `reads the clock once per ${formatCount(COUNT_BATCH)} calls, since two clock reads (${formatNs(raw.inProcess.timerPairNs)} here) cost about as much as the \`await next()\` they time`}.`,
    '',
    `Processes that each claim once every I seconds number at most K = C × I per DC (K' = C' × I from the costs, t_claim the uncontended claim, r the CAS retries per claim where C was measured, t_race a lost race's rejected write). K is the ceiling at full load: half of it leaves headroom. This counts claims only (a DC range install is one more write on the partition per range), and on a machine whose ${raw.machine.cores} cores also run every Cassandra node, so on real hardware it is a floor.`,
    '',
    ...table<ScaleSummary['estimates'][number]>(
      [
        [
          'claim interval I',
          (e) =>
            `${significant(e.claimIntervalSeconds)} s${summary.claimIntervalMs === e.claimIntervalSeconds * 1000 ? ' (default `claimIntervalMs`)' : ''}`,
        ],
        ['processes per DC, measured: K = C × I', (e) => formatCount(e.processes)],
        ["processes per DC, from costs: K' = C' × I", (e) => formatCount(e.processesFromCosts)],
      ],
      summary.estimates,
    ),
    ...(claimTimes.length === 0
      ? []
      : [
          `Where a claim's time went, tight: the mean DC-state read, applied claim write and backoff (from a lost race's rejection to the next attempt; its timer asks for at most ${BACKOFF_MAX_MS} ms), against how late the allocator processes' event loops ran (p99 / max of the worst process, \`monitorEventLoopDelay\` less its ${LOOP_DELAY_RESOLUTION_MS} ms sampling interval), which every reply, backoff and deadline waits for.`,
          '',
          ...table<ScaleRow>(
            [
              ['instances per DC', (r) => formatCount(r.instancesPerDc)],
              ['read', ns((r) => r.readNs.median)],
              ['write', ns((r) => r.appliedWriteNs.median)],
              ['backoff', ns((r) => r.backoffNs.median)],
              [
                'event loop late (p99 / max)',
                (r) =>
                  `${formatNs(r.loopDelayP99Ms.median * 1e6)} / ${formatNs(r.loopDelayMaxMs.median * 1e6)}`,
              ],
              ['cores used by the allocator processes', (r) => significant(r.workerCores.median)],
            ],
            claimTimes,
          ),
        ]),
    ...(messages.length === 0
      ? []
      : [`Messages of the calls that threw: ${quoted(messages)}.`, '']),
  ];
}
