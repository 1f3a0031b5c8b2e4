/** "## 5. HTTP service": the services beside the library, and Leaf's figure as context. */
import type { HttpLoad, HttpOverload, HttpResult, HttpRun, RawResults } from '../results.js';
import { figure, latencyFigures, sum } from '../stats.js';
import {
  formatCount,
  formatMiB,
  formatMs,
  formatNs,
  formatPercent,
  formatRate,
  formatTimes,
  quoted,
  row,
  latencyColumns,
  plural,
  table,
  withSpread,
} from './format.js';
import type { Summary } from './summary.js';

const SIDES = ['service', 'library'] as const;
export type HttpSide = (typeof SIDES)[number];

/** One side, one DC or every DC together (`dc` undefined). */
export type HttpRow = ReturnType<typeof rows>[number];
export type HttpSummary = ReturnType<typeof summarizeHttp>;

/** Meituan Leaf's README, segment mode, on a 4-core, 8 GB VM through Meituan's RPC. */
export const LEAF_FIGURE = Object.freeze({ requestsPerSecond: 50_000, tp999Ms: 1, cores: 4 });

export const loadRate = (load: HttpLoad, of: 'ok' | 'ids'): number =>
  sum(load.dcs.map((d) => (d.seconds > 0 ? d[of] / d.seconds : NaN)));

function rows(side: HttpSide, dcs: readonly string[], runs: readonly HttpRun[]) {
  const loads = runs.map((r) => r[side]);
  const row = (dc: string | undefined, of: readonly HttpLoad[]) => ({
    side,
    dc,
    requestsPerSecond: figure(of.map((l) => loadRate(l, 'ok'))),
    idsPerSecond: figure(of.map((l) => loadRate(l, 'ids'))),
    latency: latencyFigures(of),
    non2xx: sum(of.flatMap((l) => l.dcs.map((d) => d.non2xx))),
    errors: sum(of.flatMap((l) => l.dcs.map((d) => d.errors))),
  });
  const ofDc = (dc: string) =>
    loads.flatMap((l) => l.dcs.filter((d) => d.dc === dc).map((d) => ({ ...d, dcs: [d] })));
  return [...dcs.map((dc) => row(dc, ofDc(dc))), row(undefined, loads)];
}

export function summarizeHttp(http: HttpResult) {
  const counts = http.counts.map((entry) => {
    const { runs } = entry;
    const dcs = [...new Set(runs.flatMap((r) => r.service.dcs.map((d) => d.dc)))].sort();
    const ratio = (of: (load: HttpLoad) => number) =>
      figure(runs.map((r) => of(r.service) / of(r.library)));
    return {
      count: entry.count,
      runs: runs.length,
      rows: SIDES.flatMap((side) => rows(side, dcs, runs)),
      /** Service ÷ library within each run. */
      throughputRatio: ratio((l) => loadRate(l, 'ids')),
      p50Ratio: ratio((l) => l.latency.p50),
      p999Ratio: ratio((l) => l.latency.p999),
    };
  });
  const loads = http.counts.flatMap((c) => c.runs.flatMap((r) => [r.service, r.library]));
  const failureMessages = [
    ...new Set(loads.flatMap((l) => l.dcs.flatMap((d) => d.failureMessages))),
  ];
  const overload = http.overload === undefined ? undefined : summarizeOverload(http.overload);
  return { counts, failureMessages, overload };
}

/**
 * Memory counts as bounded when the load's second half peaks at most this much above its first:
 * a service queueing without limit grows about as much in each half.
 */
export const FLAT_SECOND_HALF = 1.25;

/**
 * RSS before: the median of the second before the load; peak: of every sample; the halves'
 * peaks split the load's samples in two.
 */
function summarizeOverload(o: HttpOverload) {
  const rssBeforeMiB = figure(o.rssBeforeMiB).median;
  const rssPeakMiB = Math.max(...o.rssBeforeMiB, ...o.rssMiB);
  // Two samples at least, or no half to compare (NaN, never called bounded).
  const half = o.rssMiB.length < 2 ? 0 : Math.ceil(o.rssMiB.length / 2);
  const rssFirstHalfPeakMiB = half === 0 ? NaN : Math.max(...o.rssMiB.slice(0, half));
  const rssSecondHalfPeakMiB = half === 0 ? NaN : Math.max(...o.rssMiB.slice(half));
  return {
    okPerSecond: o.ok / o.seconds,
    answersPerSecond: (o.ok + o.overloaded + o.other) / o.seconds,
    rssBeforeMiB,
    rssPeakMiB,
    rssEndMiB: o.rssMiB.at(-1) ?? NaN,
    rssPeakRatio: rssPeakMiB / rssBeforeMiB,
    rssFirstHalfPeakMiB,
    rssSecondHalfPeakMiB,
    rssSecondHalfRatio: rssSecondHalfPeakMiB / rssFirstHalfPeakMiB,
  };
}

function renderOverload(o: HttpOverload, summary: ReturnType<typeof summarizeOverload>): string[] {
  const cells: [string, string][] = [
    ['2xx', formatCount(o.ok)],
    ['503 `IDGEN_OVERLOADED` with `Retry-After`', formatCount(o.overloaded)],
    ['other', formatCount(o.other)],
    ['2xx/s', formatRate(summary.okPerSecond)],
    ['answers/s', formatRate(summary.answersPerSecond)],
    ['RSS before', formatMiB(summary.rssBeforeMiB)],
    ['RSS peak', formatMiB(summary.rssPeakMiB)],
    ['RSS at the end', formatMiB(summary.rssEndMiB)],
    ['peak ÷ before', formatTimes(summary.rssPeakRatio)],
    ['peak, 2nd half ÷ 1st half', formatTimes(summary.rssSecondHalfRatio)],
  ];
  const flat = summary.rssSecondHalfRatio <= FLAT_SECOND_HALF;
  const answered = `${formatCount(o.connections)} connections asking for ${formatCount(o.count)} IDs each`;
  return [
    '### Overload',
    '',
    `One more \`idgen-cass serve\` in ${o.dc}, on the same machine, with \`--max-pending-requests ${o.maxPendingRequests}\`, under ${answered} (the most a request may ask) for ${o.seconds} s, on a sequence of its own with fixed blocks of ${formatCount(o.count)} IDs, so that requests wait for claims; its RSS read from /proc every ${o.rssSampleMs} ms, during the second before the load and during it.`,
    '',
    ...row(cells),
    (o.overloaded === 0
      ? '**No request was answered 503 `IDGEN_OVERLOADED`: this run did not overload the service, and shows nothing about shedding.**'
      : `Requests beyond ${o.maxPendingRequests} under way were answered 503 \`IDGEN_OVERLOADED\` at once, and the service's memory peaked at ${formatTimes(summary.rssPeakRatio)} its level before the load; ` +
        (flat
          ? `its second half peaked at ${formatTimes(summary.rssSecondHalfRatio)} its first: bounded.`
          : `**its second half peaked at ${formatTimes(summary.rssSecondHalfRatio)} its first, above ${formatTimes(FLAT_SECOND_HALF)}: this run does not show its memory bounded.**`)) +
      (o.failureMessages.length > 0 ? ` Other answers: ${quoted(o.failureMessages)}.` : '') +
      ` Its 2xx answers held ${formatCount(o.uniqueness.ids)} IDs: ${o.uniqueness.duplicates === 0 ? 'none repeated.' : `**${formatCount(o.uniqueness.duplicates)} repeated.**`}`,
    '',
  ];
}

function sideLabel(side: HttpSide, count: number): string {
  if (side === 'service') return `HTTP \`POST …/ids?count=${count}\``;
  return count === 1 ? 'library `await next()`' : `library \`await take(${count})\``;
}

/** Without its closing punctuation; the rest is a log. */
export function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/[\s.:;]+$/, '');
}

export function renderHttp(raw: RawResults, summary: Summary): string[] {
  const http = raw.http;
  if (http === undefined || summary.http === undefined) return [];
  const { settings, machine } = raw;
  const options = Object.entries(http.sequenceOptions)
    .map(([k, v]) => `\`${k}: ${String(v)}\``)
    .join(', ');
  const measured = summary.http.counts.filter((c) => c.runs > 0);
  const services = http.services
    .map(
      (s) =>
        `${s.dc} ready after ${formatMs(s.readyMs)}, exit ${s.exitCode === null ? 'none (killed)' : s.exitCode}`,
    )
    .join('; ');
  const allExited = http.services.length > 0 && http.services.every((s) => s.exitCode === 0);
  const { duplicates } = http.uniqueness;
  const all = measured
    .find((c) => c.count === 1)
    ?.rows.find((r) => r.side === 'service' && r.dc === undefined);
  const leaf = LEAF_FIGURE;
  return [
    '## 5. HTTP service',
    '',
    `One \`idgen-cass serve\` per DC (${http.services.length} in all; ${http.serviceRuntime}), serving one sequence (${options}; blocks and DC ranges adaptive, as by default). autocannon ${http.autocannon}, in the benchmark's process, loads every service at once with ${plural(settings.httpConnections, 'connection')} each (one request in flight per connection), ${settings.httpWarmupSeconds} s of warm-up then ${settings.httpSeconds} s measured. Beside it, the library in the benchmark's process on the same cluster: one \`connect()\` per DC, ${settings.httpConnections} concurrent callers per DC in a loop, on a sequence of its own created alike, for the same warm-up and window. Each run measures both sides for each count, one after the other ` +
      "(the library first in even runs, the service first in odd ones). Latency is per answered request (autocannon's response time, recorded in the report's histogram: autocannon's own keeps whole milliseconds) and per returned call.",
    '',
    `Machine: ${machine.cpuModel}, ${machine.cores} cores, shared by the Cassandra JVMs (${machine.topology}), the services and the load generator, so the load generator competes with what it measures; the ratios to the library are the figures to compare.`,
    '',
    ...(http.failure === undefined
      ? []
      : [
          `**The phase stopped early:** ${firstLine(http.failure)}. The tables hold what was measured before.`,
          '',
        ]),
    ...(measured.length === 0 ? ['Nothing was measured.', ''] : []),
    ...measured.flatMap((entry) => [
      `### ${plural(entry.count, 'ID')} per request`,
      '',
      ...table<HttpRow>(
        [
          ['side', (row) => sideLabel(row.side, entry.count)],
          ['DC', (row) => row.dc ?? '**all**'],
          ['requests/s', (row) => withSpread(row.requestsPerSecond, formatRate)],
          ['IDs/s', (row) => withSpread(row.idsPerSecond, formatRate)],
          ...latencyColumns((row: HttpRow) => row.latency),
          ['non-2xx (library: threw)', (row) => formatCount(row.non2xx)],
          ['connection errors', (row) => formatCount(row.errors)],
        ],
        entry.rows,
      ),
    ]),
    ...(measured.length === 0
      ? []
      : table<(typeof measured)[number]>(
          [
            ['IDs per request', (c) => formatCount(c.count)],
            ['HTTP IDs/s ÷ library IDs/s', (c) => withSpread(c.throughputRatio, formatPercent)],
            ['HTTP p50 ÷ library p50', (c) => withSpread(c.p50Ratio, formatTimes)],
            ['HTTP p99.9 ÷ library p99.9', (c) => withSpread(c.p999Ratio, formatTimes)],
          ],
          measured,
        )),
    ...(summary.http.failureMessages.length === 0
      ? []
      : [`Failed requests and calls: ${quoted(summary.http.failureMessages)}.`, '']),
    ...(http.overload === undefined || summary.http.overload === undefined
      ? []
      : renderOverload(http.overload, summary.http.overload)),
    `- Services: ${services || 'none started'}. ${allExited ? 'Every service exited 0 on SIGTERM.' : '**Not every service exited 0 on SIGTERM.**'}`,
    `- Uniqueness: ${formatCount(http.uniqueness.ids)} IDs handed out by the services in the warm-ups (every DC, count and run; the measured windows keep no body): ` +
      (duplicates === 0 ? 'none repeated.' : `**${formatCount(duplicates)} repeated.**`),
    `- Context, not a target: Meituan Leaf publishes close to ${formatCount(leaf.requestsPerSecond)} requests/s with a TP999 of ${leaf.tp999Ms} ms on a ${leaf.cores}-core, 8 GB VM, called through its RPC framework (${formatCount(leaf.requestsPerSecond / leaf.cores)} per core). ` +
      (all === undefined
        ? 'This run measured no single-ID requests to set beside it.'
        : `Here, one ID per request, every DC together: ${withSpread(all.requestsPerSecond, formatRate)} requests with p99.9 ${withSpread(all.latency.p999, formatNs)}, on ${machine.cores} cores shared with Cassandra (${formatRate(all.requestsPerSecond.median / machine.cores)} per core); the machines and the clients differ too much to compare closer than an order of magnitude.`),
    '',
  ];
}
