/** What the service logs of a request: never the token, nor text a client chose in a URL. */

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type * as Fastify from 'fastify';
import type { Logger as PinoLogger } from 'pino';

import { fastifyModule } from '../lazy-modules.js';
import { ID_FORMATS } from './openapi.js';
import type { ServedSequences } from './served-sequences.js';

/** Log fields that could hold the token: the header, and a parser error's raw bytes. */
const REDACTED = [
  'req.headers.authorization',
  '*.headers.authorization',
  'headers.authorization',
  'rawPacket',
  '*.rawPacket',
  '*.cause.rawPacket',
];

/** Typed as fastify's logger, so that the instance is a plain FastifyInstance. */
export function serviceLogger(logger: PinoLogger | undefined): FastifyBaseLogger | undefined {
  return logger?.child(
    { component: 'serve' },
    { redact: { paths: REDACTED, censor: '[redacted]' } },
  );
}

const HIDDEN = '…';
const SHOWN_PAIR = new RegExp(`^(?:count=[0-9]{1,16}|format=(?:${ID_FORMATS.join('|')}))$`);

/** The URL as a log line shows it: text a client chose (maybe a token) is `…` unless valid. */
function loggedUrl(request: FastifyRequest, served: ServedSequences): string {
  const route = request.routeOptions.url;
  const name = (request.params as { name?: unknown } | undefined)?.name;
  const shownName = typeof name === 'string' && served.isKnown(name) ? name : HIDDEN;
  const path = route === undefined ? HIDDEN : route.replace(':name', shownName);
  const at = request.url.indexOf('?');
  if (at < 0) return path;
  // Another parameter's name may be the secret itself (`?<token>`): neither is shown.
  const query = request.url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      if (SHOWN_PAIR.test(pair)) return pair;
      const key = /^(count|format)(?:=|$)/.exec(pair)?.[1];
      return key === undefined ? HIDDEN : `${key}=${HIDDEN}`;
    });
  return `${path}?${query.join('&')}`;
}

/** fastify's request log lines at debug (at info they drown the rest), with {@link loggedUrl}. */
export function debugRequestLogs(
  served: ServedSequences,
): InstanceType<typeof Fastify.LogController> {
  class DebugRequestLogs extends fastifyModule().LogController {
    override incomingRequest(request: FastifyRequest): void {
      request.log.debug(
        { method: request.method, url: loggedUrl(request, served), remoteAddress: request.ip },
        'incoming request',
      );
    }

    override requestCompleted(
      _error: unknown,
      _request: FastifyRequest,
      reply: FastifyReply,
    ): void {
      reply.log.debug(
        { statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request completed',
      );
    }

    // fastify's own line carries the request, URL included.
    override writeHeadError(error: unknown, _request: FastifyRequest, reply: FastifyReply): void {
      reply.log.warn({ err: error, statusCode: reply.statusCode }, 'writing the response failed');
    }
  }
  return new DebugRequestLogs();
}
