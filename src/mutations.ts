/**
 * Deliberately broken variants of the protocol, for negative controls only: the simulation and
 * torture switch one on to show their checks catch it. Only test code calls
 * {@link setMutationsForTests}.
 */

export const MUTATIONS = [
  'unknown-as-not-written', // every outcome not shown ours is "not written"
  'unknown-as-ours', // a claim of unknown outcome is used as if applied
  'serve-while-closing', // close() serves from the blocks it gives back
  'dc-state-at-serial-too', // DC-state writes alternate LOCAL_SERIAL and SERIAL
  'grants-read-at-quorum', // harmless: the batch's condition decides (must pass)
  'grants-at-local-serial', // each DC runs its own Paxos over GLOBAL
  'move-after-first-block', // a handle moves shard after handing out IDs
  'retire-keeps-last-integer', // a retire keeps the old last_integer
  'give-back-on-any-state', // a give-back goes on any state ending at the run
  'partial-next-ids', // nextIds() failing after taking IDs resolves with fewer
  'committed-any', // of several unknown writes, the first is taken once any is seen
  'rollback-by-version-only', // rollback detection compares versions only
  'no-accept-guard', // the buffer accepts a block not above every earlier one
] as const;

export type Mutation = (typeof MUTATIONS)[number];

/** Controls that must pass: a failure points at the checker. */
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
