/** The plain-text tables printed on stdout: the report's figures in brief. */
import type { RawResults } from '../results.js';
import {
  byColumns,
  formatCount,
  formatMs,
  formatNs,
  formatRate,
  formatRatio,
  formatTimes,
  latencyColumns,
  plural,
  significant,
  withSpread,
  type Column,
} from './format.js';
import { firstLine, measuredCells, sideLabel } from './http.js';
import type { ScaleRow } from './scale-summary.js';
import type { DrawRow, NaiveRow, Summary } from './summary.js';

function textTable<T>(title: string, columns: readonly Column<T>[], data: readonly T[]): string {
  return aligned(title, ...byColumns(columns, data));
}

function aligned(title: string, header: readonly string[], rows: readonly string[][]): string {
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
const failed = (row: { warmupFailures: number; failures: number }) =>
  `${row.warmupFailures}/${row.failures}`;
const THREW = '\n* next() calls that threw, all runs: warm-up/measured';

export function renderTable(raw: RawResults, summary: Summary): string {
  const { machine, settings } = raw;
  const sections = [
    `idgen-cass benchmark (${settings.quick ? 'quick' : 'full'}), ${machine.cpuModel} × ${machine.cores}, Node ${machine.node}, Cassandra ${[...new Set(Object.values(machine.cassandra))].join(', ')}; median (min–max) of ${plural(settings.runs, 'run')}`,
    textTable(
      '1. In-process, per ID (no network)',
      [
        ['generator', (row) => plain(row.label)],
        ['ns/ID', (row) => withSpread(row.nsPerId, formatNs)],
        ['IDs/s', (row) => withSpread(row.idsPerSecond, formatRate)],
        ['× counter', (row) => withSpread(row.vsCounter, formatTimes)],
      ],
      summary.inProcess,
    ),
  ];
  // `--scale-only` and `--http-only` skip the cluster phases of sections 2 and 3.
  if (raw.cluster.naive.length > 0 || raw.cluster.draws.length > 0) {
    sections.push(...clusterSections(raw, summary));
  }
  if (summary.scale !== undefined) {
    sections.push(
      textTable<ScaleRow>(
        `4. Scale: N instances per DC, after warm-up (rate mode: ${formatRate(settings.scaleRatePerDc)} per DC)`,
        [
          ['mode', (row) => row.mode],
          ['N', (row) => String(row.instancesPerDc)],
          ['blocks', (row) => row.label],
          ['IDs/s (all)', (row) => withSpread(row.idsPerSecond, formatRate)],
          ['claims/s/DC', (row) => withSpread(row.claimsPerSecondPerDc, significant)],
          ['retries/claim', (row) => withSpread(row.retriesPerClaim, significant)],
          ...latencyColumns((row: ScaleRow) => row.latency, ['p99', 'max']),
          ['waits', (row) => withSpread(row.waits, formatCount)],
          ['failed*', failed],
          ['mean block', (row) => withSpread(row.meanBlockSize, (v) => formatCount(Math.round(v)))],
        ],
        summary.scale.rows,
      ) + THREW,
    );
  }
  if (summary.http !== undefined) {
    const rows = summary.http.counts.flatMap((entry) =>
      entry.rows
        .filter((row) => row.dc === undefined)
        .map((row) => [
          plain(sideLabel(row.side, entry.count)),
          ...measuredCells(row),
          formatCount(row.non2xx + row.errors),
        ]),
    );
    const failure = raw.http?.failure;
    sections.push(
      aligned(
        `5. HTTP service per DC (${settings.httpConnections} connections each) beside the library, every DC together`,
        ['side', 'req/s', 'IDs/s', 'p50', 'p99', 'p99.9', 'max', 'failed'],
        rows,
      ) + (failure === undefined ? '' : `\n* stopped early: ${firstLine(failure)}`),
    );
  }
  sections.push(
    textTable(
      'Key ratios (per run, then median)',
      [
        ['comparison', (r) => plain(r.label)],
        ['×', (r) => withSpread(r.value, formatRatio(r.unit))],
      ],
      summary.ratios,
    ),
  );
  return sections.join('\n\n') + '\n';
}

function clusterSections(raw: RawResults, summary: Summary): string[] {
  const draw: Column<DrawRow>[] = [
    ['block', (row) => formatCount(row.blockSize)],
    [
      'mode',
      (row) => (row.mode === 'tight' ? 'tight' : `paced ${formatRate(row.ratePerProcess ?? NaN)}`),
    ],
  ];
  const processes = `${summary.draws[0]?.processes ?? 0} processes in ${Object.keys(raw.machine.cassandra).length} DCs`;
  const { coldStart: cold, burst } = summary;
  return [
    textTable<NaiveRow>(
      '2a. Naive: one LWT (LOCAL_SERIAL CAS) per ID, dc1',
      [
        ['clients', (row) => String(row.clients)],
        ['IDs/s', (row) => withSpread(row.idsPerSecond, formatRate)],
        ...latencyColumns((row: NaiveRow) => row.latency, ['p50', 'p99', 'max']),
        ['LWTs/ID', (row) => withSpread(row.lwtPerId, significant)],
      ],
      summary.naive,
    ),
    textTable<DrawRow>(
      `2b. idgen-cass next(), ${processes}, after warm-up: throughput and latency`,
      [
        ...draw,
        ['IDs/s (all)', (row) => withSpread(row.idsPerSecond, formatRate)],
        ...latencyColumns((row: DrawRow) => row.latency),
      ],
      summary.draws,
    ),
    textTable<DrawRow>(
      `2c. idgen-cass next(), ${processes}, after warm-up: waits and cost`,
      [
        ...draw,
        ['waits', (row) => withSpread(row.waits, formatCount)],
        ['waits/block', (row) => withSpread(row.waitsPerBlock, significant)],
        ['LWTs/M IDs', (row) => withSpread(row.lwtPerMillion, significant)],
        ['CAS retries', (row) => withSpread(row.casRejections, formatCount)],
        ['RSS MiB', (row) => withSpread(row.rssMiB, significant)],
        ['failed*', failed],
      ],
      summary.draws,
    ) + `${THREW} (see REPORT.md for messages)`,
    aligned(
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
  ];
}
