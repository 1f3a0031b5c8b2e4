/**
 * Integration test files whose outcome does not depend on the Paxos variant: they test what the
 * nodes are configured with, what a page shows or what the package holds, and draw IDs only to
 * have something to show. CI runs every integration file on Paxos v2 and, with
 * IDGEN_PAXOS_DEPENDENT_ONLY=1, all but these again on v1 (vitest.config.ts leaves them out and
 * ci-reporter.ts does not count them missing).
 */
export const PAXOS_INDEPENDENT: readonly string[] = [
  'test/integration/durability-watch.test.ts',
  'test/integration/package.test.ts',
  'test/integration/status-page.test.ts',
];

/** Whether this run leaves out the files of {@link PAXOS_INDEPENDENT}. */
export function paxosDependentOnly(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['IDGEN_PAXOS_DEPENDENT_ONLY'] === '1';
}
