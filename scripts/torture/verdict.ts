/** What a campaign must have done for a clean history to prove anything. */
import { ALARM_CODES, EXPECTED_ERROR_CODES } from './errors.js';
import type { KillHow, ProcessExit } from './fleet.js';
import { CLUSTER_FAULT_KINDS, type TimelineEntry } from './nemesis.js';

/** Fewest IDs each DC must record while the nemesis acts: low, a DC may be down most of it. */
export const MIN_IDS_PER_DC_UNDER_FAULTS = 1_000;

/** An alter whose admin client could not reach its DC, or SERIAL, is expected under faults. */
const EXPECTED_ALTER_FAILURE = /^failed: Cassandra is unavailable at /;

/** The signal each ending was sent: the process must exit 0, or die of it (sent too early). */
const STOP_SIGNALS: Readonly<Record<string, NodeJS.Signals>> = {
  terminated: 'SIGTERM',
  'closed-while-drawing': 'SIGUSR2',
};

/** What the verdict reads of a process; a field absent (older reports) is not judged. */
interface JudgedProcess {
  readonly id: number;
  readonly dc: string;
  readonly ending: string;
  readonly liveness: boolean;
  readonly mode?: string | undefined;
  readonly exit?: ProcessExit | undefined;
  /** Absent in reports written before kills could flush (every kill then raw). */
  readonly killed?: KillHow | undefined;
  /** Killed at the end for not stopping when told (no nemesis kill). */
  readonly hungOnStop?: boolean | undefined;
  /** Its summary said it closed while drawing (false without a summary). */
  readonly closedEarly?: boolean | undefined;
  readonly closeViolations?: number | undefined;
}

/** How a process told to stop failed to stop cleanly, or undefined if it did. */
export function stopFailure(stopped: Pick<JudgedProcess, 'ending' | 'exit'>): string | undefined {
  const signal = STOP_SIGNALS[stopped.ending];
  const exit = stopped.exit;
  if (signal === undefined || exit === undefined) return undefined;
  if (exit.code === 0 || exit.signal === signal) return undefined;
  const told = stopped.ending === 'terminated' ? 'stop' : 'close while drawing';
  return `${howExited(exit)} after ${signal} told it to ${told}`;
}

/** The processes handed IDs after their close() began (another may get them too), one line each. */
export function closeViolations(
  processes: readonly Pick<JudgedProcess, 'id' | 'dc' | 'closeViolations'>[],
): string[] {
  return processes
    .filter((p) => (p.closeViolations ?? 0) > 0)
    .map(
      (p) =>
        `process ${p.id} (${p.dc}) was handed ${p.closeViolations!.toLocaleString('en-US')} IDs after its close() began`,
    );
}

/** The errors the library must not throw under faults, one line each; alarms are judged apart. */
export function unexpectedErrors(
  errorsByCode: Readonly<Record<string, number>>,
  errorExamples: Readonly<Record<string, string>>,
): string[] {
  return Object.entries(errorsByCode)
    .filter(([code]) => !EXPECTED_ERROR_CODES.includes(code) && !ALARM_CODES.includes(code))
    .map(
      ([code, calls]) =>
        `${code} (${calls.toLocaleString('en-US')} call${calls === 1 ? '' : 's'}), first: ${errorExamples[code] ?? ''}`,
    );
}

/** How a process recorded as killed ended otherwise than by a SIGKILL, or undefined. */
export function killFailure(killed: Pick<JudgedProcess, 'ending' | 'exit'>): string | undefined {
  const exit = killed.exit;
  if (killed.ending !== 'killed' || exit === undefined) return undefined;
  if (exit.code === null && exit.signal === 'SIGKILL') return undefined;
  return `${howExited(exit)} when it was being killed, not by the SIGKILL`;
}

function howExited(exit: ProcessExit): string {
  return exit.code !== null
    ? `exited with code ${exit.code}`
    : `was ended by ${exit.signal ?? 'a signal'}`;
}

/** Why a killed process's history may lack IDs (a raw SIGKILL of a non-paced one), or undefined. */
export function unrecordedKill(
  killed: Pick<JudgedProcess, 'ending' | 'mode' | 'killed'>,
): string | undefined {
  if (killed.ending !== 'killed' || killed.killed === 'flushed') return undefined;
  if (killed.killed === 'raw' && killed.mode === 'paced') return undefined;
  const what =
    killed.killed === 'flush-timed-out'
      ? 'did not write its history within the deadline of its SIGHUP and was SIGKILLed raw'
      : `was SIGKILLed raw in ${killed.mode ?? 'an unrecorded'} mode${killed.killed === undefined ? ', before kills could write the history first' : ''}`;
  return `${what}: IDs it handed out in its last 20 ms or so may be missing from its history, and a duplicate of one would go unseen`;
}

export interface CampaignConduct {
  readonly timeline: readonly TimelineEntry[];
  /** Every DC of the cluster, with the IDs its processes recorded while the nemesis acted. */
  readonly drawnUnderFaults: Readonly<Record<string, number>>;
  readonly incarnations: readonly Omit<JudgedProcess, 'closeViolations'>[];
}

/** Why the campaign does not count, one reason a line; empty when it does. */
export function conductProblems(conduct: CampaignConduct): string[] {
  const problems: string[] = [];
  const done = conduct.timeline.filter(
    (e) => CLUSTER_FAULT_KINDS.some((k) => k === e.action) && e.result.startsWith('ok'),
  );
  if (done.length === 0) {
    problems.push(
      `no cluster fault (${CLUSTER_FAULT_KINDS.join(', ')}) was done: the checks saw no fault`,
    );
  }
  for (const e of conduct.timeline) {
    if (!e.result.startsWith('failed')) continue;
    if (e.action === 'alter' && EXPECTED_ALTER_FAILURE.test(e.result)) continue;
    problems.push(`the nemesis's ${e.action} of ${e.target} at ${e.at} s ${e.result}`);
  }
  for (const [dc, drawn] of Object.entries(conduct.drawnUnderFaults)) {
    if (drawn < MIN_IDS_PER_DC_UNDER_FAULTS) {
      problems.push(
        `${dc} recorded ${drawn.toLocaleString('en-US')} IDs while the nemesis acted, fewer than ${MIN_IDS_PER_DC_UNDER_FAULTS.toLocaleString('en-US')}`,
      );
    }
  }
  for (const i of conduct.incarnations) {
    // The liveness check judges its worker by the IDs it recorded, whatever a kill lost.
    const whys = [
      i.ending === 'failed' ? 'exited with an error of its own' : undefined,
      !i.liveness && i.hungOnStop === true ? 'did not stop when told and was killed' : undefined,
      stopFailure(i) ?? (i.liveness ? undefined : killFailure(i)),
      i.liveness ? undefined : unrecordedKill(i),
      i.ending === 'closed-while-drawing' && i.closedEarly === false
        ? 'was told to close while drawing and did not report a close'
        : undefined,
    ];
    for (const why of whys)
      if (why !== undefined) problems.push(`process ${i.id} (${i.dc}) ${why}`);
  }
  return problems;
}
