/**
 * Runs a worker script against the stand-in library (fake-index.mjs: 300 IDs at once, then a
 * call that waits for good), waits for `marker` on its stdout and half a second more, and kills
 * it with SIGKILL: what a fault test's kill mid-refill leaves behind.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { expect } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const REGISTER = fileURLToPath(new URL('./register.mjs', import.meta.url));

export async function killMidRefill(script: string, args: readonly string[], marker: string) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', REGISTER, script, ...args],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!stdout.includes(marker) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(stdout).toContain(marker);
    // The 300 IDs came at once; the call after them waits. A kill now must not lose them.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  } finally {
    child.kill('SIGKILL');
  }
}
