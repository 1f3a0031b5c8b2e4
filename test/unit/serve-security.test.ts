/**
 * The service's access rules over the in-memory store: several bearer tokens at once, a token
 * file re-read when it changes (rotation without a restart), `/metrics` behind a token on request,
 * and HTTPS with a certificate made here by openssl.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';

import type { IdGen } from '../../src/connect.js';
import type { ServeOptions } from '../../src/serve/options.js';
import { createServer } from '../../src/serve/server.js';
import { capturingLogger, WARN, withSequence } from './fixtures.js';

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function service(options: ServeOptions): Promise<{ app: FastifyInstance; ids: IdGen }> {
  const { ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 100 });
  cleanups.push(() => ids.close());
  const app = createServer(ids, options);
  cleanups.push(() => app.close());
  return { app, ids };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'idgen-serve-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The status of `POST /v1/sequences/orders/ids` sent with `token` (none if undefined). */
async function statusWith(app: FastifyInstance, token?: string, url = '/v1/sequences/orders/ids') {
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const method = url === '/metrics' ? 'GET' : 'POST';
  return (await app.inject({ method, url, headers })).statusCode;
}

describe('bearer tokens', () => {
  it('accepts any of several tokens at once, and no other', async () => {
    const { app } = await service({ tokens: ['old-token', 'new-token'] });
    expect(await statusWith(app, 'old-token')).toBe(200);
    expect(await statusWith(app, 'new-token')).toBe(200);
    expect(await statusWith(app, 'other-token')).toBe(401);
    expect(await statusWith(app)).toBe(401);
    for (const options of [{ tokens: [] }, { tokens: ['ok', 'two words'] }]) {
      const { ids } = await withSequence({});
      cleanups.push(() => ids.close());
      expect(() => createServer(ids, options)).toThrow(
        expect.objectContaining({
          code: 'IDGEN_INVALID_OPTION',
          option: 'tokens',
          message: expect.not.stringContaining('two words') as unknown,
        }),
      );
      expect(() => createServer(ids, { token: 'a', tokenFile: '/x' })).toThrow(
        expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option: 'tokenFile' }),
      );
    }
  });

  it('re-reads the token file when it changes, without a restart; a bad version keeps the last tokens', async () => {
    const dir = tempDir();
    const file = join(dir, 'tokens');
    writeFileSync(file, 'first-token\n');
    const { logger, records } = capturingLogger();
    const { app } = await service({ tokenFile: file, logger });
    expect(await statusWith(app, 'first-token')).toBe(200);
    expect(await statusWith(app, 'second-token')).toBe(401);

    // Rotation, step 1: both tokens, written in place.
    writeFileSync(file, 'first-token\n\n  second-token  \n');
    expect(await statusWith(app, 'first-token')).toBe(200);
    expect(await statusWith(app, 'second-token')).toBe(200);
    // Step 2: the new one alone, by an atomic rename (as a secret mount updates).
    writeFileSync(join(dir, 'next'), 'second-token\n');
    renameSync(join(dir, 'next'), file);
    expect(await statusWith(app, 'first-token')).toBe(401);
    expect(await statusWith(app, 'second-token')).toBe(200);

    // Versions that cannot be used leave the tokens as they were, each logged once.
    const warnings = () => records.filter((record) => record.level === WARN);
    for (const [bad, count] of [
      ['two words\n', 1],
      ['', 2],
    ] as const) {
      writeFileSync(file, bad);
      for (let i = 0; i < 3; i++) expect(await statusWith(app, 'second-token')).toBe(200);
      expect(warnings()).toHaveLength(count);
    }
    rmSync(file);
    for (let i = 0; i < 3; i++) expect(await statusWith(app, 'second-token')).toBe(200);
    expect(warnings()).toHaveLength(3);
    expect(warnings()[2]).toMatchObject({ reason: expect.stringContaining('ENOENT') as unknown });
    writeFileSync(file, 'third-token\n');
    expect(await statusWith(app, 'second-token')).toBe(401);
    expect(await statusWith(app, 'third-token')).toBe(200);
    const logged = JSON.stringify(records);
    for (const secret of ['first-token', 'second-token', 'third-token', 'two words']) {
      expect(logged).not.toContain(secret);
    }
  });

  it('refuses a token file that cannot be read or holds no token at start, not showing it', async () => {
    const dir = tempDir();
    const file = join(dir, 'tokens');
    const { ids } = await withSequence({});
    cleanups.push(() => ids.close());
    for (const text of [undefined, '\n \n', 'ok\nnot-ö-token\n']) {
      if (text === undefined) rmSync(file, { force: true });
      else writeFileSync(file, text);
      expect(() => createServer(ids, { tokenFile: file }), String(text)).toThrow(
        expect.objectContaining({
          code: 'IDGEN_INVALID_OPTION',
          option: 'tokenFile',
          message: expect.not.stringContaining('not-ö-token') as unknown,
        }),
      );
    }
  });

  it('guards /metrics too with metricsAuth, which needs a token', async () => {
    const registry = new Registry();
    const open = await service({ token: 'the-token', registry });
    expect(await statusWith(open.app, undefined, '/metrics')).toBe(200);
    const guarded = await service({ token: 'the-token', registry, metricsAuth: true });
    expect(await statusWith(guarded.app, undefined, '/metrics')).toBe(401);
    expect(await statusWith(guarded.app, 'wrong', '/metrics')).toBe(401);
    expect(await statusWith(guarded.app, 'the-token', '/metrics')).toBe(200);
    expect((await guarded.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect(() => createServer(open.ids, { metricsAuth: true })).toThrow(
      expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option: 'metricsAuth' }),
    );
  });
});

describe('TLS', () => {
  it('serves HTTPS with the certificate and key given, and nothing in clear text', async () => {
    const dir = tempDir();
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { stdio: 'ignore' },
    );
    const ca = readFileSync(cert);
    const { app } = await service({ tls: { cert: ca, key: readFileSync(key) } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;

    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const sent = httpsRequest(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/sequences/orders/ids?count=2', ca },
        (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        },
      );
      sent.on('error', reject);
      sent.end();
    });
    expect(answer).toEqual({ status: 200, body: '{"sequence":"orders","ids":[1,2]}' });
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

    const { ids } = await withSequence({});
    cleanups.push(() => ids.close());
    expect(() => createServer(ids, { tls: { cert: 'not a certificate', key: ca } })).toThrow(
      expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option: 'tls' }),
    );
  });
});
