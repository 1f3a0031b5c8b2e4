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

/** The digests of the tokens accepted now; `log` hears when a token file changed. */
export type TokenSource = (log: FastifyBaseLogger) => readonly Buffer[];

/**
 * Tokens given at start (`token`, `tokens`).
 * @throws {InvalidOptionError} naming `option`, giving a token's length, never its contents.
 */
export function fixedTokens(tokens: readonly unknown[], option: string): TokenSource {
  if (tokens.length === 0) {
    throw new InvalidOptionError(option, '(no token)', `at least one token, each ${TOKEN_RULE}`);
  }
  const digests = tokens.map((token) => {
    if (typeof token !== 'string' || !B64_TOKEN.test(token)) {
      const shown = typeof token === 'string' ? `(${token.length} characters, not shown)` : token;
      throw new InvalidOptionError(option, shown, TOKEN_RULE);
    }
    return digest(token);
  });
  return () => digests;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The tokens of a file, one per line (blank lines skipped), re-read when a `stat` per check shows
 * it changed (inode, size, mtime or ctime, so an atomic rename and a Kubernetes secret update
 * count). A version that cannot be read or holds no valid token leaves the tokens as they were;
 * it is logged once, with its reason, never its contents.
 * @throws {InvalidOptionError} (option `tokenFile`) when the file is unreadable or invalid.
 */
export function tokenFile(path: string): TokenSource {
  let current = readTokens(path);
  let version = versionOf(path);
  return (log) => {
    const now = versionOf(path);
    if (now === version) return current(log);
    version = now;
    try {
      current = readTokens(path);
      log.info('token file changed: its tokens are accepted, the previous ones no longer');
    } catch (error) {
      const reason = error instanceof InvalidOptionError ? error.message : String(error);
      log.warn({ reason }, 'token file changed but cannot be used: the previous tokens still hold');
    }
    return current(log);
  };
}

function versionOf(path: string): string {
  try {
    const { ino, size, mtimeMs, ctimeMs } = statSync(path);
    return `${ino}:${size}:${mtimeMs}:${ctimeMs}`;
  } catch (error) {
    return `unreadable: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

function readTokens(path: string): TokenSource {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new InvalidOptionError('tokenFile', path, `a readable file (${reason})`);
  }
  const lines = text.split('\n').map((line) => line.trim());
  return fixedTokens(lines.filter(Boolean), 'tokenFile');
}

/**
 * The `onRequest` hook of the routes behind the tokens: 401 `IDGEN_UNAUTHORIZED` without an
 * accepted one; every request passes when `tokens` is undefined.
 */
export function authenticate(tokens: TokenSource | undefined) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (tokens === undefined) return;
    const accepted = tokens(request.log);
    const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
    if (match !== null) {
      const sent = digest(match[1]!);
      let found = false;
      for (const token of accepted) found = timingSafeEqual(sent, token) || found;
      if (found) return;
    }
    reply.header(
      'WWW-Authenticate',
      `Bearer realm="idgen-cass"${match === null ? '' : ', error="invalid_token"'}`,
    );
    throw new ServeRefusal(
      'IDGEN_UNAUTHORIZED',
      match === null
        ? 'This endpoint needs one of the service\'s bearer tokens: send "Authorization: Bearer <token>".'
        : 'The bearer token sent is not one this service accepts.',
    );
  };
}
