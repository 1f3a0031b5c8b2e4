/**
 * "## 5. HTTP service": one `idgen-cass serve` per DC under autocannon beside the library in the
 * benchmark's process, per count: requests and IDs per second, latency, failures, their ratio
 * within each run, and Leaf's published figure as context.
 */
import type { HttpLoad, HttpResult, RawResults } from '../results.js';
import { figure, sum, type Figure, type LatencyFigures } from '../stats.js';
import {
  formatCount,
  formatMs,
  formatNs,
  formatPercent,
  formatRate,
  formatTimes,
  markdownTable,
  plural,
  withSpread,
} from './format.js';
import type { Summary } from './summary.js';

/** Which side of the comparison a row measures. */
export type HttpSide = 'service' | 'library';

/** One row of a count's table: one side, one DC or every DC together (`dc` undefined). */
export interface HttpRow {
  readonly side: HttpSide;
  readonly dc: string | undefined;
  readonly requestsPerSecond: Figure;
  readonly idsPerSecond: Figure;
  readonly latency: LatencyFigures;
  /** Non-2xx answers (library: calls that threw), summed over the runs. */
  readonly non2xx: number;
  /** Connection errors and timeouts, summed over the runs. */
  readonly errors: number;
}

export interface HttpCountSummary {
  readonly count: number;
  readonly runs: number;
  readonly rows: readonly HttpRow[];
  /** Service IDs/s ÷ library IDs/s, every DC together, within each run. */
  readonly throughputRatio: Figure;
  /** Service p50 ÷ library p50, within each run. */
  readonly p50Ratio: Figure;
  /** Service p99.9 ÷ library p99.9, within each run. */
  readonly p999Ratio: Figure;
}

export interface HttpSummary {
  readonly counts: readonly HttpCountSummary[];
  /** Distinct failure messages of both sides, every run. */
  readonly failureMessages: readonly string[];
}

/**
 * Leaf's published figure (Meituan Leaf's README, segment mode): close to 50,000 requests per
 * second with a TP999 of 1 ms on a 4-core, 8 GB VM, called through Meituan's RPC.
 */
export const LEAF_FIGURE = Object.freeze({ requestsPerSecond: 50_000, tp999Ms: 1, cores: 4 });

const rate = (load: HttpLoad, of: 'ok' | 'ids'): number =>
  sum(load.dcs.map((d) => (d.seconds > 0 ? d[of] / d.seconds : NaN)));

function rows(side: HttpSide, loads: readonly HttpLoad[], dcs: readonly string[]): HttpRow[] {
  const perDc = dcs.map((dc): HttpRow => {
    const mine = loads.flatMap((load) => load.dcs.filter((d) => d.dc === dc));
    return {
      side,
      dc,
      requestsPerSecond: figure(mine.map((d) => d.ok / d.seconds)),
      idsPerSecond: figure(mine.map((d) => d.ids / d.seconds)),
      latency: {
        p50: figure(mine.map((d) => d.latency.p50)),
        p99: figure(mine.map((d) => d.latency.p99)),
        p999: figure(mine.map((d) => d.latency.p999)),
        max: figure(mine.map((d) => d.latency.max)),
      },
      non2xx: sum(mine.map((d) => d.non2xx)),
      errors: sum(mine.map((d) => d.errors)),
    };
  });
  const all: HttpRow = {
    side,
    dc: undefined,
    requestsPerSecond: figure(loads.map((l) => rate(l, 'ok'))),
    idsPerSecond: figure(loads.map((l) => rate(l, 'ids'))),
    latency: {
      p50: figure(loads.map((l) => l.latency.p50)),
      p99: figure(loads.map((l) => l.latency.p99)),
      p999: figure(loads.map((l) => l.latency.p999)),
      max: figure(loads.map((l) => l.latency.max)),
    },
    non2xx: sum(perDc.map((r) => r.non2xx)),
    errors: sum(perDc.map((r) => r.errors)),
  };
  return [...perDc, all];
}

export function summarizeHttp(http: HttpResult): HttpSummary {
  const counts = http.counts.map((entry): HttpCountSummary => {
    const services = entry.runs.map((r) => r.service);
    const libraries = entry.runs.map((r) => r.library);
    const dcs = [...new Set(entry.runs.flatMap((r) => r.service.dcs.map((d) => d.dc)))].sort();
    return {
      count: entry.count,
      runs: entry.runs.length,
      rows: [...rows('service', services, dcs), ...rows('library', libraries, dcs)],
      throughputRatio: figure(
        entry.runs.map((r) => rate(r.service, 'ids') / rate(r.library, 'ids')),
      ),
      p50Ratio: figure(entry.runs.map((r) => r.service.latency.p50 / r.library.latency.p50)),
      p999Ratio: figure(entry.runs.map((r) => r.service.latency.p999 / r.library.latency.p999)),
    };
  });
  const failureMessages = [
    ...new Set(
      http.counts.flatMap((c) =>
        c.runs.flatMap((r) =>
          [...r.service.dcs, ...r.library.dcs].flatMap((d) => d.failureMessages),
        ),
      ),
    ),
  ];
  return { counts, failureMessages };
}

/** How one side is called, for a count. */
export function sideLabel(side: HttpSide, count: number): string {
  if (side === 'service') return `HTTP \`POST …/ids?count=${count}\``;
  return count === 1 ? 'library `await next()`' : `library \`await take(${count})\``;
}

/** A row's measured figures, as both the report and the stdout table show them: req/s, IDs/s, p50, p99, p99.9, max. */
export function measuredCells(row: HttpRow): string[] {
  return [
    withSpread(row.requestsPerSecond, formatRate),
    withSpread(row.idsPerSecond, formatRate),
    withSpread(row.latency.p50, formatNs),
    withSpread(row.latency.p99, formatNs),
    withSpread(row.latency.p999, formatNs),
    withSpread(row.latency.max, formatNs),
  ];
}

/** The figure, or "–" when nothing was measured. */
const ratioText = (f: Figure): string => withSpread(f, formatPercent);

export function renderHttp(raw: RawResults, summary: Summary): string[] {
  const http = raw.http;
  const out: string[] = [];
  if (http === undefined || summary.http === undefined) return out;
  const { settings, machine } = raw;
  out.push('## 5. HTTP service', '');
  out.push(
    `One \`idgen-cass serve\` per DC (${http.services.length} in all; ${http.serviceRuntime}), serving one sequence ` +
      `(${Object.entries(http.sequenceOptions)
        .map(([k, v]) => `\`${k}: ${String(v)}\``)
        .join(', ')}; blocks and DC ranges adaptive, as by default). ` +
      `autocannon ${http.autocannon}, in the benchmark's process, loads every service at once with ${plural(settings.httpConnections, 'connection')} each ` +
      `(one request in flight per connection), ${settings.httpWarmupSeconds} s of warm-up then ${settings.httpSeconds} s measured. ` +
      `Beside it, the library in the benchmark's process on the same cluster: one \`connect()\` per DC, ${settings.httpConnections} concurrent callers per DC in a loop, ` +
      `on a sequence of its own created alike, for the same warm-up and window. Each run measures both sides for each count, one after the other ` +
      "(the library first in even runs, the service first in odd ones). Latency is per answered request (autocannon's response time, " +
      "recorded in the report's histogram: autocannon's own keeps whole milliseconds) and per returned call.",
    '',
  );
  out.push(
    `Machine: ${machine.cpuModel}, ${machine.cores} cores, shared by the Cassandra JVMs (${machine.topology}), the services and the load generator, so the load generator competes with what it measures; the ratios to the library are the figures to compare.`,
    '',
  );
  if (http.failure !== undefined) {
    out.push(
      `**The phase stopped early:** ${firstLine(http.failure)}. The tables hold what was measured before.`,
      '',
    );
  }
  const measured = summary.http.counts.some((c) => c.runs > 0);
  if (!measured) out.push('Nothing was measured.', '');
  for (const entry of summary.http.counts) {
    if (entry.runs === 0) continue;
    out.push(`### ${plural(entry.count, 'ID')} per request`, '');
    out.push(
      markdownTable(
        [
          'side',
          'DC',
          'requests/s',
          'IDs/s',
          'p50',
          'p99',
          'p99.9',
          'max',
          'non-2xx (library: threw)',
          'connection errors',
        ],
        entry.rows.map((row) => [
          sideLabel(row.side, entry.count),
          row.dc ?? '**all**',
          ...measuredCells(row),
          formatCount(row.non2xx),
          formatCount(row.errors),
        ]),
      ),
      '',
    );
  }
  if (measured) {
    out.push(
      markdownTable(
        [
          'IDs per request',
          'HTTP IDs/s ÷ library IDs/s',
          'HTTP p50 ÷ library p50',
          'HTTP p99.9 ÷ library p99.9',
        ],
        summary.http.counts
          .filter((c) => c.runs > 0)
          .map((c) => [
            formatCount(c.count),
            ratioText(c.throughputRatio),
            withSpread(c.p50Ratio, formatTimes),
            withSpread(c.p999Ratio, formatTimes),
          ]),
      ),
      '',
    );
  }
  if (summary.http.failureMessages.length > 0) {
    out.push(
      `Failed requests and calls: ${summary.http.failureMessages.map((m) => `"${m}"`).join(', ')}.`,
      '',
    );
  }
  const services = http.services
    .map(
      (s) =>
        `${s.dc} ready after ${formatMs(s.readyMs)}, exit ${s.exitCode === null ? 'none (killed)' : s.exitCode}`,
    )
    .join('; ');
  const allExited = http.services.length > 0 && http.services.every((s) => s.exitCode === 0);
  out.push(
    `- Services: ${services || 'none started'}. ${allExited ? 'Every service exited 0 on SIGTERM.' : '**Not every service exited 0 on SIGTERM.**'}`,
    `- Uniqueness: ${formatCount(http.uniqueness.ids)} IDs handed out by the services in the warm-ups (every DC, count and run; the measured windows keep no body): ` +
      (http.uniqueness.duplicates === 0
        ? 'none repeated.'
        : `**${formatCount(http.uniqueness.duplicates)} repeated.**`),
  );
  const one = summary.http.counts.find((c) => c.count === 1 && c.runs > 0);
  const all = one?.rows.find((r) => r.side === 'service' && r.dc === undefined);
  const perCore = (all?.requestsPerSecond.median ?? NaN) / machine.cores;
  out.push(
    `- Context, not a target: Meituan Leaf publishes close to ${formatCount(LEAF_FIGURE.requestsPerSecond)} requests/s with a TP999 of ${LEAF_FIGURE.tp999Ms} ms ` +
      `on a ${LEAF_FIGURE.cores}-core, 8 GB VM, called through its RPC framework (${formatCount(LEAF_FIGURE.requestsPerSecond / LEAF_FIGURE.cores)} per core). ` +
      (all === undefined
        ? 'This run measured no single-ID requests to set beside it.'
        : `Here, one ID per request, every DC together: ${withSpread(all.requestsPerSecond, formatRate)} requests with p99.9 ${withSpread(all.latency.p999, formatNs)}, ` +
          `on ${machine.cores} cores shared with Cassandra (${formatRate(perCore)} per core); the machines and the clients differ too much to compare closer than an order of magnitude.`),
    '',
  );
  return out;
}

/** The first line of a failure message, without its closing punctuation (the rest is a log). */
export function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/[\s.:;]+$/, '');
}
