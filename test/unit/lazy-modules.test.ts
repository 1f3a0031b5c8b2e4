/**
 * Importing the package loads neither fastify nor prom-client (src/lazy-modules.ts): the HTTP
 * service and metrics are opt-in, and an application that only draws IDs should not pay for them.
 * Each case runs in a fresh Node process, since this one has loaded everything already.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

/** The packages (of fastify, prom-client, cassandra-driver) loaded after running `body`. */
async function packagesLoadedAfter(body: string): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module';
    const lib = await import(${JSON.stringify(path.join(ROOT, 'src', 'index.ts'))});
    ${body}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    const names = ['fastify', 'prom-client', 'cassandra-driver'].filter((name) =>
      loaded.some((file) => file.includes(\`/node_modules/\${name}/\`)),
    );
    console.log(JSON.stringify(names));
  `;
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: ROOT },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
}

// A fresh Node process compiling the sources took 11 s here while the cluster ran tests.
describe('what importing the package loads', { timeout: 60_000 }, () => {
  it('loads the driver, not fastify or prom-client', async () => {
    expect(await packagesLoadedAfter('')).toEqual(['cassandra-driver']);
  });

  it('loads prom-client once metrics are asked for, and fastify once a server is made', async () => {
    const loaded = await packagesLoadedAfter(`
      const { MemoryStore } = await import(${JSON.stringify(path.join(ROOT, 'src', 'testing.ts'))});
      const { Registry } = await import('prom-client');
      const ids = new lib.IdGen({ store: new MemoryStore(), dc: 'dc1', keyspace: 'test', metrics: { registry: new Registry() } });
      await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
      await ids.sequence('orders').next();
      lib.createServer(ids);
      await ids.close();
    `);
    expect(loaded).toEqual(['fastify', 'prom-client', 'cassandra-driver']);
  });
});
