/**
 * The report builder: from the raw results of a run (results.ts) to the summary (every figure
 * a median of runs with its spread, every ratio taken within each run), the markdown report,
 * the table printed on stdout, and results.json. Pure functions except {@link writeReport}.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

import * as prettier from 'prettier';

import { SEQUENCE_DEFAULTS } from '../../src/index.js';

import type {
  AllocatorCounts,
  DrawConfig,
  DrawMode,
  DrawRun,
  NaiveConfig,
  NaiveRun,
  RawResults,
} from './results.js';
import { RESULTS_SCHEMA } from './results.js';
import { figure, sum, type Figure, type LatencySummary } from './stats.js';

/** Latency percentiles, each a figure over the runs (nanoseconds). */
export interface LatencyFigures {
  readonly p50: Figure;
  readonly p99: Figure;
  readonly p999: Figure;
  readonly max: Figure;
}

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
}

export interface Summary {
  readonly inProcess: readonly InProcessRow[];
  readonly naive: readonly NaiveRow[];
  readonly draws: readonly DrawRow[];
  readonly burst: BurstSummary;
  readonly coldStart: ColdStartSummary;
  readonly ratios: readonly Ratio[];
}

/** results.json: the raw runs and their summary. */
export interface ResultsFile {
  readonly schema: typeof RESULTS_SCHEMA;
  readonly summary: Summary;
  readonly raw: RawResults;
}

export interface Report {
  readonly json: ResultsFile;
  /** Markdown, not yet formatted (see {@link formatMarkdown}). */
  readonly markdown: string;
  /** The plain-text table printed on stdout. */
  readonly table: string;
}

// ── summary ─────────────────────────────────────────────────────────────────────────────────

function latencyFigures(runs: readonly { latency: LatencySummary }[]): LatencyFigures {
  return {
    p50: figure(runs.map((r) => r.latency.p50)),
    p99: figure(runs.map((r) => r.latency.p99)),
    p999: figure(runs.map((r) => r.latency.p999)),
    max: figure(runs.map((r) => r.latency.max)),
  };
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

function ratios(raw: RawResults): Ratio[] {
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
    ratios: ratios(raw),
  };
}

// ── formatting ──────────────────────────────────────────────────────────────────────────────

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

function significant(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return '–';
  if (Math.abs(value) >= 10 ** digits) return integer.format(value);
  return Number(value.toPrecision(digits)).toString();
}

/** Nanoseconds, in the unit that keeps 3 significant digits readable. */
export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return '–';
  if (ns < 1e3) return `${significant(ns)} ns`;
  if (ns < 1e6) return `${significant(ns / 1e3)} µs`;
  if (ns < 1e9) return `${significant(ns / 1e6)} ms`;
  return `${significant(ns / 1e9)} s`;
}

export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return '–';
  if (perSecond >= 1e6) return `${significant(perSecond / 1e6)} M/s`;
  if (perSecond >= 1e3) return `${significant(perSecond / 1e3)} k/s`;
  return `${significant(perSecond)}/s`;
}

export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return '–';
  return Number.isInteger(value) ? integer.format(value) : significant(value);
}

const formatTimes = (value: number): string =>
  Number.isFinite(value) ? `${significant(value)}×` : '–';
const formatMs = (ms: number): string => formatNs(ms * 1e6);
const formatMiB = (mib: number): string => (Number.isFinite(mib) ? `${significant(mib)} MiB` : '–');

function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** A formatted value split into its number and its unit (`12.3 ms` → `12.3`, ` ms`). */
function splitUnit(text: string): [string, string] {
  const match = /^([\d.,]+)(.*)$/.exec(text);
  return match === null ? [text, ''] : [match[1]!, match[2]!];
}

/**
 * `median (min–max)`, the unit written once when all three share it; just the median when all
 * runs agree or there was one.
 */
export function withSpread(f: Figure, format: (value: number) => string): string {
  if (f.n === 0) return '–';
  const median = format(f.median);
  if (f.n === 1 || f.min === f.max) return median;
  if (format(f.min) === median && format(f.max) === median) return median;
  const [low, lowUnit] = splitUnit(format(f.min));
  const [high, highUnit] = splitUnit(format(f.max));
  const unit = splitUnit(median)[1];
  if (lowUnit === unit && highUnit === unit) return `${median} (${low}–${high})`;
  return `${median} (${format(f.min)}–${format(f.max)})`;
}

// ── markdown ────────────────────────────────────────────────────────────────────────────────

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function modeLabel(row: DrawRow): string {
  return row.mode === 'tight'
    ? 'tight (`await next()` in a loop)'
    : `paced (${formatRate(row.ratePerProcess ?? NaN)} per process)`;
}

export function renderMarkdown(raw: RawResults, summary: Summary): string {
  const { settings, machine } = raw;
  const out: string[] = [];
  const mode = settings.quick ? 'Quick' : 'Full';
  out.push('# idgen-cass benchmark', '');
  out.push(
    `${mode} run started ${raw.startedAt}, finished in ${formatMs(raw.wallSeconds * 1e3)} wall time: \`${raw.command}\`. ` +
      `Every figure is the median of ${plural(settings.runs, 'run')} with the smallest and largest run in brackets; ` +
      'every ratio is computed within each run (both sides measured in that run), then its median taken.',
    '',
  );

  out.push('## Machine', '');
  const versions = [...new Set(Object.values(machine.cassandra))].join(', ');
  out.push(
    markdownTable(
      ['', ''],
      [
        ['CPU', `${machine.cpuModel}, ${machine.cores} cores`],
        ['Memory', `${machine.memoryGiB} GiB`],
        ['OS', machine.os],
        ['Node', machine.node],
        [
          'Cassandra',
          `${versions} (\`SELECT release_version FROM system.local\` in ${Object.keys(machine.cassandra).join(', ')})`,
        ],
        ['Cluster', machine.topology],
        ['Load average at start', machine.loadAverage.join(', ')],
      ],
    ),
    '',
    `The Cassandra JVMs, the ${settings.processesPerDc * Object.keys(machine.cassandra).length} allocator processes and the benchmark share these ${machine.cores} cores, ` +
      'so absolute numbers are those of a crowded laptop-class machine; the ratios travel better.',
    '',
  );

  out.push('## Key ratios', '');
  out.push(
    markdownTable(
      ['comparison', 'how many times'],
      summary.ratios.map((r) => [r.label, withSpread(r.value, formatTimes)]),
    ),
    '',
  );

  out.push('## 1. In-process cost of one ID', '');
  out.push(
    `No network in the loop. idgen-cass runs on ${raw.inProcess.idgenStore}, ` +
      `with blocks of ${formatCount(raw.inProcess.idgenBlockSize)} IDs, so every timed call is served from a loaded block ` +
      `(calls that found no ID or claimed a block inside a timed loop: ${raw.inProcess.refillsInLoops}). ` +
      `Each loop runs about ${settings.inProcessSampleMs} ms; each run visits the generators in a rotated order.`,
    '',
  );
  out.push(
    markdownTable(
      ['generator', 'ns per ID', 'IDs per second', '× plain counter'],
      summary.inProcess.map((row) => [
        row.label,
        withSpread(row.nsPerId, formatNs),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.vsCounter, formatTimes),
      ]),
    ),
    '',
  );
  const repeats = raw.inProcess.snowflakeRepeats;
  out.push(
    `Snowflake here is @sapphire/snowflake; it does not wait for the next millisecond when its 12-bit increment wraps, ` +
      `so past 4,096 IDs per millisecond it repeats IDs: ${formatCount(repeats.repeated)} of ${formatCount(repeats.generated)} generated back to back were repeats. ` +
      'uuid `v7()` draws 16 bytes from `crypto.getRandomValues()` per call, while `crypto.randomUUID()` serves from a cached entropy pool.',
    '',
  );

  out.push('## 2. On the 3-DC cluster', '');
  out.push(
    `Fresh keyspace \`${raw.cluster.keyspace}\` (RF 1 in every DC), dropped at the end.`,
    '',
  );

  out.push('### Naive baseline: one LWT per ID', '');
  out.push(
    'One row, `UPDATE … SET v = ? WHERE k = ? IF v = ?` at LOCAL_SERIAL (commit LOCAL_QUORUM) per ID, retried from the value a rejection returns; ' +
      'clients are concurrent loops in one process in dc1 sharing a driver pool. ' +
      'This is unique only within one DC: across DCs it would need SERIAL, which is slower still.',
    '',
  );
  out.push(
    markdownTable(
      ['clients', 'IDs/s', 'p50', 'p99', 'p99.9', 'max', 'LWTs per ID', 'rejections per ID'],
      summary.naive.map((row) => [
        String(row.clients),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p50, formatNs),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
        withSpread(row.lwtPerId, significant),
        withSpread(row.rejectionsPerId, significant),
      ]),
    ),
    '',
  );

  const steady = summary.draws.filter((d) => d.blockSize === settings.steadyBlockSize);
  out.push(`### idgen-cass steady state (block size ${formatCount(settings.steadyBlockSize)})`, '');
  out.push(
    `${steady[0]?.processes ?? 0} allocator processes (${settings.processesPerDc} per DC; child processes run as ${raw.cluster.workerRuntime}; one connection each to its own DC) draw from one sequence ` +
      `(DC range ${formatCount(steady[0]?.dcRangeSize ?? NaN)}, threshold ${SEQUENCE_DEFAULTS.threshold}) for ${settings.warmupSeconds} s of warm-up, then ${settings.durationSeconds} s measured. ` +
      'Every `next()` of the window is timed with `process.hrtime.bigint()` ' +
      `(a pair of reads costs ${formatNs(raw.inProcess.timerPairNs)}, included). Counters are diffs of \`stats()\` across the window. ` +
      `RSS is the largest process's at the end of the window; right after \`connect()\`, before any sequence, the processes held ${withSpread(figure(raw.cluster.rssAfterConnectMiB), formatMiB)}.`,
    '',
  );
  out.push(
    markdownTable(
      [
        'mode',
        'IDs/s (all processes)',
        'p50',
        'p99',
        'p99.9',
        'max',
        'waits after warm-up',
        'LWTs per M IDs',
        'CAS retries',
        'RSS per process',
      ],
      steady.map((row) => [
        modeLabel(row),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p50, formatNs),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
        `${withSpread(row.waits, formatCount)}; ${formatCount(row.waitsTotal)} in all runs`,
        withSpread(row.lwtPerMillion, significant),
        withSpread(row.casRejections, formatCount),
        withSpread(row.rssMiB, formatMiB),
      ]),
    ),
    '',
  );
  out.push(
    '- **tight**: `await next()` of an ID the process holds resumes as a microtask and never lets the event loop run, so the answer to the background refill started at the threshold is not read until the block is spent; ' +
      'then one call waits for it. Each block therefore ends in about one wait (see waits per block below), and a process tops out near one block per refill round trip (a LOCAL_SERIAL read and a LOCAL_SERIAL write) plus the per-call cost, timing included. ' +
      'This is the ceiling of one process, not the zero-wait goal.',
    `- **paced**: each process draws ${settings.pacedBlocksPerSecond} blocks per second (${settings.pacedBlocksPerSecond} × block size IDs/s), sleeping whenever it is 1 ms ahead, so the event loop runs and the refill started at the threshold lands before the block is spent: ` +
      `it has ${formatMs((1000 * (1 - SEQUENCE_DEFAULTS.threshold)) / settings.pacedBlocksPerSecond)} of runway. Here waits after warm-up should be 0. ` +
      'Its median latency is above the tight one because its calls are spread out: each runs on cold caches and less optimised code, not on Cassandra.',
    '',
  );

  out.push('### Block-size sweep', '');
  out.push(
    `DC range = ${settings.dcRangeBlocks} × block size. Use it to size blocks: LWTs per million IDs fall with the block size; the paced rate scales with it.`,
    '',
  );
  out.push(
    markdownTable(
      [
        'block size',
        'mode',
        'IDs/s',
        'p99',
        'p99.9',
        'max',
        'waits',
        'waits per block',
        'LWTs per M IDs',
        'CAS retries',
        'ranges granted',
        '`next()` threw, all runs (warm-up / measured)',
      ],
      summary.draws.map((row) => [
        formatCount(row.blockSize),
        modeLabel(row),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
        withSpread(row.waits, formatCount),
        withSpread(row.waitsPerBlock, significant),
        withSpread(row.lwtPerMillion, significant),
        withSpread(row.casRejections, formatCount),
        withSpread(row.rangesGranted, formatCount),
        `${row.warmupFailures} / ${row.failures}`,
      ]),
    ),
    '',
  );
  const failed = summary.draws.filter((d) => d.failures + d.warmupFailures > 0);
  if (failed.length > 0) {
    const messages = [...new Set(failed.flatMap((d) => d.failureMessages))];
    out.push(
      '`next()` calls that threw (the process paused 100 ms and went on), summed over all runs: ' +
        failed
          .map(
            (d) =>
              `block ${formatCount(d.blockSize)} ${d.mode}: ${d.warmupFailures} in warm-up, ${d.failures} measured`,
          )
          .join('; ') +
        `. Messages: ${messages.map((m) => `"${m}"`).join(', ')}`,
      '',
    );
  } else {
    out.push('No `next()` call threw, in warm-up or measured.', '');
  }

  const cold = summary.coldStart;
  out.push('### Cold start', '');
  out.push(
    `A fresh \`connect()\` in each DC, then the first \`next()\` of a new sequence (${cold.samples} samples: every DC in every run). ` +
      'The first process of a DC needs a DC range granted at SERIAL (across all DCs) and installed at LOCAL_SERIAL before its block; a second process of the same DC finds the range installed.',
    '',
  );
  out.push(
    markdownTable(
      ['step', 'time'],
      [
        ['`connect()`', withSpread(cold.connectMs, formatMs)],
        ['`connect()` to first ID, first process of its DC', withSpread(cold.firstIdMs, formatMs)],
        [
          '`connect()` to first ID, DC already holds a range',
          withSpread(cold.firstIdWarmDcMs, formatMs),
        ],
      ],
    ),
    '',
  );

  const burst = summary.burst;
  out.push('## 3. Burst', '');
  out.push(
    `One process in dc1 loads one block (\`ready()\`: ${withSpread(burst.heldBefore, formatCount)} IDs held), then ${formatCount(burst.calls)} \`next()\` calls arrive at once ` +
      `(\`Promise.all\`, ${formatCount(burst.calls / burst.blockSize)} × the block size of ${formatCount(burst.blockSize)}). Latency is from the burst's start to each call's resolution.`,
    '',
  );
  out.push(
    markdownTable(
      [
        'whole burst',
        'p50',
        'p99',
        'max',
        'waits (calls queued)',
        'blocks claimed',
        'ranges granted',
        'LWTs',
        'CAS retries',
      ],
      [
        [
          withSpread(burst.totalMs, formatMs),
          withSpread(burst.latency.p50, formatNs),
          withSpread(burst.latency.p99, formatNs),
          withSpread(burst.latency.max, formatNs),
          withSpread(burst.waits, formatCount),
          withSpread(burst.blocksClaimed, formatCount),
          withSpread(burst.rangesGranted, formatCount),
          withSpread(burst.lwt, formatCount),
          withSpread(burst.casRejections, formatCount),
        ],
      ],
    ),
    '',
  );
  out.push(
    'What the allocator did: the IDs held are served at once; every later call queues on the one claim in flight (single flight), ' +
      'and each claim, when it lands, serves one block of the queue while the rest wait for the next claim. ' +
      'So a burst of k blocks costs about k − 1 claims one after another, and its tail is that many LOCAL_SERIAL round trips; ' +
      '`take(n)` or a larger block avoid it.',
    '',
  );

  out.push('## Method', '');
  out.push(
    `- Options: ${plural(settings.runs, 'run')}, measured ${settings.durationSeconds} s and warm-up ${settings.warmupSeconds} s per cluster run, ${plural(settings.processesPerDc, 'process', 'processes')} per DC, ` +
      `block sizes ${settings.blockSizes.join(', ')}, naive clients 1 and ${settings.naiveClients}, burst ${settings.burstFactor} blocks.`,
    '- Each run of the cluster phases does them all in turn (naive, each block size tight then paced, burst, cold start), on fresh sequences, so the ratios pair measurements taken minutes apart at most.',
    '- LWTs are counted by the allocator: conditional writes (`lwtWrites`) plus reads at SERIAL and LOCAL_SERIAL; the naive baseline counts its conditional updates.',
    '- Waits are `stats().waits` diffed over the measured window, i.e. after warm-up; CAS retries are `casRejections` (lost races, each retried).',
    '- Latency percentiles come from a log-linear histogram (1.6 % precision) merged over the processes of a run.',
    '',
  );
  return out.join('\n');
}

// ── stdout table ────────────────────────────────────────────────────────────────────────────

function textTable(
  title: string,
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [title, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join(
    '\n',
  );
}

const plain = (label: string): string => label.replace(/`/g, '');

export function renderTable(raw: RawResults, summary: Summary): string {
  const sections: string[] = [];
  sections.push(
    `idgen-cass benchmark (${raw.settings.quick ? 'quick' : 'full'}), ${raw.machine.cpuModel} × ${raw.machine.cores}, Node ${raw.machine.node}, ` +
      `Cassandra ${[...new Set(Object.values(raw.machine.cassandra))].join(', ')}; median (min–max) of ${plural(raw.settings.runs, 'run')}`,
  );
  sections.push(
    textTable(
      '1. In-process, per ID (no network)',
      ['generator', 'ns/ID', 'IDs/s', '× counter'],
      summary.inProcess.map((row) => [
        plain(row.label),
        withSpread(row.nsPerId, formatNs),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.vsCounter, formatTimes),
      ]),
    ),
  );
  sections.push(
    textTable(
      '2a. Naive: one LWT (LOCAL_SERIAL CAS) per ID, dc1',
      ['clients', 'IDs/s', 'p50', 'p99', 'max', 'LWTs/ID'],
      summary.naive.map((row) => [
        String(row.clients),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p50, formatNs),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.max, formatNs),
        withSpread(row.lwtPerId, significant),
      ]),
    ),
  );
  const drawLabel = (row: DrawRow): [string, string] => [
    formatCount(row.blockSize),
    row.mode === 'tight' ? 'tight' : `paced ${formatRate(row.ratePerProcess ?? NaN)}`,
  ];
  const processes = `${summary.draws[0]?.processes ?? 0} processes in ${Object.keys(raw.machine.cassandra).length} DCs`;
  sections.push(
    textTable(
      `2b. idgen-cass next(), ${processes}, after warm-up: throughput and latency`,
      ['block', 'mode', 'IDs/s (all)', 'p50', 'p99', 'p99.9', 'max'],
      summary.draws.map((row) => [
        ...drawLabel(row),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p50, formatNs),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
      ]),
    ),
  );
  sections.push(
    textTable(
      `2c. idgen-cass next(), ${processes}, after warm-up: waits and cost`,
      ['block', 'mode', 'waits', 'waits/block', 'LWTs/M IDs', 'CAS retries', 'RSS MiB', 'failed*'],
      summary.draws.map((row) => [
        ...drawLabel(row),
        withSpread(row.waits, formatCount),
        withSpread(row.waitsPerBlock, significant),
        withSpread(row.lwtPerMillion, significant),
        withSpread(row.casRejections, formatCount),
        withSpread(row.rssMiB, significant),
        `${row.warmupFailures}/${row.failures}`,
      ]),
    ) + '\n* next() calls that threw, all runs: warm-up/measured (see REPORT.md for messages)',
  );
  const cold = summary.coldStart;
  const burst = summary.burst;
  sections.push(
    textTable(
      '2d. Cold start and 3. burst',
      ['measurement', 'value'],
      [
        ['connect()', withSpread(cold.connectMs, formatMs)],
        ['connect() to first ID, new DC (SERIAL grant)', withSpread(cold.firstIdMs, formatMs)],
        ['connect() to first ID, DC holds a range', withSpread(cold.firstIdWarmDcMs, formatMs)],
        [`burst of ${formatCount(burst.calls)}: whole burst`, withSpread(burst.totalMs, formatMs)],
        [
          'burst: p99 / max latency',
          `${withSpread(burst.latency.p99, formatNs)} / ${withSpread(burst.latency.max, formatNs)}`,
        ],
        ['burst: waits (calls queued)', withSpread(burst.waits, formatCount)],
        ['burst: blocks claimed', withSpread(burst.blocksClaimed, formatCount)],
      ],
    ),
  );
  sections.push(
    textTable(
      'Key ratios (per run, then median)',
      ['comparison', '×'],
      summary.ratios.map((r) => [plain(r.label), withSpread(r.value, formatTimes)]),
    ),
  );
  return sections.join('\n\n') + '\n';
}

// ── output ──────────────────────────────────────────────────────────────────────────────────

export function buildReport(raw: RawResults): Report {
  const summary = summarize(raw);
  return {
    json: { schema: RESULTS_SCHEMA, summary, raw },
    markdown: renderMarkdown(raw, summary),
    table: renderTable(raw, summary),
  };
}

/** The markdown as the repository's prettier settings print it, so `prettier --check` passes. */
export async function formatMarkdown(markdown: string, file: string): Promise<string> {
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(markdown, { ...config, parser: 'markdown', filepath: file });
}

/** Writes `results.json` and `REPORT.md` into `dir`; returns their paths. */
export async function writeReport(
  report: Report,
  dir: string,
): Promise<{ json: string; markdown: string }> {
  await fs.mkdir(dir, { recursive: true });
  const json = path.join(dir, 'results.json');
  const markdown = path.join(dir, 'REPORT.md');
  // NaN (nothing measured) becomes null, as JSON.stringify does anyway.
  await fs.writeFile(json, JSON.stringify(report.json, null, 2) + '\n');
  await fs.writeFile(markdown, await formatMarkdown(report.markdown, path.resolve(markdown)));
  return { json, markdown };
}
