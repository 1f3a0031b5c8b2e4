/**
 * The plain-text tables the benchmark prints on stdout: the report's figures in brief, one table
 * per section.
 */
import type { RawResults } from '../results.js';
import {
  formatCount,
  formatMs,
  formatNs,
  formatRate,
  formatRatio,
  formatTimes,
  plural,
  significant,
  withSpread,
} from './format.js';
import { firstLine, measuredCells, sideLabel, type HttpSummary } from './http.js';
import type { DrawRow, Summary } from './summary.js';

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
  // `--scale-only` skips the cluster phases of sections 2 and 3.
  if (raw.cluster.naive.length > 0 || raw.cluster.draws.length > 0)
    clusterSections(raw, summary, sections);
  if (summary.scale !== undefined) {
    sections.push(
      textTable(
        `4. Scale: N instances per DC, after warm-up (rate mode: ${formatRate(raw.settings.scaleRatePerDc)} per DC)`,
        [
          'mode',
          'N',
          'blocks',
          'IDs/s (all)',
          'claims/s/DC',
          'retries/claim',
          'p99',
          'max',
          'waits',
          'failed*',
          'mean block',
        ],
        summary.scale.rows.map((row) => [
          row.mode,
          String(row.instancesPerDc),
          row.label,
          withSpread(row.idsPerSecond, formatRate),
          withSpread(row.claimsPerSecondPerDc, significant),
          withSpread(row.retriesPerClaim, significant),
          withSpread(row.latency.p99, formatNs),
          withSpread(row.latency.max, formatNs),
          withSpread(row.waits, formatCount),
          `${row.warmupFailures}/${row.failures}`,
          withSpread(row.meanBlockSize, (v) => formatCount(Math.round(v))),
        ]),
      ) + '\n* next() calls that threw, all runs: warm-up/measured',
    );
  }
  if (summary.http !== undefined) httpSection(raw, summary.http, sections);
  sections.push(
    textTable(
      'Key ratios (per run, then median)',
      ['comparison', '×'],
      summary.ratios.map((r) => [plain(r.label), withSpread(r.value, formatRatio(r.unit))]),
    ),
  );
  return sections.join('\n\n') + '\n';
}

/** Sections 2 and 3 of the table: naive baseline, draws, cold start and burst. */
function clusterSections(raw: RawResults, summary: Summary, sections: string[]): void {
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
}

/** Section 5 of the table: every DC together, service beside library, per count. */
function httpSection(raw: RawResults, http: HttpSummary, sections: string[]): void {
  const rows = http.counts.flatMap((entry) =>
    entry.rows
      .filter((row) => row.dc === undefined)
      .map((row) => [
        plain(sideLabel(row.side, entry.count)),
        ...measuredCells(row),
        formatCount(row.non2xx + row.errors),
      ]),
  );
  const failure =
    raw.http?.failure === undefined ? '' : `\n* stopped early: ${firstLine(raw.http.failure)}`;
  sections.push(
    textTable(
      `5. HTTP service per DC (${raw.settings.httpConnections} connections each) beside the library, every DC together`,
      ['side', 'req/s', 'IDs/s', 'p50', 'p99', 'p99.9', 'max', 'failed'],
      rows,
    ) + failure,
  );
}
