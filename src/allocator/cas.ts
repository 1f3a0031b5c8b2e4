/**
 * The one place where the outcome of a conditional write is classified. Every protocol step
 * (claim a block, grant a range, install it, give a block back, create or alter a sequence) runs
 * its write through {@link runConditionalWrite} and acts on the verdict alone.
 *
 * Why the store's report is not enough: a Paxos round can be finished by a later round (the
 * coordinator's own contention loop, a driver retry, or another process's round that repairs
 * our accepted proposal), and that round evaluates our condition against our own write and
 * reports `[applied] = false`. A timeout, an Unavailable after the proposal or a lost
 * connection can leave our write accepted by a minority, to be committed later. So "rejected"
 * and "unknown" never mean "not written" by themselves: only the row the round found (or a
 * re-read at the same serial level) can say whose write is there.
 */

import { InvalidOptionError, InvariantError, StateRolledBackError } from '../errors.js';
import type { CasOutcome } from '../store/port.js';
import { mutated } from '../mutations.js';

/**
 * What a conditional write did, as far as it can be shown:
 * - `applied`: reported applied.
 * - `ours`: reported rejected or unknown, yet the row found carries our write.
 * - `lost`: not applied, and it never will be: another write took the place ours was
 *   conditional on. Safe to retry from a fresh read.
 * - `unknown`: cannot tell. Ours may be applied (now or later) and maybe overwritten already:
 *   nothing the write would give may be used, and nothing it would undo may be redone.
 */
export type CasVerdict = 'applied' | 'ours' | 'lost' | 'unknown';

/** What the row found says about our write. */
export type Judgement = 'ours' | 'lost' | 'unknown';

export interface ConditionalWrite<Found> {
  /** Sends the write once. A throw is taken as an unknown outcome, never as "not written". */
  readonly write: () => Promise<CasOutcome<Found>>;
  /** Reads what the write would have changed. */
  readonly judge: (found: Found | undefined) => Judgement;
  /**
   * Re-reads at the write's own serial level, which finishes a round in flight that the read's
   * quorum sees. Used after an unknown outcome.
   */
  readonly reread: () => Promise<Found | undefined>;
}

export interface CasResult<Found = unknown> {
  readonly verdict: CasVerdict;
  /** What the round or the re-read found; undefined if nothing (or the re-read failed). */
  readonly found: Found | undefined;
  /** What the store reported (a throw counts as `unknown`). */
  readonly reported: CasOutcome<unknown>['kind'];
  /** The error behind an unknown outcome, if any. */
  readonly cause: unknown;
  /** The error of the re-read after an unknown outcome, if it failed. */
  readonly rereadError?: unknown;
}

/**
 * Runs `step.write` once and classifies its outcome. A rejection is judged by the row the round
 * found; an unknown outcome by a re-read at the same level (a re-read that fails leaves the
 * verdict `unknown`).
 * @throws {StateRolledBackError} or {InvariantError} if the re-read found the rows gone back or
 * broken.
 */
export async function runConditionalWrite<Found>(
  step: ConditionalWrite<Found>,
): Promise<CasResult<Found>> {
  const result = await classify(step);
  // Negative controls only (mutations.ts): the two ways of trusting what was not shown.
  if (result.verdict === 'unknown' && mutated('unknown-as-not-written')) {
    return { ...result, verdict: 'lost' };
  }
  if (result.verdict === 'unknown' && result.reported === 'unknown' && mutated('unknown-as-ours')) {
    return { ...result, verdict: 'ours' };
  }
  return result;
}

async function classify<Found>(step: ConditionalWrite<Found>): Promise<CasResult<Found>> {
  let outcome: CasOutcome<Found>;
  try {
    outcome = await step.write();
  } catch (cause) {
    // Cassandra refused the statement as invalid (the keyspace has no idgen tables, or tables of
    // another version), or the store refused it before sending: it was never executed, and no
    // re-read can do better than the same refusal. Any other throw may follow a proposal.
    if (cause instanceof InvalidOptionError) throw cause;
    outcome = { kind: 'unknown', cause };
  }
  switch (outcome.kind) {
    case 'applied':
      return { verdict: 'applied', found: undefined, reported: 'applied', cause: undefined };
    case 'rejected': {
      const found = outcome.found;
      return { verdict: step.judge(found), found, reported: 'rejected', cause: undefined };
    }
    case 'unknown': {
      let found: Found | undefined;
      try {
        found = await step.reread();
      } catch (rereadError) {
        // A re-read that found the rows broken or gone back (to older than this process saw)
        // is an answer, not a failure to get one: it stops the writer as any read would. Taken
        // for "cannot tell", the next read could look current again (others wrote on from the
        // old rows) while this process still holds what the lost rows gave it.
        if (rereadError instanceof StateRolledBackError || rereadError instanceof InvariantError) {
          throw rereadError;
        }
        return {
          verdict: 'unknown',
          found: undefined,
          reported: 'unknown',
          cause: outcome.cause ?? rereadError,
          rereadError,
        };
      }
      return { verdict: step.judge(found), found, reported: 'unknown', cause: outcome.cause };
    }
  }
}

/** Whether the verdict lets the writer use what the write gives. */
export function isOurs(verdict: CasVerdict): boolean {
  return verdict === 'applied' || verdict === 'ours';
}
