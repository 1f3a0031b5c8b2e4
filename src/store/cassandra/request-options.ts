/** Every statement's execution options, whatever the client's (docs/design.md, "The client"). */

import cassandra from 'cassandra-driver';

type OperationInfo = cassandra.policies.retry.OperationInfo;
type DecisionInfo = cassandra.policies.retry.DecisionInfo;

/** Above Cassandra's CAS timeout, so its answer comes first; well below a call's deadline. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/** For conditional writes: a resend can report our own write as rejected. */
export const NEVER_RETRY = new cassandra.policies.retry.FallthroughRetryPolicy();

/**
 * Retries a read (it changes nothing) once on another coordinator after a timeout or Unavailable;
 * `onRequestError` sees the client-side timeouts the retry hides.
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

export const RETRY_READS: cassandra.policies.retry.RetryPolicy = retryReadsOnceElsewhere();

/** Rows per page, whatever the client's `fetchSize`; `onePage` reads get the protocol's most. */
export const PAGE_ROWS = 5_000;
export const ONE_PAGE_ROWS = 2_147_483_647;

/** Conditional writes are never speculated, resent or retried; reads are retried once. */
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
