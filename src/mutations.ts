/**
 * Deliberately broken variants of the protocol, for negative controls only: the simulation and
 * torture switch one on to show their checks catch it. Not exported by the package; only test
 * code calls {@link setMutationsForTests}.
 */

export const MUTATIONS = [
  /** Every outcome not shown ours is taken as "not written" (give-backs are repeated). */
  'unknown-as-not-written',
  /** A block claim of unknown outcome is used as if applied. */
  'unknown-as-ours',
  /** close() keeps serving from the blocks it is giving back. */
  'serve-while-closing',
  /** DC-state writes alternate between LOCAL_SERIAL and SERIAL (the mixing the layout forbids). */
  'dc-state-at-serial-too',
  /**
   * The grant level is read at QUORUM instead of SERIAL: harmless, since the SERIAL batch's own
   * condition decides each grant (docs/design.md, "Granting a DC range"). The control that must
   * pass.
   */
  'grants-read-at-quorum',
  /** The grant level at LOCAL_SERIAL/LOCAL_QUORUM: each DC runs its own Paxos over GLOBAL. */
  'grants-at-local-serial',
  /** A handle may move shard after handing out IDs, whose new blocks can lie below them. */
  'move-after-first-block',
  /** A retire keeps the old last_integer: IDs claimed by the writes that went back come again. */
  'retire-keeps-last-integer',
  /**
   * A give-back goes on any state ending at the run, not only the one this process's own latest
   * write left: on a retire's state it reopens IDs handed out before the rows went back.
   */
  'give-back-on-any-state',
  /** A nextIds() call that fails after taking IDs resolves with fewer than asked. */
  'partial-next-ids',
  /**
   * With several unknown-fate writes, a claim takes the first as committed once any is seen
   * committed: maybe the block of a write never committed, since claimed by another.
   */
  'committed-any',
  /**
   * Rollback detection compares versions only: a state at the version seen but by another op,
   * or one that lost grants or blocks seen, passes as current.
   */
  'rollback-by-version-only',
  /** The block buffer accepts a block not above every earlier one (rows that went back). */
  'no-accept-guard',
] as const;

export type Mutation = (typeof MUTATIONS)[number];

/** Controls that must pass: no duplicate is possible, so a failure points at the checker. */
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

export function mutated(m: Mutation): boolean {
  return active.size > 0 && active.has(m);
}
