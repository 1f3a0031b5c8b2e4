/**
 * What a campaign must have done for its checks to mean anything: a clean history proves
 * nothing if the nemesis never hurt the cluster, its faults or their undoing failed, a DC drew
 * next to nothing under the faults, or a process died of an error of its own or crashed when
 * told to stop.
 */
import { ALARM_CODES, EXPECTED_ERROR_CODES } from './errors.js';
import type { KillHow, ProcessExit } from './fleet.js';
import { CLUSTER_FAULT_KINDS, type TimelineEntry } from './nemesis.js';

/**
 * Fewest IDs each DC must record while the nemesis acts. A DC may be down for most of a short
 * campaign (a whole-DC kill restarts in up to 474 s in the committed campaigns, and may be the
 * first action, 3 s in), so it must pass on what a DC draws in its first 3 s: the committed
 * campaigns' slowest DC averaged 2,071 IDs a second over the campaign, the slowest negative
 * controls 598, two paced processes alone draw 4,000; 1-minute campaigns on this machine drew
 * 6.4 to 17 million per DC. A DC whose processes barely drew records next to none. What each DC
 * drew while each cluster fault was in force is reported, not judged: fault-progress.ts,
 * `idleWhileNotHit`, says why.
 */
export const MIN_IDS_PER_DC_UNDER_FAULTS = 1_000;

/**
 * An alter whose admin client could not reach its DC, or SERIAL, is expected while a DC is cut
 * off or down (the committed campaigns record such: `failed: Cassandra is unavailable at
 * LOCAL_QUORUM for read sequence` and `... at SERIAL for alter sequence`).
 */
const EXPECTED_ALTER_FAILURE = /^failed: Cassandra is unavailable at /;

/**
 * The signal a process of each ending was sent to stop (fleet.ts): it must then close, flush its
 * history and exit 0. A process sent it before it handles it (the worker installs its handlers
 * once connected, so one still starting or connecting, holding no IDs) dies of that very signal,
 * which is no failure. A process killed (`killed`) must die of the SIGKILL, see
 * {@link killFailure}.
 */
const STOP_SIGNALS: Readonly<Record<string, NodeJS.Signals>> = {
  terminated: 'SIGTERM',
  'closed-while-drawing': 'SIGUSR2',
};

/** What {@link stopFailure} needs of a process. */
export interface StoppedProcess {
  readonly ending: string;
  /** How its process exited; absent in reports written before it was recorded, then not judged. */
  readonly exit?: ProcessExit | undefined;
}

/**
 * How a process told to stop failed to stop cleanly (a crash while closing, an unhandled
 * rejection, a history write that failed after its last ID), or undefined if it did: its
 * history may then lack IDs it handed out, or it may not have given its unused IDs back.
 */
export function stopFailure(stopped: StoppedProcess): string | undefined {
  const signal = STOP_SIGNALS[stopped.ending];
  const exit = stopped.exit;
  if (signal === undefined || exit === undefined) return undefined;
  if (exit.code === 0 || exit.signal === signal) return undefined;
  const how =
    exit.code !== null
      ? `exited with code ${exit.code}`
      : `was ended by ${exit.signal ?? 'a signal'}`;
  const told = stopped.ending === 'terminated' ? 'stop' : 'close while drawing';
  return `${how} after ${signal} told it to ${told}`;
}

/** What {@link closeViolations} needs of a process. */
export interface ClosedProcess {
  readonly id: number;
  readonly dc: string;
  /** IDs it was handed after its close() began (worker.ts); absent without a summary. */
  readonly closeViolations?: number | undefined;
}

/**
 * The processes handed IDs after their close() began, one line each; empty when none was. The
 * library promises that from that moment no ID is taken (a call in flight may still resolve with
 * one taken before, which the worker does not count): an ID taken from blocks being given back is
 * one another process may be handed too, and any fails the campaign.
 */
export function closeViolations(processes: readonly ClosedProcess[]): string[] {
  return processes
    .filter((p) => (p.closeViolations ?? 0) > 0)
    .map(
      (p) =>
        `process ${p.id} (${p.dc}) was handed ${p.closeViolations!.toLocaleString('en-US')} IDs after its close() began`,
    );
}

/**
 * The errors the processes saw that the library must not throw under faults (errors.ts), one
 * line each with its first message; empty when there were none. The alarms are judged apart.
 */
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

/**
 * How a process recorded as killed ended otherwise than by a SIGKILL, or undefined if it did
 * not: one that failed on its own just before the kill (it exited with a code, or died of
 * another signal), or whose write of its history on the nemesis's SIGHUP failed (it exits 1).
 * Taken for the kill, its failure would pass unseen.
 */
export function killFailure(killed: StoppedProcess): string | undefined {
  const exit = killed.exit;
  if (killed.ending !== 'killed' || exit === undefined) return undefined;
  if (exit.code === null && exit.signal === 'SIGKILL') return undefined;
  const how =
    exit.code !== null
      ? `exited with code ${exit.code}`
      : `was ended by ${exit.signal ?? 'a signal'}`;
  return `${how} when it was being killed, not by the SIGKILL`;
}

/** What {@link unrecordedKill} needs of a process. */
export interface KilledProcess {
  readonly ending: string;
  /** Its worker mode (worker.ts); absent in reports written before it was recorded. */
  readonly mode?: string | undefined;
  /** How it was killed (fleet.ts); absent in reports written before kills could flush. */
  readonly killed?: KillHow | undefined;
}

/**
 * Why a killed process's history may lack IDs it handed out, or undefined if it cannot: a
 * SIGKILL that came without its SIGHUP flush (raw) or after the flush missed its deadline
 * (`flush-timed-out`) loses the IDs it buffered, up to 20 ms of them (worker.ts), and a
 * duplicate of one of those is invisible to the checker. A paced process writes each ID before
 * its next call, so its raw kill loses nothing. A report written before kills could flush (no
 * `killed`) had every kill raw, and its paced processes wrote only before a wait.
 */
export function unrecordedKill(killed: KilledProcess): string | undefined {
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
  readonly incarnations: readonly {
    readonly id: number;
    readonly dc: string;
    readonly ending: string;
    readonly liveness: boolean;
    /** Killed at the end for not stopping when told (a `killed` ending, but no nemesis kill). */
    readonly hungOnStop?: boolean | undefined;
    /** How its process exited; absent in reports written before it was recorded. */
    readonly exit?: ProcessExit | undefined;
    /** Its worker mode; absent in reports written before it was recorded. */
    readonly mode?: string | undefined;
    /** How it was killed, if it was ({@link unrecordedKill}). */
    readonly killed?: KillHow | undefined;
    /**
     * Its summary said it closed while drawing (false without a summary); absent in reports
     * written before it was recorded.
     */
    readonly closedEarly?: boolean | undefined;
  }[];
}

/**
 * Why the campaign does not count, one reason a line; empty when it does. A process the nemesis
 * killed ends `killed`, and must have died of the SIGKILL ({@link killFailure}) with its history
 * whole ({@link unrecordedKill}); one closed
 * `closed-while-drawing`, which must report the close;
 * `failed` is one that exited with an error on its own, and one killed for not stopping at the
 * end is `hungOnStop`. One told to stop or to close that did not then exit 0 is a
 * {@link stopFailure}.
 */
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
    // A liveness worker too: its check counts only its history, which a worker that drew its
    // IDs and then failed (its close() threw) leaves whole.
    if (i.ending === 'failed') {
      problems.push(`process ${i.id} (${i.dc}) exited with an error of its own`);
    }
    if (!i.liveness && i.hungOnStop === true) {
      problems.push(`process ${i.id} (${i.dc}) did not stop when told and was killed`);
    }
    const failure = stopFailure(i) ?? (i.liveness ? undefined : killFailure(i));
    if (failure !== undefined) problems.push(`process ${i.id} (${i.dc}) ${failure}`);
    // The liveness check judges its worker by the IDs it recorded, whatever it lost.
    const unrecorded = i.liveness ? undefined : unrecordedKill(i);
    if (unrecorded !== undefined) problems.push(`process ${i.id} (${i.dc}) ${unrecorded}`);
    // The nemesis closes only processes that drew (so handle SIGUSR2): one that did not report
    // the close was not tested by it, even if it died of the very signal.
    if (i.ending === 'closed-while-drawing' && i.closedEarly === false) {
      problems.push(
        `process ${i.id} (${i.dc}) was told to close while drawing and did not report a close`,
      );
    }
  }
  return problems;
}
