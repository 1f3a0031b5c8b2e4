/**
 * The integration tests' draw worker (scripts/draw-worker.ts) against the stand-in library of
 * test/unit/torture-worker/: what a SIGKILL leaves in its file of IDs, which the tests check
 * for duplicates.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { expect, it } from 'vitest';

import { killMidRefill } from './torture-worker/kill-mid-refill.js';

it('has written the IDs it handed out when killed while a call waits for a refill', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-draw-worker-'));
  const out = path.join(dir, 'dc1.ids');
  try {
    const args = ['--dc', 'dc1', '--contact-points', '127.0.0.1', '--keyspace', 'k'];
    await killMidRefill(
      'scripts/draw-worker.ts',
      [...args, '--sequence', 's', '--out', out],
      '"ready"',
    );
    // They are the ones a test that kills workers mid-refill must check.
    const ids = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map(Number);
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
