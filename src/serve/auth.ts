/**
 * The optional bearer token of the ID endpoints (RFC 6750). The token is kept only as its
 * SHA-256 digest, and a presented token is compared digest to digest in constant time, so
 * neither its contents nor its length show in response times. It is never logged, and no
 * message names it.
 */

import { createHash, timingSafeEqual } from 'node:crypto';

import type { FastifyReply } from 'fastify';

import { InvalidOptionError } from '../errors.js';
import { ServeRefusal } from './http-errors.js';

/** RFC 6750's `b64token`: what a bearer token may hold. */
const B64_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** What a request's `Authorization` header says about the token. */
export type TokenCheck = 'ok' | 'missing' | 'invalid';

export class BearerToken {
  readonly #digest: Buffer;

  /**
   * @throws {InvalidOptionError} (option `token`) unless `token` is a non-empty RFC 6750 token;
   * the message gives its length, never its contents.
   */
  constructor(token: string) {
    if (typeof token !== 'string' || !B64_TOKEN.test(token)) {
      throw new InvalidOptionError(
        'token',
        typeof token === 'string' ? `(${token.length} characters, not shown)` : token,
        'a bearer token: letters, digits and - . _ ~ + / (then = padding only), at least one character',
      );
    }
    this.#digest = digest(token);
  }

  /** Whether `authorization` (the header's value, if any) carries this token. */
  check(authorization: string | undefined): TokenCheck {
    const match = authorization === undefined ? null : /^Bearer +(\S+) *$/i.exec(authorization);
    if (match === null) return 'missing';
    return timingSafeEqual(digest(match[1]!), this.#digest) ? 'ok' : 'invalid';
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The `onRequest` hook of the ID endpoints: without a `token` it lets every request through;
 * with one, a request without it is refused 401 `IDGEN_UNAUTHORIZED` with `WWW-Authenticate`.
 */
export function authenticate(token: BearerToken | undefined) {
  return async (
    request: { readonly headers: { readonly authorization?: string | undefined } },
    reply: FastifyReply,
  ): Promise<void> => {
    if (token === undefined) return;
    const check = token.check(request.headers.authorization);
    if (check === 'ok') return;
    reply.header(
      'WWW-Authenticate',
      check === 'missing'
        ? 'Bearer realm="idgen-cass"'
        : 'Bearer realm="idgen-cass", error="invalid_token"',
    );
    throw new ServeRefusal(
      'IDGEN_UNAUTHORIZED',
      check === 'missing'
        ? 'This endpoint needs the service\'s bearer token: send "Authorization: Bearer <token>".'
        : "The bearer token sent is not this service's token.",
    );
  };
}
