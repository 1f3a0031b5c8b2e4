/**
 * How many runs went through each of the simulation's rarer paths: counted from the histories,
 * so that the test can require that the runs still reach them, and print how often they did.
 *
 * {@link MEASURED} is no coverage: the harm of lost acknowledged writes, which the protocol
 * does not promise away (runs with a rollback that handed out an ID twice; among them those in
 * which no caller was told, with IDGEN_STATE_ROLLED_BACK, that the rows went back, and among
 * those the ones where a process logged it all the same), and runs the step limit cut short.
 * Also how the operator's retires went: how many were run again after an error, and how many
 * followed a rollback that had done harm already (an ID handed out twice, or rows no longer
 * counting an ID handed out: what a new process of the DC would have handed out again).
 */
import { IdGenError } from '../../../src/errors.js';
import { rollbackReported, type Verdict } from './checker.js';
import type { History } from './history.js';
import type { Scenario } from './model.js';

/** Paths the runs must go through: each count must stay above 0 (see the test). */
export const COVERED = [
  'moves after lost races',
  'moves with no IDs and no SERIAL',
  'moves from a spent shard',
  'domains past 2^31',
  'runs with a number handle refused (DOMAIN_NEEDS_BIGINT)',
  'runs with a pause ended',
  'runs with an alter that raised shards',
  'runs with a call past its own deadline (DEADLINE_EXCEEDED)',
  'runs with a signal fired on a pending call',
  'runs with a call aborted (ABORTED)',
  'runs that drained live handles',
  'nextIds calls',
  'nextIds calls that failed',
  'runs with a nextIds call failed after taking IDs (undelivered)',
  'runs with a rollback',
  'rollback runs where a caller got STATE_ROLLED_BACK',
  'runs that retired a DC after its rollback',
  'IDs handed out after a retire (checked)',
  'DC-state writes applied, reported rejected',
  'DC-state writes applied, reported unknown or Unavailable',
  'DC-state writes left in flight, applied by a later round',
  'grant batches applied under a fault that reports otherwise',
  'claims with two writes of unknown fate at once',
] as const;

/** Counts only printed: harm the protocol does not promise away, and runs cut short. */
export const MEASURED = [
  'rollback runs with a duplicate',
  'rollback runs with a duplicate no caller was told of',
  'rollback runs with a duplicate no caller was told of, the rollback logged',
  'retire runs whose retire was run again (an error)',
  'retire runs with a duplicate before the retire',
  'retire runs whose rows had forgotten IDs handed out',
  'runs stopped at the step limit',
] as const;

const KEYS = [...COVERED, ...MEASURED];

export type CoverageKey = (typeof KEYS)[number];

export class Coverage {
  runs = 0;
  readonly counts = Object.fromEntries(KEYS.map((key) => [key, 0])) as Record<CoverageKey, number>;

  add(scenario: Scenario, history: History, verdict: Verdict): void {
    const count = (key: CoverageKey, by = 1) => {
      this.counts[key] += by;
    };
    const codes = new Set(
      history.handles.flatMap((h) =>
        h.calls.map((c) => (c.error instanceof IdGenError ? c.error.code : undefined)),
      ),
    );
    this.runs++;
    if (!history.settled) count('runs stopped at the step limit');
    count('moves after lost races', history.shardMoves['lost races']);
    count('moves with no IDs and no SERIAL', history.shardMoves['no IDs and no SERIAL']);
    count('moves from a spent shard', history.shardMoves['shard spent']);
    if (scenario.settings.domain !== 'low') count('domains past 2^31');
    if (codes.has('IDGEN_DOMAIN_NEEDS_BIGINT'))
      count('runs with a number handle refused (DOMAIN_NEEDS_BIGINT)');
    if (history.fired.pauses > 0) count('runs with a pause ended');
    const shards = history.rowLog.at(-1)?.rows.settings.shards ?? 0;
    if (shards > scenario.settings.shards) count('runs with an alter that raised shards');
    if (codes.has('IDGEN_DEADLINE_EXCEEDED')) {
      count('runs with a call past its own deadline (DEADLINE_EXCEEDED)');
    }
    if (history.fired.aborts > 0) count('runs with a signal fired on a pending call');
    if (codes.has('IDGEN_ABORTED')) count('runs with a call aborted (ABORTED)');
    if (history.fired.drained > 0) count('runs that drained live handles');
    const nextIds = history.handles
      .flatMap((h) => h.calls)
      .filter((c) => c.call.startsWith('nextIds'));
    count('nextIds calls', nextIds.length);
    count('nextIds calls that failed', nextIds.filter((c) => c.error !== undefined).length);
    if (history.fired.undelivered > 0) {
      count('runs with a nextIds call failed after taking IDs (undelivered)');
    }
    // The outcomes a claim cannot tell apart from a write not applied: counted only where the
    // write's condition held, so that a harness that tamed its faults shows here.
    const landed = (op: string, ...effects: string[]) =>
      effects.reduce((n, effect) => n + (history.fired.faultsLanded[`${op} ${effect}`] ?? 0), 0);
    count(
      'DC-state writes applied, reported rejected',
      landed('writeDcState', 'applied-reported-rejected'),
    );
    count(
      'DC-state writes applied, reported unknown or Unavailable',
      landed('writeDcState', 'unknown-applied', 'applied-then-unavailable'),
    );
    count(
      'DC-state writes left in flight, applied by a later round',
      landed('writeDcState', 'in-flight'),
    );
    count(
      'grant batches applied under a fault that reports otherwise',
      landed(
        'grantRange',
        'unknown-applied',
        'applied-then-unavailable',
        'applied-reported-rejected',
        'in-flight',
      ),
    );
    count('claims with two writes of unknown fate at once', history.fired.unresolvedTwice);
    if (history.rollback === undefined) return;
    count('runs with a rollback');
    const repair = history.repair;
    const completed = repair?.completed;
    if (repair !== undefined && completed !== undefined) {
      count('runs that retired a DC after its rollback');
      const after = history.handles.filter((h) => h.opened > completed);
      const ids = after.reduce((n, h) => n + h.calls.reduce((m, c) => m + c.ids.length, 0), 0);
      count('IDs handed out after a retire (checked)', ids);
      if (repair.runs.length > 1) count('retire runs whose retire was run again (an error)');
      if (verdict.tolerated.some((f) => f.kind === 'duplicate')) {
        count('retire runs with a duplicate before the retire');
      }
      if (verdict.tolerated.some((f) => f.kind === 'unclaimed')) {
        count('retire runs whose rows had forgotten IDs handed out');
      }
    }
    const reported = rollbackReported(history);
    if (reported) count('rollback runs where a caller got STATE_ROLLED_BACK');
    if (verdict.tolerated.some((f) => f.kind === 'duplicate')) {
      count('rollback runs with a duplicate');
      if (!reported) count('rollback runs with a duplicate no caller was told of');
      if (!reported && history.fired.rollbacksLogged > 0) {
        count('rollback runs with a duplicate no caller was told of, the rollback logged');
      }
    }
  }

  describe(): string {
    const width = Math.max(...KEYS.map((key) => key.length));
    const lines = KEYS.map((key) => `${key.padEnd(width)} ${this.counts[key]}`);
    return [`${'runs'.padEnd(width)} ${this.runs}`, ...lines].join('\n');
  }
}
