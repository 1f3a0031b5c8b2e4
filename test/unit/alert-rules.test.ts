/**
 * The alert rules' own tests (ops/prometheus/idgen-alerts.test.yml) under `promtool test rules`,
 * from Debian's prometheus package. Skipped where promtool is missing; CI installs it and fails a
 * run with a skipped test.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const dir = fileURLToPath(new URL('../../ops/prometheus/', import.meta.url));
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;

describe('ops/prometheus/idgen-alerts.yml', () => {
  it.skipIf(!hasPromtool)('passes its promtool rule tests', () => {
    const run = spawnSync('promtool', ['test', 'rules', 'idgen-alerts.test.yml'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(`${run.stdout}${run.stderr}`).toMatch(/SUCCESS/);
    expect(run.status).toBe(0);
  });
});
