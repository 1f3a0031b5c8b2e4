/** The ID endpoints: `POST /v1/sequences/{name}/ids` and `/ranges`. */

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { authenticate } from './auth.js';
import { ID_ROUTES, idsQuery, RANGES_QUERY, SEQUENCE_PARAMS, type IdFormat } from './openapi.js';
import type { ServeSettings } from './options.js';
import { decimalCount } from './request-refusals.js';
import type { RequestCall, ServedSequences } from './served-sequences.js';

interface IdRequest {
  Params: { readonly name: string };
  Querystring: { readonly count: number; readonly format: IdFormat };
}

export function registerIdRoutes(
  app: FastifyInstance,
  served: ServedSequences,
  settings: ServeSettings,
): void {
  const hooks = { onRequest: authenticate(settings.tokens), preValidation: decimalCount(settings) };

  app.post<IdRequest>(
    ID_ROUTES.ids,
    { schema: { params: SEQUENCE_PARAMS, querystring: idsQuery(settings) }, ...hooks },
    async (request, reply) => {
      const { name } = request.params;
      const call = requestCall(reply, settings.timeoutMs);
      return served.serve(name, call, async (sequence, options, wide) => {
        // nextIds() looks at the signal before each ID, the first included.
        const ids = await sequence.nextIds(request.query.count, options, call.delivered);
        return { sequence: name, ids: ids.map(idWriter(wide, request)) };
      });
    },
  );

  app.post<IdRequest>(
    ID_ROUTES.ranges,
    { schema: { params: SEQUENCE_PARAMS, querystring: RANGES_QUERY }, ...hooks },
    async (request, reply) => {
      const { name } = request.params;
      const { count } = request.query;
      const call = requestCall(reply, settings.timeoutMs);
      return served.serve(name, call, async (sequence, options, wide) => {
        // take() looks at the signal after each of its waits, before it takes IDs.
        const { first, last } = await sequence.takeDelivered(count, options, call.delivered);
        const id = idWriter(wide, request);
        return { sequence: name, first: id(first), last: id(last), count };
      });
    },
  );
}

/** The budget of the request `reply` answers, cancelled when the caller hangs up. */
function requestCall(reply: FastifyReply, timeoutMs: number): RequestCall {
  const controller = new AbortController();
  // A caller that hangs up stops waiting for IDs nobody would read.
  const hungUp = () => controller.abort(new Error('the client closed the connection'));
  let delivered: Promise<boolean>;
  if (reply.raw.destroyed) {
    // It hung up before the handler ran: its 'close' event is past.
    hungUp();
    delivered = Promise.resolve(false);
  } else {
    // 'close' comes once the response is handed to the kernel ('finish' first) or its connection
    // closed before. 'finish' as well as writableFinished: inject()'s responses have no socket.
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
  return { timeoutMs, deadline: Date.now() + timeoutMs, signal: controller.signal, delivered };
}

/**
 * How IDs of `request` are written: strings for a wide sequence and on request (`?format=string`,
 * `Accept: application/json; ids=string`), else numbers.
 */
function idWriter(wide: boolean, request: FastifyRequest<IdRequest>) {
  const strings =
    wide ||
    request.query.format === 'string' ||
    /(?:^|,)\s*application\/json\s*;[^,]*\bids\s*=\s*"?string"?/i.test(
      request.headers.accept ?? '',
    );
  return (id: number | bigint) => (strings ? String(id) : id);
}
