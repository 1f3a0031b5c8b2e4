/**
 * A sequence handle's counters as its user sees them: the process level's (sequence.ts) and the
 * DC level's (dc-allocator.ts) merged into one snapshot.
 */

import type { DcCounters } from './dc-allocator.js';
import type { FailureLog } from './failures.js';

/** A snapshot of one handle's counters, since it was created. */
export interface SequenceStats {
  /** IDs this process holds and has not handed out: current block plus preloaded block. */
  readonly remaining: number;
  /** Blocks claimed from the DC (confirmed claims only). */
  readonly blocksClaimed: number;
  /** DC ranges this process got granted at SERIAL. */
  readonly rangesGranted: number;
  /** `next()`/`take()` calls that found no local ID and had to wait for a refill. */
  readonly waits: number;
  /**
   * Failed operations: block claims, DC range requests and block returns (a claim that failed
   * because its range request failed counts twice).
   */
  readonly errors: number;
  /** Conditional writes whose condition did not hold (lost races). */
  readonly casRejections: number;
  /** Conditional writes that timed out with an unknown outcome. */
  readonly casUnknown: number;
  /**
   * IDs this process claimed (or may have claimed) and will never hand out: unresolved CAS
   * timeouts, block remainders skipped by `take()`, and unused IDs not returned on close.
   */
  readonly wasted: number;
  /** Conditional writes sent (SERIAL and LOCAL_SERIAL). */
  readonly lwtWrites: number;
  /** Reads of the grant level at SERIAL. */
  readonly serialReads: number;
  /** Reads of the DC state at LOCAL_SERIAL. */
  readonly localSerialReads: number;
  /** The most recent failure, if any. */
  readonly lastError: Error | undefined;
}

/** What one level's {@link FailureLog} contributes. */
type Failures = Pick<FailureLog<string>, 'errors' | 'lastError' | 'lastErrorAt'>;

/** What the process level counts. */
export interface ProcessLevel {
  /** IDs held and not handed out. */
  readonly remaining: number;
  /** Calls that found no ID in the process and waited for a refill. */
  readonly waits: number;
  /** IDs skipped by take(), not given back on close, or dropped when the rows went back. */
  readonly wasted: number;
  readonly failures: Failures;
}

/** What the DC level counts; undefined before the settings are loaded. */
export interface DcLevel {
  readonly counters: Readonly<DcCounters>;
  readonly failures: Failures;
}

/**
 * The frozen snapshot of both levels: counts added up, and the latest failure of either level.
 */
export function sequenceStats(process: ProcessLevel, dc: DcLevel | undefined): SequenceStats {
  const dcCounters = dc?.counters;
  const rangeFailures = dc?.failures;
  const failures = process.failures;
  const lastError =
    rangeFailures !== undefined && rangeFailures.lastErrorAt > failures.lastErrorAt
      ? rangeFailures.lastError
      : (failures.lastError ?? rangeFailures?.lastError);
  return Object.freeze({
    remaining: process.remaining,
    blocksClaimed: dcCounters?.blocksClaimed ?? 0,
    rangesGranted: dcCounters?.rangesGranted ?? 0,
    waits: process.waits,
    errors: failures.errors + (rangeFailures?.errors ?? 0),
    casRejections: dcCounters?.casRejections ?? 0,
    casUnknown: dcCounters?.casUnknown ?? 0,
    wasted: process.wasted + (dcCounters?.wasted ?? 0),
    lwtWrites: dcCounters?.lwtWrites ?? 0,
    serialReads: dcCounters?.serialReads ?? 0,
    localSerialReads: dcCounters?.localSerialReads ?? 0,
    lastError,
  });
}
