/** The ./testing entry: what a user's unit test does with it. */
import { describe, expect, it } from 'vitest';

import { IdGen } from '../../src/index.js';
import { MemoryStore } from '../../src/testing.js';

describe('idgen-cass/testing', () => {
  it('runs an allocator on the in-memory store, faults included', async () => {
    const store = new MemoryStore();
    const ids = new IdGen({ store, dc: 'dc1', keyspace: 'test' });
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    const again = await ids.createSequence('orders', { blockSize: 5, ifNotExists: true });
    expect(again.blockSize).toBe(100);
    store.faults.push({ op: 'writeDcState', effect: 'unknown-applied' });
    const orders = ids.sequence('orders');
    expect(await orders.next()).toBe(1);
    expect(ids.stats()).toMatchObject({
      dc: 'dc1',
      sequences: [{ name: 'orders', bigint: false }],
      totals: { remaining: 99, blocksClaimed: 1 },
    });
    await ids.close();
  });
});
