/** `createServer()`: the HTTP service around one connected {@link IdGen}, and its lifecycle. */

import type { FastifyError, FastifyInstance } from 'fastify';

import type { IdGen } from '../allocator/id-gen.js';
import { fastifyModule } from '../lazy-modules.js';
import { authenticate } from './auth.js';
import { sendError, ServeRefusal } from './http-errors.js';
import { registerIdRoutes } from './id-routes.js';
import { openApiDocument } from './openapi.js';
import { resolveServeOptions, type ServeOptions } from './options.js';
import { registerHealthRoutes } from './readiness.js';
import { debugRequestLogs, serviceLogger } from './request-logs.js';
import { clientError, frameworkRefusal, requestRefusal } from './request-refusals.js';
import { ServedSequences } from './served-sequences.js';
import { latestReport, statusPage } from './status-page.js';

/**
 * The HTTP service over `ids`, an allocator connected to its DC (docs/service.md). The server
 * does not own `ids`: close the server (requests in flight finish), then `ids`.
 *
 * @example
 * ```ts
 * const ids = await connect({ contactPoints: ['10.0.0.1'], localDataCenter: 'dc1', keyspace: 'idgen' });
 * const server = createServer(ids, { sequences: ['orders'], token: process.env.IDGEN_SERVE_TOKEN });
 * await server.listen({ host: '0.0.0.0', port: 8080 });
 * process.once('SIGTERM', async () => {
 *   await server.close(); // in-flight requests finish
 *   await ids.close(); // unused IDs go back to the DC
 * });
 * ```
 * @throws {InvalidOptionError} for a bad option (the token's contents are never in the message).
 * @throws {InvalidNameError} for a bad name in `sequences`.
 */
export function createServer(ids: IdGen, options: ServeOptions = {}): FastifyInstance {
  const settings = resolveServeOptions(options);
  const served = new ServedSequences(ids, settings.sequences, settings.maxPendingRequests);
  const document = openApiDocument(settings);
  const loggerInstance = serviceLogger(settings.logger);
  // A client that sends a request slowly, or nothing, is cut off (docs/service.md, "Limits").
  const { tls, receiveTimeoutMs } = settings;
  const server = { connectionsCheckingInterval: 1_000, headersTimeout: receiveTimeoutMs };
  const app = fastifyModule().fastify({
    ...(tls === undefined ? { http: server } : { https: { ...server, ...tls } }),
    requestTimeout: receiveTimeoutMs,
    ...(loggerInstance === undefined ? { logger: false } : { loggerInstance }),
    logController: debugRequestLogs(served),
    // Requests arriving on open connections once close() began are served while `ids` is open.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // Small bodies are ignored, larger ones refused (docs/service.md).
    bodyLimit: 1024,
    // Refuse unknown query parameters, so a misspelt one does not get the default.
    ajv: { customOptions: { removeAdditional: false } },
    frameworkErrors: (error, request, reply) => sendError(frameworkRefusal(error), request, reply),
    // fastify's own would log the raw request bytes (the token) and answer in its own body.
    clientErrorHandler: clientError,
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // In flight at close(): end the connection, or close() would wait out its keep-alive.
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null));

  registerIdRoutes(app, served, settings);
  registerHealthRoutes(app, ids, served, settings.readyTimeoutMs);

  // /status shows what /metrics does, so the metricsAuth option covers both.
  const behindMetricsAuth = {
    onRequest: authenticate(settings.metricsAuth ? settings.tokens : undefined),
  };
  const { registry, status } = settings;
  app.get('/metrics', behindMetricsAuth, async (_request, reply) => {
    const given = optionGiven(registry, 'a metrics registry', 'registry');
    return reply.type(given.contentType).send(await given.metrics());
  });
  const report = status && latestReport(status);
  app.get('/status', behindMetricsAuth, async (_request, reply) => {
    const next = optionGiven(report, 'a status source', 'status');
    return reply.type('text/html; charset=utf-8').send(statusPage(await next()));
  });
  app.get('/openapi.json', async () => document);

  app.setNotFoundHandler(async (request) => {
    throw new ServeRefusal(
      'IDGEN_NOT_FOUND',
      `No route ${request.method} ${request.url.split('?')[0]}; GET /openapi.json describes the API.`,
    );
  });

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    return sendError(requestRefusal(error, request, settings) ?? error, request, reply);
  });

  return app;
}

/** `value`, or the 404 of a route that serves what option `option` of `createServer()` gives. */
function optionGiven<T>(value: T | undefined, what: string, option: string): T {
  if (value !== undefined) return value;
  throw new ServeRefusal(
    'IDGEN_NOT_FOUND',
    `This service was started without ${what} (the "${option}" option of createServer()).`,
  );
}
