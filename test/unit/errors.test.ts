import { describe, expect, it } from 'vitest';

import {
  AbortedError,
  ClosedError,
  ContentionError,
  DeadlineError,
  IdGenError,
  InvalidOptionError,
  RETRYABLE,
  SequenceExhaustedError,
  SequenceNotFoundError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
  type IdGenErrorCode,
} from '../../src/errors.js';

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
