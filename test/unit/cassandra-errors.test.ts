/**
 * Driver errors are recognised by name and code, not by class: a service's client built with its
 * own copy of cassandra-driver throws errors of other classes, which must still map to our typed
 * errors and, for a conditional write, to an unknown outcome rather than to "not written".
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import {
  AuthenticationError,
  IdGenError,
  InvalidOptionError,
  SerialUnavailableError,
  StoreUnavailableError,
} from '../../src/errors.js';
import { connectError, mapFailure } from '../../src/store/cassandra/errors.js';
import { STATEMENTS } from '../../src/store/cassandra/statements.js';

const codes = cassandra.types.responseErrorCodes;
const context = { keyspace: 'idgen', localDc: 'dc1' };

/** An error as another copy of the driver builds it: same name and fields, another class. */
function foreign(name: string, message: string, fields: Record<string, unknown> = {}): Error {
  class ForeignDriverError extends Error {}
  const error = new ForeignDriverError(message);
  error.name = name;
  Object.assign(error, fields);
  return error;
}

const claim = STATEMENTS.updateDcState; // a conditional write at LOCAL_SERIAL
const read = STATEMENTS.readDcState; // a read at LOCAL_SERIAL

describe('errors of another copy of the driver', () => {
  it('are not the driver classes this package imports', () => {
    const error = foreign('ResponseError', 'timeout', { code: codes.writeTimeout });
    expect(error).not.toBeInstanceOf(cassandra.errors.ResponseError);
  });

  it('leave a conditional write whose round may have gone on with an unknown outcome', () => {
    for (const error of [
      foreign('ResponseError', 'Server timeout during write query', { code: codes.writeTimeout }),
      foreign('ResponseError', 'Not enough replicas', { code: codes.unavailableException }),
      foreign('OperationTimedOutError', 'The host did not reply before timeout 12000 ms'),
    ]) {
      expect(mapFailure(error, claim, 'claim a block', context)).toEqual({
        kind: 'unknown',
        cause: error,
      });
    }
  });

  it('map a refused or never-sent conditional write to a typed error, not to an unknown outcome', () => {
    const noHost = foreign('NoHostAvailableError', 'All host(s) tried for query failed', {
      innerErrors: { '10.0.0.1:9042': new Error('connection refused') },
    });
    const mapped = mapFailure(noHost, claim, 'claim a block', context);
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect((mapped as Error).message).toContain('10.0.0.1:9042: connection refused');
    const syntax = foreign('ResponseError', 'line 1: no viable alternative', {
      code: codes.syntaxError,
    });
    expect(mapFailure(syntax, claim, 'claim a block', context)).toBeInstanceOf(Error);
    expect(mapFailure(syntax, claim, 'claim a block', context)).not.toHaveProperty('kind');
    // A keyspace without per-DC placement refuses every write at EACH_QUORUM or LOCAL_SERIAL.
    const strategy = foreign(
      'ResponseError',
      'consistency level EACH_QUORUM not compatible with replication strategy (org.apache.cassandra.locator.SimpleStrategy)',
      { code: codes.invalid },
    );
    const refused = mapFailure(strategy, STATEMENTS.createSequence, 'create sequence', context);
    expect(refused).toBeInstanceOf(InvalidOptionError);
    expect(refused).toMatchObject({ option: 'keyspace', received: 'idgen' });
    expect((refused as Error).message).toContain('NetworkTopologyStrategy');
  });

  it('map failed reads to StoreUnavailableError naming the cause', () => {
    const cases: [Error, string][] = [
      [
        foreign('ResponseError', 'Server timeout during read query', { code: codes.readTimeout }),
        'read timed out',
      ],
      [
        foreign('ResponseError', 'Not enough replicas', { code: codes.unavailableException }),
        'not enough replicas alive',
      ],
      [foreign('OperationTimedOutError', 'no reply'), "no answer within the client's read timeout"],
      // seen in a campaign when every node of the DC was killed at once: the driver's read retry
      // broke too, and the call got a plain Error with no code
      [
        foreign('DriverError', 'Socket was closed', { isSocketError: true }),
        'the connection to the coordinator broke: Socket was closed',
      ],
      // A coordinator that could not take the request: another may, later.
      ...(
        [
          ['overloaded', 'Queue full'],
          ['isBootstrapping', 'Cannot read from a bootstrapping node'],
          ['serverError', 'java.lang.RuntimeException'],
        ] as const
      ).map(([name, text]): [Error, string] => [
        foreign('ResponseError', text, { code: codes[name] }),
        `the coordinator could not run it: ${text}`,
      ]),
    ];
    for (const [error, says] of cases) {
      const mapped = mapFailure(error, read, 'read DC state', context);
      expect(mapped).toBeInstanceOf(StoreUnavailableError);
      expect((mapped as Error).message).toContain(says);
      expect((mapped as StoreUnavailableError).code).toBe('IDGEN_STORE_UNAVAILABLE');
    }
  });

  it('map a missing permission to IDGEN_AUTH_FAILED naming what to grant', () => {
    const error = foreign('ResponseError', 'User svc has no SELECT permission on <table idgen.x>', {
      code: codes.unauthorized,
    });
    const mapped = mapFailure(error, read, 'read DC state', context);
    expect(mapped).toBeInstanceOf(IdGenError);
    expect(mapped).toMatchObject({ code: 'IDGEN_AUTH_FAILED' });
    expect((mapped as Error).message).toContain('Grant it SELECT and MODIFY on keyspace "idgen"');
  });

  it('say which failed reads were timeouts: contention or overload as often as a node down', () => {
    const serialRead = STATEMENTS.readGlobal;
    const cases: [Error, boolean][] = [
      [
        foreign('ResponseError', 'Server timeout during write query', { code: codes.writeTimeout }),
        true,
      ],
      [
        foreign('ResponseError', 'Server timeout during read query', { code: codes.readTimeout }),
        true,
      ],
      [foreign('OperationTimedOutError', 'no reply'), true],
      [
        foreign('ResponseError', 'Not enough replicas', { code: codes.unavailableException }),
        false,
      ],
      [foreign('NoHostAvailableError', 'All host(s) tried for query failed'), false],
      [foreign('DriverError', 'Socket was closed', { isSocketError: true }), false],
    ];
    for (const [error, timedOut] of cases) {
      const mapped = mapFailure(error, serialRead, 'read grants', context);
      expect(mapped).toBeInstanceOf(StoreUnavailableError);
      expect((mapped as StoreUnavailableError).timedOut).toBe(timedOut);
      expect((mapped as Error).message.includes('contending for one partition')).toBe(timedOut);
    }
  });

  it('word a SERIAL failure behind spent ranges by what it was: a timeout, or SERIAL unreachable', () => {
    const timedOut = mapFailure(
      foreign('ResponseError', 'Server timeout during write query at consistency SERIAL', {
        code: codes.writeTimeout,
      }),
      STATEMENTS.readGlobal,
      'read grants',
      context,
    );
    const refused = mapFailure(
      foreign('ResponseError', 'Not enough replicas', { code: codes.unavailableException }),
      STATEMENTS.readGlobal,
      'read grants',
      context,
    );
    const afterTimeout = new SerialUnavailableError('orders', 'dc1', 0n, { cause: timedOut });
    expect(afterTimeout.code).toBe('IDGEN_SERIAL_UNAVAILABLE');
    expect(afterTimeout.timedOut).toBe(true);
    expect(afterTimeout.message).toContain('SERIAL operations from DC "dc1" timed out');
    expect(afterTimeout.message).toContain('many processes ask for DC ranges at once');
    expect(afterTimeout.message).not.toContain('unreachable');
    const afterRefusal = new SerialUnavailableError('orders', 'dc1', 0n, { cause: refused });
    expect(afterRefusal.code).toBe('IDGEN_SERIAL_UNAVAILABLE');
    expect(afterRefusal.timedOut).toBe(false);
    expect(afterRefusal.message).toContain('SERIAL consistency is unreachable from DC "dc1"');
    expect(afterRefusal.message).toContain('and the DC has 0 IDs left');
    // A shard's processes reach SERIAL from its DC; the IDs left are the shard's.
    const fromShard = new SerialUnavailableError('orders', 'dc1/3', 7n, { cause: refused });
    expect(fromShard.dc).toBe('dc1/3');
    expect(fromShard.message).toContain(
      'SERIAL consistency is unreachable from DC "dc1", so no new DC range can be granted, and its shard "dc1/3" has 7 IDs left',
    );
    const shardTimedOut = new SerialUnavailableError('orders', 'dc1/3', 0n, { cause: timedOut });
    expect(shardTimedOut.message).toContain('SERIAL operations from DC "dc1" timed out');
  });

  it('map refused credentials at connect to IDGEN_AUTH_FAILED, also inside a NoHostAvailableError', () => {
    const refused = foreign('AuthenticationError', 'Authentication failed: bad username/password');
    const inside = foreign('NoHostAvailableError', 'All host(s) tried for query failed', {
      innerErrors: {
        '10.0.0.1:9042': foreign(
          'ResponseError',
          'Provided username svc and/or password are incorrect',
          {
            code: codes.badCredentials,
          },
        ),
      },
    });
    for (const error of [refused, inside]) {
      const mapped = connectError(error, ['10.0.0.1'], 'dc1');
      expect(mapped).toBeInstanceOf(AuthenticationError);
      expect((mapped as AuthenticationError).code).toBe('IDGEN_AUTH_FAILED');
      expect(mapped.message).toContain('10.0.0.1');
    }
    const down = connectError(
      foreign('NoHostAvailableError', 'All host(s) tried'),
      ['10.0.0.1'],
      'dc1',
    );
    expect(down).toBeInstanceOf(StoreUnavailableError);
  });
});
