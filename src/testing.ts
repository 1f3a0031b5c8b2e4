/**
 * idgen-cass/testing: an in-memory store for your own unit tests, with the Cassandra adapter's
 * semantics and the faults a real cluster produces: `new IdGen({ store: new MemoryStore(), … })`.
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
