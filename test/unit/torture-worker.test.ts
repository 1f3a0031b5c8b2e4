/**
 * The torture worker's history (scripts/torture/worker.ts) against a stand-in library
 * (test/unit/torture-worker/): what a SIGKILL leaves recorded.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REGISTER = fileURLToPath(new URL('./torture-worker/register.mjs', import.meta.url));

it('has written the IDs it handed out when killed while a call waits for a refill', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-worker-'));
  const historyFile = path.join(dir, 'history.f64');
  const spec = {
    ...{ dc: 'dc1', contactPoints: [], keyspace: 'k', sequence: 's' },
    ...{ mode: 'tight', rate: 1, maxTake: 1, historyFile },
  };
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', REGISTER, 'scripts/torture/worker.ts', JSON.stringify(spec)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!stdout.includes('"first-id"') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(stdout).toContain('"first-id"');
    // The 300 IDs came at once; the call after them waits. A kill now must not lose them.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const bytes = fs.readFileSync(historyFile);
    const recorded = new Float64Array(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    );
    expect(recorded.length).toBe(300);
    expect(recorded.at(-1)).toBe(300);
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
