/**
 * The hostile-input battery (test/support/serve-battery.ts) against the service over the
 * in-memory store, made slow so that requests wait for blocks and pile up past a small
 * maxPendingRequests.
 */

import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { IdGen } from '../../src/allocator/id-gen.js';
import { createServer } from '../../src/serve/server.js';
import { MemoryStore } from '../../src/store/memory.js';
import { runBattery, type BatteryTarget } from '../support/serve-battery.js';
import { processIn } from './fixtures.js';

const TOKENS = ['first-token', 'second.token~2=='];

let ids: IdGen;
let app: ReturnType<typeof createServer>;
let target: BatteryTarget;

beforeAll(async () => {
  // Each store call waits 2 ms: a refill takes a few, and requests meanwhile wait for it.
  const store = new MemoryStore({ keyspace: 'unit', latencyMs: 2 });
  ids = processIn(store);
  await ids.createSequence('orders', { dcRangeSize: 200, blockSize: 10, maxBlockSize: 50 });
  await ids.createSequence('wide', { domain: 'int63', start: 2n ** 60n, blockSize: 30 });
  app = createServer(ids, { tokens: TOKENS, maxPendingRequests: 4, timeoutMs: 2_000 });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  target = { host: '127.0.0.1', port, ids, sequences: ['orders', 'wide'], tokens: TOKENS };
});

afterAll(async () => {
  await app?.close();
  await ids?.close();
});

describe('the service under hostile input', () => {
  it('never crashes nor answers 5xx but 503 with Retry-After; every ID once, counted only once received', async () => {
    const t0 = Date.now();
    const statuses = await runBattery(target, 40);
    console.log('STAT', Date.now() - t0, JSON.stringify([...statuses]));
    // The battery reached the handlers and their refusals, not only the router.
    for (const status of [200, 400, 401, 404])
      expect(statuses.get(status), String(status)).toBeGreaterThan(0);
  });
});
