/**
 * `npm run cluster`'s own output: a reader that has gone (`cluster -- status | head`) ends the
 * output, not the command. Run as a child process over an empty cache directory, so that no
 * cluster is read or touched.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

describe('npm run cluster', () => {
  it('exits 0 when its stdout is closed before it writes, without an EPIPE crash', async () => {
    const cache = mkdtempSync(path.join(tmpdir(), 'idgen-cluster-cli-'));
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/cluster.ts', 'status'], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, IDGEN_CACHE_DIR: cache },
      });
      // The reading end is gone before the child starts: its first line fails with EPIPE.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(stderr).not.toContain('EPIPE');
      expect(code).toBe(0);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 30_000);
});
