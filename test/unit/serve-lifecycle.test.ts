/**
 * The whole life of `idgen-cass serve` in this process, with connect() handing it an allocator
 * over the in-memory store: it listens, serves over HTTP, and on SIGTERM lets the request in
 * flight finish, gives the unused IDs back and ends with exit code 0; a SIGTERM while it starts
 * ends the start.
 */

import { createServer as createTcpServer } from 'node:net';

import { describe, expect, it, vi } from 'vitest';

import type { IdGen } from '../../src/allocator/id-gen.js';
import { ClosedError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import { processIn } from './fixtures.js';
import { cli } from './run-cli.js';

/** What connect() hands the CLI (a promise: a connection still under way); how often it was asked. */
const allocator = vi.hoisted(() => ({
  current: undefined as IdGen | Promise<IdGen> | undefined,
  connects: 0,
}));

vi.mock('../../src/connect.js', () => ({
  connect: () => {
    allocator.connects++;
    return Promise.resolve(allocator.current);
  },
}));

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('condition not met within 5 s');
}

describe('idgen-cass serve, start to SIGTERM', () => {
  it('serves until SIGTERM, finishes the request in flight, gives the IDs back, exits 0', async () => {
    const store = new MemoryStore({ keyspace: 'idgen' });
    const ids = processIn(store);
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    allocator.current = ids;
    const signalListeners = process.listenerCount('SIGTERM');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const run = cli(
      ...['--contact-points', '127.0.0.99', '--dc', 'dc1', '--log-level', 'silent'],
      ...['serve', '--host', '127.0.0.1', '--port', String(port), '--sequence', 'orders'],
    );
    await until(() =>
      fetch(`${url}/healthz`).then(
        (response) => response.ok,
        () => false,
      ),
    );
    const first = await fetch(`${url}/v1/sequences/orders/ids?count=2`, { method: 'POST' });
    expect(await first.json()).toEqual({ sequence: 'orders', ids: [1, 2] });
    const metrics = await fetch(`${url}/metrics`);
    expect(await metrics.text()).toMatch(/^process_cpu_user_seconds_total /m);

    // The next request needs a second block, whose claim waits until released.
    let release = () => {};
    store.faults.push({
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
    });
    const writes = store.calls.writeDcState;
    const inFlight = fetch(`${url}/v1/sequences/orders/ids?count=150`, { method: 'POST' });
    await until(() => store.calls.writeDcState > writes);
    process.emit('SIGTERM', 'SIGTERM');
    // No new connection is accepted, while the request in flight still waits.
    await until(() =>
      fetch(`${url}/healthz`).then(
        () => false,
        () => true,
      ),
    );
    release();
    const response = await inFlight;
    expect(response.status).toBe(200);
    const body = (await response.json()) as { ids: number[] };
    expect(body.ids).toEqual(Array.from({ length: 150 }, (_, i) => i + 3));

    expect(await run).toEqual({ code: 0, stdout: '', stderr: '' });
    // Closed, its final counters kept: 152 IDs served, nothing held, nothing left ungiven back.
    expect(() => ids.sequence('orders')).toThrow(ClosedError);
    expect(ids.stats().totals).toMatchObject({ issued: 152, remaining: 0, wasted: 0 });
    // Blocks [1, 100] and [101, 200] were claimed; 152 IDs were served, 48 went back.
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(152n);
    expect(process.listenerCount('SIGTERM')).toBe(signalListeners);
  });

  it('stops a start under way on SIGTERM: no listening, the allocator closed, exit 0', async () => {
    const store = new MemoryStore({ keyspace: 'idgen' });
    const ids = processIn(store);
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    let connected: (ids: IdGen) => void = () => {};
    allocator.current = new Promise<IdGen>((resolve) => (connected = resolve));
    const connects = allocator.connects;
    const signalListeners = process.listenerCount('SIGTERM');
    const port = await freePort();
    const run = cli(
      ...['--contact-points', '127.0.0.99', '--dc', 'dc1', '--log-level', 'silent'],
      ...['serve', '--host', '127.0.0.1', '--port', String(port), '--sequence', 'orders'],
    );
    // As PID 1 in a container, a SIGTERM nobody listens to is ignored: the start must hear it.
    await until(() => allocator.connects > connects);
    process.emit('SIGTERM', 'SIGTERM');
    connected(ids);
    const outcome = await Promise.race([
      run,
      new Promise((resolve) => setTimeout(() => resolve('still running after 3 s'), 3_000)),
    ]);
    if (outcome === 'still running after 3 s') {
      process.emit('SIGTERM', 'SIGTERM'); // a service that started anyway: stopped for good
      await run;
    }
    expect(outcome).toEqual({ code: 0, stdout: '', stderr: '' });
    // Not a step further than the connection under way: no read, no port; and closed.
    expect(store.calls.listSequences).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    expect(store.calls.close).toBe(1);
    expect(process.listenerCount('SIGTERM')).toBe(signalListeners);
  });
});
