/**
 * The optional bearer token of the ID endpoints (RFC 6750), kept only as its SHA-256 digest and
 * compared digest to digest in constant time, so neither contents nor length show in response
 * times. No log line or message names it.
 */

import { createHash, timingSafeEqual } from 'node:crypto';

import type { FastifyReply } from 'fastify';

import { InvalidOptionError } from '../errors.js';
import { ServeRefusal } from './http-errors.js';

/** RFC 6750's `b64token`. */
const B64_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

export class BearerToken {
  readonly #digest: Buffer;

  /** @throws {InvalidOptionError} (option `token`), giving its length, never its contents. */
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

  /** Whether the `Authorization` header's value carries this token. */
  check(authorization: string | undefined): 'ok' | 'missing' | 'invalid' {
    const match = authorization === undefined ? null : /^Bearer +(\S+) *$/i.exec(authorization);
    if (match === null) return 'missing';
    return timingSafeEqual(digest(match[1]!), this.#digest) ? 'ok' : 'invalid';
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The ID endpoints' `onRequest` hook: 401 `IDGEN_UNAUTHORIZED` without the `token` if any. */
export function authenticate(token: BearerToken | undefined) {
  return async (
    request: { readonly headers: { readonly authorization?: string | undefined } },
    reply: FastifyReply,
  ): Promise<void> => {
    if (token === undefined) return;
    const check = token.check(request.headers.authorization);
    if (check === 'ok') return;
    if (check === 'missing') {
      reply.header('WWW-Authenticate', 'Bearer realm="idgen-cass"');
      throw new ServeRefusal(
        'IDGEN_UNAUTHORIZED',
        'This endpoint needs the service\'s bearer token: send "Authorization: Bearer <token>".',
      );
    }
    reply.header('WWW-Authenticate', 'Bearer realm="idgen-cass", error="invalid_token"');
    throw new ServeRefusal(
      'IDGEN_UNAUTHORIZED',
      "The bearer token sent is not this service's token.",
    );
  };
}
