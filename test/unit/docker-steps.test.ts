import fs from 'node:fs';
import os from 'node:os';

import { expect, it } from 'vitest';

const logFolders = () =>
  fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('idgen-docker-check-'));

it('makes the docker-check log folder at its first use, not on import', async () => {
  const before = new Set(logFolders());
  const steps = await import('../../scripts/docker/steps.js');
  expect(logFolders().filter((name) => !before.has(name))).toEqual([]);
  const dir = steps.logDir();
  try {
    expect(fs.statSync(dir).isDirectory()).toBe(true);
    expect(steps.logDir()).toBe(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
