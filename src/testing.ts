/**
 * idgen-cass/testing: an in-memory store for your own unit tests, with the Cassandra adapter's
 * semantics and the faults a real cluster produces (timeouts with unknown outcomes, writes
 * applied but reported rejected, unreachable levels).
 *
 * @example
 * ```ts
 * import { IdGen } from 'idgen-cass';
 * import { MemoryStore } from 'idgen-cass/testing';
 *
 * const ids = new IdGen({ store: new MemoryStore(), dc: 'dc1', keyspace: 'test' });
 * await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
 * const id = await ids.sequence('orders').next();
 * ```
 */
export { MemoryStore } from './store/memory.js';
export type { GrantRecord, MemoryNode, MemoryStoreOptions } from './store/memory.js';
export type {
  ConditionalEffect,
  ConditionalMethod,
  Fault,
  StoreMethod,
} from './store/memory-faults.js';
export type { IdStore, NodeSettings, TableSettings } from './store/port.js';
