/**
 * The HTTP service (src/serve/) over the in-memory store, called through fastify's inject() and,
 * for shutdown, over a real socket: IDs and ranges, number and string formats, error bodies and
 * statuses, the bearer token, health and readiness, and the OpenAPI document against the routes.
 */

import { readFileSync } from 'node:fs';
import { connect as tcpConnect, type AddressInfo } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';

import { readSnapshot } from '../../src/admin/overview-reads.js';
import { sequenceStatus } from '../../src/admin/status.js';
import { IdGen } from '../../src/connect.js';
import type { IdGenErrorCode } from '../../src/errors.js';
import type { CreateSequenceOptions } from '../../src/settings/model.js';
import { HTTP_ANSWERS, httpErrorOf, ServeRefusal } from '../../src/serve/http-errors.js';
import { openApiDocument } from '../../src/serve/openapi.js';
import { SERVE_DEFAULTS, type ServeOptions } from '../../src/serve/options.js';
import { createServer } from '../../src/serve/server.js';
import { MemoryStore } from '../../src/store/memory.js';
import { capturingLogger, holdSecondClaim, KEYSPACE, range, withSequence } from './fixtures.js';
import {
  AbortedError,
  ClosedError,
  ContentionError,
  DeadlineError,
  InvalidCountError,
  InvariantError,
  SequenceExhaustedError,
  SequenceNotFoundError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
  UnsafeClusterError,
} from '../../src/errors.js';

interface Service {
  readonly store: MemoryStore;
  readonly ids: IdGen;
  readonly app: FastifyInstance;
}

const open: Service[] = [];

afterEach(async () => {
  for (const { app, ids } of open.splice(0)) {
    await app.close();
    await ids.close();
  }
});

/** A service over a store holding sequence "orders" (blocks of 100 from DC ranges of 1,000). */
async function service(
  options: ServeOptions = {},
  orders: CreateSequenceOptions = { dcRangeSize: 1_000, blockSize: 100 },
): Promise<Service> {
  const { store, ids } = await withSequence(orders);
  const app = createServer(ids, options);
  const created = { store, ids, app };
  open.push(created);
  return created;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function post(app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  const response = await app.inject({ method: 'POST', url, headers });
  return { status: response.statusCode, headers: response.headers, body: response.json() };
}

describe('POST /v1/sequences/{name}/ids', () => {
  it('hands out count IDs as JSON numbers, one by default', async () => {
    const { app } = await service();
    const three = await post(app, '/v1/sequences/orders/ids?count=3');
    expect(three).toMatchObject({ status: 200, body: { sequence: 'orders', ids: [1, 2, 3] } });
    expect(three.headers['content-type']).toBe('application/json; charset=utf-8');
    expect((await post(app, '/v1/sequences/orders/ids')).body).toEqual({
      sequence: 'orders',
      ids: [4],
    });
  });

  it('spans blocks: IDs strictly increasing, each handed out once', async () => {
    const { app } = await service();
    const first = await post(app, '/v1/sequences/orders/ids?count=250');
    const second = await post(app, '/v1/sequences/orders/ids?count=250');
    const all = [
      ...(first.body as { ids: number[] }).ids,
      ...(second.body as { ids: number[] }).ids,
    ];
    expect(all).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
  });

  it('writes strings on request: ?format=string or Accept: application/json; ids=string', async () => {
    const { app } = await service();
    expect((await post(app, '/v1/sequences/orders/ids?count=2&format=string')).body).toEqual({
      sequence: 'orders',
      ids: ['1', '2'],
    });
    const accepted = await post(app, '/v1/sequences/orders/ids?count=2', {
      accept: 'text/html, application/json; ids=string; q=0.9',
    });
    expect(accepted.body).toEqual({ sequence: 'orders', ids: ['3', '4'] });
    const plain = await post(app, '/v1/sequences/orders/ids', { accept: 'application/json' });
    expect(plain.body).toEqual({ sequence: 'orders', ids: [5] });
  });

  it('writes the IDs of a domain beyond 2^53-1 as exact strings, whatever their size', async () => {
    const { app, ids } = await service();
    await ids.createSequence('wide', { domain: 'int63', start: 2n ** 60n, blockSize: 10 });
    await ids.createSequence('low_wide', { domain: 'int63', blockSize: 10 });
    expect((await post(app, '/v1/sequences/wide/ids?count=2')).body).toEqual({
      sequence: 'wide',
      ids: [String(2n ** 60n), String(2n ** 60n + 1n)],
    });
    // Small IDs of a wide domain are strings too: a client sees one type per sequence.
    expect((await post(app, '/v1/sequences/low_wide/ids?count=2')).body).toEqual({
      sequence: 'low_wide',
      ids: ['1', '2'],
    });
    const range = await post(app, '/v1/sequences/wide/ranges?count=5');
    expect(range.body).toEqual({
      sequence: 'wide',
      first: String(2n ** 60n + 2n),
      last: String(2n ** 60n + 6n),
      count: 5,
    });
  });

  it('writes IDs up to 2^53-1 of a safe53 domain as exact numbers', async () => {
    const { app, ids } = await service();
    const max = BigInt(Number.MAX_SAFE_INTEGER);
    await ids.createSequence('top', { domain: 'safe53', start: max - 2n, blockSize: 3 });
    expect((await post(app, '/v1/sequences/top/ids?count=3')).body).toEqual({
      sequence: 'top',
      ids: [Number.MAX_SAFE_INTEGER - 2, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER],
    });
    expect(await post(app, '/v1/sequences/top/ids')).toMatchObject({
      status: 410,
      body: { code: 'IDGEN_SEQUENCE_EXHAUSTED' },
    });
  });

  it('refuses a count out of bounds with 400 IDGEN_INVALID_COUNT, asking nothing of the store', async () => {
    const { app, store } = await service({ maxIdsPerRequest: 50 });
    store.resetCalls();
    // 1e1, 0x10, +5 and ' 5' are numbers to JavaScript, within bounds: refused as not typed in digits.
    for (const count of ['0', '-1', 'abc', '1.5', '51', '', '1e1', '0x10', '+5', '%205']) {
      const response = await post(app, `/v1/sequences/orders/ids?count=${count}`);
      expect(response, `count=${count}`).toEqual({
        status: 400,
        headers: expect.anything() as unknown,
        body: { code: 'IDGEN_INVALID_COUNT', message: 'Invalid count: an integer from 1 to 50.' },
      });
    }
    expect(store.calls.readSequence + store.calls.readDcState).toBe(0);
    expect((await post(app, '/v1/sequences/orders/ids?count=50')).status).toBe(200);
    expect(await post(app, '/v1/sequences/orders/ranges?count=1e1')).toMatchObject({
      status: 400,
      body: { code: 'IDGEN_INVALID_COUNT' },
    });
    expect(await post(app, '/v1/sequences/orders/ranges?count=010')).toMatchObject({
      status: 200,
      body: { count: 10 },
    });
  });

  it("answers a path the router refuses with the documented JSON error, not fastify's", async () => {
    const { app, store } = await service();
    store.resetCalls();
    const long = await post(app, `/v1/sequences/${'a'.repeat(101)}/ids`);
    expect(long).toMatchObject({
      status: 400,
      body: {
        code: 'IDGEN_INVALID_NAME',
        message: expect.stringMatching(
          /^Invalid sequence name \(over 100 characters\): /,
        ) as unknown,
      },
    });
    expect(long.body.message).not.toContain('aaaa');
    expect(await post(app, '/v1/sequences/%E0%A4%A/ids')).toEqual({
      status: 400,
      headers: expect.anything() as unknown,
      body: {
        code: 'IDGEN_BAD_REQUEST',
        message:
          'Invalid URL: its path has a malformed %-escape; encode each reserved character as %XX.',
      },
    });
    expect(store.calls.readSequence + store.calls.readDcState).toBe(0);
  });

  it('refuses a bad name (400), an unknown sequence (404) and one outside the allowlist (404)', async () => {
    const { app, ids } = await service({ sequences: ['orders'] });
    await ids.createSequence('hidden', { dcRangeSize: 100, blockSize: 10 });
    expect(await post(app, '/v1/sequences/9lives/ids')).toMatchObject({
      status: 400,
      body: { code: 'IDGEN_INVALID_NAME', message: expect.stringContaining('"9lives"') as unknown },
    });
    expect(await post(app, '/v1/sequences/hidden/ids')).toMatchObject({
      status: 404,
      body: {
        code: 'IDGEN_SEQUENCE_NOT_SERVED',
        message: 'Sequence "hidden" is not served here; this service serves only: orders.',
      },
    });
    const open = await service();
    expect(await post(open.app, '/v1/sequences/missing/ids')).toMatchObject({
      status: 404,
      body: {
        code: 'IDGEN_SEQUENCE_NOT_FOUND',
        message: `Sequence "missing" not found in keyspace "${KEYSPACE}". Create it with ids.createSequence("missing").`,
      },
    });
    // Unknown names open no handle in the allocator.
    expect(open.ids.stats().sequences).toEqual([]);
    expect(await post(open.app, '/v1/nothing')).toMatchObject({
      status: 404,
      body: {
        code: 'IDGEN_NOT_FOUND',
        message: expect.stringContaining('POST /v1/nothing') as unknown,
      },
    });
  });

  it('answers 503 with Retry-After when the store cannot be reached within the timeout', async () => {
    const { app, store } = await service({ timeoutMs: 300 });
    store.faults.push({ op: 'readDcState', effect: 'unavailable', times: Infinity });
    const response = await post(app, '/v1/sequences/orders/ids');
    expect(response).toMatchObject({
      status: 503,
      headers: { 'retry-after': '1' },
      body: { code: 'IDGEN_STORE_UNAVAILABLE' },
    });
  });

  it('answers 503 IDGEN_SERIAL_UNAVAILABLE with Retry-After when the DC has no IDs and SERIAL is cut off', async () => {
    const { app, store } = await service({ timeoutMs: 1_500 });
    store.faults.push({ op: 'grantRange', effect: 'unavailable', times: Infinity });
    store.faults.push({ op: 'readGrants', effect: 'unavailable', times: Infinity });
    const response = await post(app, '/v1/sequences/orders/ranges?count=10');
    expect(response).toMatchObject({
      status: 503,
      headers: { 'retry-after': '5' },
      body: { code: 'IDGEN_SERIAL_UNAVAILABLE' },
    });
  });

  it('answers 503 IDGEN_DEADLINE_EXCEEDED naming the request timeout when a refill outlasts it', async () => {
    const { app, store } = await service({ timeoutMs: 200 });
    let release = () => {};
    store.faults.push({
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
    });
    const response = await post(app, '/v1/sequences/orders/ids?count=2');
    release();
    expect(response).toMatchObject({
      status: 503,
      headers: { 'retry-after': '1' },
      body: {
        code: 'IDGEN_DEADLINE_EXCEEDED',
        message: expect.stringContaining('no ID within 200 ms') as unknown,
      },
    });
    // The advice is the service's setting: the HTTP caller can change no call's or connect()'s.
    const message = (response.body as { message: string }).message;
    expect(message).toContain(
      'Raise the service\'s request timeout (the "timeoutMs" option of createServer(); docs/service.md, "Options")',
    );
    expect(message).not.toContain('callTimeoutMs');
  });
});

describe('IDs of a request that fails', () => {
  it('are counted as wasted (undelivered), not issued, in stats, metrics and DC usage, and never served', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const registry = new Registry();
    const ids = new IdGen({
      store,
      dc: 'dc1',
      keyspace: KEYSPACE,
      metrics: { registry, runwayIntervalMs: 0 },
    });
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100, maxBlockSize: 100 });
    const app = createServer(ids, { timeoutMs: 300 });
    open.push({ store, ids, app });
    const orders = ids.sequence('orders');
    await orders.ready(); // [1, 100]
    // The next claim ([101, 200]) goes through; the one after waits until released.
    const release = holdSecondClaim(store);
    const failed = await post(app, '/v1/sequences/orders/ids?count=250');
    expect(failed).toMatchObject({ status: 503, body: { code: 'IDGEN_DEADLINE_EXCEEDED' } });
    // The request took [1, 200] and delivered none of them.
    expect(orders.stats()).toMatchObject({
      issued: 0,
      remaining: 0,
      wasted: 200,
      waste: { undelivered: 200 },
    });
    release();
    expect((await post(app, '/v1/sequences/orders/ids?count=3')).body.ids).toEqual([201, 202, 203]);
    const metrics = await registry.metrics();
    expect(metrics).toContain('idgen_ids_issued_total{sequence="orders"} 3\n');
    expect(metrics).toContain(
      'idgen_ids_wasted_total{sequence="orders",cause="undelivered"} 200\n',
    );
    await ids.close();
    const usage = [...((await store.readDcUsage('orders')) ?? new Map()).values()];
    expect(usage.reduce((sum, counts) => sum + counts.issued, 0n)).toBe(3n);
    expect(usage.reduce((sum, counts) => sum + counts.undelivered, 0n)).toBe(200n);
    // What `idgen-cass status` shows: every ID the DC handed this process accounted for.
    const [dc1] = sequenceStatus(await readSnapshot(store, KEYSPACE, 'orders', 'dc1')).dcs;
    expect(dc1?.usage).toMatchObject({
      issued: 3n,
      wasted: { undelivered: 200n },
      wastedTotal: 200n,
      unreported: 0n,
    });
  });
});

describe('a request for more IDs than the process holds', () => {
  it('waits for the next block before it takes any: a spent domain costs none of the IDs held', async () => {
    const { app, ids } = await service({}, { max: 200, dcRangeSize: 100, blockSize: 50 });
    const orders = ids.sequence('orders');
    expect((await post(app, '/v1/sequences/orders/ids?count=190')).body.ids).toEqual(range(1, 190));
    expect(orders.stats()).toMatchObject({ issued: 190, remaining: 10 });
    // Eleven are more than the ten held, and no block can come: 410, and the ten stay held.
    expect(await post(app, '/v1/sequences/orders/ids?count=11')).toMatchObject({
      status: 410,
      body: { code: 'IDGEN_SEQUENCE_EXHAUSTED' },
    });
    expect(orders.stats()).toMatchObject({ issued: 190, remaining: 10, wasted: 0 });
    // So 410 keeps its meaning: it comes only once the service holds none it may serve.
    expect((await post(app, '/v1/sequences/orders/ids?count=10')).body.ids).toEqual(
      range(191, 200),
    );
    expect(await post(app, '/v1/sequences/orders/ids')).toMatchObject({ status: 410 });
    expect(orders.stats()).toMatchObject({ issued: 200, remaining: 0, wasted: 0 });
  });

  it('answers 503 with the IDs held untouched when the next block does not come in time', async () => {
    const { app, ids, store } = await service({ timeoutMs: 200 });
    const orders = ids.sequence('orders');
    await orders.ready(); // [1, 100]
    let release = () => {};
    store.faults.push({
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
    });
    onTestFinished(() => release());
    expect(await post(app, '/v1/sequences/orders/ids?count=150')).toMatchObject({
      status: 503,
      body: { code: 'IDGEN_DEADLINE_EXCEEDED' },
    });
    expect(orders.stats()).toMatchObject({ issued: 0, remaining: 100, wasted: 0 });
    release();
    // The block waited for came meanwhile, above the IDs held: they are served first, in order.
    const served = (await post(app, '/v1/sequences/orders/ids?count=150')).body.ids as number[];
    expect(served).toEqual(range(1, 150));
  });
});

describe('POST /v1/sequences/{name}/ranges', () => {
  it('hands out a contiguous range; a count beyond the block size is the library 400', async () => {
    const { app } = await service();
    expect((await post(app, '/v1/sequences/orders/ids?count=4')).body).toEqual({
      sequence: 'orders',
      ids: [1, 2, 3, 4],
    });
    // 96 IDs are left in the block: the range comes from the next block.
    expect(await post(app, '/v1/sequences/orders/ranges?count=100')).toMatchObject({
      status: 200,
      body: { sequence: 'orders', first: 101, last: 200, count: 100 },
    });
    expect((await post(app, '/v1/sequences/orders/ranges?count=3&format=string')).body).toEqual({
      sequence: 'orders',
      first: '201',
      last: '203',
      count: 3,
    });
    expect(await post(app, '/v1/sequences/orders/ranges?count=101')).toMatchObject({
      status: 400,
      body: {
        code: 'IDGEN_INVALID_COUNT',
        message: expect.stringContaining('from 1 to 100') as unknown,
      },
    });
  });

  it('needs a count, and refuses an unknown format', async () => {
    const { app } = await service();
    expect(await post(app, '/v1/sequences/orders/ranges')).toMatchObject({
      status: 400,
      body: {
        code: 'IDGEN_INVALID_COUNT',
        message:
          "Missing count: add ?count=N, an integer from 1 to the sequence's largest block size (maxBlockSize).",
      },
    });
    expect(await post(app, '/v1/sequences/orders/ranges?count=10000001')).toMatchObject({
      status: 400,
      body: { code: 'IDGEN_INVALID_COUNT' },
    });
    expect(await post(app, '/v1/sequences/orders/ids?format=xml')).toMatchObject({
      status: 400,
      body: { code: 'IDGEN_BAD_REQUEST', message: 'Invalid format "xml": one of auto, string.' },
    });
  });

  it('refuses a query parameter it does not know, rather than serving the default count', async () => {
    const { app } = await service();
    // fastify's default drops unknown parameters: `cuont=100` was served one ID with 200.
    expect(await post(app, '/v1/sequences/orders/ids?cuont=100')).toMatchObject({
      status: 400,
      body: {
        code: 'IDGEN_BAD_REQUEST',
        message: 'Unknown query parameter "cuont": this endpoint takes count and format.',
      },
    });
    expect(await post(app, '/v1/sequences/orders/ranges?count=2&fromat=string')).toMatchObject({
      status: 400,
      body: {
        code: 'IDGEN_BAD_REQUEST',
        message: 'Unknown query parameter "fromat": this endpoint takes count and format.',
      },
    });
    // The known ones still work, together.
    expect(await post(app, '/v1/sequences/orders/ids?count=2&format=string')).toMatchObject({
      status: 200,
      body: { ids: [expect.any(String), expect.any(String)] as unknown },
    });
  });

  it('ignores a request body of up to 1 KiB, JSON or not, and refuses a larger one (400)', async () => {
    const { app, store } = await service();
    store.resetCalls();
    const large = await app.inject({
      method: 'POST',
      url: '/v1/sequences/orders/ranges?count=2',
      headers: { 'content-type': 'text/plain' },
      payload: 'x'.repeat(1025),
    });
    expect(large.statusCode).toBe(400);
    expect(large.json()).toMatchObject({ code: 'IDGEN_BAD_REQUEST' });
    expect(store.calls.readSequence + store.calls.readDcState).toBe(0);
    for (const payload of ['', '{"count": 7}', 'not json', 'x'.repeat(1024)]) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/sequences/orders/ranges?count=2',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(response.statusCode, payload).toBe(200);
    }
  });
});

describe('error mapping', () => {
  it('answers 503 IDGEN_UNSAFE_CLUSTER with Retry-After while a node of the DC is unsafe', async () => {
    const store = new MemoryStore({
      keyspace: KEYSPACE,
      nodeSettings: [{ host: 'a:9042', dc: 'dc1', commitlogSync: 'periodic' }],
    });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: KEYSPACE });
    await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    const app = createServer(ids);
    open.push({ store, ids, app });
    const refused = await post(app, '/v1/sequences/orders/ids');
    expect(refused).toMatchObject({
      status: 503,
      headers: { 'retry-after': '30' },
      body: { code: 'IDGEN_UNSAFE_CLUSTER' },
    });
  });

  it('maps every library code deliberately; Retry-After only where waiting helps', () => {
    const cases: [Error, IdGenErrorCode, number, number | undefined][] = [
      [new SequenceNotFoundError('orders', 'k'), 'IDGEN_SEQUENCE_NOT_FOUND', 404, undefined],
      [new InvalidCountError(0, 100), 'IDGEN_INVALID_COUNT', 400, undefined],
      [new SequenceExhaustedError('orders', 10n, 10n), 'IDGEN_SEQUENCE_EXHAUSTED', 410, undefined],
      [new SerialUnavailableError('orders', 'dc3', 0n), 'IDGEN_SERIAL_UNAVAILABLE', 503, 5],
      [new StoreUnavailableError('local', 'claim', 'x'), 'IDGEN_STORE_UNAVAILABLE', 503, 1],
      [new DeadlineError('orders', 100), 'IDGEN_DEADLINE_EXCEEDED', 503, 1],
      [new ContentionError('orders', 'claim', 9), 'IDGEN_CONTENTION', 503, 1],
      [new ClosedError(), 'IDGEN_CLOSED', 503, 1],
      [new UnsafeClusterError(['x'], 'y'), 'IDGEN_UNSAFE_CLUSTER', 503, 30],
      [new AbortedError('orders'), 'IDGEN_ABORTED', 499, undefined],
      [new InvariantError('orders', 'x'), 'IDGEN_INVARIANT_BROKEN', 500, undefined],
      [new StateRolledBackError('orders', 'dc1', 'x'), 'IDGEN_STATE_ROLLED_BACK', 500, undefined],
    ];
    for (const [error, code, status, retryAfterSeconds] of cases) {
      expect(httpErrorOf(error), code).toEqual({
        status,
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
        body: { code, message: error.message },
      });
    }
    expect(httpErrorOf(new ServeRefusal('IDGEN_UNAUTHORIZED', 'no'))).toMatchObject({
      status: 401,
    });
    // Only 503s tell the caller to come back.
    for (const [code, answer] of Object.entries(HTTP_ANSWERS)) {
      expect(answer.retryAfterSeconds !== undefined, code).toBe(answer.status === 503);
    }
  });

  it('answers an unexpected error 500 IDGEN_INTERNAL, its message and stack only in the log', async () => {
    const { logger, records } = capturingLogger();
    const registry = {
      contentType: 'text/plain',
      metrics: () => Promise.reject(new Error('secret detail of the failure')),
    };
    const { app } = await service({ registry, logger });
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({
      code: 'IDGEN_INTERNAL',
      message:
        "Internal error of the idgen-cass service; the request got no IDs. The service's log has the details.",
    });
    expect(response.body).not.toContain('secret');
    expect(records.filter((r) => r.msg === 'request failed')).toMatchObject([
      { level: 50, err: { message: 'secret detail of the failure' } },
    ]);
  });
});

describe('bearer token', () => {
  const TOKEN = 'k7-Q2.x_t~8+z/Y=';

  it('is required by the ID endpoints only, and compared exactly', async () => {
    const { app } = await service({ token: TOKEN });
    const missing = await post(app, '/v1/sequences/orders/ids');
    expect(missing).toMatchObject({
      status: 401,
      headers: { 'www-authenticate': 'Bearer realm="idgen-cass"' },
      body: { code: 'IDGEN_UNAUTHORIZED' },
    });
    for (const wrong of [`${TOKEN}x`, TOKEN.slice(1), 'k7', TOKEN.toLowerCase()]) {
      const response = await post(app, '/v1/sequences/orders/ranges?count=1', {
        authorization: `Bearer ${wrong}`,
      });
      expect(response, wrong).toMatchObject({
        status: 401,
        headers: { 'www-authenticate': 'Bearer realm="idgen-cass", error="invalid_token"' },
        body: { code: 'IDGEN_UNAUTHORIZED' },
      });
    }
    expect(
      (await post(app, '/v1/sequences/orders/ids?count=0', { authorization: `Basic ${TOKEN}` }))
        .status,
    ).toBe(401);
    const right = await post(app, '/v1/sequences/orders/ids?count=2', {
      authorization: `Bearer ${TOKEN}`,
    });
    expect(right).toMatchObject({ status: 200, body: { ids: [1, 2] } });
    for (const url of ['/healthz', '/readyz', '/openapi.json']) {
      expect((await app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    }
  });

  it('never reaches a log line or a message', async () => {
    const { logger, records } = capturingLogger();
    const { app } = await service({ token: TOKEN, logger });
    await post(app, '/v1/sequences/orders/ids', { authorization: `Bearer ${TOKEN}` });
    await post(app, '/v1/sequences/orders/ids', { authorization: `Bearer ${TOKEN}x` });
    await post(app, '/v1/sequences/missing/ids', { authorization: `Bearer ${TOKEN}` });
    // Nor a token a client put in the query string (refused: the API takes no such parameter).
    await post(app, `/v1/sequences/orders/ids?count=2&token=${TOKEN}`);
    await post(app, `/v1/sequences/orders/ids?${TOKEN}`);
    // A secret as a parameter's name: the refusal names it to the caller, never to the log.
    const secret = 'abcSECRETtoken';
    await post(app, `/v1/sequences/orders/ids?count=1&${secret}`, {
      authorization: `Bearer ${TOKEN}`,
    });
    expect(records.length).toBeGreaterThan(0);
    expect(JSON.stringify(records)).not.toContain(TOKEN);
    expect(JSON.stringify(records)).not.toContain(secret);
    expect(JSON.stringify(records)).toContain('/v1/sequences/orders/ids?count=2&…');
    for (const bad of ['', 'two words', 'ünïcode']) {
      const { ids } = await withSequence({});
      expect(() => createServer(ids, { token: bad })).toThrow(
        expect.objectContaining({
          code: 'IDGEN_INVALID_OPTION',
          message: expect.not.stringContaining(bad === '' ? '""' : bad) as unknown,
        }),
      );
      await ids.close();
    }
  });
});

describe('the request log', () => {
  /** The URLs of the 'incoming request' lines. */
  const urls = (records: readonly Record<string, unknown>[]) =>
    records.filter((r) => r['msg'] === 'incoming request').map((r) => r['url']);

  it('never shows text a client chose: a name it made up, a format, a path no route matches', async () => {
    const { logger, records } = capturingLogger();
    const { app } = await service({ logger });
    const secret = 'hunterSECRET2token'; // the shape of a sequence name
    await post(app, `/v1/sequences/${secret}/ids?count=1`);
    await post(app, `/v1/sequences/${secret}/ranges`);
    await post(app, `/v1/sequences/orders/ids?format=${secret}`);
    await post(app, `/v1/sequences/orders/ids?count=${secret}`);
    await post(app, `/v1/sequence/${secret}/ids`);
    await post(app, `/v1/sequences/${secret.repeat(8)}/ids`); // over the router's name limit
    expect(JSON.stringify(records)).not.toContain('SECRET');
    expect(urls(records)).toEqual([
      '/v1/sequences/…/ids?count=1',
      '/v1/sequences/…/ranges',
      '/v1/sequences/…/ids?format=…', // "orders" not read yet: not known either
      '/v1/sequences/…/ids?count=…',
      '…',
      '…',
    ]);
  });

  it('shows the route, the name of a sequence the service knows, a count and a format', async () => {
    const { logger, records } = capturingLogger();
    const { app } = await service({ logger });
    await post(app, '/v1/sequences/orders/ids?count=2'); // read now: known from here on
    await post(app, '/v1/sequences/orders/ranges?count=3&format=string');
    await app.inject({ method: 'GET', url: '/healthz' });
    const allowlisted = await service({ logger, sequences: ['orders'] });
    await post(allowlisted.app, '/v1/sequences/orders/ids?format=auto'); // known at once
    expect(urls(records)).toEqual([
      '/v1/sequences/…/ids?count=2',
      '/v1/sequences/orders/ranges?count=3&format=string',
      '/healthz',
      '/v1/sequences/orders/ids?format=auto',
    ]);
  });
});

describe('health and readiness', () => {
  it('/healthz answers 200 without asking the store', async () => {
    const { app, store } = await service();
    store.resetCalls();
    const response = await app.inject({ method: 'GET', url: '/healthz' });
    expect({ status: response.statusCode, body: response.json() }).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    expect(Object.values(store.calls).every((n) => n === 0)).toBe(true);
  });

  it('/readyz loads every sequence and holds IDs of each before it answers 200', async () => {
    const { app, ids } = await service();
    await ids.createSequence('events', { dcRangeSize: 100, blockSize: 10 });
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect({ status: response.statusCode, body: response.json() }).toEqual({
      status: 200,
      body: {
        status: 'ready',
        dc: 'dc1',
        keyspace: KEYSPACE,
        sequences: [
          { sequence: 'events', ready: true, held: 10 },
          { sequence: 'orders', ready: true, held: 100 },
        ],
      },
    });
  });

  it('/readyz stays 200 (degraded) while some sequence served holds IDs, 503 once none does or the store is down', async () => {
    const { app, store } = await service({ sequences: ['orders', 'missing'], readyTimeoutMs: 300 });
    const ask = async (url: string) => {
      const response = await app.inject({ method: 'GET', url });
      return { status: response.statusCode, body: response.json() as unknown };
    };
    expect(await ask('/readyz')).toMatchObject({
      status: 200,
      body: {
        status: 'degraded',
        sequences: [
          { sequence: 'orders', ready: true, held: 100 },
          { sequence: 'missing', ready: false, code: 'IDGEN_SEQUENCE_NOT_FOUND' },
        ],
      },
    });
    // One sequence asked about: it alone decides.
    expect(await ask('/readyz?sequence=orders')).toMatchObject({
      status: 200,
      body: { status: 'ready', sequences: [{ sequence: 'orders', ready: true }] },
    });
    expect(await ask('/readyz?sequence=missing')).toMatchObject({
      status: 503,
      body: {
        status: 'not_ready',
        sequences: [{ sequence: 'missing', ready: false, code: 'IDGEN_SEQUENCE_NOT_FOUND' }],
      },
    });
    expect(await ask('/readyz?sequence=other')).toMatchObject({
      status: 503,
      body: { sequences: [{ sequence: 'other', code: 'IDGEN_SEQUENCE_NOT_SERVED' }] },
    });
    store.faults.push({ op: 'listSequences', effect: 'unavailable', times: Infinity });
    expect(await ask('/readyz')).toMatchObject({
      status: 503,
      body: { status: 'not_ready', sequences: [], code: 'IDGEN_STORE_UNAVAILABLE' },
    });
  });

  it('/readyz answers 503 when no sequence served holds IDs', async () => {
    const { app } = await service({ sequences: ['missing'], readyTimeoutMs: 300 });
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    expect({ status: response.statusCode, body: response.json() }).toMatchObject({
      status: 503,
      body: { status: 'not_ready', sequences: [{ sequence: 'missing', ready: false }] },
    });
  });

  it('/metrics serves the registry, or 404 without one', async () => {
    const registry = { contentType: 'text/plain; version=0.0.4', metrics: async () => 'up 1\n' };
    const { app } = await service({ registry });
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/plain; version=0.0.4');
    expect(response.body).toBe('up 1\n');
    const bare = await service();
    expect((await bare.app.inject({ method: 'GET', url: '/metrics' })).json()).toMatchObject({
      code: 'IDGEN_NOT_FOUND',
    });
  });
});

describe('the OpenAPI document', () => {
  /** `METHOD /path` of every route the app registered (HEAD routes aside: fastify adds them). */
  async function routesOf(app: FastifyInstance): Promise<string[]> {
    await app.ready();
    const routes: string[] = [];
    let path = '';
    for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
      const match = /[─└├│\s]*(\S+) \(([A-Z, ]+)\)/.exec(line);
      if (match === null) continue;
      path = match[1]!;
      for (const method of match[2]!.split(', ')) {
        if (method !== 'HEAD') routes.push(`${method} ${path}`);
      }
    }
    return routes.sort();
  }

  it('lists exactly the routes the service registers, and is what /openapi.json serves', async () => {
    const { app } = await service({ maxIdsPerRequest: 77 });
    const document = openApiDocument({ maxIdsPerRequest: 77 });
    const documented = Object.entries(document.paths)
      .flatMap(([path, operations]) =>
        Object.keys(operations).map(
          (method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`,
        ),
      )
      .sort();
    expect(await routesOf(app)).toEqual(documented);
    const served = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(served.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it('states the limits the service enforces, and every error code with its status', async () => {
    const document = openApiDocument({ maxIdsPerRequest: SERVE_DEFAULTS.maxIdsPerRequest });
    const ids = document.paths['/v1/sequences/{name}/ids']!['post']!;
    expect(ids['parameters']).toContainEqual(
      expect.objectContaining({
        name: 'count',
        in: 'query',
        schema: expect.objectContaining({ minimum: 1, maximum: 10_000 }) as unknown,
      }),
    );
    const responses = ids['responses'] as Record<string, { description: string }>;
    for (const [status, { description }] of Object.entries(responses)) {
      if (status === '200') continue;
      for (const code of description.match(/IDGEN_\w+/g) ?? []) {
        expect(HTTP_ANSWERS[code as keyof typeof HTTP_ANSWERS].status, code).toBe(Number(status));
      }
    }
    expect(Object.keys(responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '404',
      '410',
      '499',
      '500',
      '503',
    ]);
  });

  it("matches docs/service.md's status codes: every code of the ID endpoints, with its status", () => {
    const doc = readFileSync(new URL('../../docs/service.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### Status codes'));
    const rows = section.slice(0, section.indexOf('\n### ')).split('\n');
    const documented = new Map<string, number>();
    for (const row of rows) {
      const status = /^\| (\d{3}) +\|/.exec(row)?.[1];
      if (status === undefined) continue;
      const codes = row.split('|')[2] ?? '';
      for (const code of codes.match(/IDGEN_\w+/g) ?? []) documented.set(code, Number(status));
    }
    for (const [code, status] of documented) {
      expect(HTTP_ANSWERS[code as keyof typeof HTTP_ANSWERS]?.status, code).toBe(status);
    }
    const document = openApiDocument({ maxIdsPerRequest: SERVE_DEFAULTS.maxIdsPerRequest });
    for (const route of ['/v1/sequences/{name}/ids', '/v1/sequences/{name}/ranges']) {
      const responses = document.paths[route]!['post']!['responses'] as Record<
        string,
        { description: string }
      >;
      const codes = Object.entries(responses).flatMap(([status, { description }]) =>
        (description.match(/IDGEN_\w+/g) ?? []).map((code) => [code, Number(status)] as const),
      );
      for (const [code, status] of codes) expect(documented.get(code), code).toBe(status);
      // A refill refused for a permission the service's role lacks reaches the request.
      expect(codes).toContainEqual(['IDGEN_AUTH_FAILED', 500]);
    }
  });
});

describe('over a socket: shutdown and callers that hang up', () => {
  it('answers a request the HTTP parser refuses 400 IDGEN_BAD_REQUEST, its bytes (the token) never logged', async () => {
    const lines: string[] = [];
    // At trace, where fastify's own handler logged the parser's error with the raw request.
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const { app } = await service({ token: 'SECRETTOKEN42', logger });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    // A control character in a header value, after the token.
    const response = await new Promise<string>((resolve, reject) => {
      const socket = tcpConnect(port, '127.0.0.1', () => {
        socket.write(
          'POST /v1/sequences/orders/ids HTTP/1.1\r\nHost: x\r\n' +
            'Authorization: Bearer SECRETTOKEN42\r\nX-Bad: a\u0001b\r\n\r\n',
        );
      });
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head = '', body = ''] = response.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(body)).toEqual({ code: 'IDGEN_BAD_REQUEST', message: expect.any(String) });
    // Raw bytes in a log line are an array of numbers: they are decoded before looking.
    const logged = lines
      .map((line) => {
        const raw = (JSON.parse(line) as { err?: { rawPacket?: { data?: number[] } } }).err
          ?.rawPacket?.data;
        return raw === undefined ? line : `${line} ${Buffer.from(raw).toString('latin1')}`;
      })
      .join('\n');
    expect(logged).toContain('"code":"IDGEN_BAD_REQUEST"');
    expect(logged).not.toContain('SECRETTOKEN42');
    expect(logged).not.toContain('rawPacket');
  });

  it('redacts raw request bytes wherever a log line could carry them', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const { app } = await service({ logger });
    const rawPacket = { type: 'Buffer', data: [...Buffer.from('Bearer SECRETTOKEN42')] };
    const err = Object.assign(new Error('Parse Error'), { rawPacket, cause: { rawPacket } });
    app.log.warn({ err, other: { rawPacket } }, 'a line with raw bytes');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(String(rawPacket.data.slice(0, 4)));
    expect(lines[0]).toContain('[redacted]');
  });

  it('close() waits for the request in flight, then ids.close() gives the unused IDs back', async () => {
    const { app, ids, store } = await service();
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first claim (a write of the DC state) waits: the request is in flight meanwhile.
    store.faults.push({ op: 'writeDcState', effect: 'delay', until: held });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const inFlight = fetch(`http://127.0.0.1:${port}/v1/sequences/orders/ids?count=3`, {
      method: 'POST',
    });
    while (store.calls.writeDcState === 0) await new Promise((r) => setTimeout(r, 5));

    let closed = false;
    const closing = app.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(false);
    release();
    const response = await inFlight;
    expect(response.status).toBe(200);
    // The client does not keep the connection, so close() need not wait out its keep-alive.
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toEqual({ sequence: 'orders', ids: [1, 2, 3] });
    // Without the connection header close() waits out fastify's keep-alive (70 s when tried);
    // 5 s leaves a busy machine room without letting that wait pass.
    const started = Date.now();
    await closing;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(100n);

    await ids.close();
    // The block's 97 unused IDs went back: the DC's next claim starts at 4.
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(3n);
  });

  it('counts the IDs of a response that did not reach its caller as undelivered, never issued', async () => {
    const { app, ids, store } = await service();
    const orders = ids.sequence('orders');
    // Each response waits until its caller is gone, as a slow network or a busy event loop
    // would hold it.
    let atHook = () => {};
    let holding = true;
    app.addHook('onSend', async (request, reply) => {
      if (!holding || !request.url.startsWith('/v1/')) return;
      atHook();
      if (!reply.raw.destroyed) await new Promise((resolve) => reply.raw.once('close', resolve));
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    let undelivered = 0;
    for (const [route, count] of [
      ['ids', 3],
      ['ranges', 5],
    ] as const) {
      const reached = new Promise<void>((resolve) => (atHook = resolve));
      const socket = tcpConnect(port, '127.0.0.1', () => {
        socket.write(
          `POST /v1/sequences/orders/${route}?count=${count} HTTP/1.1\r\nHost: x\r\n\r\n`,
        );
      });
      const gone = new Promise((resolve) => socket.once('close', resolve));
      await reached;
      // Drawn, not yet delivered: neither issued nor wasted (issued never goes down).
      expect(orders.stats(), route).toMatchObject({ issued: 0, wasted: undelivered });
      socket.destroy();
      await gone;
      undelivered += count;
      for (let i = 0; i < 100 && orders.stats().wasted < undelivered; i++) await sleep(5);
      expect(orders.stats(), route).toMatchObject({ issued: 0, waste: { undelivered } });
    }
    expect(orders.stats()).toMatchObject({ issued: 0, remaining: 92, wasted: 8 });
    // A response that is delivered counts its IDs as issued; the 8 undelivered are never served.
    holding = false;
    expect((await post(app, '/v1/sequences/orders/ids?count=2')).body.ids).toEqual([9, 10]);
    expect(orders.stats()).toMatchObject({ issued: 2, wasted: 8, waste: { undelivered: 8 } });
    await app.close();
    await ids.close();
    // And so in the DC's usage (`idgen-cass status`).
    const usage = [...((await store.readDcUsage('orders')) ?? new Map()).values()];
    expect(usage.reduce((sum, counts) => sum + counts.issued, 0n)).toBe(2n);
    expect(usage.reduce((sum, counts) => sum + counts.undelivered, 0n)).toBe(8n);
  });

  it('sees at once a caller that hung up before the handler ran: 499, and no ID drawn', async () => {
    const { logger, records } = capturingLogger();
    const { app, ids } = await service({ logger });
    const orders = ids.sequence('orders');
    await orders.ready();
    // Each request is held after authentication and validation until its caller is gone, as a
    // slow hook or a busy event loop would hold it: the handler then starts with the response
    // already closed, and no 'close' event is to come.
    let atHook = () => {};
    let holding = true;
    app.addHook('preHandler', async (_request, reply) => {
      if (!holding) return;
      atHook();
      if (!reply.raw.destroyed) await new Promise((resolve) => reply.raw.once('close', resolve));
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const aborted = () => records.filter((r) => r.code === 'IDGEN_ABORTED');
    for (const route of ['ids', 'ranges']) {
      const reached = new Promise<void>((resolve) => (atHook = resolve));
      const caller = new AbortController();
      const request = fetch(`http://127.0.0.1:${port}/v1/sequences/orders/${route}?count=10`, {
        method: 'POST',
        signal: caller.signal,
      }).catch((error: unknown) => error);
      await reached;
      caller.abort();
      expect(await request).toBeInstanceOf(Error);
      // Answered 499 at once; a request that drew IDs for the closed socket would leave no log
      // line, hence a bounded wait.
      const want = route === 'ids' ? 1 : 2;
      for (let i = 0; i < 100 && aborted().length < want; i++) await sleep(5);
    }
    expect(aborted()).toHaveLength(2);
    // The 100 IDs of the first block are all still held: neither request took any.
    expect(orders.stats()).toMatchObject({ issued: 0, remaining: 100, wasted: 0 });
    holding = false;
    expect((await post(app, '/v1/sequences/orders/ids?count=2')).body.ids).toEqual([1, 2]);
  });

  it('stops waiting for IDs when the caller hangs up (IDGEN_ABORTED), the refill carrying on', async () => {
    const { logger, records } = capturingLogger();
    const { app, store, ids } = await service({ logger });
    let release = () => {};
    store.faults.push({
      op: 'writeDcState',
      effect: 'delay',
      until: new Promise<void>((resolve) => (release = resolve)),
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const caller = new AbortController();
    const request = fetch(`http://127.0.0.1:${port}/v1/sequences/orders/ids`, {
      method: 'POST',
      signal: caller.signal,
    }).catch((error: unknown) => error);
    while (store.calls.writeDcState === 0) await new Promise((r) => setTimeout(r, 5));
    caller.abort();
    expect(await request).toBeInstanceOf(Error);
    const aborted = () => records.find((r) => r.code === 'IDGEN_ABORTED');
    while (aborted() === undefined) await new Promise((r) => setTimeout(r, 5));
    expect(aborted()).toMatchObject({ level: 20, statusCode: 499 });
    release();
    // The claim the call waited for went on: its block serves the next caller from ID 1.
    expect((await post(app, '/v1/sequences/orders/ids')).body).toEqual({
      sequence: 'orders',
      ids: [1],
    });
    expect(ids.stats().totals.blocksClaimed).toBe(1);
  });
});
