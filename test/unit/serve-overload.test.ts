/**
 * The service under more than it can serve, over the in-memory store: beyond maxPendingRequests
 * an ID request is shed at once (503 IDGEN_OVERLOADED, Retry-After) instead of queueing, and a
 * client that sends its request slowly, or nothing, is disconnected after receiveTimeoutMs.
 */

import { connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

import type { ServeOptions } from '../../src/serve/options.js';
import { createServer } from '../../src/serve/server.js';
import type { MemoryStore } from '../../src/store/memory.js';
import { withSequence } from './fixtures.js';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function service(
  options: ServeOptions,
): Promise<{ app: FastifyInstance; store: MemoryStore }> {
  const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 100 });
  cleanups.push(() => ids.close());
  const app = createServer(ids, options);
  cleanups.push(() => app.close());
  return { app, store };
}

/** Holds the next block claim until the returned function is called. */
function holdNextClaim(store: MemoryStore): () => void {
  let release = () => {};
  const until = new Promise<void>((resolve) => (release = resolve));
  store.faults.push({ op: 'writeDcState', effect: 'delay', until });
  return release;
}

describe('more ID requests than maxPendingRequests', () => {
  it('sheds the extra ones at once with 503 IDGEN_OVERLOADED and Retry-After, serving the rest', async () => {
    const { app, store } = await service({ maxPendingRequests: 1 });
    const release = holdNextClaim(store);
    // inject() sends once awaited: async makes each start now.
    const post = async () => app.inject({ method: 'POST', url: '/v1/sequences/orders/ids' });
    const waiting = post();
    while (store.calls.writeDcState === 0) await new Promise((resolve) => setImmediate(resolve));
    // The store holds the claim the one request under way waits for: the others are answered.
    const shed = await Promise.all(Array.from({ length: 10 }, post));
    for (const response of shed) {
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.json()).toMatchObject({
        code: 'IDGEN_OVERLOADED',
        message: expect.stringContaining('maxPendingRequests') as unknown,
      });
    }
    release();
    expect((await waiting).json()).toEqual({ sequence: 'orders', ids: [1] });
    // The bound counts requests under way, not requests ever made.
    expect((await post()).json()).toEqual({ sequence: 'orders', ids: [2] });
  });
});

describe('slow and idle clients', () => {
  async function listening(options: ServeOptions): Promise<number> {
    const { app } = await service(options);
    await app.listen({ host: '127.0.0.1', port: 0 });
    return (app.server.address() as AddressInfo).port;
  }

  /** Resolves with what the server sent once it closed the connection, and when. */
  function closed(socket: Socket): Promise<{ received: string; at: number }> {
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    return new Promise((resolve) =>
      socket.on('close', () => resolve({ received, at: Date.now() })),
    );
  }

  it('disconnects a client sending its request byte by byte once receiveTimeoutMs passed', async () => {
    const port = await listening({ receiveTimeoutMs: 500 });
    const socket = tcpConnect(port, '127.0.0.1');
    const started = Date.now();
    const ended = closed(socket);
    const request =
      'POST /v1/sequences/orders/ids HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(200);
    let sent = 0;
    const drip = setInterval(() => {
      if (!socket.destroyed && sent < request.length) socket.write(request[sent++]!);
    }, 20);
    try {
      const { received, at } = await ended;
      // Node looks for late requests every second: within receiveTimeoutMs plus that.
      expect(at - started).toBeGreaterThanOrEqual(450);
      expect(at - started).toBeLessThan(2_500);
      expect(sent).toBeLessThan(request.length);
      expect(received).toMatch(/^HTTP\/1\.1 400 /);
      expect(received).toContain('not received in full within the time allowed');
    } finally {
      clearInterval(drip);
      socket.destroy();
    }
  });

  it('disconnects a client that connects and sends nothing', async () => {
    const port = await listening({ receiveTimeoutMs: 500 });
    const socket = tcpConnect(port, '127.0.0.1');
    const started = Date.now();
    try {
      const { at } = await closed(socket);
      expect(at - started).toBeLessThan(2_500);
    } finally {
      socket.destroy();
    }
  });
});
