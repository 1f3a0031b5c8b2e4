/**
 * The one place where the outcome of a conditional write is classified. Every protocol step
 * (claim a block, grant a range, install it, give a block back, create or alter a sequence) runs
 * its write through {@link runConditionalWrite} and acts on the verdict alone.
 *
 * Why the store's report is not enough: a later round (the coordinator's contention loop, a
 * driver retry, another process repairing our accepted proposal) can commit our write, evaluate
 * our condition against it and report `[applied] = false`; a timeout or lost connection can leave
 * it accepted by a minority, to be committed later. So "rejected" and "unknown" never mean "not
 * written": only the row a round found (or a re-read at the same serial level) says whose it is.
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
  /** The error behind an unknown outcome. */
  readonly cause: unknown;
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
    // Refused as invalid (no idgen tables, another version) or before sending: never executed, so a
    // re-read cannot do better. Any other throw may follow a proposal.
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
        // Rows found broken or gone back are an answer and stop the writer as any read would. Taken
        // as "cannot tell", the next read could look current again while this process holds what
        // the lost rows gave it.
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
