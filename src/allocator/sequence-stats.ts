/** A snapshot of one handle's counters, since it was created. */
export interface SequenceStats {
  /** IDs handed out, including HTTP responses written. Never goes down. */
  readonly issued: number;
  /** IDs held and not handed out. */
  readonly remaining: number;
  readonly blocksClaimed: number;
  /** IDs in the last block claimed; 0 before the first. */
  readonly blockSize: number;
  /** This process's draw rate in IDs/s at its last claim. */
  readonly drawRate: number | undefined;
  /** The DC's claim rate in IDs/s, from the DC states read. */
  readonly dcRate: number | undefined;
  /** DC ranges this process got granted at SERIAL. */
  readonly rangesGranted: number;
  /** Calls that waited for a refill. */
  readonly waits: number;
  /** Failed block claims, DC range requests and block returns. */
  readonly errors: number;
  /** Conditional writes whose condition did not hold (lost races). */
  readonly casRejections: number;
  /** Conditional writes that timed out with an unknown outcome. */
  readonly casUnknown: number;
  /** IDs claimed (or maybe claimed) that will never be handed out. */
  readonly wasted: number;
  readonly waste: WasteByCause;
  readonly lwtWrites: number;
  /** Reads of the grant level at SERIAL. */
  readonly serialReads: number;
  /** Reads of the DC state at LOCAL_SERIAL. */
  readonly localSerialReads: number;
  /** Moves to another shard of its DC before the first block. */
  readonly shardMoves: number;
  readonly lastError: Error | undefined;
}

/** `wasted` by cause; a crash's lost blocks are not counted. */
export interface WasteByCause {
  /** Claims of unknown outcome, maybe applied. */
  readonly unknownOutcome: number;
  /** Block remainders `take()` skipped. */
  readonly takeSkipped: number;
  /** Unused IDs close() could not give back. */
  readonly notReturned: number;
  /** IDs held when the rows went back or the sequence was found recreated. */
  readonly dropped: number;
  /** Blocks refused for not lying above earlier IDs. */
  readonly refused: number;
  /** IDs for HTTP responses not written. */
  readonly undelivered: number;
}
