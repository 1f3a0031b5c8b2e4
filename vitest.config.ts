import { configDefaults, defineConfig } from 'vitest/config';

import { PAXOS_INDEPENDENT, paxosDependentOnly } from './test/support/paxos-independent.js';

export default defineConfig({
  test: {
    // In CI (.ci/run sets IDGEN_REQUIRE_ALL_TESTS=1, and CI, which turns vitest's allowOnly
    // off), a run also fails on a skipped or todo test and on a test file on disk its project did
    // not load. Not on CI alone: a user's CI that runs one project (npm run test:unit) would fail.
    reporters:
      process.env['IDGEN_REQUIRE_ALL_TESTS'] === '1'
        ? ['default', './test/support/ci-reporter.ts']
        : ['default'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // The first test of a file pays for its imports (fastify, the driver): on 2 cores shared
          // with nine Cassandra nodes that took over 5 s, vitest's default, once.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...(paxosDependentOnly() ? PAXOS_INDEPENDENT : [])],
          globalSetup: ['test/support/global-setup.ts'],
          // One real cluster on a 2-core machine: files run one after another.
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
