/**
 * The execution options every statement is sent with, whatever the client's defaults, execution
 * profiles or policies say (docs/design.md, "The client"): its own consistency levels, its
 * idempotence, a retry policy and a timeout. A client the user passes in so brings nothing of its
 * own to the protocol.
 */

import cassandra from 'cassandra-driver';

type OperationInfo = cassandra.policies.retry.OperationInfo;
type DecisionInfo = cassandra.policies.retry.DecisionInfo;

/**
 * Per-request timeout (ms) of the protocol's statements unless the store is told otherwise:
 * above Cassandra's cas_contention_timeout + write_request_timeout (1 s + 2 s by default), so
 * that the server's own answer (even a timeout) normally arrives first, and well below a call's
 * deadline (10 s by default), so that a coordinator that stalls (a paused node) costs a call
 * one timeout and is then tried last (stalled-coordinators.ts) instead of holding the call
 * until its deadline.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/** Conditional writes: the driver never resends them (a resend can report our own write as rejected). */
export const NEVER_RETRY = new cassandra.policies.retry.FallthroughRetryPolicy();

/**
 * Reads, serial ones included, are retried once on another coordinator after any timeout or
 * Unavailable: a read changes nothing (a serial read's Paxos round only finishes rounds already
 * accepted), and a paused or overloaded coordinator should not fail the call. A serial read's
 * own Paxos round that times out on contention is reported as a CAS write timeout.
 * `onRequestError` sees the client-side timeouts the retry hides from the caller (to mark the
 * coordinator stalled).
 */
export function retryReadsOnceElsewhere(
  onRequestError: (error: unknown) => void = () => undefined,
): cassandra.policies.retry.RetryPolicy {
  const policy = new cassandra.policies.retry.RetryPolicy();
  // Whatever failed (read or write timeout, Unavailable, a request error), the same answer: the
  // same consistency, on the next host of the query plan, once.
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
 * Rows per page of a read, set here so that a client's own `fetchSize` does not change how the
 * protocol's reads are split: the driver's default, and for reads that must come whole
 * (`onePage`: `check`'s SERIAL read of the grants is one snapshot only in one page) the most the
 * native protocol allows.
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
