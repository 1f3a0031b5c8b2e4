/**
 * The summary of a run: every figure a median of runs with its spread, every ratio taken within
 * each run, then its median. The row types are what the summarising functions return.
 */
import type {
  AllocatorCounts,
  BurstResult,
  DrawConfig,
  DrawMode,
  DrawRun,
  NaiveConfig,
  NaiveRun,
  RawResults,
} from '../results.js';
import { figure, latencyFigures, sum, type Figure } from '../stats.js';
import { formatPercent, formatTimes, withSpread } from './format.js';
import { summarizeHttp, type HttpSummary } from './http.js';
import { summarizeScale, type ScaleSummary } from './scale.js';

export type NaiveRow = Readonly<ReturnType<typeof summarizeNaive>>;
export type DrawRow = Readonly<ReturnType<typeof summarizeDraw>>;
export type BurstSummary = Readonly<ReturnType<typeof summarizeBurst>>;

export interface Ratio {
  readonly key: string;
  readonly label: string;
  readonly value: Figure;
  readonly unit?: 'times' | 'percent';
}

export type Summary = Readonly<ReturnType<typeof summarize>>;

export const ratioText = (r: Ratio): string =>
  withSpread(r.value, r.unit === 'percent' ? formatPercent : formatTimes);

export const lwtCount = (c: AllocatorCounts): number =>
  c.lwtWrites + c.serialReads + c.localSerialReads;
const perMillion = (part: number, ids: number): number => (ids > 0 ? (part / ids) * 1e6 : NaN);
const naiveRate = (run: NaiveRun): number => run.ids / run.seconds;
const naiveLwtPerId = (run: NaiveRun): number =>
  run.ids > 0 ? (run.ids + run.rejections + run.errors) / run.ids : NaN;
const drawLwtPerMillion = (run: DrawRun): number => perMillion(lwtCount(run.counts), run.ids);
const counted = (runs: readonly { counts: AllocatorCounts }[], key: keyof AllocatorCounts) =>
  figure(runs.map((r) => r.counts[key]));

function summarizeInProcess(raw: RawResults) {
  const { runs } = raw.inProcess;
  const cost = (run: Readonly<Record<string, number>>, key: string) => run[key] ?? NaN;
  return raw.inProcess.candidates.map(({ key, label }) => ({
    key,
    label,
    nsPerId: figure(runs.map((run) => cost(run, key))),
    idsPerSecond: figure(runs.map((run) => 1e9 / cost(run, key))),
    vsCounter: figure(runs.map((run) => cost(run, key) / cost(run, 'counter'))),
  }));
}

function summarizeNaive(config: NaiveConfig) {
  return {
    clients: config.clients,
    idsPerSecond: figure(config.runs.map(naiveRate)),
    latency: latencyFigures(config.runs),
    lwtPerId: figure(config.runs.map(naiveLwtPerId)),
    rejectionsPerId: figure(config.runs.map((r) => (r.ids > 0 ? r.rejections / r.ids : NaN))),
    errors: sum(config.runs.map((r) => r.errors)),
  };
}

function summarizeDraw(config: DrawConfig) {
  const { runs } = config;
  return {
    blockSize: config.blockSize,
    dcRangeSize: config.dcRangeSize,
    mode: config.mode,
    processes: runs[0]?.processes ?? 0,
    ratePerProcess: config.ratePerProcess,
    idsPerSecond: figure(runs.map((r) => r.idsPerSecond)),
    latency: latencyFigures(runs),
    waits: counted(runs, 'waits'),
    waitsTotal: sum(runs.map((r) => r.counts.waits)),
    waitsPerBlock: figure(
      runs.map((r) => (r.counts.blocksClaimed > 0 ? r.counts.waits / r.counts.blocksClaimed : NaN)),
    ),
    lwtPerMillion: figure(runs.map(drawLwtPerMillion)),
    casRejections: counted(runs, 'casRejections'),
    blocksClaimed: counted(runs, 'blocksClaimed'),
    rangesGranted: counted(runs, 'rangesGranted'),
    rssMiB: figure(runs.map((r) => Math.max(...r.rssMiB))),
    failures: sum(runs.map((r) => r.failures)),
    warmupFailures: sum(runs.map((r) => r.warmupFailures)),
    failureMessages: [...new Set(runs.flatMap((r) => r.failureMessages))],
  };
}

function summarizeBurst(burst: BurstResult) {
  const { runs } = burst;
  return {
    blockSize: burst.blockSize,
    calls: burst.calls,
    heldBefore: figure(runs.map((r) => r.heldBefore)),
    totalMs: figure(runs.map((r) => r.totalMs)),
    latency: latencyFigures(runs),
    waits: counted(runs, 'waits'),
    blocksClaimed: counted(runs, 'blocksClaimed'),
    rangesGranted: counted(runs, 'rangesGranted'),
    lwt: figure(runs.map((r) => lwtCount(r.counts))),
    casRejections: counted(runs, 'casRejections'),
  };
}

function pairedRatio<A, B>(
  a: readonly A[],
  b: readonly B[],
  numerator: (x: A) => number,
  denominator: (y: B) => number,
): Figure {
  const n = Math.min(a.length, b.length);
  return figure(Array.from({ length: n }, (_, i) => numerator(a[i]!) / denominator(b[i]!)));
}

export function steadyDraw(raw: RawResults, mode: DrawMode): DrawConfig | undefined {
  return raw.cluster.draws.find(
    (d) => d.blockSize === raw.settings.steadyBlockSize && d.mode === mode,
  );
}

/** Key, label, the candidate measured ÷ the one it is set against. */
const IN_PROCESS_RATIOS = [
  ['tryNextVsCounter', '`tryNext()` cost ÷ plain counter cost', 'tryNext', 'counter'],
  ['nextVsCounter', '`await next()` cost ÷ plain counter cost', 'next', 'counter'],
  [
    'nextVsAsyncCounter',
    '`await next()` cost ÷ `await` of an async counter',
    'next',
    'asyncCounter',
  ],
  ['randomUUIDVsTryNext', '`crypto.randomUUID()` cost ÷ `tryNext()` cost', 'randomUUID', 'tryNext'],
  ['randomUUIDVsNext', '`crypto.randomUUID()` cost ÷ `await next()` cost', 'randomUUID', 'next'],
  ['uuidV7VsTryNext', 'uuid `v7()` cost ÷ `tryNext()` cost', 'uuidV7', 'tryNext'],
  ['snowflakeVsTryNext', 'Snowflake `generate()` cost ÷ `tryNext()` cost', 'snowflake', 'tryNext'],
] as const;

function ratios(
  raw: RawResults,
  scale: ScaleSummary | undefined,
  http: HttpSummary | undefined,
): Ratio[] {
  const inRuns = raw.inProcess.runs;
  const has = (key: string) => inRuns.every((run) => run[key] !== undefined);
  const list: Ratio[] = IN_PROCESS_RATIOS.filter(([, , a, b]) => has(a) && has(b)).map(
    ([key, label, a, b]) => ({ key, label, value: figure(inRuns.map((run) => run[a]! / run[b]!)) }),
  );
  const naive1 = raw.cluster.naive.find((n) => n.clients === 1);
  const naiveN = raw.cluster.naive.find((n) => n.clients > 1);
  const tight = steadyDraw(raw, 'tight');
  const paced = steadyDraw(raw, 'paced');
  const rate = (r: DrawRun) => r.idsPerSecond;
  const p50 = (r: { latency: { p50: number } }) => r.latency.p50;
  const cluster = [
    tight &&
      naive1 && {
        key: 'tightVsNaive1',
        label: `cluster IDs/s: idgen-cass tight (${tight.runs[0]?.processes ?? 0} processes) ÷ naive LWT, 1 client`,
        value: pairedRatio(tight.runs, naive1.runs, rate, naiveRate),
      },
    tight &&
      naiveN && {
        key: 'tightVsNaiveN',
        label: `cluster IDs/s: idgen-cass tight ÷ naive LWT, ${naiveN.clients} clients`,
        value: pairedRatio(tight.runs, naiveN.runs, rate, naiveRate),
      },
    tight &&
      naive1 && {
        key: 'lwtPerIdNaiveVsTight',
        label: 'LWTs per ID: naive (1 client) ÷ idgen-cass tight',
        value: pairedRatio(
          naive1.runs,
          tight.runs,
          naiveLwtPerId,
          (r) => drawLwtPerMillion(r) / 1e6,
        ),
      },
    paced &&
      naive1 && {
        key: 'p50NaiveVsPaced',
        label: 'median latency per ID: naive (1 client) ÷ idgen-cass `next()`, paced',
        value: pairedRatio(naive1.runs, paced.runs, p50, p50),
      },
  ];
  for (const ratio of cluster) if (ratio) list.push(ratio);
  if (scale?.single !== undefined) {
    list.push({
      key: 'tightVsInProcessNext',
      label: `cluster tight IDs/s of one instance${scale.single.untimed ? ' (untimed loop)' : ''}, default settings, N = 1 ÷ in-process \`await next()\` IDs/s`,
      value: scale.single.vsInProcess,
      unit: 'percent',
    });
  }
  for (const entry of http?.counts ?? []) {
    if (entry.runs === 0) continue;
    const one = entry.count === 1;
    list.push({
      key: `httpVsLibrary${entry.count}`,
      label: `IDs/s, ${one ? '1 ID' : `${entry.count} IDs`} per request: HTTP service ÷ library in one process (${one ? '`next()`' : `\`take(${entry.count})\``}), every DC`,
      value: entry.throughputRatio,
      unit: 'percent',
    });
  }
  return list;
}

export function summarize(raw: RawResults) {
  const samples = raw.cluster.coldStart.flat();
  const scale = raw.scale === undefined ? undefined : summarizeScale(raw.scale, raw.inProcess);
  const http = raw.http === undefined ? undefined : summarizeHttp(raw.http);
  return {
    inProcess: summarizeInProcess(raw),
    naive: raw.cluster.naive.map(summarizeNaive),
    draws: raw.cluster.draws.map(summarizeDraw),
    burst: summarizeBurst(raw.cluster.burst),
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
