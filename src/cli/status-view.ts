/**
 * `idgen-cass status` as text (read at a glance) and as JSON (for machines).
 */

import type { DcStatus, HeldRange, SequenceStatus, StatusReport } from '../admin/status.js';
import { bar, count, duration, percent, rate, span, table } from './format.js';
import { dcOfGrantee } from '../names.js';
import { GRANT_BLOCKS } from '../allocator/sizing.js';

/** The human view of `report`, one string per line. */
export function renderStatus(report: StatusReport): string[] {
  const sampled = report.sequences.find((s) => s.sampledOverMs !== undefined)?.sampledOverMs;
  const lines = [
    `keyspace ${report.keyspace} · seen from ${report.dc} · ${report.at.toISOString()}` +
      (sampled === undefined ? '' : ` · rates over ${(sampled / 1000).toFixed(1)} s`),
    ...serialLines(report),
    `hosts    ${hostsLine(report)} (as this client sees them)`,
  ];
  if (report.sequences.length === 0) {
    lines.push('', `No sequences. Create one with: idgen-cass seed <sequence>`);
  }
  for (const sequence of report.sequences) lines.push('', ...sequenceLines(sequence, report.dc));
  return lines;
}

function serialLines(report: StatusReport): string[] {
  const { serial } = report;
  if (serial.reachable) {
    return [
      `SERIAL   reachable from ${serial.dc} (${serial.tookMs} ms): new DC ranges can be granted`,
    ];
  }
  return [
    `SERIAL   UNREACHABLE from ${serial.dc}: new DC ranges cannot be granted; each DC serves only the IDs it holds (see runway)`,
    `         cause (after ${serial.tookMs} ms): ${serial.error ?? 'unknown'}`,
  ];
}

function hostsLine(report: StatusReport): string {
  if (report.hosts.length === 0) return 'none known';
  return report.hosts
    .map((host) => `${host.dc} ${host.address} ${host.up ? 'up' : 'DOWN'}`)
    .join(' · ');
}

function sequenceLines(status: SequenceStatus, localDc: string): string[] {
  const s = status.settings;
  const header =
    `${s.name}  ${s.domain} ${span(s.min, s.max)} · start ${s.start} · DC range ${count(s.dcRangeSize)}` +
    (s.maxDcRangeSize === s.dcRangeSize
      ? ''
      : ` to ${count(s.maxDcRangeSize)}, sized for ` +
        (s.autonomySeconds > 0
          ? `${duration(s.autonomySeconds)} of autonomy`
          : `${GRANT_BLOCKS} of the blocks asked for`)) +
    ` · block ${count(s.blockSize)}` +
    (s.maxBlockSize > s.blockSize
      ? ` to ${count(s.maxBlockSize)} (a claim per ${duration(s.claimIntervalMs / 1_000)})`
      : '') +
    ` · threshold ${s.threshold}` +
    (s.shards > 1 ? ` · ${s.shards} shards per DC` : '');
  const global =
    `  GLOBAL last_integer ${status.globalLast}  domain used ${bar(status.domainUsedShare)}` +
    `  ${count(status.domainLeft)} IDs left to grant` +
    (status.exhaustsIn === undefined
      ? ''
      : `  domain lasts ${duration(status.exhaustsIn)} at the current rate`);
  const rows = [
    [
      'DC',
      'reserved',
      'preloaded',
      'last_integer',
      'reserved used',
      'IDs left',
      'rate',
      'runway',
      '',
    ],
    ...status.dcs.map((dc) => dcRow(dc, localDc, s.autonomySeconds)),
  ];
  const columns = table(rows, [
    'left',
    'left',
    'left',
    'right',
    'left',
    'right',
    'right',
    'right',
    'left',
  ]);
  return [
    header,
    global,
    ...columns.map((line) => `  ${line}`),
    ...notCurrentLines(status.dcs),
    ...status.dcs.flatMap((dc) => usageLine(dc)),
  ];
}

/**
 * One line naming the DCs whose rows could not be read current (a DC cut off): what they show
 * may be old, and their rate and runway are unknown here; the status run in such a DC reads its
 * own rows current.
 */
function notCurrentLines(dcs: readonly DcStatus[]): string[] {
  const stale = dcs.filter((dc) => dc.rowsNotCurrent !== undefined);
  if (stale.length === 0) return [];
  const names = [...new Set(stale.map((dc) => dcOfGrantee(dc.dc) ?? dc.dc))];
  return [
    `  rows not current: ${names.join(', ')}: ${stale[0]!.rowsNotCurrent}; what they show may be old, their runway is unknown here (run status in ${names.length === 1 ? 'that DC' : 'those DCs'})`,
  ];
}

/**
 * What a DC's processes reported: issued, wasted by cause, and what no report covers yet (held
 * by running processes, or lost with processes that died).
 */
function usageLine(dc: DcStatus): string[] {
  const usage = dc.usage;
  if (usage === undefined || (usage.issued === 0n && usage.wastedTotal === 0n)) return [];
  const causes = Object.entries(usage.wasted)
    .filter(([, n]) => n > 0n)
    .map(([cause, n]) => `${cause} ${count(n)}`);
  return [
    `  ${dc.dc} reported: ${count(usage.issued)} issued · ${count(usage.wastedTotal)} wasted` +
      (causes.length === 0 ? '' : ` (${causes.join(', ')})`) +
      ` · ${count(usage.unreported)} held by processes or lost in crashes`,
  ];
}

function dcRow(dc: DcStatus, localDc: string, autonomySeconds: number): string[] {
  // The local DC, and each shard of it, marked.
  const name = dcOfGrantee(dc.dc) === localDc ? `${dc.dc}*` : dc.dc;
  const notes = [];
  if (dc.pendingGrant !== undefined) {
    notes.push(
      `grant #${dc.pendingGrant.number} ${span(dc.pendingGrant.min, dc.pendingGrant.max)} not installed yet`,
    );
  }
  if (belowTarget(dc, autonomySeconds) === true) {
    notes.push(`runway below the autonomy target of ${duration(autonomySeconds)}`);
  }
  if (dc.rowsNotCurrent !== undefined) notes.push('rows not current');
  const note = notes.join('; ');
  if (dc.rowsNotCurrent !== undefined) {
    // What the rows show may be old; the rate and runway are unknown, never 0/s and ∞.
    const reserved = dc.reserved === undefined ? 'none seen' : held(dc.reserved);
    const preloaded = dc.preloaded === undefined ? '–' : held(dc.preloaded);
    const last = dc.lastInteger === undefined ? '–' : String(dc.lastInteger);
    const used = dc.reserved === undefined ? '–' : bar(dc.reservedUsedShare);
    return [name, reserved, preloaded, last, used, count(dc.left), '?', 'unknown', note];
  }
  if (dc.reserved === undefined) {
    // Its grant 1, if any, is held (the note names it); without one, nothing is.
    const holds = dc.left > 0n;
    const [rateText, runway] = holds ? [rate(dc.rate), duration(dc.runway)] : ['–', '–'];
    return [name, 'none yet', '–', '–', '–', count(dc.left), rateText, runway, note];
  }
  return [
    name,
    held(dc.reserved),
    dc.preloaded === undefined ? '–' : held(dc.preloaded),
    String(dc.lastInteger),
    bar(dc.reservedUsedShare),
    count(dc.left),
    rate(dc.rate),
    duration(dc.runway),
    note,
  ];
}

/**
 * Whether the DC's runway is below the sequence's autonomy target; undefined without a target or
 * a measured runway.
 */
function belowTarget(dc: DcStatus, autonomySeconds: number): boolean | undefined {
  if (autonomySeconds === 0 || dc.runway === undefined) return undefined;
  return dc.runway < autonomySeconds;
}

function held(range: HeldRange): string {
  return `#${range.grant} ${span(range.min, range.max)}`;
}

/** `report` as a JSON-ready object (see docs/cli.md, "status"). */
export function statusJson(report: StatusReport): Record<string, unknown> {
  return {
    keyspace: report.keyspace,
    dc: report.dc,
    at: report.at,
    serial: {
      reachable: report.serial.reachable,
      dc: report.serial.dc,
      tookMs: report.serial.tookMs,
      error: report.serial.error ?? null,
    },
    hosts: report.hosts.map((host) => ({ address: host.address, dc: host.dc, up: host.up })),
    // Only the local DC's nodes are asked (status must work inside a partition); preflight asks all.
    nodeSafety: {
      dc: report.nodeSafety.dc,
      safe: report.nodeSafety.problems.length === 0 && report.nodeSafety.error === undefined,
      problems: report.nodeSafety.problems,
      error: report.nodeSafety.error ?? null,
    },
    sequences: report.sequences.map((s) => ({
      name: s.settings.name,
      settings: {
        domain: s.settings.domain,
        min: s.settings.min,
        max: s.settings.max,
        start: s.settings.start,
        dcRangeSize: s.settings.dcRangeSize,
        blockSize: s.settings.blockSize,
        threshold: s.settings.threshold,
        maxBlockSize: s.settings.maxBlockSize,
        claimIntervalMs: s.settings.claimIntervalMs,
        maxDcRangeSize: s.settings.maxDcRangeSize,
        autonomySeconds: s.settings.autonomySeconds,
        shards: s.settings.shards,
      },
      globalLast: s.globalLast,
      granted: s.granted,
      domainSize: s.domainSize,
      domainUsedShare: s.domainUsedShare,
      domainUsed: percent(s.domainUsedShare),
      domainLeft: s.domainLeft,
      sampledOverMs: s.sampledOverMs ?? null,
      // null when not measured or nothing is drawn.
      exhaustsInSeconds:
        s.exhaustsIn === undefined || s.exhaustsIn === Infinity ? null : s.exhaustsIn,
      dcs: s.dcs.map((dc) => ({
        dc: dc.dc,
        grants: dc.grants.map((g) => ({ number: g.number, min: g.min, max: g.max })),
        reserved: dc.reserved ?? null,
        preloaded: dc.preloaded ?? null,
        pendingGrant: dc.pendingGrant ?? null,
        lastInteger: dc.lastInteger ?? null,
        reservedUsed: dc.reservedUsed,
        reservedUsedShare: dc.reservedUsedShare,
        left: dc.left,
        consumed: dc.consumed,
        ratePerSecond: dc.rate ?? null,
        // null: not measured, no range held, or unknown (rowsNotCurrent); Infinity (rate 0) is
        // written as null too, so "unbounded" is ratePerSecond 0 with IDs left.
        runwaySeconds: dc.runway === undefined || dc.runway === Infinity ? null : dc.runway,
        // null without an autonomy target or a measured runway.
        runwayBelowTarget: belowTarget(dc, s.settings.autonomySeconds) ?? null,
        // Why the DC's rows could not be read current (a DC cut off): then ratePerSecond and
        // runwaySeconds are null (unknown) and left is as last seen here; null when read current.
        rowsNotCurrent: dc.rowsNotCurrent ?? null,
        // null when the usage counters could not be read.
        usage:
          dc.usage === undefined
            ? null
            : {
                issued: dc.usage.issued,
                wasted: dc.usage.wasted,
                wastedTotal: dc.usage.wastedTotal,
                unreported: dc.usage.unreported,
              },
      })),
    })),
  };
}

/**
 * The warnings status writes on stderr when the local DC's nodes run unsafe settings (or could
 * not be asked); empty when there is nothing to say.
 */
export function nodeSafetyWarnings(report: StatusReport): string[] {
  const { dc, problems, error } = report.nodeSafety;
  const lines = problems.map(
    (problem) =>
      `${problem}. Run "idgen-cass preflight" to check every DC (status asks ${dc}'s nodes only).`,
  );
  if (error !== undefined) {
    lines.push(
      `could not read the settings of ${dc}'s nodes (${error}); run "idgen-cass preflight".`,
    );
  }
  return lines;
}
