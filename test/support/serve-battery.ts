/**
 * The hostile-input battery of the HTTP service, shared by the unit suite (memory store) and the
 * integration suite (the real cluster): fast-check generates batches of requests of every shape
 * (methods, paths, names, counts, formats, unknown parameters, headers, bodies, tokens), sends
 * each batch at once over raw sockets, and checks after every batch that
 * - every answer is well-formed HTTP, and no status is 5xx but 503 with Retry-After;
 * - no ID is handed out twice, within the batch or across batches;
 * - the IDs the service counts as delivered (`issued`) are exactly those the client received;
 * - the service still answers `/healthz`.
 */

import { connect } from 'node:net';

import fc from 'fast-check';
import { expect } from 'vitest';

import type { IdGen } from '../../src/allocator/id-gen.js';

export interface BatteryTarget {
  /** Where the service listens. */
  readonly host: string;
  readonly port: number;
  /** The allocator it serves: its `issued` counter is checked against what the client got. */
  readonly ids: IdGen;
  /** Sequences that exist; requests also name ones that do not, or could not. */
  readonly sequences: readonly string[];
  /** Tokens the service accepts. */
  readonly tokens: readonly string[];
}

interface Answer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
}

/** Text without CR or LF, so that one generated request stays one request. */
function line(arbitrary: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return arbitrary.map((text) => text.replace(/[\r\n]/g, ''));
}

function requests(target: BatteryTarget) {
  const name = fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...target.sequences) },
    fc.stringMatching(/^[a-z][a-z0-9_]{0,12}$/),
    fc.constantFrom('9lives', 'a'.repeat(101), '%2e%2e', '..', '%zz', '%00', 'ORDERS', 'ö'),
    line(fc.string({ maxLength: 20 })).map(encodeURIComponent),
  );
  const path = fc.oneof(
    { weight: 12, arbitrary: fc.tuple(name, fc.constantFrom('ids', 'ranges')) },
    fc.constantFrom('/healthz', '/readyz', '/metrics', '/openapi.json', '/', '/v1/sequences'),
    fc.webPath(),
  );
  const count = fc.oneof(
    { weight: 12, arbitrary: fc.integer({ min: 1, max: 50 }).map(String) },
    fc.constantFrom('0', '-1', '10000', '10001', '1e2', '0x10', '', ' 1', '1.5', '9'.repeat(30)),
    line(fc.string({ maxLength: 8 })),
  );
  const query = fc.array(
    fc.oneof(
      { weight: 8, arbitrary: count.map((value) => ['count', value] as const) },
      fc.constantFrom('auto', 'string', 'STRING', '').map((value) => ['format', value] as const),
      fc.tuple(line(fc.string({ maxLength: 6 })), line(fc.string({ maxLength: 6 }))),
    ),
    { maxLength: 2 },
  );
  const token = fc.constantFrom(...target.tokens);
  const authorization = fc.oneof(
    { weight: 12, arbitrary: token.map((t) => `Bearer ${t}`) },
    fc.constant(undefined),
    token.map((t) => `bearer   ${t}`),
    token.map((t) => `Bearer ${t}x`),
    token.map((t) => `Basic ${t}`),
    fc.constantFrom('Bearer', 'Bearer ', `Bearer ${'A'.repeat(5_000)}`, 'Bearer a b'),
    line(fc.string({ maxLength: 40 })),
  );
  const headers = fc.record({
    authorization,
    accept: fc.constantFrom(undefined, 'application/json; ids=string', '*/*', 'text/html'),
    'content-type': fc.constantFrom(undefined, 'application/json', 'text/plain', 'x/y; z'),
    'x-extra': fc.option(line(fc.string({ maxLength: 30 })), { nil: undefined }),
  });
  const body = fc.oneof(
    { weight: 4, arbitrary: fc.constant('') },
    line(fc.string({ maxLength: 60 })),
    fc.constant('{"count": 5}'),
    fc.constant('x'.repeat(2_000)),
  );
  const method = fc.oneof(
    { weight: 12, arbitrary: fc.constant('POST') },
    fc.constantFrom('GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
    fc.stringMatching(/^[A-Z]{1,7}$/),
  );
  // Half the requests are plain ones, so that IDs flow, blocks run out and requests wait.
  const wellFormed = fc.record({
    method: fc.constant('POST'),
    path: fc.tuple(fc.constantFrom(...target.sequences), fc.constantFrom('ids', 'ranges')),
    query: fc.tuple(fc.integer({ min: 1, max: 30 })).map(([n]) => [['count', String(n)] as const]),
    headers: fc.record({ authorization: token.map((t) => `Bearer ${t}`) }),
    body: fc.constant(''),
  });
  const hostile = fc.record({ method, path, query, headers, body });
  return fc.oneof(wellFormed, hostile).map((request) => {
    const target =
      typeof request.path === 'string'
        ? request.path
        : `/v1/sequences/${request.path[0]}/${request.path[1]}`;
    const pairs = request.query.map(([key, value]) => `${key}=${value}`);
    const url = (pairs.length === 0 ? target : `${target}?${pairs.join('&')}`).replace(/ /g, '%20');
    const { method, headers, body } = request;
    return { method, url, headers, body };
  });
}

interface Request {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
}

/** Sends `request` on a connection of its own, the bytes as given, and reads the answer. */
function send(target: BatteryTarget, request: Request): Promise<Answer> {
  const head = [`${request.method} ${request.url} HTTP/1.1`, 'Host: idgen', 'Connection: close'];
  for (const [key, value] of Object.entries(request.headers)) {
    if (value !== undefined) head.push(`${key}: ${value}`);
  }
  const body = Buffer.from(request.body);
  if (body.length > 0) head.push(`Content-Length: ${body.length}`);
  const bytes = Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), body]);
  return new Promise((resolve, reject) => {
    const socket = connect(target.port, target.host);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(parse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    // Not end(): a half-closed connection is a caller that hung up. `Connection: close` ends it.
    socket.write(bytes);
  });
}

function parse(text: string): Answer {
  const at = text.indexOf('\r\n\r\n');
  if (at < 0) throw new Error(`Not an HTTP answer: ${JSON.stringify(text.slice(0, 200))}`);
  const [status, ...fields] = text.slice(0, at).split('\r\n');
  const match = /^HTTP\/1\.1 (\d{3}) /.exec(status ?? '');
  if (match === null) throw new Error(`Not an HTTP status line: ${JSON.stringify(status)}`);
  const headers = new Map(
    fields.map((field) => {
      const colon = field.indexOf(':');
      return [field.slice(0, colon).toLowerCase(), field.slice(colon + 1).trim()] as const;
    }),
  );
  return { status: Number(match[1]), headers, body: text.slice(at + 4) };
}

/** The IDs an answer hands out, as decimal strings, by sequence; none for a refusal. */
function idsOf(request: Request, answer: Answer): { sequence: string; ids: string[] } | undefined {
  if (answer.status !== 200 || !/^\/v1\/sequences\/[^/]+\/(ids|ranges)/.test(request.url)) {
    return undefined;
  }
  const body = JSON.parse(answer.body) as {
    sequence: string;
    ids?: (number | string)[];
    first?: number | string;
    last?: number | string;
  };
  if (body.ids !== undefined) return { sequence: body.sequence, ids: body.ids.map(String) };
  const ids: string[] = [];
  for (let id = BigInt(body.first!); id <= BigInt(body.last!); id++) ids.push(String(id));
  return { sequence: body.sequence, ids };
}

/**
 * Runs the battery against `target` (`numRuns` batches of up to 16 requests at once) and returns
 * how many answers it checked, by status.
 */
export async function runBattery(
  target: BatteryTarget,
  numRuns: number,
  seed?: number,
): Promise<ReadonlyMap<number, number>> {
  const seen = new Map<string, Set<string>>();
  const statuses = new Map<number, number>();
  let received = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(requests(target), { minLength: 1, maxLength: 16 }), async (batch) => {
      const answers = await Promise.all(batch.map((request) => send(target, request)));
      // The IDs first: a later run (shrinking) then compares counters that include this one's.
      const twice: string[] = [];
      let handedOut = 0;
      batch.forEach((request, i) => {
        const handed = idsOf(request, answers[i]!);
        if (handed === undefined) return;
        const ids = seen.get(handed.sequence) ?? new Set();
        seen.set(handed.sequence, ids);
        for (const id of handed.ids) {
          if (ids.has(id)) twice.push(`${handed.sequence} ${id}`);
          ids.add(id);
        }
        handedOut += handed.ids.length;
      });
      const before = received;
      received += handedOut;
      expect(twice, 'IDs handed out twice').toEqual([]);
      batch.forEach((request, i) => {
        const answer = answers[i]!;
        const where = `${request.method} ${request.url} -> ${answer.status} ${answer.body.slice(0, 300)}`;
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status >= 500) {
          expect(answer.status, where).toBe(503);
          expect(Number(answer.headers.get('retry-after')), where).toBeGreaterThan(0);
        }
        if (answer.status >= 400 && request.method !== 'HEAD') {
          const code = (JSON.parse(answer.body) as { code?: unknown }).code;
          expect(code, where).toMatch(/^IDGEN_[A-Z_]+$/);
        }
      });
      // A response counts as delivered once its socket closed after it was written in full.
      await until(() => issued(target.ids) >= received);
      expect(issued(target.ids) - before, 'IDs counted as delivered').toBe(handedOut);
      const health = await send(target, { method: 'GET', url: '/healthz', headers: {}, body: '' });
      expect(health.status).toBe(200);
    }),
    { numRuns, ...(seed === undefined ? {} : { seed }) },
  );
  return statuses;
}

function issued(ids: IdGen): number {
  // No key before a first sequence is opened.
  return ids.stats().totals.issued ?? 0;
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
