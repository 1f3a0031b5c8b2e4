/**
 * A campaign's report: one JSON document with everything, and a markdown page for people.
 */
import type { Verdict } from './checker.js';
import { OWN_DEADLINE_MS } from './errors.js';
import { IDLE_FAULT_SECONDS, type DrawnWhileInForce, type FaultWindow } from './fault-progress.js';
import {
  FLUSH_KILL_TIMEOUT_MS,
  type Incarnation,
  type KillHow,
  type ProcessExit,
} from './fleet.js';
import { connectedAfter, type LivenessResult } from './liveness.js';
import type { FaultMix, TimelineEntry } from './nemesis.js';
import { killFailure, stopFailure } from './verdict.js';
import type { WorkerFirstId } from './worker.js';

const FLUSH_KILL_TIMEOUT_S = FLUSH_KILL_TIMEOUT_MS / 1000;

export interface CampaignReport {
  readonly seed: number;
  readonly startedAt: string;
  readonly durationS: number;
  readonly machine: string;
  readonly cluster: {
    readonly dcs: number;
    readonly nodesPerDc: number;
    readonly paxos: string;
    readonly commitlogSync: string;
    readonly replication: Readonly<Record<string, number>>;
  };
  readonly sequence: {
    readonly name: string;
    readonly keyspace: string;
    readonly initial: Readonly<Record<string, string | number>>;
    readonly final: Readonly<Record<string, string | number>>;
  };
  readonly fleet: {
    readonly processesPerDc: number;
    readonly incarnations: number;
    readonly byEnding: Readonly<Record<string, number>>;
    readonly byMode: Readonly<Record<string, number>>;
    /**
     * Incarnations that drew an ID, by the grantee (DC or shard) their blocks came from, and
     * those that moved to another shard of their DC before their first block. Absent in reports
     * written before it was counted.
     */
    readonly firstBlocks?: FirstBlocks;
    /** The nemesis's process kills, by how (see fleet.ts); absent in older reports. */
    readonly kills?: Readonly<Record<KillHow, number>>;
    /**
     * Calls of concurrent callers whose deadline of their own passed (worker.ts): the caller's
     * doing, so not among the errors; absent in older reports.
     */
    readonly ownDeadlinesMissed?: number;
    /**
     * Processes told to stop before they could connect (worker.ts): every connect failed, as
     * while their DC's nodes are all down. Absent in older reports.
     */
    readonly neverConnected?: number;
  };
  readonly mix: FaultMix;
  readonly mutation: string | undefined;
  readonly timeline: readonly TimelineEntry[];
  readonly faultsDone: Readonly<Record<string, number>>;
  /** IDs each DC's processes recorded while the nemesis acted; absent in older reports. */
  readonly drawnUnderFaults?: Readonly<Record<string, number>>;
  /**
   * When the nemesis acted, in seconds from the start as the timeline's; absent in reports
   * written before processes counted their IDs by second.
   */
  readonly faultWindow?: FaultWindow;
  /**
   * Each cluster fault in force inside the window, with the IDs each DC's processes handed out
   * while it was (fault-progress.ts); absent in older reports.
   */
  readonly drawnWhileInForce?: readonly DrawnWhileInForce[];
  /**
   * DCs a fault of {@link IDLE_FAULT_SECONDS} s or more did not hit that drew nothing through it
   * with processes running: reported, not judged (fault-progress.ts says why); absent in older
   * reports.
   */
  readonly idleWhileNotHit?: readonly string[];
  /**
   * Why the campaign does not count though its checks may hold (no cluster fault done, a fault
   * or undo failed, a DC drew too little, a process failed or crashed when told to stop, a kill
   * that may have lost IDs a process handed out); absent
   * in older reports.
   */
  readonly conductProblems?: readonly string[];
  /**
   * Processes handed IDs after their close() began (verdict.ts, `closeViolations`); absent in
   * reports written before it was checked.
   */
  readonly closeViolations?: readonly string[];
  /**
   * Errors the library must not throw under faults (verdict.ts, `unexpectedErrors`); absent in
   * reports written before they were told apart.
   */
  readonly unexpectedErrors?: readonly string[];
  readonly errorsByCode: Readonly<Record<string, number>>;
  /** One message per error code, as a process first saw it. */
  readonly errorExamples: Readonly<Record<string, string>>;
  readonly incarnations: readonly {
    readonly id: number;
    readonly dc: string;
    readonly mode: string;
    /** What was done to it (fleet.ts `Ending`), for a liveness worker too. */
    readonly ending: string;
    /**
     * A liveness check's worker; absent in older reports, whose liveness workers are the last
     * incarnations, one per DC.
     */
    readonly liveness?: boolean | undefined;
    readonly recorded: number;
    /** The IDs it said it drew (its last line); absent for one killed, or in older reports. */
    readonly reported?: number | undefined;
    readonly errors: Readonly<Record<string, number>>;
    /** How its process exited (an exit code, or a signal); absent in older reports. */
    readonly exit?: ProcessExit | undefined;
    /** How it was killed, if it was; absent in older reports. */
    readonly killed?: KillHow | undefined;
    /** Its summary said it closed while drawing (false without one); absent in older reports. */
    readonly closedEarly?: boolean | undefined;
    /** IDs it was handed after its close() began; absent without a summary or in older reports. */
    readonly closeViolations?: number | undefined;
    /**
     * The last line it wrote to stderr, for processes that failed or did not exit 0 when told to
     * stop.
     */
    readonly failure?: string | undefined;
  }[];
  readonly liveness: readonly LivenessResult[];
  readonly check: { readonly violations: readonly string[] };
  readonly linearizabilityLines: readonly string[];
  readonly verdict: Verdict;
  /**
   * True when every property held (the history is valid and complete, no ID came after a close()
   * began, no error other than those faults cause, every DC drew again, check is clean, no
   * violation logged) and the campaign has no conduct problem.
   */
  readonly passed: boolean;
}

/**
 * What the report records of one process, `recorded` being the IDs in its history. Its ending is
 * the one the campaign judged, so that a replay of the report (test/unit/torture-verdict.test.ts)
 * judges it alike: a liveness worker killed at its budget stays `killed`, not a process told to
 * stop that then died of a SIGKILL.
 */
export function incarnationRow(
  i: Pick<
    Incarnation,
    'id' | 'dc' | 'mode' | 'ending' | 'liveness' | 'summary' | 'exit' | 'killed' | 'stderr'
  >,
  recorded: number,
): CampaignReport['incarnations'][number] {
  return {
    id: i.id,
    dc: i.dc,
    mode: i.mode,
    ending: i.ending,
    liveness: i.liveness,
    recorded,
    reported: i.summary?.drawn,
    errors: i.summary?.errors ?? {},
    exit: i.exit,
    killed: i.killed,
    closedEarly: i.summary?.closedEarly ?? false,
    closeViolations: i.summary?.closeViolations,
    failure:
      i.ending === 'failed' || stopFailure(i) !== undefined || killFailure(i) !== undefined
        ? i.stderr.trim().split('\n').at(-1)?.slice(0, 500)
        : undefined,
  };
}

/** See `CampaignReport.fleet.firstBlocks`. */
export interface FirstBlocks {
  readonly byShard: Readonly<Record<string, number>>;
  readonly moved: number;
  readonly moves: number;
}

/** Where the incarnations that drew an ID took their blocks from, and how many moved first. */
export function firstBlocksOf(
  incarnations: readonly { readonly firstId: WorkerFirstId | undefined }[],
): FirstBlocks {
  const firsts = incarnations.flatMap((i) => (i.firstId === undefined ? [] : [i.firstId]));
  const byShard: Record<string, number> = {};
  for (const { shard } of firsts) byShard[shard] = (byShard[shard] ?? 0) + 1;
  return {
    byShard,
    moved: firsts.filter((f) => f.shardMoves > 0).length,
    moves: firsts.reduce((total, f) => total + f.shardMoves, 0),
  };
}

/**
 * The nemesis's process kills by how: those of the liveness check and of `stopAll` (a process
 * that did not stop when told) are not faults.
 */
export function killsOf(
  incarnations: readonly {
    readonly killed: KillHow | undefined;
    readonly liveness: boolean;
    readonly hungOnStop: boolean;
  }[],
): Record<KillHow, number> {
  const kills: Record<KillHow, number> = { flushed: 0, raw: 0, 'flush-timed-out': 0 };
  for (const i of incarnations) {
    if (i.killed !== undefined && !i.liveness && !i.hungOnStop) kills[i.killed]++;
  }
  return kills;
}

/**
 * What the duplicates row cannot see: a process SIGKILLed raw leaves its last 20 ms or so of IDs
 * unrecorded, and a duplicate among them would go uncounted; but for a paced one, which writes
 * each ID before its next call (the nemesis's raw kills go only to those).
 */
function unrecordedTail(report: CampaignReport): string {
  // A liveness worker is judged by the IDs it recorded alone (verdict.ts).
  const raw = report.incarnations.filter(
    (i) =>
      i.liveness !== true &&
      (i.killed === 'flush-timed-out' || (i.killed === 'raw' && i.mode !== 'paced')),
  ).length;
  if (raw === 0) return '';
  return ` among the IDs recorded (${raw.toLocaleString('en-US')} ${raw === 1 ? 'process SIGKILLed raw left its' : 'processes SIGKILLed raw left their'} last 20 ms or so of IDs unrecorded)`;
}

export function renderMarkdown(report: CampaignReport): string {
  const v = report.verdict;
  const r = v.reconciliation;
  const n = (x: number) => x.toLocaleString('en-US');
  const lines: string[] = [];
  lines.push(`# Torture campaign, seed ${report.seed}: ${report.passed ? 'PASSED' : 'FAILED'}`);
  lines.push('');
  lines.push(
    `${report.startedAt}, ${Math.round(report.durationS)} s of faults on ${report.machine}. ` +
      `Cluster: ${report.cluster.dcs} DCs × ${report.cluster.nodesPerDc} node(s), Paxos ${report.cluster.paxos}, ` +
      `commitlog_sync ${report.cluster.commitlogSync}, replication ${JSON.stringify(report.cluster.replication)}. ` +
      `\`npm run torture -- --seed ${report.seed}\` with the same options draws the same: the sequence's sizes, ` +
      "each nemesis action's kind, time, target draw and durations, and each process's mode and its own " +
      'choices; which processes are drawing when an action comes (so whom it hits, and whether it is ' +
      'skipped), when a deferred cluster fault is done, and how Cassandra answers are timing, not ' +
      'the seed.',
  );
  if (report.cluster.commitlogSync === 'periodic') {
    lines.push('');
    lines.push(
      '**Negative control:** the nodes ran `commitlog_sync: periodic`, which acknowledges writes ' +
        'before syncing them; a node crash loses them.',
    );
  }
  if (report.mutation !== undefined) {
    lines.push('');
    lines.push(
      `**Negative control:** the protocol ran with the deliberate defect \`${report.mutation}\`.`,
    );
  }
  lines.push('');
  lines.push('| property | result |');
  lines.push('| --- | --- |');
  lines.push(
    `| IDs recorded | ${n(v.drawn)} by ${n(report.fleet.incarnations)} process incarnations |`,
  );
  if (v.dcsWithoutIds !== undefined) {
    lines.push(
      `| DCs that recorded no ID | ${v.dcsWithoutIds.length === 0 ? 'none' : v.dcsWithoutIds.join(', ')} |`,
    );
  }
  lines.push(
    `| duplicates | ${n(v.duplicateCount)}${
      v.duplicates.length > 0
        ? ` (e.g. ${v.duplicates
            .slice(0, 3)
            .map((d) => `${d.id} by ${d.by.join(' and ')}`)
            .join('; ')})`
        : ''
    }${unrecordedTail(report)} |`,
  );
  lines.push(`| non-monotonic incarnations | ${v.nonMonotonic.length} |`);
  if (v.uncoveredCalls !== undefined) {
    lines.push(
      `| incarnations whose calls do not cover exactly the IDs they recorded | ${v.uncoveredCalls.length === 0 ? 'none' : v.uncoveredCalls.map((u) => `${u.incarnation} (${n(u.recorded)} recorded, calls end at ${n(u.covered)}${u.beyond === undefined ? '' : `, one at ${n(u.beyond)}`})`).join('; ')} |`,
    );
  }
  const incomplete = report.incarnations.filter(
    (i) => i.reported !== undefined && i.reported !== i.recorded,
  ).length;
  lines.push(`| incarnations whose history misses IDs they reported | ${incomplete} |`);
  const alarmed =
    (report.errorsByCode['IDGEN_STATE_ROLLED_BACK'] ?? 0) +
    (report.errorsByCode['IDGEN_INVARIANT_BROKEN'] ?? 0);
  lines.push(
    `| calls that found the rows gone back or broken | ${n(alarmed)}${report.cluster.commitlogSync === 'periodic' ? ' (commitlog_sync periodic: expected)' : ''} |`,
  );
  const afterClose = report.closeViolations;
  if (afterClose !== undefined) {
    lines.push(
      `| processes handed IDs after their close() began | ${afterClose.length === 0 ? 'none' : afterClose.join('; ')} |`,
    );
  }
  const unexpected = report.unexpectedErrors;
  if (unexpected !== undefined) {
    lines.push(
      `| errors other than those faults cause | ${unexpected.length === 0 ? 'none' : unexpected.join('; ').replaceAll('|', '/').slice(0, 1_000)} |`,
    );
  }
  lines.push(`| IDs outside their DC's grants | ${n(v.outsideGrantsCount)} |`);
  lines.push(`| grant problems (overlap, above GLOBAL) | ${v.grantProblems.length} |`);
  lines.push(`| \`check\` violations | ${report.check.violations.length} |`);
  lines.push(`| linearizability lines in node logs | ${report.linearizabilityLines.length} |`);
  lines.push(
    `| every DC drew again after healing | ${report.liveness.every((l) => l.ok) ? 'yes' : 'NO'} (${report.liveness.map((l) => `${l.dc}: ${l.drawn} IDs in ${l.seconds.toFixed(1)} s, ${connectedAfter(l).replaceAll('|', '\\|')}`).join(', ')}) |`,
  );
  const under = report.drawnUnderFaults;
  if (under !== undefined) {
    lines.push(
      `| IDs recorded while the nemesis acted | ${Object.entries(under)
        .map(([dc, drawn]) => `${dc}: ${n(drawn)}`)
        .join(', ')} |`,
    );
  }
  const problems = report.conductProblems;
  if (problems !== undefined) {
    lines.push(
      `| the campaign did what it must (a cluster fault done, none failed, every DC drew, no process failed or crashed on stop, every killed process died of the SIGKILL with every ID it handed out recorded (its history written first, or paced), every close while drawing reported) | ${problems.length === 0 ? 'yes' : `NO: ${problems.join('; ').replaceAll('|', '/')}`} |`,
    );
  }
  // `lost` is what remains of the grants once the recorded and the held are taken out, so the sum
  // holds whatever was lost: what it does show is that the recorded and the held do not overlap
  // and that the held lie inside the grants.
  lines.push(
    `| no recorded ID in a range the final state still holds; held ranges inside their holder's grants, none overlapping | ${r.balanced ? 'yes' : 'NO'}: granted ${n(r.granted)} = recorded ${n(r.drawn)} + still held ${n(r.held)} + unaccounted ${n(r.lost)} (neither recorded nor held, by cause below) |`,
  );
  lines.push('');
  lines.push('## Gaps by cause');
  lines.push('');
  lines.push(
    'The unaccounted IDs: granted, neither recorded nor still held. Attributed by the history around each gap: who recorded the ID just below it, and how that process ended.',
  );
  lines.push('');
  lines.push('| cause | IDs | intervals |');
  lines.push('| --- | ---: | ---: |');
  for (const gap of v.gapsByCause)
    lines.push(`| ${gap.cause} | ${n(gap.ids)} | ${n(gap.intervals)} |`);
  if (v.gapsByCause.length === 0) lines.push('| none | 0 | 0 |');
  lines.push('');
  lines.push('## Errors seen by the processes');
  lines.push('');
  lines.push('| code | calls | first message |');
  lines.push('| --- | ---: | --- |');
  for (const [code, count] of Object.entries(report.errorsByCode).sort((a, b) => b[1] - a[1])) {
    const example = (report.errorExamples[code] ?? '').replaceAll('|', '/').slice(0, 300);
    lines.push(`| ${code} | ${n(count)} | ${example} |`);
  }
  if (Object.keys(report.errorsByCode).length === 0) lines.push('| none | 0 | |');
  lines.push('');
  lines.push('## Fleet');
  lines.push('');
  lines.push(
    `${report.fleet.processesPerDc} processes per DC kept running; incarnations by ending: ${JSON.stringify(report.fleet.byEnding)}; by mode: ${JSON.stringify(report.fleet.byMode)}. ` +
      `Sequence \`${report.sequence.name}\`: ${JSON.stringify(report.sequence.initial)} at the start, ${JSON.stringify(report.sequence.final)} at the end.`,
  );
  const missed = report.fleet.ownDeadlinesMissed;
  if (missed !== undefined && (report.fleet.byMode['callers'] ?? 0) > 0) {
    lines.push('');
    lines.push(
      `Calls of concurrent callers with a deadline of their own (one in 8, up to ${OWN_DEADLINE_MS} ms) ` +
        `that passed, counted apart from the errors: ${n(missed)}.`,
    );
  }
  const neverConnected = report.fleet.neverConnected ?? 0;
  if (neverConnected > 0) {
    lines.push('');
    lines.push(
      `Processes stopped before they could connect (every connect failed, as while their DC's ` +
        `nodes are all down, so they drew nothing): ${n(neverConnected)}.`,
    );
  }
  const kills = report.fleet.kills;
  if (kills !== undefined) {
    lines.push('');
    lines.push(
      `Process kills: ${n(kills.flushed)} with the history written first (SIGHUP, then the ` +
        `process SIGKILLed itself), ${n(kills.raw)} raw kills (SIGKILL without warning, of paced ` +
        `processes, which write each ID before their next call), ${n(kills['flush-timed-out'])} that did not ` +
        `die within ${FLUSH_KILL_TIMEOUT_S} s of their SIGHUP and were then SIGKILLed raw.`,
    );
  }
  const first = report.fleet.firstBlocks;
  if (first !== undefined) {
    lines.push('');
    lines.push(
      `Incarnations that drew an ID, by where their blocks came from: ${JSON.stringify(first.byShard)}. ` +
        `${n(first.moved)} of them moved to another shard of their DC before their first block (${n(first.moves)} moves in all).`,
    );
  }
  const inForce = report.drawnWhileInForce;
  if (inForce !== undefined && report.faultWindow !== undefined) {
    lines.push('');
    lines.push(...drawnWhileInForceSection(inForce, report.faultWindow, report.idleWhileNotHit));
  }
  lines.push('');
  lines.push('## Faults');
  lines.push('');
  lines.push(
    `Mix (weights): ${JSON.stringify(report.mix)}. Done: ${JSON.stringify(report.faultsDone)}.`,
  );
  lines.push('');
  lines.push('| at (s) | action | target | result |');
  lines.push('| ---: | --- | --- | --- |');
  for (const entry of report.timeline) {
    lines.push(
      `| ${entry.at.toFixed(1)} | ${entry.action} | ${entry.target} | ${entry.result.replaceAll('|', '/')} |`,
    );
  }
  if (report.check.violations.length > 0 || report.linearizabilityLines.length > 0) {
    lines.push('');
    lines.push('## Violations');
    lines.push('');
    for (const line of [...report.check.violations, ...report.linearizabilityLines])
      lines.push(`- ${line}`);
  }
  return lines.join('\n') + '\n';
}

/** The report's section on what each DC drew while each cluster fault was in force. */
export function drawnWhileInForceSection(
  faults: readonly DrawnWhileInForce[],
  window: FaultWindow,
  idle: readonly string[] = [],
): string[] {
  const n = (x: number) => x.toLocaleString('en-US');
  const lines: string[] = [];
  lines.push('## IDs drawn while each cluster fault was in force');
  lines.push('');
  lines.push(
    `Each cluster fault that took effect in the fault window (${window.from.toFixed(1)} s to ${window.to.toFixed(1)} s), ` +
      'from its `ok` entry in the timeline below (for a partition whose cut showed only later, ' +
      "from when its rules went in, which that entry gives) to its undo's, or to the window's end " +
      "(a partition's undo is the removal of its rules, a kill's the restart of its nodes until " +
      "they accept CQL; the `healed` entry after it says when the cluster worked again). A DC's " +
      'cell gives the IDs its processes handed out in the whole seconds inside that interval, as each ' +
      'process wrote them down second by second, and (in parentheses) its processes alive throughout ' +
      'the fault. These are at least the IDs drawn meanwhile: a second only partly inside counts ' +
      "for none, and a raw SIGKILL loses its process's second under way. Hit: the DC partitioned " +
      'or killed, or that of the node.',
  );
  lines.push('');
  if (faults.length === 0) {
    lines.push('No cluster fault took effect in the window.');
    return lines;
  }
  const dcs = [...new Set(faults.flatMap((f) => Object.keys(f.byDc)))].sort();
  lines.push(`| in force (s) | fault | target | hit | whole seconds | ${dcs.join(' | ')} |`);
  lines.push(`| --- | --- | --- | --- | ---: | ${dcs.map(() => '---:').join(' | ')} |`);
  for (const f of faults) {
    const until = f.undone ? f.to.toFixed(1) : `${f.to.toFixed(1)} (window end)`;
    const cells = dcs.map((dc) => {
      const d = f.byDc[dc];
      return d === undefined ? '' : `${n(d.ids)} (${d.processes})`;
    });
    lines.push(
      `| ${f.from.toFixed(1)} to ${until} | ${f.kind} | ${f.target} | ${f.hit.join(', ') || '?'} | ${f.seconds.end - f.seconds.first} | ${cells.join(' | ')} |`,
    );
  }
  lines.push('');
  lines.push(
    `DCs not hit that drew no ID through a fault of ${IDLE_FAULT_SECONDS} s or more with ` +
      `processes running (reported, not judged): ${idle.length === 0 ? 'none' : idle.join('; ')}.`,
  );
  return lines;
}
