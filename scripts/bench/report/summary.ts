/**
 * The summary of a benchmark run: every figure a median of runs with its spread, every ratio
 * taken within each run (both sides measured in that run), then its median. Pure.
 */
import type {
  AllocatorCounts,
  DrawConfig,
  DrawMode,
  DrawRun,
  NaiveConfig,
  NaiveRun,
  RawResults,
} from '../results.js';
import { figure, latencyFigures, sum, type Figure, type LatencyFigures } from '../stats.js';
import { summarizeHttp, type HttpSummary } from './http.js';
import { summarizeScale, type ScaleSummary } from './scale-summary.js';

export interface InProcessRow {
  readonly key: string;
  readonly label: string;
  readonly nsPerId: Figure;
  readonly idsPerSecond: Figure;
  /** This candidate's cost ÷ the plain counter's, per run. */
  readonly vsCounter: Figure;
}

export interface NaiveRow {
  readonly clients: number;
  readonly idsPerSecond: Figure;
  readonly latency: LatencyFigures;
  /** Conditional updates sent per ID (1 when nobody competes). */
  readonly lwtPerId: Figure;
  readonly rejectionsPerId: Figure;
  readonly errors: number;
}

export interface DrawRow {
  readonly blockSize: number;
  readonly dcRangeSize: number;
  readonly mode: DrawMode;
  readonly processes: number;
  readonly ratePerProcess: number | undefined;
  readonly idsPerSecond: Figure;
  readonly latency: LatencyFigures;
  /** `next()` calls that waited for Cassandra in the measured window (after warm-up). */
  readonly waits: Figure;
  /** Waits summed over every run: the goal in paced mode is 0. */
  readonly waitsTotal: number;
  readonly waitsPerBlock: Figure;
  /** LWT writes + SERIAL reads + LOCAL_SERIAL reads per million IDs. */
  readonly lwtPerMillion: Figure;
  readonly casRejections: Figure;
  readonly blocksClaimed: Figure;
  readonly rangesGranted: Figure;
  /** Largest resident set of the run's processes, MiB. */
  readonly rssMiB: Figure;
  /** `next()` calls that threw in the measured windows of all runs. */
  readonly failures: number;
  /** The same during the warm-ups. */
  readonly warmupFailures: number;
  readonly failureMessages: readonly string[];
}

export interface BurstSummary {
  readonly blockSize: number;
  readonly calls: number;
  readonly heldBefore: Figure;
  readonly totalMs: Figure;
  readonly latency: LatencyFigures;
  readonly waits: Figure;
  readonly blocksClaimed: Figure;
  readonly rangesGranted: Figure;
  readonly lwt: Figure;
  readonly casRejections: Figure;
}

export interface ColdStartSummary {
  readonly samples: number;
  readonly connectMs: Figure;
  readonly firstIdMs: Figure;
  readonly firstIdWarmDcMs: Figure;
}

/** A comparison: `value` is "how many times", computed in each run, then the median. */
export interface Ratio {
  readonly key: string;
  readonly label: string;
  readonly value: Figure;
  /** How to write it: `1.5×` (default) or, for small shares, `0.3 %`. */
  readonly unit?: 'times' | 'percent';
}

export interface Summary {
  readonly inProcess: readonly InProcessRow[];
  readonly naive: readonly NaiveRow[];
  readonly draws: readonly DrawRow[];
  readonly burst: BurstSummary;
  readonly coldStart: ColdStartSummary;
  readonly ratios: readonly Ratio[];
  /** The scale phase, when it ran. */
  readonly scale: ScaleSummary | undefined;
  /** The HTTP phase, when it ran. */
  readonly http: HttpSummary | undefined;
}

function lwtCount(counts: AllocatorCounts): number {
  return counts.lwtWrites + counts.serialReads + counts.localSerialReads;
}

const perMillion = (part: number, ids: number): number => (ids > 0 ? (part / ids) * 1e6 : NaN);
const naiveRate = (run: NaiveRun): number => run.ids / run.seconds;
const naiveLwtPerId = (run: NaiveRun): number =>
  run.ids > 0 ? (run.ids + run.rejections + run.errors) / run.ids : NaN;
const drawLwtPerMillion = (run: DrawRun): number => perMillion(lwtCount(run.counts), run.ids);

function summarizeNaive(config: NaiveConfig): NaiveRow {
  return {
    clients: config.clients,
    idsPerSecond: figure(config.runs.map(naiveRate)),
    latency: latencyFigures(config.runs),
    lwtPerId: figure(config.runs.map(naiveLwtPerId)),
    rejectionsPerId: figure(config.runs.map((r) => (r.ids > 0 ? r.rejections / r.ids : NaN))),
    errors: sum(config.runs.map((r) => r.errors)),
  };
}

function summarizeDraw(config: DrawConfig): DrawRow {
  const { runs } = config;
  return {
    blockSize: config.blockSize,
    dcRangeSize: config.dcRangeSize,
    mode: config.mode,
    processes: runs[0]?.processes ?? 0,
    ratePerProcess: config.ratePerProcess,
    idsPerSecond: figure(runs.map((r) => r.idsPerSecond)),
    latency: latencyFigures(runs),
    waits: figure(runs.map((r) => r.counts.waits)),
    waitsTotal: sum(runs.map((r) => r.counts.waits)),
    waitsPerBlock: figure(
      runs.map((r) => (r.counts.blocksClaimed > 0 ? r.counts.waits / r.counts.blocksClaimed : NaN)),
    ),
    lwtPerMillion: figure(runs.map(drawLwtPerMillion)),
    casRejections: figure(runs.map((r) => r.counts.casRejections)),
    blocksClaimed: figure(runs.map((r) => r.counts.blocksClaimed)),
    rangesGranted: figure(runs.map((r) => r.counts.rangesGranted)),
    rssMiB: figure(runs.map((r) => Math.max(...r.rssMiB))),
    failures: sum(runs.map((r) => r.failures)),
    warmupFailures: sum(runs.map((r) => r.warmupFailures)),
    failureMessages: [...new Set(runs.flatMap((r) => r.failureMessages))],
  };
}

/** Per-run ratios `a(run i) / b(run i)` over the runs both have. */
function pairedRatio<A, B>(
  a: readonly A[],
  b: readonly B[],
  numerator: (x: A) => number,
  denominator: (y: B) => number,
): Figure {
  const n = Math.min(a.length, b.length);
  return figure(Array.from({ length: n }, (_, i) => numerator(a[i]!) / denominator(b[i]!)));
}

/** The steady-state configuration of `mode`: the sweep entry at the steady block size. */
export function steadyDraw(raw: RawResults, mode: DrawMode): DrawConfig | undefined {
  return raw.cluster.draws.find(
    (d) => d.blockSize === raw.settings.steadyBlockSize && d.mode === mode,
  );
}

function ratios(
  raw: RawResults,
  scale: ScaleSummary | undefined,
  http: HttpSummary | undefined,
): Ratio[] {
  const list: Ratio[] = [];
  const inRuns = raw.inProcess.runs;
  const has = (key: string) => inRuns.every((run) => run[key] !== undefined);
  const inProcessRatio = (key: string, label: string, a: string, b: string) => {
    if (has(a) && has(b)) {
      list.push({ key, label, value: figure(inRuns.map((run) => run[a]! / run[b]!)) });
    }
  };
  inProcessRatio('tryNextVsCounter', '`tryNext()` cost ÷ plain counter cost', 'tryNext', 'counter');
  inProcessRatio('nextVsCounter', '`await next()` cost ÷ plain counter cost', 'next', 'counter');
  inProcessRatio(
    'nextVsAsyncCounter',
    '`await next()` cost ÷ `await` of an async counter',
    'next',
    'asyncCounter',
  );
  inProcessRatio(
    'randomUUIDVsTryNext',
    '`crypto.randomUUID()` cost ÷ `tryNext()` cost',
    'randomUUID',
    'tryNext',
  );
  inProcessRatio(
    'randomUUIDVsNext',
    '`crypto.randomUUID()` cost ÷ `await next()` cost',
    'randomUUID',
    'next',
  );
  inProcessRatio('uuidV7VsTryNext', 'uuid `v7()` cost ÷ `tryNext()` cost', 'uuidV7', 'tryNext');
  inProcessRatio(
    'snowflakeVsTryNext',
    'Snowflake `generate()` cost ÷ `tryNext()` cost',
    'snowflake',
    'tryNext',
  );

  const naive1 = raw.cluster.naive.find((n) => n.clients === 1);
  const naiveN = raw.cluster.naive.find((n) => n.clients > 1);
  const tight = steadyDraw(raw, 'tight');
  const paced = steadyDraw(raw, 'paced');
  const rate = (r: DrawRun) => r.idsPerSecond;
  if (tight !== undefined && naive1 !== undefined) {
    list.push({
      key: 'tightVsNaive1',
      label: `cluster IDs/s: idgen-cass tight (${tight.runs[0]?.processes ?? 0} processes) ÷ naive LWT, 1 client`,
      value: pairedRatio(tight.runs, naive1.runs, rate, naiveRate),
    });
  }
  if (tight !== undefined && naiveN !== undefined) {
    list.push({
      key: 'tightVsNaiveN',
      label: `cluster IDs/s: idgen-cass tight ÷ naive LWT, ${naiveN.clients} clients`,
      value: pairedRatio(tight.runs, naiveN.runs, rate, naiveRate),
    });
  }
  if (tight !== undefined && naive1 !== undefined) {
    list.push({
      key: 'lwtPerIdNaiveVsTight',
      label: 'LWTs per ID: naive (1 client) ÷ idgen-cass tight',
      value: pairedRatio(naive1.runs, tight.runs, naiveLwtPerId, (r) => drawLwtPerMillion(r) / 1e6),
    });
  }
  if (paced !== undefined && naive1 !== undefined) {
    list.push({
      key: 'p50NaiveVsPaced',
      label: 'median latency per ID: naive (1 client) ÷ idgen-cass `next()`, paced',
      value: pairedRatio(
        naive1.runs,
        paced.runs,
        (r) => r.latency.p50,
        (r) => r.latency.p50,
      ),
    });
  }
  for (const adaptive of scale?.tightVsInProcess.filter((r) => r.adaptive) ?? []) {
    list.push({
      key: `tightVsInProcessNext_${adaptive.variant}`,
      label: `cluster tight IDs/s of one instance${adaptive.untimed ? ' (untimed loop)' : ''}, ${adaptive.label} blocks, N = 1 ÷ in-process \`await next()\` IDs/s`,
      value: adaptive.value,
      unit: 'percent',
    });
  }
  for (const entry of http?.counts ?? []) {
    if (entry.runs === 0) continue;
    list.push({
      key: `httpVsLibrary${entry.count}`,
      label: `IDs/s, ${entry.count === 1 ? '1 ID' : `${entry.count} IDs`} per request: HTTP service ÷ library in one process (${entry.count === 1 ? '`next()`' : `\`take(${entry.count})\``}), every DC`,
      value: entry.throughputRatio,
      unit: 'percent',
    });
  }
  return list;
}

export function summarize(raw: RawResults): Summary {
  const counter = (run: Readonly<Record<string, number>>) => run['counter'] ?? NaN;
  const inProcess = raw.inProcess.candidates.map(({ key, label }) => ({
    key,
    label,
    nsPerId: figure(raw.inProcess.runs.map((run) => run[key] ?? NaN)),
    idsPerSecond: figure(raw.inProcess.runs.map((run) => 1e9 / (run[key] ?? NaN))),
    vsCounter: figure(raw.inProcess.runs.map((run) => (run[key] ?? NaN) / counter(run))),
  }));
  const { burst } = raw.cluster;
  const samples = raw.cluster.coldStart.flat();
  const scale = raw.scale === undefined ? undefined : summarizeScale(raw.scale, raw.inProcess);
  const http = raw.http === undefined ? undefined : summarizeHttp(raw.http);
  return {
    inProcess,
    naive: raw.cluster.naive.map(summarizeNaive),
    draws: raw.cluster.draws.map(summarizeDraw),
    burst: {
      blockSize: burst.blockSize,
      calls: burst.calls,
      heldBefore: figure(burst.runs.map((r) => r.heldBefore)),
      totalMs: figure(burst.runs.map((r) => r.totalMs)),
      latency: latencyFigures(burst.runs),
      waits: figure(burst.runs.map((r) => r.counts.waits)),
      blocksClaimed: figure(burst.runs.map((r) => r.counts.blocksClaimed)),
      rangesGranted: figure(burst.runs.map((r) => r.counts.rangesGranted)),
      lwt: figure(burst.runs.map((r) => lwtCount(r.counts))),
      casRejections: figure(burst.runs.map((r) => r.counts.casRejections)),
    },
    coldStart: {
      samples: samples.length,
      connectMs: figure(samples.map((s) => s.connectMs)),
      firstIdMs: figure(samples.map((s) => s.firstIdMs)),
      firstIdWarmDcMs: figure(samples.map((s) => s.firstIdWarmDcMs)),
    },
    ratios: ratios(raw, scale, http),
    scale,
    http,
  };
}
