/**
 * A misspelt option is refused, not ignored: `callTimeoutMS` would otherwise leave calls on the
 * default 10 s deadline, `bigInt` would hand out numbers, and nothing would say why. The checks
 * run before any connection, so no cluster is needed here.
 */
import { describe, expect, it } from 'vitest';

import { openAdmin, preflight } from '../../src/admin/open.js';
import { connect } from '../../src/connect.js';
import { initSchema } from '../../src/schema.js';
import { createServer } from '../../src/serve/server.js';
import { withSequence } from './fixtures.js';

/** Nothing listens here: an option check that came after connecting would fail otherwise. */
const connection = { contactPoints: ['127.0.0.1:1'], localDataCenter: 'dc1', keyspace: 'idgen' };

const refused = (option: string) =>
  expect.objectContaining({
    code: 'IDGEN_INVALID_OPTION',
    option,
    message: expect.stringContaining('one of the options') as unknown,
  });

describe('misspelt options', () => {
  it('connect() refuses a key it does not know, before connecting', async () => {
    await expect(connect({ ...connection, callTimeoutMS: 5_000 } as never)).rejects.toThrow(
      refused('callTimeoutMS'),
    );
    await expect(connect({ ...connection, localDatacenter: 'dc1' } as never)).rejects.toThrow(
      refused('localDatacenter'),
    );
  });

  it('openAdmin(), preflight() and initSchema() refuse one too', async () => {
    await expect(openAdmin({ ...connection, requestTimeout: 8_000 } as never)).rejects.toThrow(
      refused('requestTimeout'),
    );
    await expect(preflight({ ...connection, usename: 'svc' } as never)).rejects.toThrow(
      refused('usename'),
    );
    await expect(
      initSchema({ ...connection, replication: { dc1: 3 }, allowUnsafe: true } as never),
    ).rejects.toThrow(refused('allowUnsafe'));
  });

  it('sequence() and createServer() refuse one too; their known options still pass', async () => {
    const { ids } = await withSequence({});
    expect(() => ids.sequence('orders', { bigInt: true } as never)).toThrow(refused('bigInt'));
    expect(ids.sequence('orders', { bigint: true }).name).toBe('orders');
    expect(() => createServer(ids, { timeout: 1_000 } as never)).toThrow(refused('timeout'));
    await createServer(ids, { timeoutMs: 1_000, maxIdsPerRequest: 10 }).close();
    await ids.close();
  });
});

describe('flags that are not booleans', () => {
  // 'yes' or 'false' (read from the environment, say) was taken as false without a word: a
  // number-typed handle, a create that fails on an existing sequence, a preflight that runs.
  const notBoolean = (option: string) =>
    expect.objectContaining({
      code: 'IDGEN_INVALID_OPTION',
      option,
      message: expect.stringContaining('true or false') as unknown,
    });

  it('sequence(), createSequence() and initSchema() refuse one, before connecting', async () => {
    const { ids } = await withSequence({});
    expect(() => ids.sequence('orders', { bigint: 'yes' } as never)).toThrow(notBoolean('bigint'));
    await expect(ids.createSequence('orders', { ifNotExists: 'true' } as never)).rejects.toThrow(
      notBoolean('ifNotExists'),
    );
    await expect(
      initSchema({ ...connection, replication: { dc1: 3 }, allowUnsafeCluster: 1 } as never),
    ).rejects.toThrow(notBoolean('allowUnsafeCluster'));
    // The booleans themselves still pass.
    expect(ids.sequence('orders', { bigint: false }).name).toBe('orders');
    expect((await ids.createSequence('orders', { ifNotExists: true })).name).toBe('orders');
    await ids.close();
  });
});

describe('the value of an option not known', () => {
  // A misspelt secret (`passwrd`, `tokn`) went into the message ('received "hunter2"') and into
  // the error's `received`, both of which end up in logs.
  it('is neither shown nor kept: it may be a secret under a misspelt name', async () => {
    const error: unknown = await connect({
      ...connection,
      username: 'svc',
      passwrd: 'hunter2',
    } as never).catch((e: unknown) => e);
    expect(error).toEqual(refused('passwrd'));
    expect((error as Error).message).toContain('its value is not shown');
    expect((error as Error).message).not.toContain('hunter2');
    expect(JSON.stringify(error)).not.toContain('hunter2');
    expect((error as { received?: unknown }).received).toBeUndefined();

    const { ids } = await withSequence({});
    let thrown: unknown;
    try {
      createServer(ids, { tokn: 's3cret-token' } as never);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toEqual(refused('tokn'));
    expect(`${(thrown as Error).message} ${JSON.stringify(thrown)}`).not.toContain('s3cret');
    await ids.close();
  });
});

describe('connect() checks every option before connecting', () => {
  const invalid = (option: string) =>
    expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option });

  it('names a bad option even when nothing answers, where it said Cassandra was unavailable', async () => {
    const cases: [Record<string, unknown>, unknown][] = [
      [{ keyspace: 'Bad-ks' }, expect.objectContaining({ code: 'IDGEN_INVALID_NAME' })],
      [{ callTimeoutMs: '5000' }, invalid('callTimeoutMs')],
      [{ metrics: true }, invalid('metrics')],
      // Accepted before, and a TypeError at the first sequence() or warning.
      [{ logger: {} }, invalid('logger')],
      // A TypeError from the driver, or "Cassandra is unavailable … connect is not a function".
      [{ authProvider: {} }, invalid('authProvider')],
      [{ client: {} }, invalid('client')],
      // Accepted before: spread into the driver's options, or sent as they were.
      [{ driverOptions: 'x' }, invalid('driverOptions')],
      [{ username: 5, password: 'p' }, invalid('username')],
    ];
    for (const [options, expected] of cases) {
      await expect(
        connect({ ...connection, ...options } as never),
        JSON.stringify(options),
      ).rejects.toThrow(expected as Error);
    }
  });

  it('initSchema() and createServer() refuse a logger that is none, too', async () => {
    await expect(
      initSchema({ ...connection, replication: { dc1: 3 }, logger: {} } as never),
    ).rejects.toThrow(invalid('logger'));
    const { ids } = await withSequence({});
    expect(() => createServer(ids, { logger: { info: () => undefined } } as never)).toThrow(
      invalid('logger'),
    );
    await ids.close();
  });

  it('shows no more of a value that may hold a secret than its kind', async () => {
    const error: unknown = await connect({
      ...connection,
      username: 'svc',
      password: 123_456,
    } as never).catch((e: unknown) => e);
    expect(error).toEqual(invalid('password'));
    expect((error as Error).message).toContain('received a number (not shown)');
    expect(`${(error as Error).message} ${JSON.stringify(error)}`).not.toContain('123456');
    const provider = { secret: 'pa55word' };
    const refused: unknown = await connect({
      ...connection,
      authProvider: provider,
    } as never).catch((e: unknown) => e);
    expect((refused as Error).message).toContain('received an object (not shown)');
    expect(`${(refused as Error).message} ${JSON.stringify(refused)}`).not.toContain('pa55word');
  });
});
