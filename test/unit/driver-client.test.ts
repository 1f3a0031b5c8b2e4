/** The driver options connect() builds: what passes through, and what idgen-cass sets itself. */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import { buildClientOptions } from '../../src/store/cassandra/driver-client.js';
import { LocalDcPolicy } from '../../src/store/cassandra/client-routing.js';

const base = { contactPoints: ['10.0.0.1'], localDataCenter: 'dc1' };

describe('buildClientOptions', () => {
  it('passes TLS, an auth provider and other driver options through to the driver', () => {
    const authProvider = new cassandra.auth.PlainTextAuthProvider('svc', 'secret');
    const sslOptions = { ca: ['-----BEGIN CERTIFICATE-----'], rejectUnauthorized: true };
    const { clientOptions } = buildClientOptions({
      ...base,
      sslOptions,
      authProvider,
      requestTimeoutMs: 20_000,
      driverOptions: {
        pooling: { coreConnectionsPerHost: { [cassandra.types.distance.local]: 2 } },
        socketOptions: { connectTimeout: 9_000, readTimeout: 1 },
        encoding: { useBigIntAsLong: true },
      },
    });
    expect(clientOptions.sslOptions).toEqual(sslOptions);
    expect(clientOptions.authProvider).toBe(authProvider);
    expect(clientOptions.pooling?.coreConnectionsPerHost).toEqual({ 0: 2 });
    expect(clientOptions.encoding?.useBigIntAsLong).toBe(true);
    // The request timeout is idgen-cass's, whatever the driver options say.
    expect(clientOptions.socketOptions).toMatchObject({
      connectTimeout: 9_000,
      readTimeout: 20_000,
    });
  });

  it('verifies node certificates unless the caller turns it off', () => {
    // The driver alone connects with rejectUnauthorized: false, i.e. TLS that checks nothing.
    const verified = buildClientOptions({ ...base, sslOptions: {} }).clientOptions;
    expect(verified.sslOptions).toEqual({ rejectUnauthorized: true });
    const unverified = buildClientOptions({ ...base, sslOptions: { rejectUnauthorized: false } });
    expect(unverified.clientOptions.sslOptions).toEqual({ rejectUnauthorized: false });
    expect(buildClientOptions(base).clientOptions.sslOptions).toBeUndefined();
  });

  it('keeps load balancing DC-aware and local, whatever policies are passed', () => {
    const { clientOptions } = buildClientOptions({
      ...base,
      driverOptions: {
        policies: {
          loadBalancing: new cassandra.policies.loadBalancing.RoundRobinPolicy(),
          retry: new cassandra.policies.retry.RetryPolicy(),
        },
      },
    });
    const policy = clientOptions.policies?.loadBalancing;
    expect(policy).toBeInstanceOf(LocalDcPolicy);
    expect((policy as LocalDcPolicy).child).toBeInstanceOf(
      cassandra.policies.loadBalancing.TokenAwarePolicy,
    );
    expect(policy?.getOptions().get('localDataCenter')).toBe('dc1');
    expect(clientOptions.policies?.retry).toBeInstanceOf(cassandra.policies.retry.RetryPolicy);
    expect(clientOptions).toMatchObject({ contactPoints: ['10.0.0.1'], localDataCenter: 'dc1' });
  });

  it('refuses in driverOptions what idgen-cass sets itself, also from a caller without types', () => {
    const profile = new cassandra.ExecutionProfile('default', {
      loadBalancing: new cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy('dc2'),
    });
    for (const [key, value] of [
      ['profiles', [profile]], // would route every statement to dc2
      ['sslOptions', { ca: ['-----BEGIN CERTIFICATE-----'] }], // the driver would verify nothing
      ['authProvider', new cassandra.auth.PlainTextAuthProvider('svc', 'secret')],
      ['keyspace', 'other'],
      ['localDataCenter', 'dc2'],
      ['contactPoints', ['10.9.9.9']],
    ] as const) {
      const driverOptions = { [key]: value } as never;
      expect(() => buildClientOptions({ ...base, driverOptions }), key).toThrow(
        expect.objectContaining({
          code: 'IDGEN_INVALID_OPTION',
          option: `driverOptions.${key}`,
          message: expect.not.stringContaining('secret') as unknown,
        }),
      );
    }
  });

  it('takes contact points as host, host:port, a bare IPv6 address or [IPv6]:port', () => {
    const contactPoints = ['10.0.0.1', 'node-2:9042', '::1', '[fe80::1]:9043', 'node-3:65535'];
    const { clientOptions } = buildClientOptions({ ...base, contactPoints });
    expect(clientOptions.contactPoints).toEqual(contactPoints);
  });

  it('builds a PlainTextAuthProvider from username and password', () => {
    const { clientOptions } = buildClientOptions({ ...base, username: 'svc', password: 'pw' });
    expect(clientOptions.authProvider).toBeInstanceOf(cassandra.auth.PlainTextAuthProvider);
  });

  it.each([
    [
      { username: 'svc', authProvider: new cassandra.auth.PlainTextAuthProvider('a', 'b') },
      'authProvider',
    ],
    [{ password: 'pw' }, 'username'],
    [{ requestTimeoutMs: 0 }, 'requestTimeoutMs'],
    // The driver's request timer would fire after 1 ms: every request would time out.
    [{ requestTimeoutMs: 2 ** 31 }, 'requestTimeoutMs'],
    [{ requestTimeoutMs: Infinity }, 'requestTimeoutMs'],
    [{ contactPoints: [] }, 'contactPoints'],
    // The driver reports a bad port as a failure to connect: exit 3, "Cassandra is unavailable".
    [{ contactPoints: ['10.0.0.1', '10.0.0.2:99999'] }, 'contactPoints'],
    [{ contactPoints: ['10.0.0.1:0'] }, 'contactPoints'],
    [{ contactPoints: ['10.0.0.1:'] }, 'contactPoints'],
    [{ contactPoints: ['node-1:cql'] }, 'contactPoints'],
    [{ contactPoints: ['[::1]:70000'] }, 'contactPoints'],
    [{ localDataCenter: ' ' }, 'localDataCenter'],
  ])('refuses %o naming the option', (bad, option) => {
    expect(() => buildClientOptions({ ...base, ...bad })).toThrow(
      expect.objectContaining({ code: 'IDGEN_INVALID_OPTION', option }),
    );
  });
});
