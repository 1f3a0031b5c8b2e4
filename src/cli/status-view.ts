/**
 * `idgen-cass status` as text (a row per DC, or per shard) and as JSON (every shard), and how it
 * ends: 13 when SERIAL is unreachable, 14 when a DC's runway is below `--fail-if-runway-below` or
 * unknown; 14 wins (its message names SERIAL too).
 */
import {
  runwayBelowTarget,
  type DcStatus,
  type DcUsageStatus,
  type HeldRange,
  type SequenceStatus,
  type StatusReport,
  type WasteCause,
} from '../admin/status.js';
import { CommandOutcome } from './exit-codes.js';
import { bar, blockText, dcRangeText, settingsJson, table } from './format.js';
import { typedDuration } from './parse.js';
import { count, duration, percent, rate, span } from '../quantities.js';
import { dcOfGrantee } from '../names.js';
import type { SequenceSettings } from '../store/port.js';

/** `perShard`: one row per shard (state partition) rather than per DC. */
export function renderStatus(report: StatusReport, perShard = false): string[] {
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
  for (const sequence of report.sequences) {
    lines.push('', ...sequenceLines(sequence, report.dc, perShard));
  }
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

function sequenceLines(status: SequenceStatus, localDc: string, perShard: boolean): string[] {
  const s = status.settings;
  const header =
    `${s.name}  ${s.domain} ${span(s.min, s.max)} · start ${s.start} · DC range ${dcRangeText(s)}` +
    ` · block ${blockText(s)} · threshold ${s.threshold}` +
    (s.shards > 1 ? ` · ${s.shards} shards per DC` : '');
  const global =
    `  GLOBAL last_integer ${status.globalLast}  domain used ${bar(status.domainUsedShare)}` +
    `  ${count(status.domainLeft)} IDs left to grant` +
    (status.exhaustsIn === undefined
      ? ''
      : `  domain lasts ${duration(status.exhaustsIn)} at the current rate`);
  const lines = perShard
    ? status.dcs.map((dc) => ({ name: dc.dc, rows: [dc] }))
    : dcLines(status.dcs);
  return [
    header,
    global,
    ...dcTable(lines, s, localDc, !perShard && s.shards > 1),
    ...notCurrentLines(status.dcs),
    ...lines.flatMap(({ name, rows }) => usageLine(name, rows)),
  ];
}

/** One line of the DC table: a shard's row (`dc1/3`), or every row of a DC. */
type TableLine = { readonly name: string; readonly rows: readonly DcStatus[] };

function dcLines(dcs: readonly DcStatus[]): TableLine[] {
  const byDc = new Map<string, DcStatus[]>();
  for (const dc of dcs) {
    const name = dcOfGrantee(dc.dc) ?? dc.dc;
    byDc.set(name, [...(byDc.get(name) ?? []), dc]);
  }
  return [...byDc].map(([name, rows]) => ({ name, rows }));
}

/** The DC table; `folded`: a `shards` column (those holding a grant) and a note on folding. */
function dcTable(
  lines: readonly TableLine[],
  settings: SequenceSettings,
  localDc: string,
  folded: boolean,
): string[] {
  const shardsColumn = (line: TableLine) =>
    folded ? [`${line.rows.filter((dc) => dc.grants.length > 0).length}/${settings.shards}`] : [];
  const rows = [
    [
      'DC',
      ...(folded ? ['shards'] : []),
      'reserved',
      'preloaded',
      'last_integer',
      'reserved used',
      'IDs left',
      'rate',
      'runway',
      '',
    ],
    ...lines.map((line) => [
      dcOfGrantee(line.name) === localDc ? `${line.name}*` : line.name,
      ...shardsColumn(line),
      ...cells(line.rows, settings.autonomySeconds),
    ]),
  ];
  const align = ['left', 'left', 'right', 'left', 'right', 'right', 'right', 'left'] as const;
  const columns = table(rows, ['left', ...(folded ? (['right'] as const) : []), ...align]);
  return [
    ...columns.map((line) => `  ${line}`),
    ...(folded
      ? [
          `  each row folds a DC's shards: "shards" those holding a grant, ranges counted with their grants, IDs left and rates summed, runway the shortest shard's (--shards: one row each)`,
        ]
      : []),
  ];
}

function notCurrentLines(dcs: readonly DcStatus[]): string[] {
  const stale = notCurrent(dcs);
  if (stale === undefined) return [];
  const there = stale.dcs.length === 1 ? 'that DC' : 'those DCs';
  return [
    `  rows not current: ${stale.dcs.join(', ')}: ${stale.reason}; what they show may be old, their runway is unknown here (run status in ${there})`,
  ];
}

/** The DCs whose rows could not be read current, and why; undefined when every row was. */
function notCurrent(
  dcs: readonly DcStatus[],
): { readonly dcs: readonly string[]; readonly reason: string } | undefined {
  const stale = dcs.filter((dc) => dc.rowsNotCurrent !== undefined);
  if (stale.length === 0) return undefined;
  return {
    dcs: [...new Set(stale.map((dc) => dcOfGrantee(dc.dc) ?? dc.dc))],
    reason: stale[0]!.rowsNotCurrent!,
  };
}

/** What the processes of a DC (or shard) reported: issued, wasted by cause, not yet reported. */
function usageLine(name: string, rows: readonly DcStatus[]): string[] {
  const usage = foldUsage(rows);
  if (usage === undefined || (usage.issued === 0n && usage.wastedTotal === 0n)) return [];
  const causes = Object.entries(usage.wasted)
    .filter(([, n]) => n > 0n)
    .map(([cause, n]) => `${cause} ${count(n)}`);
  return [
    `  ${name} reported: ${count(usage.issued)} issued · ${count(usage.wastedTotal)} wasted` +
      (causes.length === 0 ? '' : ` (${causes.join(', ')})`) +
      ` · ${count(usage.unreported)} held by processes or lost in crashes`,
  ];
}

function foldUsage(rows: readonly DcStatus[]): DcUsageStatus | undefined {
  const all = rows.map((dc) => dc.usage);
  if (all.some((usage) => usage === undefined)) return undefined;
  const usages = all as DcUsageStatus[];
  const total = (of: (usage: DcUsageStatus) => bigint) =>
    usages.reduce((sum, usage) => sum + of(usage), 0n);
  const wasted = Object.fromEntries(
    Object.keys(usages[0]?.wasted ?? {}).map((cause) => [
      cause,
      total((usage) => usage.wasted[cause as WasteCause]),
    ]),
  ) as Record<WasteCause, bigint>;
  return {
    issued: total((usage) => usage.issued),
    wasted,
    wastedTotal: total((usage) => usage.wastedTotal),
    unreported: total((usage) => usage.unreported),
  };
}

/**
 * The cells after a line's name; shards fold into IDs left and rates summed and the shortest
 * runway (the first shard to run dry stalls its processes). Rows not read current show what they
 * hold; their rate and runway are unknown, never 0/s and ∞.
 */
function cells(rows: readonly DcStatus[], autonomySeconds: number): string[] {
  const one = rows.length === 1 ? rows[0] : undefined;
  const reserved = rows.flatMap((dc) => dc.reserved ?? []);
  const preloaded = rows.flatMap((dc) => dc.preloaded ?? []);
  const lasts = rows.flatMap((dc) => dc.lastInteger ?? []);
  const left = rows.reduce((sum, dc) => sum + dc.left, 0n);
  const notCurrent = rows.some((dc) => dc.rowsNotCurrent !== undefined);
  const runways = rows.flatMap((dc) => dc.runway ?? []);
  const runway = runways.length === 0 || notCurrent ? undefined : Math.min(...runways);
  const rates = rows.flatMap((dc) => dc.rate ?? []);
  // Without a reserved range a DC may still hold its grant 1 (the note names it).
  const holds = reserved.length > 0 || left > 0n;
  const [rateText, runwayText] = notCurrent
    ? ['?', 'unknown']
    : holds && rates.length > 0
      ? [rate(rates.reduce((sum, r) => sum + r, 0)), duration(runway)]
      : ['–', '–'];
  const shown = (ranges: HeldRange[]) => (one === undefined ? rangesOf(ranges) : held(ranges[0]!));
  const size = reserved.reduce((sum, range) => sum + range.max - range.min + 1n, 0n);
  const used = rows.reduce((sum, dc) => sum + dc.reservedUsed, 0n);
  return [
    reserved.length > 0 ? shown(reserved) : one && notCurrent ? 'none seen' : 'none yet',
    preloaded.length === 0 ? '–' : shown(preloaded),
    lasts.length === 0 ? '–' : String(lasts.reduce((a, b) => (a > b ? a : b))),
    reserved.length === 0 ? '–' : bar(one?.reservedUsedShare ?? share(used, size)),
    count(left),
    rateText,
    runwayText,
    notesOf(rows, runway, autonomySeconds),
  ];
}

/** Grants not installed yet, a runway below the autonomy target, rows not read current. */
function notesOf(
  rows: readonly DcStatus[],
  runway: number | undefined,
  autonomySeconds: number,
): string {
  const notes = [];
  const pending = rows.flatMap((dc) => (dc.pendingGrant === undefined ? [] : [dc.pendingGrant]));
  if (pending.length === 1) {
    notes.push(
      `grant #${pending[0]!.number} ${span(pending[0]!.min, pending[0]!.max)} not installed yet`,
    );
  } else if (pending.length > 1) {
    notes.push(`${pending.length} grants not installed yet`);
  }
  if (runwayBelowTarget(runway, autonomySeconds) === true) {
    notes.push(`runway below the autonomy target of ${duration(autonomySeconds)}`);
  }
  if (rows.some((dc) => dc.rowsNotCurrent !== undefined)) notes.push('rows not current');
  return notes.join('; ');
}

/** Ranges of several shards: `16 ranges (#1–#3)`. */
function rangesOf(held: readonly HeldRange[]): string {
  const numbers = held.map((range) => range.grant);
  const [low, high] = [Math.min(...numbers), Math.max(...numbers)];
  const noun = held.length === 1 ? 'range' : 'ranges';
  return `${held.length} ${noun} (#${low}${high === low ? '' : `–#${high}`})`;
}

function held(range: HeldRange): string {
  return `#${range.grant} ${span(range.min, range.max)}`;
}

function share(part: bigint, whole: bigint): number {
  return whole <= 0n ? 0 : Number((part * 1_000_000n) / whole) / 1_000_000;
}

/** See docs/cli.md, "status". */
export function statusJson(report: StatusReport): Record<string, unknown> {
  return {
    keyspace: report.keyspace,
    dc: report.dc,
    at: report.at,
    serial: { ...report.serial, error: report.serial.error ?? null },
    hosts: report.hosts.map(({ address, dc, up }) => ({ address, dc, up })),
    // The local DC's nodes only: status must work inside a partition.
    nodeSafety: {
      dc: report.nodeSafety.dc,
      safe: report.nodeSafety.problems.length === 0 && report.nodeSafety.error === undefined,
      problems: report.nodeSafety.problems,
      error: report.nodeSafety.error ?? null,
    },
    sequences: report.sequences.map((s) => ({
      name: s.settings.name,
      settings: settingsJson(s.settings, false),
      globalLast: s.globalLast,
      granted: s.granted,
      domainSize: s.domainSize,
      domainUsedShare: s.domainUsedShare,
      domainUsed: percent(s.domainUsedShare),
      domainLeft: s.domainLeft,
      sampledOverMs: s.sampledOverMs ?? null,
      exhaustsInSeconds:
        s.exhaustsIn === undefined || s.exhaustsIn === Infinity ? null : s.exhaustsIn,
      dcs: s.dcs.map((dc) => ({
        dc: dc.dc,
        grants: dc.grants.map(({ number, min, max }) => ({ number, min, max })),
        reserved: dc.reserved ?? null,
        preloaded: dc.preloaded ?? null,
        pendingGrant: dc.pendingGrant ?? null,
        lastInteger: dc.lastInteger ?? null,
        reservedUsed: dc.reservedUsed,
        reservedUsedShare: dc.reservedUsedShare,
        left: dc.left,
        consumed: dc.consumed,
        ratePerSecond: dc.rate ?? null,
        // Infinity (rate 0) is null too: "unbounded" is ratePerSecond 0 with IDs left.
        runwaySeconds: dc.runway === undefined || dc.runway === Infinity ? null : dc.runway,
        runwayBelowTarget: runwayBelowTarget(dc.runway, s.settings.autonomySeconds) ?? null,
        rowsNotCurrent: dc.rowsNotCurrent ?? null,
        usage: dc.usage ?? null,
      })),
    })),
  };
}

/** The warnings on stderr when the local DC's nodes run unsafe settings (or cannot be asked). */
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

/** Every DC whose runway is below `seconds`; a DC without a runway is not judged. */
export function runwaysBelow(report: StatusReport, seconds: number) {
  return report.sequences.flatMap(({ settings, dcs }) =>
    dcs.flatMap(({ dc, runway, left, rate }) =>
      runway === undefined || rate === undefined || !(runway < seconds)
        ? []
        : [{ sequence: settings.name, dc, runway, left, rate }],
    ),
  );
}

/**
 * The outcome `status` ends with, or undefined for exit 0.
 * @param failIfRunwayBelow seconds; undefined: runways are not judged.
 */
export function statusOutcome(
  report: StatusReport,
  failIfRunwayBelow?: number,
): CommandOutcome | undefined {
  const { serial } = report;
  if (failIfRunwayBelow !== undefined) {
    const below = runwaysBelow(report, failIfRunwayBelow);
    // An unknown runway may be the shortest: judged as below any threshold.
    const unknown = report.sequences.flatMap((sequence) => {
      const stale = notCurrent(sequence.dcs);
      return stale === undefined ? [] : [{ sequence: sequence.settings.name, ...stale }];
    });
    if (below.length > 0 || unknown.length > 0) {
      return runwayLow(failIfRunwayBelow, below, unknown, report);
    }
  }
  if (!serial.reachable) {
    return new CommandOutcome(
      'IDGEN_STATUS_SERIAL_UNREACHABLE',
      `SERIAL is unreachable from ${serial.dc}: ${serial.dc} gets no new DC range until the links between datacenters return, and each DC serves only the IDs it holds (runways on stdout).`,
    );
  }
  return undefined;
}

function runwayLow(
  threshold: number,
  below: ReturnType<typeof runwaysBelow>,
  unknown: readonly { sequence: string; dcs: readonly string[]; reason: string }[],
  { dc, serial, sequences }: StatusReport,
): CommandOutcome {
  const parts: string[] = [];
  if (below.length > 0) {
    const list = below
      .map(
        (b) =>
          `"${b.sequence}" in ${b.dc} ${duration(b.runway)} (${count(b.left)} IDs left at ${rate(b.rate)})`,
      )
      .join(', ');
    const names = new Set(below.map((b) => b.sequence));
    parts.push(
      `runway below ${typedDuration(threshold * 1_000)}: ${list}` +
        (serial.reachable ? advice(sequences.filter((s) => names.has(s.settings.name))) : '.'),
    );
  }
  if (unknown.length > 0) {
    const list = unknown.map((u) => `"${u.sequence}" in ${u.dcs.join(', ')}`).join('; ');
    parts.push(
      `runway unknown from ${dc}: ${list}: their rows were ${unknown[0]!.reason}, and may lag. ` +
        `A DC cut off from the others is judged by the status run in that DC: run this check in every DC.`,
    );
  }
  const text = parts.join(' ').replace(/\.$/, '');
  const why = serial.reachable
    ? '.'
    : `; and SERIAL is unreachable from ${serial.dc}, so ${serial.dc} gets no new DC range until the links between datacenters return.`;
  return new CommandOutcome('IDGEN_STATUS_RUNWAY_LOW', `${text}${why}`);
}

/** Per sequence, the setting its grants are sized by; nothing when its domain is spent. */
function advice(sequences: readonly SequenceStatus[]): string {
  const raise: string[] = [];
  const spent: string[] = [];
  for (const { settings, domainLeft } of sequences) {
    const name = settings.name;
    if (domainLeft === 0n) spent.push(`"${name}"`);
    else if (settings.autonomySeconds > 0) {
      raise.push(
        `raise the autonomy target of "${name}" or its cap ("idgen-cass alter ${name} --autonomy D --max-dc-range N")`,
      );
    } else raise.push(`raise the DC range size ("idgen-cass alter ${name} --dc-range N")`);
  }
  let text = '';
  if (raise.length > 0) {
    text += `. A DC lives on its runway while it cannot reach SERIAL; to ride out longer partitions, ${raise.join('; ')}`;
  }
  if (spent.length > 0) {
    const [has, its] = spent.length === 1 ? ['has', 'its'] : ['have', 'their'];
    text += `. ${spent.join(', ')} ${has} no IDs left to grant: ${its} DCs serve only what they hold, and no alter adds any (a sequence with a larger domain does)`;
  }
  return `${text}.`;
}
