/** The CLI run in-process, its output captured: what the CLI unit tests observe. */
import { Writable } from 'node:stream';

import { IdGen } from '../../src/allocator/id-gen.js';
import { runCli } from '../../src/cli/program.js';
import { MemoryStore, type MemoryStoreOptions } from '../../src/store/memory.js';

/** A stream that hands every chunk written to it to `append` as text. */
export function capture(append: (text: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      append(chunk.toString());
      done();
    },
  });
}

/** Runs `idgen-cass ...args` in this process; resolves with its exit code and output. */
export async function cli(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['node', 'idgen-cass', ...args], {
    stdout: capture((t) => (stdout += t)),
    stderr: capture((t) => (stderr += t)),
  });
  return { code, stdout, stderr };
}

/**
 * An in-memory store holding sequence "orders" of keyspace `k` (blocks of 100, DC ranges of
 * 1,000), for a test's CLI to run over; `nodeSettings`: what its nodes report to preflight.
 */
export async function ordersStore(
  nodeSettings?: MemoryStoreOptions['nodeSettings'],
): Promise<MemoryStore> {
  const store = new MemoryStore({ keyspace: 'k', ...(nodeSettings ? { nodeSettings } : {}) });
  const ids = new IdGen({ store, dc: 'dc1', keyspace: 'k' });
  await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
  await ids.close();
  return store;
}
