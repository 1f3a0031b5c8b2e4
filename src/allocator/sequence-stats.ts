/** A handle's counters as its user sees them, merged by {@link Ledger.stats}. */

/** A snapshot of one handle's counters, since it was created. */
export interface SequenceStats {
  /**
   * IDs handed out by `next()`, `tryNext()`, `take()` and HTTP responses written (failed ones:
   * {@link WasteByCause.undelivered}). Never goes down.
   */
  readonly issued: number;
  /** IDs held and not handed out: current plus preloaded block. */
  readonly remaining: number;
  /** Blocks claimed from the DC (confirmed claims only). */
  readonly blocksClaimed: number;
  /** IDs in the last block claimed; 0 before the first. */
  readonly blockSize: number;
  /** This process's draw rate in IDs/s, as measured when it last claimed; undefined before. */
  readonly drawRate: number | undefined;
  /** The DC's claim rate in IDs/s, measured from the DC states read; undefined before. */
  readonly dcRate: number | undefined;
  /** DC ranges this process got granted at SERIAL. */
  readonly rangesGranted: number;
  /** Calls that found too few IDs held and waited for a refill (each wait counts). */
  readonly waits: number;
  /** Failed block claims, DC range requests and block returns. */
  readonly errors: number;
  /** Conditional writes whose condition did not hold (lost races). */
  readonly casRejections: number;
  /** Conditional writes that timed out with an unknown outcome. */
  readonly casUnknown: number;
  /** IDs this process claimed (or may have) and will never hand out; by cause in `waste`. */
  readonly wasted: number;
  /** {@link SequenceStats.wasted} by cause; they add up to it. */
  readonly waste: WasteByCause;
  /** Conditional writes sent (SERIAL and LOCAL_SERIAL). */
  readonly lwtWrites: number;
  /** Reads of the grant level at SERIAL. */
  readonly serialReads: number;
  /** Reads of the DC state at LOCAL_SERIAL. */
  readonly localSerialReads: number;
  /** Times this handle moved to another shard of its DC before its first block. */
  readonly shardMoves: number;
  /** The most recent failure, if any. */
  readonly lastError: Error | undefined;
}

/**
 * IDs this process will never hand out, by cause. A crash's lost blocks are not counted
 * (docs/design.md, "Failures and what they cost").
 */
export interface WasteByCause {
  /** Claims of unknown outcome overwritten before a re-read: maybe applied. */
  readonly unknownOutcome: number;
  /** Remainders of blocks skipped by `take()` for a run that did not fit. */
  readonly takeSkipped: number;
  /** Unused IDs close() could not give back. */
  readonly notReturned: number;
  /** IDs held when the rows went back or the sequence was found recreated. */
  readonly dropped: number;
  /** Blocks refused for not lying above the process's earlier IDs (broken rows). */
  readonly refused: number;
  /** IDs drawn for an HTTP request that failed or whose response was not written. */
  readonly undelivered: number;
}
