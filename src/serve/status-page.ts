/**
 * `GET /status`: what `idgen-cass status` shows, as an HTML page that refreshes itself without
 * script; {@link latestReport} reads one report at a time for every viewer.
 */

import {
  runwayBelowTarget,
  type DcStatus,
  type HeldRange,
  type SequenceStatus,
  type StatusReport,
} from '../admin/status.js';
import { count, duration, percent, rate, span } from '../quantities.js';

/** What the status page reads: an `Admin` (`openAdmin()`) fits as it is. */
export interface StatusSource {
  status(options: {
    readonly sampleMs?: number | undefined;
    readonly since?: StatusReport | undefined;
  }): Promise<StatusReport>;
}

/**
 * The next report: one read at a time, shared by the requests that arrive during it. A report
 * under 2 s old is served again, so that viewers do not multiply the reads; rates run since the
 * last report when it is under a minute old, else over a 1 s sample.
 */
export function latestReport(source: StatusSource): () => Promise<StatusReport> {
  let last: StatusReport | undefined;
  let reading: Promise<StatusReport> | undefined;
  const read = async () => {
    const age = last === undefined ? Infinity : Date.now() - last.at.getTime();
    if (age < 2_000) return last!;
    last = await source.status(age <= 60_000 ? { since: last } : { sampleMs: 1_000 });
    return last;
  };
  return () => (reading ??= read().finally(() => (reading = undefined)));
}

/** The page of `report`: every text escaped, refreshing itself every `refreshSeconds`. */
export function statusPage(report: StatusReport, refreshSeconds = 10): string {
  const sampled = report.sequences.find((s) => s.sampledOverMs !== undefined)?.sampledOverMs;
  const title = `idgen-cass · ${report.keyspace} · ${report.dc}`;
  const body = [
    `<h1>idgen-cass status <small>keyspace <b>${esc(report.keyspace)}</b> · seen from <b>${esc(report.dc)}</b> · ${esc(report.at.toISOString())}` +
      (sampled === undefined
        ? ' · rates from the next refresh'
        : ` · rates over ${(sampled / 1000).toFixed(1)} s`) +
      `</small></h1>`,
    serialLine(report),
    hostsLine(report),
    ...safetyLines(report),
    report.sequences.length === 0
      ? `<p id="no-sequences">No sequences in keyspace ${esc(report.keyspace)} yet.</p>`
      : '',
    ...report.sequences.map((sequence) => sequenceSection(sequence, report.dc)),
    `<p class="muted">Refreshes every ${refreshSeconds} s. Runway: how long a DC's IDs last at its rate without a new grant, which needs SERIAL.</p>`,
  ];
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="refresh" content="${refreshSeconds}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head><body>',
    ...body.filter((part) => part !== ''),
    '</body></html>',
    '',
  ].join('\n');
}

const STYLE = [
  'body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}',
  'h1{font-size:1.3em}h1 small{font-weight:normal;color:#555}h2{font-size:1.1em;margin:1.5em 0 .3em}',
  'table{border-collapse:collapse}th,td{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:left}',
  'td,th{white-space:nowrap}td.wrap{white-space:normal}td.n{text-align:right;font-variant-numeric:tabular-nums}',
  '.ok{color:#1a7f37}.bad{color:#b42318;font-weight:bold}.low{background:#fff4d6}',
  'tr.stale{background:#fde8e7}.muted{color:#666}.down{color:#b42318}',
].join('');

function serialLine(report: StatusReport): string {
  const { serial } = report;
  if (serial.reachable) {
    return `<p id="serial" class="ok">SERIAL reachable from ${esc(serial.dc)} (${serial.tookMs} ms): new DC ranges can be granted</p>`;
  }
  return (
    `<p id="serial" class="bad">SERIAL UNREACHABLE from ${esc(serial.dc)}: new DC ranges cannot be granted; each DC serves only the IDs it holds (see runway)` +
    `<br><span class="muted">cause (after ${serial.tookMs} ms): ${esc(serial.error ?? 'unknown')}</span></p>`
  );
}

function hostsLine(report: StatusReport): string {
  const hosts = report.hosts.map(
    (host) =>
      `<span class="${host.up ? 'up' : 'down'}">${esc(host.dc)} ${esc(host.address)} ${host.up ? 'up' : 'DOWN'}</span>`,
  );
  return `<p id="hosts">hosts (as this service sees them): ${hosts.length === 0 ? 'none known' : hosts.join(' · ')}</p>`;
}

function safetyLines(report: StatusReport): string[] {
  const { dc, problems, error } = report.nodeSafety;
  const unread = `could not read the settings of ${dc}'s nodes: ${error}`;
  const lines = error === undefined ? problems : [...problems, unread];
  return lines.map((line) => `<p class="bad">${esc(line)}</p>`);
}

function sequenceSection(status: SequenceStatus, localDc: string): string {
  const s = status.settings;
  const target =
    s.autonomySeconds > 0 ? `autonomy target ${duration(s.autonomySeconds)}` : 'no autonomy target';
  const head = ['DC', 'reserved', 'preloaded', 'reserved used', 'IDs left', 'rate', 'runway'];
  return [
    `<section data-sequence="${esc(s.name)}"><h2>${esc(s.name)}</h2>`,
    `<p>${esc(s.domain)} ${span(s.min, s.max)} · start ${s.start} · DC range ${count(s.dcRangeSize)}` +
      (s.maxDcRangeSize === s.dcRangeSize ? '' : ` to ${count(s.maxDcRangeSize)}`) +
      ` · block ${count(s.blockSize)}` +
      (s.maxBlockSize === s.blockSize ? '' : ` to ${count(s.maxBlockSize)}`) +
      ` · threshold ${s.threshold} · ${target}</p>`,
    `<p>GLOBAL last_integer ${status.globalLast} · domain used ${percent(status.domainUsedShare)} · ${count(status.domainLeft)} IDs left to grant` +
      (status.exhaustsIn === undefined
        ? ''
        : ` · domain lasts ${duration(status.exhaustsIn)} at the current rate`) +
      '</p>',
    `<table><thead><tr>${[...head, 'waste by cause', 'notes'].map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>`,
    ...status.dcs.map((dc) => dcRow(dc, s.autonomySeconds, localDc)),
    '</tbody></table></section>',
  ].join('\n');
}

/** A row per DC (per shard of a sharded sequence); rows not read current show no rate. */
function dcRow(dc: DcStatus, autonomySeconds: number, localDc: string): string {
  const stale = dc.rowsNotCurrent !== undefined;
  const holds = dc.reserved !== undefined || dc.left > 0n;
  const low = !stale && runwayBelowTarget(dc.runway, autonomySeconds) === true;
  const [rateText, runwayText] = stale
    ? ['?', 'unknown']
    : holds
      ? [rate(dc.rate), duration(dc.runway)]
      : ['–', '–'];
  const cells = [
    `<td>${esc(dc.dc)}${dc.dc === localDc ? ' (here)' : ''}</td>`,
    `<td>${dc.reserved === undefined ? (stale ? 'none seen' : 'none yet') : held(dc.reserved)}</td>`,
    `<td>${dc.preloaded === undefined ? '–' : held(dc.preloaded)}</td>`,
    `<td class="n">${dc.reserved === undefined ? '–' : percent(dc.reservedUsedShare)}</td>`,
    `<td class="n">${count(dc.left)}</td>`,
    `<td class="n">${rateText}</td>`,
    `<td class="n${low ? ' low' : ''}">${runwayText}</td>`,
    `<td class="wrap">${wasteText(dc)}</td>`,
    `<td class="wrap">${notes(dc, low, autonomySeconds)}</td>`,
  ];
  const attributes = `data-dc="${esc(dc.dc)}" data-current="${!stale}"${stale ? ' class="stale"' : ''}`;
  return `<tr ${attributes}>${cells.join('')}</tr>`;
}

function held(range: HeldRange): string {
  return `#${range.grant} ${span(range.min, range.max)}`;
}

function wasteText(dc: DcStatus): string {
  const usage = dc.usage;
  if (usage === undefined) return 'counters not read';
  const causes = Object.entries(usage.wasted)
    .filter(([, n]) => n > 0n)
    .map(([cause, n]) => `${esc(cause)} ${count(n)}`);
  return (
    `${count(usage.wastedTotal)} wasted${causes.length === 0 ? '' : ` (${causes.join(', ')})`}` +
    ` · ${count(usage.issued)} issued · ${count(usage.unreported)} held or lost`
  );
}

function notes(dc: DcStatus, low: boolean, autonomySeconds: number): string {
  const notes = [];
  if (dc.pendingGrant !== undefined) {
    const grant = dc.pendingGrant;
    notes.push(`grant #${grant.number} ${span(grant.min, grant.max)} not installed yet`);
  }
  if (low) notes.push(`runway below the autonomy target of ${duration(autonomySeconds)}`);
  if (dc.rowsNotCurrent !== undefined) {
    notes.push(`<span class="bad">rows not current: ${esc(dc.rowsNotCurrent)}</span>`);
  }
  return notes.join('; ');
}

/** Text as HTML: safe in element content and in double-quoted attributes. */
function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
