/**
 * The integration tests' draw worker (scripts/draw-worker.ts) against the stand-in library of
 * test/unit/torture-worker/: what a SIGKILL leaves in its file of IDs, which the tests check
 * for duplicates.
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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-draw-worker-'));
  const out = path.join(dir, 'dc1.ids');
  const child = spawn(
    process.execPath,
    [
      ...['--import', 'tsx', '--import', REGISTER, 'scripts/draw-worker.ts'],
      ...['--dc', 'dc1', '--contact-points', '127.0.0.1', '--keyspace', 'k'],
      ...['--sequence', 's', '--out', out],
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!stdout.includes('"ready"') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(stdout).toContain('"ready"');
    // The 300 IDs came at once; the call after them waits. A kill now must not lose them: they
    // are the ones a test that kills workers mid-refill must check.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const ids = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map(Number);
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
