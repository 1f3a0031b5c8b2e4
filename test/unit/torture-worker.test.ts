/**
 * The torture worker's history (scripts/torture/worker.ts) against a stand-in library
 * (test/unit/torture-worker/): what a SIGKILL leaves recorded.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { expect, it } from 'vitest';

import { killMidRefill } from './torture-worker/kill-mid-refill.js';

it('has written the IDs it handed out when killed while a call waits for a refill', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-worker-'));
  const historyFile = path.join(dir, 'history.f64');
  const spec = {
    ...{ dc: 'dc1', contactPoints: [], keyspace: 'k', sequence: 's' },
    ...{ mode: 'tight', rate: 1, maxTake: 1, historyFile },
  };
  try {
    await killMidRefill('scripts/torture/worker.ts', [JSON.stringify(spec)], '"first-id"');
    const bytes = fs.readFileSync(historyFile);
    const recorded = new Float64Array(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    );
    expect(recorded.length).toBe(300);
    expect(recorded.at(-1)).toBe(300);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
