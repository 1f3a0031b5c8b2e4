/**
 * How the service answers a failure: a JSON body `{ "code", "message" }` with a stable code, a
 * status per code, and `Retry-After` where waiting helps.
 */

import type { FastifyReply, FastifyRequest } from 'fastify';

import { IdGenError, type IdGenErrorCode } from '../errors.js';

/** The codes of refusals made by the HTTP layer itself (docs/service.md, "Status codes"). */
export type ServeRefusalCode =
  | 'IDGEN_UNAUTHORIZED'
  | 'IDGEN_SEQUENCE_NOT_SERVED'
  | 'IDGEN_NOT_FOUND'
  | 'IDGEN_BAD_REQUEST'
  | 'IDGEN_OVERLOADED'
  | 'IDGEN_INTERNAL';

/** Every `code` an error body of the service can carry; part of the public API. */
export type ServeErrorCode = IdGenErrorCode | ServeRefusalCode;

/** The JSON body of every error response. */
export interface ServeErrorBody {
  readonly code: ServeErrorCode;
  readonly message: string;
}

interface HttpAnswer {
  readonly status: number;
  /** Only where the same request can succeed without anyone acting. */
  readonly retryAfterSeconds?: number;
}

/**
 * The answer to every code (a new code must be added here to compile); 500 for what an operator
 * must repair and for codes no request can cause.
 */
export const HTTP_ANSWERS: Readonly<Record<ServeErrorCode, HttpAnswer>> = Object.freeze({
  IDGEN_INVALID_NAME: { status: 400 },
  IDGEN_INVALID_COUNT: { status: 400 },
  IDGEN_BAD_REQUEST: { status: 400 },
  IDGEN_UNAUTHORIZED: { status: 401 },
  IDGEN_SEQUENCE_NOT_FOUND: { status: 404 },
  IDGEN_SEQUENCE_NOT_SERVED: { status: 404 },
  IDGEN_NOT_FOUND: { status: 404 },
  IDGEN_SEQUENCE_EXHAUSTED: { status: 410 },
  IDGEN_SEQUENCE_EXISTS: { status: 409 },
  IDGEN_STORE_UNAVAILABLE: { status: 503, retryAfterSeconds: 1 },
  IDGEN_SERIAL_UNAVAILABLE: { status: 503, retryAfterSeconds: 5 },
  IDGEN_DEADLINE_EXCEEDED: { status: 503, retryAfterSeconds: 1 },
  IDGEN_CONTENTION: { status: 503, retryAfterSeconds: 1 },
  IDGEN_CLOSED: { status: 503, retryAfterSeconds: 1 },
  IDGEN_OVERLOADED: { status: 503, retryAfterSeconds: 1 },
  // A refill refused while a node of the DC is unsafe: the durability watch rechecks each minute.
  IDGEN_UNSAFE_CLUSTER: { status: 503, retryAfterSeconds: 30 },
  IDGEN_ABORTED: { status: 499 },
  IDGEN_INVARIANT_BROKEN: { status: 500 },
  IDGEN_STATE_ROLLED_BACK: { status: 500 },
  IDGEN_SEQUENCE_RECREATED: { status: 500 },
  IDGEN_DOMAIN_NEEDS_BIGINT: { status: 500 },
  IDGEN_INVALID_OPTION: { status: 500 },
  IDGEN_AUTH_FAILED: { status: 500 },
  IDGEN_INTERNAL: { status: 500 },
});

/** A request the HTTP layer refuses itself, with its own code or the library's. */
export class ServeRefusal extends Error {
  constructor(
    readonly code: ServeErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ServeRefusal';
  }
}

/** The answer to `error`; an unexpected one is a 500 whose detail stays in the log. */
export function httpErrorOf(error: unknown): HttpAnswer & { readonly body: ServeErrorBody } {
  if (error instanceof IdGenError || error instanceof ServeRefusal) {
    return { ...HTTP_ANSWERS[error.code], body: { code: error.code, message: error.message } };
  }
  const message =
    "Internal error of the idgen-cass service; the request got no IDs. The service's log has the details.";
  return { status: 500, body: { code: 'IDGEN_INTERNAL', message } };
}

export function sendError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const { status, retryAfterSeconds, body } = httpErrorOf(error);
  if (status === 500) request.log.error({ err: error }, 'request failed');
  // The code, not the message: a refusal may repeat a secret the client sent.
  else request.log.debug({ code: body.code, statusCode: status }, 'request refused');
  if (retryAfterSeconds !== undefined) reply.header('Retry-After', String(retryAfterSeconds));
  return reply.code(status).send(body);
}
