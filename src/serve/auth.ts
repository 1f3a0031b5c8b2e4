/**
 * The bearer tokens the service accepts (RFC 6750), given as options or a file re-read when it
 * changes; several at once, so a token rotates without a gap. Each is kept as its SHA-256 digest,
 * all compared in constant time, so neither contents, length nor position show in response times.
 * No log line or message names a token.
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';

import { InvalidOptionError } from '../errors.js';
import { ServeRefusal } from './http-errors.js';

/** RFC 6750's `b64token`. */
const B64_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

const TOKEN_RULE =
  'a bearer token: letters, digits and - . _ ~ + / (then = padding only), at least one character';

type Check = 'ok' | 'missing' | 'invalid';

/** Whether an `Authorization` header carries an accepted token: fixed at start, or a file. */
export interface TokenSource {
  check(authorization: string | undefined, log: FastifyBaseLogger): Check;
}

/** Tokens given at start (`token`, `tokens`). */
export class FixedTokens implements TokenSource {
  readonly #digests: readonly Buffer[];

  /** @throws {InvalidOptionError} naming `option`, giving a token's length, never its contents. */
  constructor(tokens: readonly unknown[], option: string) {
    if (tokens.length === 0) {
      throw new InvalidOptionError(option, '(no token)', `at least one token, each ${TOKEN_RULE}`);
    }
    this.#digests = tokens.map((token) => {
      if (typeof token !== 'string' || !B64_TOKEN.test(token)) {
        const shown = typeof token === 'string' ? `(${token.length} characters, not shown)` : token;
        throw new InvalidOptionError(option, shown, TOKEN_RULE);
      }
      return digest(token);
    });
  }

  check(authorization: string | undefined): Check {
    const match = authorization === undefined ? null : /^Bearer +(\S+) *$/i.exec(authorization);
    if (match === null) return 'missing';
    const sent = digest(match[1]!);
    let found = false;
    for (const accepted of this.#digests) found = timingSafeEqual(sent, accepted) || found;
    return found ? 'ok' : 'invalid';
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The tokens of a file, one per line (blank lines skipped), re-read when a `stat` per check shows
 * it changed (inode, size, mtime or ctime, so an atomic rename and a Kubernetes secret update
 * count). A version that cannot be read or holds no valid token leaves the tokens as they were;
 * it is logged once, with its reason, never its contents.
 */
export class TokenFile implements TokenSource {
  readonly #path: string;
  #digests: FixedTokens;
  #version: string;

  /** @throws {InvalidOptionError} (option `tokenFile`) when the file is unreadable or invalid. */
  constructor(path: string) {
    this.#path = path;
    this.#digests = this.#read();
    this.#version = this.#stat();
  }

  check(authorization: string | undefined, log: FastifyBaseLogger): Check {
    this.#reload(log);
    return this.#digests.check(authorization);
  }

  #reload(log: FastifyBaseLogger): void {
    const version = this.#stat();
    if (version === this.#version) return;
    this.#version = version;
    try {
      this.#digests = this.#read();
      log.info('token file changed: its tokens are accepted, the previous ones no longer');
    } catch (error) {
      const reason = error instanceof InvalidOptionError ? error.message : String(error);
      log.warn({ reason }, 'token file changed but cannot be used: the previous tokens still hold');
    }
  }

  #stat(): string {
    try {
      const { ino, size, mtimeMs, ctimeMs } = statSync(this.#path);
      return `${ino}:${size}:${mtimeMs}:${ctimeMs}`;
    } catch (error) {
      return `unreadable: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
    }
  }

  #read(): FixedTokens {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new InvalidOptionError('tokenFile', this.#path, `a readable file (${reason})`);
    }
    const lines = text.split('\n').map((line) => line.trim());
    return new FixedTokens(lines.filter(Boolean), 'tokenFile');
  }
}

/**
 * The `onRequest` hook of the routes behind the tokens: 401 `IDGEN_UNAUTHORIZED` without an
 * accepted one; every request passes when `tokens` is undefined.
 */
export function authenticate(tokens: TokenSource | undefined) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (tokens === undefined) return;
    const check = tokens.check(request.headers.authorization, request.log);
    if (check === 'ok') return;
    const missing = check === 'missing';
    const error = missing ? '' : ', error="invalid_token"';
    reply.header('WWW-Authenticate', `Bearer realm="idgen-cass"${error}`);
    throw new ServeRefusal(
      'IDGEN_UNAUTHORIZED',
      missing
        ? 'This endpoint needs one of the service\'s bearer tokens: send "Authorization: Bearer <token>".'
        : 'The bearer token sent is not one this service accepts.',
    );
  };
}
