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

it('gives a command /dev/null as stdin: no pipe that a quick exit could break', async () => {
  const steps = await import('../../scripts/docker/steps.js');
  // The folder is made once per process; the test above removed it.
  const dir = steps.logDir();
  fs.mkdirSync(dir, { recursive: true });
  try {
    // /dev/null is a character device; the socket spawn would otherwise give is not.
    const probe = 'if [ -c /dev/stdin ]; then echo null; else echo other; fi';
    expect((await steps.run('sh', ['-c', probe])).trim()).toBe('null');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
