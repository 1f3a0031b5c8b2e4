/**
 * The one place a conditional write's outcome is classified; every protocol step acts on the
 * verdict alone. "Rejected" and "unknown" never mean "not written": a later round may commit ours
 * and then report it rejected (docs/design.md, "Outcomes of a conditional write").
 */

import {
  InvalidOptionError,
  InvariantError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import type { CasOutcome, StoreLevel } from '../store/port.js';
import { mutated } from '../mutations.js';

/**
 * `ours`: not reported applied, yet the row found carries our write. `lost`: never applied (safe
 * to retry). `unknown`: maybe applied: use nothing it gives, redo nothing it undoes.
 */
export type CasVerdict = 'applied' | 'ours' | 'lost' | 'unknown';

export type Judgement = 'ours' | 'lost' | 'unknown';

export interface ConditionalWrite<Found> {
  /** A throw is an unknown outcome, never "not written". */
  readonly write: () => Promise<CasOutcome<Found>>;
  readonly judge: (found: Found | undefined) => Judgement;
  /** After an unknown outcome: a read at the write's serial level finishes a round in flight. */
  readonly reread: () => Promise<Found | undefined>;
}

export interface CasResult<Found = unknown> {
  readonly verdict: CasVerdict;
  readonly found: Found | undefined;
  readonly reported: CasOutcome<unknown>['kind'];
  readonly cause: unknown;
  readonly rereadError?: unknown;
}

/** Runs `step.write` once: a rejection judged by the row found, an unknown by a re-read. */
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
    // Refused before sending (no idgen tables, another version): never executed.
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
        // An answer that stops the writer as any read would: the next read could look current.
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

/** The error for a write whose outcome stayed unknown; `advice` says what to do. */
export function unknownOutcome(
  level: StoreLevel,
  operation: string,
  result: CasResult,
  advice: string,
): StoreUnavailableError {
  const failure = result.rereadError ?? result.cause;
  const words =
    failure instanceof StoreUnavailableError
      ? failure.detail
      : failure instanceof Error
        ? failure.message
        : String(failure);
  const why = failure === undefined ? '' : `${words}; `;
  return new StoreUnavailableError(
    level,
    operation,
    `${why}the conditional write may or may not have been applied, and its outcome could not be read back; ${advice}`,
    { cause: result.cause },
  );
}
