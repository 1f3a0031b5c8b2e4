/** A campaign's report.json, and its markdown; optional fields are absent in older reports. */
import type { Verdict } from './checker.js';
import { ALARM_CODES, OWN_DEADLINE_MS } from './errors.js';
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

const n = (x: number): string => x.toLocaleString('en-US');
const listOr = (items: readonly string[], separator = '; '): string =>
  items.length === 0 ? 'none' : items.join(separator);

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
    readonly firstBlocks?: ReturnType<typeof firstBlocksOf>;
    readonly kills?: Readonly<Record<KillHow, number>>;
    readonly ownDeadlinesMissed?: number;
    readonly neverConnected?: number;
  };
  readonly mix: FaultMix;
  readonly mutation: string | undefined;
  readonly timeline: readonly TimelineEntry[];
  readonly faultsDone: Readonly<Record<string, number>>;
  readonly drawnUnderFaults?: Readonly<Record<string, number>>;
  readonly faultWindow?: FaultWindow;
  readonly drawnWhileInForce?: readonly DrawnWhileInForce[];
  readonly idleWhileNotHit?: readonly string[];
  readonly conductProblems?: readonly string[];
  readonly closeViolations?: readonly string[];
  readonly unexpectedErrors?: readonly string[];
  readonly errorsByCode: Readonly<Record<string, number>>;
  readonly errorExamples: Readonly<Record<string, string>>;
  readonly incarnations: readonly {
    readonly id: number;
    readonly dc: string;
    readonly mode: string;
    readonly ending: string;
    /** A liveness check's worker (in older reports, the last incarnation of each DC). */
    readonly liveness?: boolean | undefined;
    /** The IDs in its history; `reported`, those its summary says it drew. */
    readonly recorded: number;
    readonly reported?: number | undefined;
    readonly errors: Readonly<Record<string, number>>;
    readonly exit?: ProcessExit | undefined;
    readonly killed?: KillHow | undefined;
    readonly closedEarly?: boolean | undefined;
    readonly closeViolations?: number | undefined;
    /** Its last stderr line, if it failed or did not stop cleanly. */
    readonly failure?: string | undefined;
  }[];
  readonly liveness: readonly LivenessResult[];
  readonly check: { readonly violations: readonly string[] };
  readonly linearizabilityLines: readonly string[];
  readonly verdict: Verdict;
  readonly passed: boolean;
}

export function incarnationRow(
  i: Pick<
    Incarnation,
    'id' | 'dc' | 'mode' | 'ending' | 'liveness' | 'summary' | 'exit' | 'killed' | 'stderr'
  >,
  recorded: number,
): CampaignReport['incarnations'][number] {
  return {
    ...{ id: i.id, dc: i.dc, mode: i.mode, ending: i.ending, liveness: i.liveness },
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

export function firstBlocksOf(
  incarnations: readonly { readonly firstId?: WorkerFirstId | undefined }[],
): { byShard: Record<string, number>; moved: number; moves: number } {
  const firsts = incarnations.flatMap((i) => (i.firstId === undefined ? [] : [i.firstId]));
  const byShard: Record<string, number> = {};
  for (const { shard } of firsts) byShard[shard] = (byShard[shard] ?? 0) + 1;
  return {
    byShard,
    moved: firsts.filter((f) => f.shardMoves > 0).length,
    moves: firsts.reduce((total, f) => total + f.shardMoves, 0),
  };
}

/** The nemesis's process kills by how: the liveness check's and `stopAll`'s are not faults. */
export function killsOf(
  incarnations: readonly Pick<Incarnation, 'killed' | 'liveness' | 'hungOnStop'>[],
): Record<KillHow, number> {
  const kills: Record<KillHow, number> = { flushed: 0, raw: 0, 'flush-timed-out': 0 };
  for (const i of incarnations)
    if (i.killed !== undefined && !i.liveness && !i.hungOnStop) kills[i.killed]++;
  return kills;
}

/** What the duplicates row cannot see: the unrecorded last IDs of non-paced raw kills. */
function unrecordedTail(report: CampaignReport): string {
  const raw = report.incarnations.filter(
    (i) =>
      i.liveness !== true &&
      (i.killed === 'flush-timed-out' || (i.killed === 'raw' && i.mode !== 'paced')),
  ).length;
  if (raw === 0) return '';
  return ` among the IDs recorded (${n(raw)} ${raw === 1 ? 'process SIGKILLed raw left its' : 'processes SIGKILLed raw left their'} last 20 ms or so of IDs unrecorded)`;
}

/** The property table's rows: what was checked, and what was found (undefined: left out). */
function properties(report: CampaignReport): [string, string | undefined][] {
  const v = report.verdict;
  const r = v.reconciliation;
  const periodic = report.cluster.commitlogSync === 'periodic';
  const examples = v.duplicates
    .slice(0, 3)
    .map((d) => `${d.id} by ${d.by.join(' and ')}`)
    .join('; ');
  const incomplete = report.incarnations.filter(
    (i) => i.reported !== undefined && i.reported !== i.recorded,
  ).length;
  const alarmed = ALARM_CODES.reduce((sum, code) => sum + (report.errorsByCode[code] ?? 0), 0);
  const uncovered = v.uncoveredCalls?.map(
    (u) =>
      `${u.incarnation} (${n(u.recorded)} recorded, calls end at ${n(u.covered)}${u.beyond === undefined ? '' : `, one at ${n(u.beyond)}`})`,
  );
  const liveness = report.liveness.map(
    (l) =>
      `${l.dc}: ${l.drawn} IDs in ${l.seconds.toFixed(1)} s, ${connectedAfter(l).replaceAll('|', '\\|')}`,
  );
  const under = report.drawnUnderFaults;
  const problems = report.conductProblems;
  return [
    ['IDs recorded', `${n(v.drawn)} by ${n(report.fleet.incarnations)} process incarnations`],
    ['DCs that recorded no ID', v.dcsWithoutIds && listOr(v.dcsWithoutIds, ', ')],
    [
      'duplicates',
      `${n(v.duplicateCount)}${examples === '' ? '' : ` (e.g. ${examples})`}${unrecordedTail(report)}`,
    ],
    ['non-monotonic incarnations', `${v.nonMonotonic.length}`],
    [
      'incarnations whose calls do not cover exactly the IDs they recorded',
      uncovered && listOr(uncovered),
    ],
    ['incarnations whose history misses IDs they reported', `${incomplete}`],
    [
      'calls that found the rows gone back or broken',
      `${n(alarmed)}${periodic ? ' (commitlog_sync periodic: expected)' : ''}`,
    ],
    [
      'processes handed IDs after their close() began',
      report.closeViolations && listOr(report.closeViolations),
    ],
    [
      'errors other than those faults cause',
      report.unexpectedErrors &&
        listOr(report.unexpectedErrors).replaceAll('|', '/').slice(0, 1_000),
    ],
    ["IDs outside their DC's grants", n(v.outsideGrantsCount)],
    ['grant problems (overlap, above GLOBAL)', `${v.grantProblems.length}`],
    ['`check` violations', `${report.check.violations.length}`],
    ['linearizability lines in node logs', `${report.linearizabilityLines.length}`],
    [
      'every DC drew again after healing',
      `${report.liveness.every((l) => l.ok) ? 'yes' : 'NO'} (${liveness.join(', ')})`,
    ],
    [
      'IDs recorded while the nemesis acted',
      under &&
        Object.entries(under)
          .map(([dc, drawn]) => `${dc}: ${n(drawn)}`)
          .join(', '),
    ],
    [
      'the campaign did what it must (a cluster fault done, none failed, every DC drew, no process failed or crashed on stop, every killed process died of the SIGKILL with every ID it handed out recorded (its history written first, or paced), every close while drawing reported)',
      problems &&
        (problems.length === 0 ? 'yes' : `NO: ${problems.join('; ').replaceAll('|', '/')}`),
    ],
    [
      "no recorded ID in a range the final state still holds; held ranges inside their holder's grants, none overlapping",
      `${r.balanced ? 'yes' : 'NO'}: granted ${n(r.granted)} = recorded ${n(r.drawn)} + still held ${n(r.held)} + unaccounted ${n(r.lost)} (neither recorded nor held, by cause below)`,
    ],
  ];
}

function fleetNotes(report: CampaignReport): string[] {
  const { fleet } = report;
  const notes: string[] = [];
  const missed = fleet.ownDeadlinesMissed;
  if (missed !== undefined && (fleet.byMode['callers'] ?? 0) > 0) {
    notes.push(
      `Calls of concurrent callers with a deadline of their own (one in 8, up to ${OWN_DEADLINE_MS} ms) ` +
        `that passed, counted apart from the errors: ${n(missed)}.`,
    );
  }
  if ((fleet.neverConnected ?? 0) > 0) {
    notes.push(
      `Processes stopped before they could connect (every connect failed, as while their DC's ` +
        `nodes are all down, so they drew nothing): ${n(fleet.neverConnected!)}.`,
    );
  }
  const kills = fleet.kills;
  if (kills !== undefined) {
    notes.push(
      `Process kills: ${n(kills.flushed)} with the history written first (SIGHUP, then the ` +
        `process SIGKILLed itself), ${n(kills.raw)} raw kills (SIGKILL without warning, of paced ` +
        `processes, which write each ID before their next call), ${n(kills['flush-timed-out'])} that did not ` +
        `die within ${FLUSH_KILL_TIMEOUT_MS / 1000} s of their SIGHUP and were then SIGKILLed raw.`,
    );
  }
  const first = fleet.firstBlocks;
  if (first !== undefined) {
    notes.push(
      `Incarnations that drew an ID, by where their blocks came from: ${JSON.stringify(first.byShard)}. ` +
        `${n(first.moved)} of them moved to another shard of their DC before their first block (${n(first.moves)} moves in all).`,
    );
  }
  const inForce = report.drawnWhileInForce;
  if (inForce !== undefined && report.faultWindow !== undefined) {
    notes.push(
      drawnWhileInForceSection(inForce, report.faultWindow, report.idleWhileNotHit).join('\n'),
    );
  }
  return notes.flatMap((note) => ['', note]);
}

export function renderMarkdown(report: CampaignReport): string {
  const { cluster, fleet, verdict } = report;
  const violations = [...report.check.violations, ...report.linearizabilityLines];
  const errors = Object.entries(report.errorsByCode).sort((a, b) => b[1] - a[1]);
  const lines = [
    `# Torture campaign, seed ${report.seed}: ${report.passed ? 'PASSED' : 'FAILED'}`,
    '',
    `${report.startedAt}, ${Math.round(report.durationS)} s of faults on ${report.machine}. ` +
      `Cluster: ${cluster.dcs} DCs × ${cluster.nodesPerDc} node(s), Paxos ${cluster.paxos}, ` +
      `commitlog_sync ${cluster.commitlogSync}, replication ${JSON.stringify(cluster.replication)}. ` +
      `\`npm run torture -- --seed ${report.seed}\` with the same options draws the same: the sequence's sizes, ` +
      "each nemesis action's kind, time, target draw and durations, and each process's mode and its own " +
      'choices; which processes are drawing when an action comes (so whom it hits, and whether it is ' +
      'skipped), when a deferred cluster fault is done, and how Cassandra answers are timing, not ' +
      'the seed.',
    ...(cluster.commitlogSync === 'periodic'
      ? [
          '',
          '**Negative control:** the nodes ran `commitlog_sync: periodic`, which acknowledges writes ' +
            'before syncing them; a node crash loses them.',
        ]
      : []),
    ...(report.mutation === undefined
      ? []
      : [
          '',
          `**Negative control:** the protocol ran with the deliberate defect \`${report.mutation}\`.`,
        ]),
    '',
    '| property | result |',
    '| --- | --- |',
    ...properties(report).flatMap(([what, found]) =>
      found === undefined ? [] : [`| ${what} | ${found} |`],
    ),
    '',
    '## Gaps by cause',
    '',
    'The unaccounted IDs: granted, neither recorded nor still held. Attributed by the history around each gap: who recorded the ID just below it, and how that process ended.',
    '',
    '| cause | IDs | intervals |',
    '| --- | ---: | ---: |',
    ...verdict.gapsByCause.map((gap) => `| ${gap.cause} | ${n(gap.ids)} | ${n(gap.intervals)} |`),
    ...(verdict.gapsByCause.length === 0 ? ['| none | 0 | 0 |'] : []),
    '',
    '## Errors seen by the processes',
    '',
    '| code | calls | first message |',
    '| --- | ---: | --- |',
    ...errors.map(
      ([code, calls]) =>
        `| ${code} | ${n(calls)} | ${(report.errorExamples[code] ?? '').replaceAll('|', '/').slice(0, 300)} |`,
    ),
    ...(errors.length === 0 ? ['| none | 0 | |'] : []),
    '',
    '## Fleet',
    '',
    `${fleet.processesPerDc} processes per DC kept running; incarnations by ending: ${JSON.stringify(fleet.byEnding)}; by mode: ${JSON.stringify(fleet.byMode)}. ` +
      `Sequence \`${report.sequence.name}\`: ${JSON.stringify(report.sequence.initial)} at the start, ${JSON.stringify(report.sequence.final)} at the end.`,
    ...fleetNotes(report),
    '',
    '## Faults',
    '',
    `Mix (weights): ${JSON.stringify(report.mix)}. Done: ${JSON.stringify(report.faultsDone)}.`,
    '',
    '| at (s) | action | target | result |',
    '| ---: | --- | --- | --- |',
    ...report.timeline.map(
      (e) =>
        `| ${e.at.toFixed(1)} | ${e.action} | ${e.target} | ${e.result.replaceAll('|', '/')} |`,
    ),
    ...(violations.length === 0
      ? []
      : ['', '## Violations', '', ...violations.map((line) => `- ${line}`)]),
  ];
  return lines.join('\n') + '\n';
}

export function drawnWhileInForceSection(
  faults: readonly DrawnWhileInForce[],
  window: FaultWindow,
  idle: readonly string[] = [],
): string[] {
  const lines = [
    '## IDs drawn while each cluster fault was in force',
    '',
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
    '',
  ];
  if (faults.length === 0) return [...lines, 'No cluster fault took effect in the window.'];
  const dcs = [...new Set(faults.flatMap((f) => Object.keys(f.byDc)))].sort();
  const rows = faults.map((f) => {
    const until = f.undone ? f.to.toFixed(1) : `${f.to.toFixed(1)} (window end)`;
    const cells = dcs.map((dc) => {
      const d = f.byDc[dc];
      return d === undefined ? '' : `${n(d.ids)} (${d.processes})`;
    });
    return `| ${f.from.toFixed(1)} to ${until} | ${f.kind} | ${f.target} | ${f.hit.join(', ') || '?'} | ${f.seconds.end - f.seconds.first} | ${cells.join(' | ')} |`;
  });
  return [
    ...lines,
    `| in force (s) | fault | target | hit | whole seconds | ${dcs.join(' | ')} |`,
    `| --- | --- | --- | --- | ---: | ${dcs.map(() => '---:').join(' | ')} |`,
    ...rows,
    '',
    `DCs not hit that drew no ID through a fault of ${IDLE_FAULT_SECONDS} s or more with ` +
      `processes running (reported, not judged): ${listOr(idle)}.`,
  ];
}
