/**
 * How `status` ends after printing: 13 when SERIAL is unreachable, 14 when a DC's runway is below
 * `--fail-if-runway-below` or unknown; 14 wins (its message names SERIAL too).
 */
import type { SequenceStatus, StatusReport } from '../admin/status.js';
import { CommandOutcome } from './exit-codes.js';
import { count, duration, rate } from '../quantities.js';
import { typedDuration } from './parse.js';
import { notCurrent } from './status-view.js';

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
