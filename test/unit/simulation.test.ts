/**
 * Deterministic simulation of the allocator: processes in three DCs over one MemoryStore, with
 * fast-check choosing the order in which every store call runs and answers, when time passes,
 * which calls callers make (next and nextIds, some with a deadline of their own or a signal the
 * scheduler fires, tryNext, draws, take, close while still calling, restarts, shutdowns, alters
 * that also raise shards, pauses of 3 to 31 s of virtual time so that running processes re-read
 * altered settings) and which faults the store injects (writes applied but reported rejected,
 * applied then Unavailable or a lost connection, applied then a timeout, timeouts of writes not
 * applied, writes left in flight and finished by a later round, reads failing, a DC cut off from
 * SERIAL for a while). Domains lie low, or at the top of the safe numbers, across 2^53 (number
 * handles must refuse them) or at the top of int63. In half the runs live handles hand out every
 * ID they hold before the end. The checker trusts only what callers were given and the rows
 * (simulation/checker.ts), but for one white-box oracle: after every step, the unused IDs live
 * handles hold are held once and were not handed out yet.
 *
 * In about one run of eight, a DC state loses its last one or two acknowledged writes (a
 * rollback, as with `commitlog_sync: periodic`): those runs are held to what docs/design.md
 * promises then (no ID from a handle after it reported IDGEN_STATE_ROLLED_BACK, no unexpected
 * error, no call left hanging), and their duplicates are counted and printed, not failed. In
 * half of them the operator then repairs the DC as docs/design.md says: its processes stop,
 * retireDcRanges runs from it over the same faulty store (re-run while it fails as an operator
 * would re-run it), and fresh processes carry on; an ID of any handle opened after the retire
 * must then be one no other call of the run handed out, and the DC's new IDs must lie above all
 * its IDs from before (checker.ts).
 *
 * A failure prints the seed, the path and the shrunk counterexample: the scenario, the
 * scheduler's order of every task, and the run's trace. Replay it with
 *   SIM_SEED=<seed> SIM_PATH=<path> npx vitest run test/unit/simulation.test.ts
 * (SIM_RUNS sets the number of runs).
 *
 * The negative controls switch on a mutation of mutations.ts that brings back a fixed defect and
 * require the same property to fail.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';

import { setMutationsForTests, type Mutation } from '../../src/mutations.js';
import {
  BLACK_BOX_KINDS,
  SAFETY_KINDS,
  SimulationViolation,
  checkHistory,
  type FindingKind,
  type Verdict,
} from './simulation/checker.js';
import { COVERED, Coverage } from './simulation/coverage.js';
import type { History } from './simulation/history.js';
import { scenarioArb, type Scenario } from './simulation/model.js';
import { simulate } from './simulation/world.js';

/** Runs of the property; each simulates a few hundred scheduled steps. */
const RUNS = Number(process.env.SIM_RUNS ?? 2_000);
/** A run that has not settled by then stops (unmutated runs settle within a few hundred). */
const MAX_STEPS = 5_000;

/**
 * @param onRun sees each run's scenario, history and verdict, before a violation throws.
 * @param ignoring kinds that fail no run by themselves (a control's, see CONTROLS).
 */
function simulation(
  onRun?: (scenario: Scenario, history: History, verdict: Verdict) => void,
  ignoring: readonly FindingKind[] = [],
) {
  return fc.asyncProperty(fc.scheduler(), scenarioArb(), async (scheduler, scenario) => {
    const history = await simulate(scheduler, scenario, { maxSteps: MAX_STEPS });
    const verdict = checkHistory(history);
    onRun?.(scenario, history, verdict);
    if (verdict.violations.some((f) => !ignoring.includes(f.kind))) {
      throw new SimulationViolation(verdict.violations, history.trace);
    }
  });
}

/** A failing run to replay, from SIM_SEED and SIM_PATH; a fresh seed otherwise. */
function replay(): { seed?: number; path?: string } {
  const seed = process.env.SIM_SEED;
  const path = process.env.SIM_PATH;
  return {
    ...(seed === undefined ? {} : { seed: Number(seed) }),
    ...(path === undefined ? {} : { path }),
  };
}

describe('deterministic simulation of the allocator', () => {
  it('hands out no ID twice, IDs increase per handle and lie in grants of their DC, and the rows pass check', async () => {
    const coverage = new Coverage();
    const replaying = replay();
    await fc.assert(
      simulation((...run) => coverage.add(...run)),
      { numRuns: RUNS, includeErrorInReport: true, ...replaying },
    );
    // What the runs went through, and the harm of lost writes that nothing reports: printed
    // so that a change in either shows (shrinking runs count too, so a failure's counts are off).
    console.info(`simulation coverage:\n${coverage.describe()}`);
    // The runs went through each rarer path, so the property above covers it: every move to
    // another shard (in 3,000 runs when these were written: 268 after lost races and 414 while a
    // DC was cut off from SERIAL, before a first block; 294 to 344 from a spent shard), and every
    // fault and command that most runs do not reach. A replay runs one.
    if (replaying.seed === undefined && RUNS >= 1_000) {
      for (const key of COVERED) expect(coverage.counts[key], key).toBeGreaterThan(0);
    }
  }, 300_000);
});

/**
 * The mutations the simulation catches, each with a fixed seed and what its failure must show.
 * The seeds were picked among 1 to 25, all of which fail (last picked once the runs held
 * nextIds calls too: within 87 runs for 'serve-while-closing', 510 for 'unknown-as-not-written',
 * 10 for 'unknown-as-ours', 537 for 'move-after-first-block'), as ones that fail within a few
 * runs with an ID handed out twice (the fourth: with its block refused as broken rows).
 * Each must fail with a black-box finding (BLACK_BOX_KINDS), not only with the allocator's own
 * refusal of its rows: the first three and the last two still do on their seeds (checked when
 * that rule came, with bursts of claim faults in the runs); 'move-after-first-block' did not,
 * and needs the block buffer's guard off too.
 *
 * 'dc-state-at-serial-too' and 'grants-read-at-quorum' only change the consistency levels the
 * Cassandra store sends; the MemoryStore has none, so no simulation over it can tell them apart
 * (the torture campaign against a real cluster is their control).
 */
const CONTROLS: readonly {
  readonly mutation: Mutation;
  /** Another fix switched off with it, where two stand in the way of the same duplicate. */
  readonly with?: Mutation;
  readonly seed: number;
  /** Black-box kinds (BLACK_BOX_KINDS), one of which its failure must show. */
  readonly shows: readonly FindingKind[];
  /**
   * What the other switch alone fails with (its own control): a run that shows only these goes
   * on, so that the control finds the runs where the two together do more.
   */
  readonly ignoring?: readonly FindingKind[];
}[] = [
  // Defect 1: close() serving from the run it gives back.
  { mutation: 'serve-while-closing', seed: 1, shows: ['duplicate', 'unclaimed'] },
  // Defect 3: a give-back applied but reported rejected (or unknown) taken as not written.
  {
    mutation: 'unknown-as-not-written',
    with: 'give-back-on-any-state',
    seed: 2,
    shows: ['duplicate', 'unclaimed'],
  },
  // A claim whose outcome stayed unknown used as applied.
  {
    mutation: 'unknown-as-ours',
    seed: 5,
    shows: ['duplicate', 'unclaimed', 'outside-grants', 'rows-broken'],
  },
  // A handle that moves to another shard after it handed out IDs: a block of the new shard may
  // lie below the IDs it gave. Alone it fails only with the allocator's own refusal of that block
  // (the block buffer's guard; seeds 11 to 16, within 294 runs); with the guard off too, the
  // handle hands out IDs below ones it gave (seeds 11 to 13 each in their first failing run; 11
  // in its first). Its IDs all lie in grants of its DC, so none is outside them.
  {
    mutation: 'move-after-first-block',
    with: 'no-accept-guard',
    seed: 11,
    shows: ['not-increasing'],
  },
  // A retire that leaves the latest grant unspent: the DC's next processes claim again IDs the
  // lost writes had claimed and handed out. Seeds 1 to 25 all fail within 113 runs (a retire
  // lands in about one run of 16), 19 of them with such a duplicate, the others with new IDs
  // below old ones; 20 fails with such a duplicate in its second run.
  { mutation: 'retire-keeps-last-integer', seed: 20, shows: ['duplicate-after-retire'] },
  // A nextIds() call that fails once it took IDs (its deadline, its signal, the handle closing,
  // the domain spent) resolves with the IDs it took instead of rejecting. Seeds 1 to 25 all fail
  // within 146 runs, each with a call given fewer IDs than it asked for; 6 in its first run.
  { mutation: 'partial-next-ids', seed: 6, shows: ['wrong-count'] },
  // Rollback detection by versions only: a state at a version the process saw, written by
  // another op (the write it saw was lost and replaced), passes as current, and the process goes
  // on from it without a word. Seeds 1 to 8 all fail within 167 runs, each only with a process
  // that read its rows gone back and never reported it; 8 in its 17th run.
  { mutation: 'rollback-by-version-only', seed: 8, shows: ['rollback-unreported'] },
  // The block buffer's guard (a block must lie above the handle's earlier IDs) switched off. Alone
  // it is never caught (seed 1: 1,500 runs pass): only rows that went back give a handle a block
  // below its IDs, and rollback detection refuses each such state before a block is cut from it.
  // With detection by versions only as well, such blocks come, and the handle hands out IDs below
  // ones it gave. Runs that fail only as the version-only control does go on: in 300 runs each,
  // seeds 1 to 4 and 8 show such IDs; 4 in its 95th run.
  {
    mutation: 'no-accept-guard',
    with: 'rollback-by-version-only',
    seed: 4,
    shows: ['not-increasing'],
    ignoring: ['rollback-unreported'],
  },
  // A claim holding several writes of unknown fate takes the first once any one is seen
  // committed: the block of a write that never landed, which another process claimed meanwhile.
  // Caught once bursts of claim faults leave two such writes in one claim (model.ts): seeds 1 to
  // 6 all but 4 fail within 1,000 runs, 2, 3, 5 and 6 with an ID handed out twice or no longer
  // claimed in the rows; 3 in its 115th run.
  { mutation: 'committed-any', seed: 3, shows: ['duplicate', 'unclaimed'] },
];

/** Most runs a control may take: the seeds above fail far sooner; the margin is for changes that move them. */
const CONTROL_RUNS = 1_000;

describe('negative controls: with a fixed defect brought back, the simulation fails', () => {
  afterEach(() => setMutationsForTests([]));

  it.each(CONTROLS)(
    '$mutation (seed $seed)',
    async ({ mutation, with: also, seed, shows, ignoring }) => {
      setMutationsForTests(also === undefined ? [mutation] : [mutation, also]);
      const result = await fc.check(simulation(undefined, ignoring), {
        seed,
        numRuns: CONTROL_RUNS,
        endOnFailure: true,
      });
      expect(result.failed).toBe(true);
      const error = result.errorInstance;
      expect(error).toBeInstanceOf(SimulationViolation);
      const kinds = (error as SimulationViolation).findings.map((f) => f.kind);
      // A finding of the history, the rows or the wire, not only the allocator's own refusal.
      for (const kind of shows) expect(BLACK_BOX_KINDS).toContain(kind);
      expect(
        kinds.some((kind) => shows.includes(kind)),
        kinds.join(', '),
      ).toBe(true);
      expect(kinds.filter((kind) => !SAFETY_KINDS.includes(kind))).toEqual([]);
    },
    60_000,
  );
});
