/**
 * Requests refused before a handler runs (by Node's HTTP parser, fastify's router or a schema),
 * answered like every other refusal, with the library's code where there is one.
 */

import type { Socket } from 'node:net';

import type { ConnectionError, FastifyError, FastifyInstance, FastifyRequest } from 'fastify';

import { InvalidNameError } from '../errors.js';
import { NAME_RULES } from '../names.js';
import { ServeRefusal } from './http-errors.js';
import { ID_ROUTES, RANGES_QUERY, type ApiLimits } from './openapi.js';

/** The ID endpoints' `preValidation`: only decimal digits are a count (not `1e2`, `0x10`). */
export function decimalCount(limits: ApiLimits) {
  return async (request: FastifyRequest): Promise<void> => {
    const count = (request.query as Record<string, unknown> | undefined)?.['count'];
    if (typeof count === 'string' && !/^[0-9]+$/.test(count)) {
      throw countRefusal(request, limits, false);
    }
  };
}

/** The refusal for a schema violation or a body fastify could not read; undefined for others. */
export function requestRefusal(
  error: FastifyError,
  request: FastifyRequest,
  limits: ApiLimits,
): ServeRefusal | undefined {
  const failed = error.validation?.[0];
  if (failed !== undefined) {
    const details: Record<string, unknown> = failed.params;
    // Only the ID endpoints refuse unknown parameters; both take the same ones.
    if (failed.keyword === 'additionalProperties') {
      return new ServeRefusal(
        'IDGEN_BAD_REQUEST',
        `Unknown query parameter "${String(details['additionalProperty'])}": this endpoint takes ${Object.keys(RANGES_QUERY.properties).join(' and ')}.`,
      );
    }
    const field =
      failed.instancePath.replace(/^\//, '') || String(details['missingProperty'] ?? '');
    const allowed = details['allowedValues'];
    if (failed.keyword === 'enum' && Array.isArray(allowed)) {
      const given = (request.query as Record<string, unknown> | undefined)?.[field];
      return new ServeRefusal(
        'IDGEN_BAD_REQUEST',
        `Invalid ${field} ${JSON.stringify(given)}: one of ${allowed.join(', ')}.`,
      );
    }
    if (error.validationContext === 'params' && field === 'name') {
      const name = (request.params as { name?: unknown } | undefined)?.name;
      return new ServeRefusal('IDGEN_INVALID_NAME', new InvalidNameError('sequence', name).message);
    }
    if (field === 'count') return countRefusal(request, limits, failed.keyword === 'required');
    return new ServeRefusal(
      'IDGEN_BAD_REQUEST',
      `Invalid ${field || error.validationContext || 'request'}: ${failed.message ?? 'not allowed'}.`,
    );
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ServeRefusal('IDGEN_BAD_REQUEST', error.message);
  }
  return undefined;
}

function countRefusal(request: FastifyRequest, limits: ApiLimits, missing: boolean) {
  const allowed =
    request.routeOptions.url === ID_ROUTES.ids
      ? `an integer from 1 to ${limits.maxIdsPerRequest}`
      : "an integer from 1 to the sequence's largest block size (maxBlockSize)";
  return new ServeRefusal(
    'IDGEN_INVALID_COUNT',
    missing ? `Missing count: add ?count=N, ${allowed}.` : `Invalid count: ${allowed}.`,
  );
}

/** The refusal for a path the router turned away; its only parameter is the sequence name. */
export function frameworkRefusal(error: FastifyError): ServeRefusal {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    const message = `Invalid sequence name (over 100 characters): ${NAME_RULES.sequence.rule}.`;
    return new ServeRefusal('IDGEN_INVALID_NAME', message);
  }
  const badUrl =
    'Invalid URL: its path has a malformed %-escape; encode each reserved character as %XX.';
  return new ServeRefusal(
    'IDGEN_BAD_REQUEST',
    error.code === 'FST_ERR_BAD_URL' ? badUrl : error.message,
  );
}

/** Answers a request Node's HTTP parser refused; logs its code only (raw bytes hold the token). */
export function clientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code = typeof error.code === 'string' ? error.code : undefined;
  this.log.debug(
    { code: 'IDGEN_BAD_REQUEST', statusCode: 400, parserCode: code },
    'request refused',
  );
  if (socket.writable) {
    const message = `Invalid HTTP request: ${PARSER_REFUSALS[code ?? ''] ?? PARSER_REFUSALS['']}.`;
    const text = JSON.stringify({ code: 'IDGEN_BAD_REQUEST', message });
    socket.write(
      'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}

const PARSER_REFUSALS: Readonly<Record<string, string>> = {
  HPE_HEADER_OVERFLOW: 'its headers are larger than the server accepts',
  ERR_HTTP_REQUEST_TIMEOUT: 'it was not received in full within the time allowed',
  '': 'it is not well-formed HTTP/1.1 (a header name or value, say, holds a character HTTP does not allow)',
};
