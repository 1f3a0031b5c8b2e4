/**
 * A sequence handle's counters as its user sees them: the process level's (ledger.ts) and the
 * DC level's (dc-allocator.ts) merged into one snapshot by {@link Ledger.stats}.
 */

/** A snapshot of one handle's counters, since it was created. */
export interface SequenceStats {
  /**
   * IDs handed out by `next()`, `tryNext()` and `take()`, and by the HTTP service's requests
   * whose response was written (not those that failed or whose caller hung up first: see
   * {@link WasteByCause.undelivered}; until the service knows, neither). Never goes down.
   */
  readonly issued: number;
  /** IDs this process holds and has not handed out: current block plus preloaded block. */
  readonly remaining: number;
  /** Blocks claimed from the DC (confirmed claims only). */
  readonly blocksClaimed: number;
  /**
   * IDs in the last block claimed: with adaptive blocks, what this process's rate asked for
   * (sizing.ts); 0 before the first.
   */
  readonly blockSize: number;
  /** This process's draw rate in IDs/s, as measured when it last claimed; undefined before. */
  readonly drawRate: number | undefined;
  /**
   * The rate at which the DC's processes claim IDs, as this process measured it from the DC
   * states it read (it sizes grants with an autonomy target); undefined before.
   */
  readonly dcRate: number | undefined;
  /** DC ranges this process got granted at SERIAL (see DcCounters.rangesGranted). */
  readonly rangesGranted: number;
  /**
   * `next()`/`take()` calls that found no local ID and had to wait for a refill, and the
   * service's ID requests that found fewer than they need (each wait counts).
   */
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
   * timeouts, block remainders skipped by `take()`, unused IDs not returned on close, IDs dropped
   * or refused, and IDs drawn for service requests that failed.
   */
  readonly wasted: number;
  /** {@link SequenceStats.wasted} by cause; they add up to it. */
  readonly waste: WasteByCause;
  /** Conditional writes sent (SERIAL and LOCAL_SERIAL). */
  readonly lwtWrites: number;
  /** Reads of the grant level at SERIAL. */
  readonly serialReads: number;
  /** Reads of the DC state at LOCAL_SERIAL. */
  readonly localSerialReads: number;
  /**
   * Times this handle went on from another shard of its DC before its first block (a crowded
   * shard, or one with no IDs while SERIAL could not grant it a range); see `Sequence.grantee`.
   */
  readonly shardMoves: number;
  /** The most recent failure, if any. */
  readonly lastError: Error | undefined;
}

/**
 * IDs this process will never hand out, by why. A crash of the process itself leaves its held
 * blocks (at most two) unused too; a process cannot count its own crash, so those gaps show only
 * as IDs claimed and never used (docs/design.md, "Failures and what they cost").
 */
export interface WasteByCause {
  /** Claims whose outcome stayed unknown and that were overwritten before a re-read: maybe applied. */
  readonly unknownOutcome: number;
  /** Remainders of blocks skipped by `take()` for a run that did not fit. */
  readonly takeSkipped: number;
  /** Unused IDs close() could not give back (someone claimed after them, or the give-back failed). */
  readonly notReturned: number;
  /**
   * IDs held when the rows went back (IDGEN_STATE_ROLLED_BACK), or the sequence was found created
   * again (IDGEN_SEQUENCE_RECREATED): never served again.
   */
  readonly dropped: number;
  /** Blocks refused because they did not lie above the process's earlier IDs (broken rows). */
  readonly refused: number;
  /**
   * IDs drawn for an HTTP service request that then failed (its caller hung up, its timeout
   * passed, the domain ran out before it had all its IDs), or whose response could not be
   * written (its connection closed first): its caller got none of them.
   */
  readonly undelivered: number;
}
