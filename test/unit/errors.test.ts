import { describe, expect, it } from 'vitest';

import cassandra from 'cassandra-driver';

import {
  AbortedError,
  AuthenticationError,
  ClosedError,
  ContentionError,
  DeadlineError,
  DomainNeedsBigIntError,
  factsOf,
  IdGenError,
  InvalidCountError,
  InvalidNameError,
  InvalidOptionError,
  InvariantError,
  RETRYABLE,
  RETIRE_OPERATION,
  ALTER_OPERATION,
  SequenceExhaustedError,
  SequenceExistsError,
  SequenceNotFoundError,
  SequenceRecreatedError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
  UnsafeClusterError,
  type IdGenErrorCode,
} from '../../src/errors.js';
import { mapFailure } from '../../src/store/cassandra/errors.js';
import { STATEMENTS } from '../../src/store/cassandra/statements.js';

describe('IdGenError.retryable', () => {
  it('has a value for every code, and these values', () => {
    // Written out, not read back from the table: a code's value is public API.
    const expected = {
      IDGEN_STORE_UNAVAILABLE: true,
      IDGEN_SERIAL_UNAVAILABLE: true,
      IDGEN_DEADLINE_EXCEEDED: true,
      IDGEN_CONTENTION: true,
      IDGEN_INVALID_OPTION: false,
      IDGEN_INVALID_NAME: false,
      IDGEN_INVALID_COUNT: false,
      IDGEN_SEQUENCE_NOT_FOUND: false,
      IDGEN_SEQUENCE_EXISTS: false,
      IDGEN_SEQUENCE_EXHAUSTED: false,
      IDGEN_DOMAIN_NEEDS_BIGINT: false,
      IDGEN_INVARIANT_BROKEN: false,
      IDGEN_STATE_ROLLED_BACK: false,
      IDGEN_SEQUENCE_RECREATED: false,
      IDGEN_UNSAFE_CLUSTER: false,
      IDGEN_ABORTED: false,
      IDGEN_AUTH_FAILED: false,
      IDGEN_CLOSED: false,
    } satisfies Record<IdGenErrorCode, boolean>;
    expect(RETRYABLE).toEqual(expected);
    for (const [code, retryable] of Object.entries(expected)) {
      expect(new IdGenError(code as IdGenErrorCode, 'x').retryable).toBe(retryable);
    }
  });

  it('is set by every subclass from its code', () => {
    const unavailable = new StoreUnavailableError('local', 'read sequence', 'no host');
    expect(unavailable.retryable).toBe(true);
    expect(new SerialUnavailableError('orders', 'dc1', 0n, { cause: unavailable }).retryable).toBe(
      true,
    );
    expect(new DeadlineError('orders', 500).retryable).toBe(true);
    expect(new ContentionError('orders', 'claim a block', 5).retryable).toBe(true);

    expect(new InvalidOptionError('blockSize', 0, 'an integer from 1').retryable).toBe(false);
    expect(new SequenceNotFoundError('orders', 'idgen').retryable).toBe(false);
    expect(new SequenceExhaustedError('orders', 100n, 100n).retryable).toBe(false);
    expect(new StateRolledBackError('orders', 'dc1', 'version 3 after 4').retryable).toBe(false);
    expect(new AbortedError('orders').retryable).toBe(false);
    expect(new ClosedError().retryable).toBe(false);
    expect(new ClosedError('orders').retryable).toBe(false);
  });
});

/** Every kind of message the library writes, built as the library builds it. */
function libraryErrors(): IdGenError[] {
  const timedOut = new StoreUnavailableError('serial', 'grant a DC range', 'timed out', {
    timedOut: true,
  });
  const invalid = (message: string) =>
    mapFailure(
      Object.assign(new Error(message), {
        name: 'ResponseError',
        code: cassandra.types.responseErrorCodes.invalid,
      }),
      STATEMENTS.readSequence,
      'read sequence',
      { keyspace: 'idgen', localDc: 'dc1' },
    ) as IdGenError;
  return [
    new InvalidOptionError('blockSize', 0, 'an integer from 1 to 100'),
    new InvalidNameError('sequence', 'no way'),
    new InvalidCountError(11, 10, 'block'),
    new InvalidCountError(11, 10, 'maxBlock'),
    new InvalidCountError(11, 10, 'range'),
    new SequenceNotFoundError('orders', 'idgen'),
    new SequenceExistsError('orders', 'idgen'),
    new SequenceExistsError('orders', 'idgen', [], 'unknown'),
    new SequenceExistsError('orders', 'idgen', ['start 1 (asked 2)']),
    new SequenceExhaustedError('orders', 100n, 100n),
    new DomainNeedsBigIntError('orders', 2n ** 63n - 1n),
    new SerialUnavailableError('orders', 'dc1', 0n),
    new SerialUnavailableError('orders', 'dc1/3', 7n, { cause: timedOut }),
    timedOut,
    new AuthenticationError('10.0.0.1', 'bad credentials'),
    new InvariantError('orders', 'grant #2 of dc1 has no bounds'),
    new ContentionError('orders', ALTER_OPERATION, 5),
    new ContentionError('orders', RETIRE_OPERATION, 5),
    new ContentionError('orders', 'claim a block', 5),
    new StateRolledBackError('orders', 'dc1', 'version 3 after 4'),
    new SequenceRecreatedError('orders', 'no sequence of this name exists, but state rows do'),
    new UnsafeClusterError(['commitlog_sync periodic on a (dc1)'], '{ allowUnsafeCluster: true }'),
    new DeadlineError('orders', 500),
    new DeadlineError('orders', 500, { cause: new ContentionError('orders', 'claim', 5) }),
    new AbortedError('orders'),
    new ClosedError(),
    new ClosedError('orders'),
    invalid('unconfigured table idgen_grants'),
    invalid('Undefined column name incarnation'),
    invalid('replication_factor is not compatible with replication strategy'),
  ];
}

describe('library messages', () => {
  it('name calls, options and docs pages, never a CLI command or flag', () => {
    for (const error of libraryErrors()) {
      expect(error).toBeInstanceOf(IdGenError);
      expect(error.message, error.code).not.toContain('idgen-cass ');
      expect(error.message, error.code).not.toContain(' --');
    }
  });

  it("keep what happened apart from the advice, as the message's start", () => {
    let advised = 0;
    for (const error of libraryErrors()) {
      const facts = factsOf(error);
      if (facts === error.message) continue;
      advised++;
      expect(error.message.startsWith(`${facts} `), error.message).toBe(true);
      expect(facts, error.code).toMatch(/\.$/);
    }
    expect(advised).toBeGreaterThanOrEqual(10);
    // Not on the error itself: logs and JSON see the message only.
    const error = new SequenceNotFoundError('orders', 'idgen');
    expect(Object.values(error)).not.toContain(factsOf(error));
  });
});
