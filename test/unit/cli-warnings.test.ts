/**
 * Warnings of the CLI under --json: every stderr line is JSON, the warnings and the one error
 * line alike. Over the in-memory store, whose nodes report the settings a test gives them.
 */
import { describe, expect, it, vi } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import { MemoryStore } from '../../src/store/memory.js';
import { cli, ordersStore } from './run-cli.js';

const current = vi.hoisted(() => ({ store: undefined as MemoryStore | undefined }));

vi.mock('../../src/admin/open.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/admin/open.js')>();
  return {
    ...actual,
    openAdmin: (options: { localDataCenter: string; keyspace: string }) =>
      Promise.resolve(
        new Admin({
          store: current.store!,
          dc: options.localDataCenter,
          keyspace: options.keyspace,
        }),
      ),
  };
});

const CONNECT = ['--contact-points', '127.0.0.99', '--dc', 'dc1', '--keyspace', 'k'];

async function storeWithPeriodicNode(): Promise<MemoryStore> {
  current.store = await ordersStore([
    { host: '10.0.0.1:9042', dc: 'dc1', commitlogSync: 'periodic' },
  ]);
  return current.store;
}

describe('warnings', () => {
  it('are JSON lines under --json, before the JSON error line', async () => {
    const store = await storeWithPeriodicNode();
    store.faults.push({ op: 'probeSerial', effect: 'unavailable', times: Infinity });
    const run = await cli(...CONNECT, '--json', 'status', 'orders', '--sample', '0');
    expect(run.code).toBe(13);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, string>);
    expect(parsed[0]?.['warning']).toMatch(/^commitlog_sync periodic on 10\.0\.0\.1:9042 \(dc1\)/);
    expect(parsed.at(-1)?.['code']).toBe('IDGEN_STATUS_SERIAL_UNREACHABLE');
  });

  it('stay text lines without --json', async () => {
    await storeWithPeriodicNode();
    const run = await cli(...CONNECT, 'status', 'orders', '--sample', '0');
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^idgen-cass: warning: commitlog_sync periodic on 10\.0\.0\.1:9042/);
  });
});
