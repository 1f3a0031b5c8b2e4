/**
 * The ID endpoints: `POST /v1/sequences/{name}/ids` and `/ranges`. IDs are JSON numbers for
 * sequences whose domain ends at or below 2^53-1, strings for wider ones, and strings on request
 * (`?format=string`, `Accept: application/json; ids=string`).
 */

import type { FastifyInstance, FastifyReply } from 'fastify';

import { authenticate } from './auth.js';
import { ID_ROUTES, idsQuery, RANGES_QUERY, SEQUENCE_PARAMS, type IdFormat } from './openapi.js';
import type { ServeSettings } from './options.js';
import { decimalCount } from './request-refusals.js';
import type { RequestCall, ServedSequences } from './served-sequences.js';

/** The query of the ID endpoints once the schema has validated it (defaults filled in). */
interface IdQuery {
  readonly count: number;
  readonly format: IdFormat;
}

/** Registers the ID endpoints on `app`, behind the bearer token if `settings` has one. */
export function registerIdRoutes(
  app: FastifyInstance,
  served: ServedSequences,
  settings: ServeSettings,
): void {
  const hooks = { onRequest: authenticate(settings.token), preValidation: decimalCount(settings) };

  app.post<{ Params: { name: string }; Querystring: IdQuery }>(
    ID_ROUTES.ids,
    { schema: { params: SEQUENCE_PARAMS, querystring: idsQuery(settings) }, ...hooks },
    async (request, reply) => {
      const { name } = request.params;
      const strings = wantsStrings(request.query.format, request.headers.accept);
      const drawn = await served.draw(
        name,
        request.query.count,
        requestCall(reply, settings.timeoutMs),
      );
      return {
        sequence: name,
        ids: drawn.wide || strings ? drawn.ids.map(String) : drawn.ids,
      };
    },
  );

  app.post<{ Params: { name: string }; Querystring: IdQuery }>(
    ID_ROUTES.ranges,
    { schema: { params: SEQUENCE_PARAMS, querystring: RANGES_QUERY }, ...hooks },
    async (request, reply) => {
      const { name } = request.params;
      const { count } = request.query;
      const strings = wantsStrings(request.query.format, request.headers.accept);
      const { wide, range } = await served.take(
        name,
        count,
        requestCall(reply, settings.timeoutMs),
      );
      const id = (value: number | bigint) => (wide || strings ? String(value) : value);
      return { sequence: name, first: id(range.first), last: id(range.last), count };
    },
  );
}

/**
 * The budget of the request `reply` answers: `timeoutMs` from now, cancelled when the caller
 * hangs up, and `delivered` once its response is written in full or its connection closed first.
 */
function requestCall(reply: FastifyReply, timeoutMs: number): RequestCall {
  const controller = new AbortController();
  // A caller that hangs up stops waiting for IDs nobody would read, and gets none of the IDs
  // held. The listener comes only with the handler: a caller that hung up earlier (during
  // authentication, validation or a busy event loop) closed the response already, and its
  // 'close' event is past.
  const hungUp = () => controller.abort(new Error('the client closed the connection'));
  // The response's 'close' comes once it is written in full ('finish' first) or its connection
  // closed before: IDs drawn for a response that was not written reached nobody, and are
  // counted as undelivered, not issued (Sequence.nextIds). Written in full means handed to the
  // kernel: what happens to the bytes after that, no server can tell. 'finish' as well as
  // writableFinished, since inject()'s responses have no socket and only emit the event.
  let delivered: Promise<boolean>;
  if (reply.raw.destroyed) {
    hungUp();
    delivered = Promise.resolve(false);
  } else {
    let finished = false;
    reply.raw.once('finish', () => (finished = true));
    delivered = new Promise((resolve) => {
      reply.raw.once('close', () => {
        finished ||= reply.raw.writableFinished;
        if (!finished) hungUp();
        resolve(finished);
      });
    });
  }
  return {
    timeoutMs,
    deadline: Date.now() + timeoutMs,
    signal: controller.signal,
    delivered,
  };
}

/**
 * Whether IDs go out as strings: on request (`format=string`, or the media type parameter
 * `ids=string` of `application/json` in `Accept`).
 */
function wantsStrings(format: IdFormat, accept: string | undefined): boolean {
  if (format === 'string') return true;
  return (
    accept !== undefined &&
    /(?:^|,)\s*application\/json\s*;[^,]*\bids\s*=\s*"?string"?/i.test(accept)
  );
}
