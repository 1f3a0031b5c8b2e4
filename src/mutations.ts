/**
 * Deliberately broken variants of the protocol, for negative controls only: the simulation and
 * the torture campaign switch one on to show that their checks catch what each breaks. The
 * package does not export this module (its `exports` map hides it), and nothing in the library
 * switches one on: only test code calls {@link setMutationsForTests}.
 */

export type Mutation =
  /** Every outcome not shown to be ours is taken as "not written" (give-backs are repeated). */
  | 'unknown-as-not-written'
  /** A block claim whose outcome stayed unknown is used as if it had been applied. */
  | 'unknown-as-ours'
  /** close() keeps serving from the blocks it is giving back, as before the fix. */
  | 'serve-while-closing'
  /** DC-state writes alternate between LOCAL_SERIAL and SERIAL (the mixing the layout forbids). */
  | 'dc-state-at-serial-too'
  /**
   * The grant level is read at QUORUM instead of SERIAL. Not a defect of this protocol, as it
   * turned out (docs/design.md, "Granting a DC range"): every grant is decided by the SERIAL
   * batch's own condition and only committed grants are installed, so a stale read costs a lost
   * race, never a duplicate. Kept as the control that must pass.
   */
  | 'grants-read-at-quorum'
  /**
   * The grant level at LOCAL_SERIAL (reads, and the batch committed at LOCAL_QUORUM): each DC
   * runs its own Paxos over GLOBAL, as if a DC cut off from the others could still be granted.
   */
  | 'grants-at-local-serial'
  /**
   * A handle may move to another shard of its DC after it handed out IDs too, not only before
   * its first block: the other shard's blocks can lie below the IDs it gave.
   */
  | 'move-after-first-block'
  /**
   * A retire (retire.ts) keeps the old state's last_integer inside the latest grant instead of
   * spending the grant: IDs claimed by the writes that went back are claimed, and handed out,
   * again by the DC's next processes.
   */
  | 'retire-keeps-last-integer'
  /**
   * A give-back goes on any state whose last_integer is the end of the run, not only on the one
   * this process's own latest write left: on a retire's state, whose last_integer is its grant's
   * end, it reopens IDs handed out before the rows went back; after a give-back repeated
   * ('unknown-as-not-written'), on the state the first one left.
   */
  | 'give-back-on-any-state'
  /**
   * A nextIds() call that fails once it took IDs resolves with the IDs it took, fewer than asked,
   * instead of rejecting: its caller (an HTTP request for `count` IDs) gets a short answer.
   */
  | 'partial-next-ids'
  /**
   * A claim that holds several writes of unknown fate takes the first of them as committed once
   * any one is seen committed (dc-claims.ts, takeCommitted): the block of a write never
   * committed, which another process may have claimed since.
   */
  | 'committed-any'
  /**
   * Rollback detection (watermarks.ts, stateWentBack) compares versions only: a state at the
   * version this process saw, written by another op (the write it saw was lost and replaced), or
   * one that lost grants or blocks this process saw, passes as current.
   */
  | 'rollback-by-version-only'
  /**
   * The block buffer takes a block that does not lie above every block before it (block-buffer.ts,
   * accept): a block of rows that went back, or of another chain of grants, is served.
   */
  | 'no-accept-guard';

export const MUTATIONS: readonly Mutation[] = [
  'unknown-as-not-written',
  'unknown-as-ours',
  'serve-while-closing',
  'dc-state-at-serial-too',
  'grants-read-at-quorum',
  'grants-at-local-serial',
  'move-after-first-block',
  'retire-keeps-last-integer',
  'give-back-on-any-state',
  'partial-next-ids',
  'committed-any',
  'rollback-by-version-only',
  'no-accept-guard',
];

/**
 * The mutations kept as controls that must pass: they weaken a step without making a duplicate
 * possible, so a campaign that fails under them points at the checker, not the protocol.
 */
export const MUST_PASS: readonly Mutation[] = ['grants-read-at-quorum'];

let active: ReadonlySet<Mutation> = new Set();

/** Switches the given mutations on (and every other one off). Test code only. */
export function setMutationsForTests(mutations: readonly Mutation[]): void {
  for (const m of mutations) {
    if (!MUTATIONS.includes(m))
      throw new Error(`unknown mutation "${m}"; known: ${MUTATIONS.join(', ')}`);
  }
  active = new Set(mutations);
}

/** Whether mutation `m` is on. */
export function mutated(m: Mutation): boolean {
  return active.size > 0 && active.has(m);
}
