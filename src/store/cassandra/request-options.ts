/**
 * The execution options every statement is sent with, whatever the client's defaults say
 * (docs/design.md, "The client"), so a user's client brings nothing of its own to the protocol.
 */

import cassandra from 'cassandra-driver';

type OperationInfo = cassandra.policies.retry.OperationInfo;
type DecisionInfo = cassandra.policies.retry.DecisionInfo;

/**
 * Per-request timeout (ms): above Cassandra's cas_contention_timeout + write_request_timeout, so
 * the server's own answer normally arrives first, and well below a call's deadline, so a stalled
 * coordinator costs a call one timeout (then tried last: stalled-coordinators.ts).
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/** Conditional writes: the driver never resends them (a resend can report our own write as rejected). */
export const NEVER_RETRY = new cassandra.policies.retry.FallthroughRetryPolicy();

/**
 * Reads, serial ones included, are retried once on another coordinator after any timeout or
 * Unavailable: a read changes nothing (a serial read only finishes rounds already accepted).
 * `onRequestError` sees the client-side timeouts the retry hides (to mark the coordinator
 * stalled).
 */
export function retryReadsOnceElsewhere(
  onRequestError: (error: unknown) => void = () => undefined,
): cassandra.policies.retry.RetryPolicy {
  const policy = new cassandra.policies.retry.RetryPolicy();
  const once = (info: OperationInfo): DecisionInfo =>
    info.nbRetry < 1
      ? policy.retryResult(info.executionOptions.getConsistency(), false)
      : policy.rethrowResult();
  return Object.assign(policy, {
    onReadTimeout: once,
    onWriteTimeout: once,
    onUnavailable: once,
    onRequestError: (info: OperationInfo, _consistency: unknown, error: unknown): DecisionInfo => {
      onRequestError(error);
      return once(info);
    },
  });
}

/** {@link retryReadsOnceElsewhere} without a listener. */
export const RETRY_READS: cassandra.policies.retry.RetryPolicy = retryReadsOnceElsewhere();

/**
 * Rows per page, whatever the client's `fetchSize`; `onePage` reads (one snapshot only in one
 * page) get the most the native protocol allows.
 */
export const PAGE_ROWS = 5_000;
export const ONE_PAGE_ROWS = 2_147_483_647;

/**
 * The options of one request. Conditional writes are not idempotent to the driver (no
 * speculative execution, no resend after a timeout) and never retried; reads are idempotent
 * and retried once elsewhere.
 */
export function requestOptions(
  statement: { readonly consistency: number; readonly serial?: number; readonly onePage?: true },
  conditional: boolean,
  timeoutMs: number,
  retryReads: cassandra.policies.retry.RetryPolicy = RETRY_READS,
): cassandra.QueryOptions {
  return {
    prepare: true,
    consistency: statement.consistency,
    ...(statement.serial === undefined ? {} : { serialConsistency: statement.serial }),
    isIdempotent: !conditional,
    retry: conditional ? NEVER_RETRY : retryReads,
    readTimeout: timeoutMs,
    fetchSize: statement.onePage === true ? ONE_PAGE_ROWS : PAGE_ROWS,
    traceQuery: false,
  };
}
