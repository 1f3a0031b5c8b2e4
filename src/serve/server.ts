/**
 * `createServer()`: the HTTP service around one connected {@link IdGen}: the ID endpoints,
 * health, readiness, metrics and the OpenAPI document (openapi.ts), errors as JSON with stable
 * codes (http-errors.ts), an optional bearer token (auth.ts).
 */

import type { Socket } from 'node:net';

import type {
  ConnectionError,
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
} from 'fastify';
import type * as Fastify from 'fastify';
import type { Logger as PinoLogger } from 'pino';

import type { IdGen } from '../allocator/id-gen.js';
import { InvalidNameError, InvalidOptionError, StoreUnavailableError } from '../errors.js';
import { fastifyModule } from '../lazy-modules.js';
import { checkLogger } from '../logger.js';
import { NAME_RULES } from '../names.js';
import { checkKeys, everyKeyOf, validateSequenceName } from '../options.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import { BearerToken } from './auth.js';
import { httpErrorOf, ServeRefusal, type ServeErrorBody } from './http-errors.js';
import {
  ID_FORMATS,
  idsQuery,
  openApiDocument,
  RANGES_QUERY,
  SEQUENCE_PARAMS,
  type IdFormat,
} from './openapi.js';
import { ServedSequences, type RequestCall } from './served-sequences.js';

/** What `/metrics` serves: a prom-client `Registry` fits as it is. */
export interface MetricsRegistry {
  /** The metrics in the Prometheus text format. */
  metrics(): Promise<string>;
  /** The `Content-Type` of {@link MetricsRegistry.metrics}'s text. */
  readonly contentType: string;
}

/** Options of {@link createServer}. */
export interface ServeOptions {
  /**
   * The only sequences served; requests for others get 404 `IDGEN_SEQUENCE_NOT_SERVED`, and
   * `/readyz` checks these. Without it, every sequence of the keyspace is served and checked.
   * @default undefined (every sequence)
   */
  readonly sequences?: readonly string[] | undefined;
  /**
   * The bearer token the ID endpoints require (`Authorization: Bearer <token>`); health,
   * readiness, metrics and the OpenAPI document never require it. It is never logged.
   * @default undefined (no token required)
   */
  readonly token?: string | undefined;
  /** What `/metrics` serves; without it `/metrics` answers 404. @default undefined */
  readonly registry?: MetricsRegistry | undefined;
  /**
   * Logs failed requests (5xx at `error`), and every request at `debug`; the `authorization`
   * header is redacted, and a URL shows only its route, the name of a sequence the service
   * knows, `count` and `format` (text a client chose may be a token). Without it the service is
   * silent.
   * @default undefined
   */
  readonly logger?: PinoLogger | undefined;
  /**
   * How long one request to an ID endpoint may wait for IDs, in ms, before it is answered 503
   * (`IDGEN_DEADLINE_EXCEEDED`, or the refill's last error) with `Retry-After`. Below the usual
   * 10 s of proxies and clients, so that callers get the code rather than a gateway timeout.
   * @default 5000
   */
  readonly timeoutMs?: number | undefined;
  /**
   * The most IDs one `POST /v1/sequences/{name}/ids` returns.
   * @default 10000
   */
  readonly maxIdsPerRequest?: number | undefined;
  /**
   * How long `/readyz` waits for each check (listing the sequences, loading one and claiming its
   * first block), in ms.
   * @default 2000
   */
  readonly readyTimeoutMs?: number | undefined;
}

/** Defaults of {@link ServeOptions}. */
export const SERVE_DEFAULTS = Object.freeze({
  timeoutMs: 5_000,
  maxIdsPerRequest: 10_000,
  readyTimeoutMs: 2_000,
});

/** The largest `maxIdsPerRequest`: a response of more IDs is better a range. */
const MAX_IDS_PER_REQUEST = 1_000_000;

interface Settings {
  readonly sequences: readonly string[] | undefined;
  readonly token: BearerToken | undefined;
  readonly registry: MetricsRegistry | undefined;
  readonly logger: PinoLogger | undefined;
  readonly timeoutMs: number;
  readonly maxIdsPerRequest: number;
  readonly readyTimeoutMs: number;
}

/** One entry of `/readyz`'s `sequences`. */
type SequenceReadiness =
  | { readonly sequence: string; readonly ready: true; readonly held: number }
  | ({ readonly sequence: string; readonly ready: false } & ServeErrorBody);

/**
 * The body of `/readyz`. `degraded`: some sequences served cannot get IDs here (e.g. one whose DC
 * ranges ran out while the DC is cut off) but others can, so the process still serves: 200.
 */
interface Readiness {
  readonly status: 'ready' | 'degraded' | 'not_ready';
  readonly dc: string;
  readonly keyspace: string;
  readonly sequences: readonly SequenceReadiness[];
  readonly code?: string;
  readonly message?: string;
}

/** The query of the ID endpoints once the schema has validated it (defaults filled in). */
interface IdQuery {
  readonly count: number;
  readonly format: IdFormat;
}

const ID_ROUTES = {
  ids: '/v1/sequences/:name/ids',
  ranges: '/v1/sequences/:name/ranges',
} as const;

/**
 * Paths of log fields that could hold the token: the header, and the raw bytes of a request Node's
 * HTTP parser refused (`rawPacket` of a `clientError`, which {@link clientError} never logs; this
 * is in case another line carries such an error).
 */
const REDACTED = [
  'req.headers.authorization',
  '*.headers.authorization',
  'headers.authorization',
  'rawPacket',
  '*.rawPacket',
  '*.cause.rawPacket',
];

/**
 * The HTTP service of `idgen-cass serve` over `ids`, an allocator already connected to its DC:
 *
 * | route | answers |
 * |---|---|
 * | `POST /v1/sequences/{name}/ids?count=N` | `{ "sequence", "ids": [...] }` |
 * | `POST /v1/sequences/{name}/ranges?count=N` | `{ "sequence", "first", "last", "count" }` |
 * | `GET /healthz` | 200 while the process runs |
 * | `GET /readyz` | 200 while Cassandra answers in the DC and a sequence served holds IDs, else 503 |
 * | `GET /readyz?sequence={name}` | 200 while this process holds IDs of that sequence, else 503 |
 * | `GET /metrics` | `registry.metrics()` |
 * | `GET /openapi.json` | the OpenAPI 3.1 document |
 *
 * IDs are JSON numbers for sequences whose domain ends at or below 2^53-1, strings for wider
 * ones, and strings on request (`?format=string`, `Accept: application/json; ids=string`).
 * Errors are `{ "code", "message" }` with the library's stable codes. The server does not own
 * `ids`: `await server.close()` stops listening and waits for the requests in flight; then
 * `await ids.close()` gives the unused IDs back.
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
  const settings = resolveOptions(options);
  const served = new ServedSequences(ids, settings.sequences);
  const document = openApiDocument(settings);
  // Typed as fastify's logger, so that the instance is a plain FastifyInstance.
  const loggerInstance: FastifyBaseLogger | undefined = settings.logger?.child(
    { component: 'serve' },
    { redact: { paths: REDACTED, censor: '[redacted]' } },
  );
  const app = fastifyModule().fastify({
    ...(loggerInstance === undefined ? { logger: false } : { loggerInstance }),
    // Two info lines per ID request would drown everything else: requests go to debug.
    logController: debugRequestLogs(served),
    // Requests that still arrive on open connections once close() began are served while the
    // allocator is open (fastify adds Connection: close to them).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // The endpoints take no body; a client that sends a small one anyway is not refused for it
    // (docs/service.md: up to 1 KiB is ignored, a larger one is answered 400).
    bodyLimit: 1024,
    // fastify's default drops query parameters the schema does not name; they are refused
    // instead, so that a misspelt one is not served with the default in its place.
    ajv: { customOptions: { removeAdditional: false } },
    // A path the router refuses before any route (a name over its parameter limit, a malformed
    // %-escape) gets the same JSON error as every other refusal, not fastify's own body (and 414).
    frameworkErrors: (error, request, reply) => sendError(frameworkRefusal(error), request, reply),
    // fastify's own handler logs the parser's error, raw request bytes (the token) included, and
    // answers in its own body.
    clientErrorHandler: clientError,
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A response to a request that was in flight when close() began ends its connection: a client
  // would otherwise keep it open for its keep-alive time, and close() would wait for that.
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => {
    done(null, undefined);
  });

  const authenticate = async (
    request: { readonly headers: { readonly authorization?: string | undefined } },
    reply: FastifyReply,
  ): Promise<void> => {
    const token = settings.token;
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

  const callOf = (reply: FastifyReply): RequestCall => {
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
      timeoutMs: settings.timeoutMs,
      deadline: Date.now() + settings.timeoutMs,
      signal: controller.signal,
      delivered,
    };
  };

  // The schema's coercion reads a count as JavaScript reads a number (`1e2` is 100, `0x10` is 16):
  // only decimal digits are taken, so that no count is served other than as typed.
  const decimalCount = async (request: FastifyRequest) => {
    const count = (request.query as Record<string, unknown> | undefined)?.['count'];
    if (typeof count === 'string' && !/^[0-9]+$/.test(count)) {
      throw countRefusal(request.routeOptions.url, settings, false);
    }
  };

  app.post<{ Params: { name: string }; Querystring: IdQuery }>(
    ID_ROUTES.ids,
    {
      schema: { params: SEQUENCE_PARAMS, querystring: idsQuery(settings) },
      onRequest: authenticate,
      preValidation: decimalCount,
    },
    async (request, reply) => {
      const { name } = request.params;
      const strings = wantsStrings(request.query.format, request.headers.accept);
      const drawn = await served.draw(name, request.query.count, callOf(reply));
      return {
        sequence: name,
        ids: drawn.wide || strings ? drawn.ids.map(String) : drawn.ids,
      };
    },
  );

  app.post<{ Params: { name: string }; Querystring: IdQuery }>(
    ID_ROUTES.ranges,
    {
      schema: { params: SEQUENCE_PARAMS, querystring: RANGES_QUERY },
      onRequest: authenticate,
      preValidation: decimalCount,
    },
    async (request, reply) => {
      const { name } = request.params;
      const { count } = request.query;
      const strings = wantsStrings(request.query.format, request.headers.accept);
      const { wide, range } = await served.take(name, count, callOf(reply));
      const id = (value: number | bigint) => (wide || strings ? String(value) : value);
      return { sequence: name, first: id(range.first), last: id(range.last), count };
    },
  );

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get<{ Querystring: { sequence?: string } }>(
    '/readyz',
    { schema: { querystring: READYZ_QUERY } },
    async (request, reply) => {
      const report = await readiness(ids, served, settings.readyTimeoutMs, request.query.sequence);
      return reply.code(report.status === 'not_ready' ? 503 : 200).send(report);
    },
  );

  app.get('/metrics', async (_request, reply) => {
    const registry = settings.registry;
    if (registry === undefined) {
      throw new ServeRefusal(
        'IDGEN_NOT_FOUND',
        'This service was started without a metrics registry (the "registry" option of createServer()).',
      );
    }
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });

  app.get('/openapi.json', async () => document);

  app.setNotFoundHandler(async (request) => {
    throw new ServeRefusal(
      'IDGEN_NOT_FOUND',
      `No route ${request.method} ${request.url.split('?')[0]}; GET /openapi.json describes the API.`,
    );
  });

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const refusal = requestRefusal(error, request.routeOptions.url, request, settings);
    return sendError(refusal ?? error, request, reply);
  });

  return app;
}

/** Answers a failed or refused request with the JSON error body docs/service.md documents. */
function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, retryAfterSeconds, body } = httpErrorOf(error);
  if (status === 500) request.log.error({ err: error }, 'request failed');
  // The code, not the message: a refusal repeats what the client sent (an unknown parameter's
  // name may be a secret put in the query string), which the caller may see and the log not.
  else request.log.debug({ code: body.code, statusCode: status }, 'request refused');
  if (retryAfterSeconds !== undefined) reply.header('Retry-After', String(retryAfterSeconds));
  return reply.code(status).send(body);
}

/**
 * Answers a request Node's HTTP parser refused (a malformed header, headers over the size
 * limit, a request not received in time) before fastify saw it: 400 `IDGEN_BAD_REQUEST` in the
 * service's body, then the connection ends. The log line has the parser's code only: the error
 * carries the raw bytes of the request (`rawPacket`), where the bearer token may be.
 */
function clientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
  // A reset or already closed connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code = typeof error.code === 'string' ? error.code : undefined;
  this.log.debug(
    { code: 'IDGEN_BAD_REQUEST', statusCode: 400, parserCode: code },
    'request refused',
  );
  if (socket.writable) {
    const { body } = httpErrorOf(new ServeRefusal('IDGEN_BAD_REQUEST', clientErrorMessage(code)));
    const text = JSON.stringify(body);
    socket.write(
      'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}

/** What a client is told of a request the HTTP parser refused, by the parser's error code. */
function clientErrorMessage(code: string | undefined): string {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return 'Invalid HTTP request: its headers are larger than the server accepts.';
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return 'Invalid HTTP request: it was not received in full within the time allowed.';
  }
  return 'Invalid HTTP request: it is not well-formed HTTP/1.1 (a header name or value, say, holds a character HTTP does not allow).';
}

/**
 * The refusal for a path the router turned away: only the sequence name is a parameter, so a
 * parameter over fastify's limit (100 characters) is a name too long to be one (the name itself,
 * that long, is not repeated back).
 */
function frameworkRefusal(error: FastifyError): ServeRefusal {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return new ServeRefusal(
      'IDGEN_INVALID_NAME',
      `Invalid sequence name (over 100 characters): ${NAME_RULES.sequence.rule}.`,
    );
  }
  if (error.code === 'FST_ERR_BAD_URL') {
    return new ServeRefusal(
      'IDGEN_BAD_REQUEST',
      'Invalid URL: its path has a malformed %-escape; encode each reserved character as %XX.',
    );
  }
  return new ServeRefusal('IDGEN_BAD_REQUEST', error.message);
}

/** A value a log line does not show: text a client chose, which may be a credential. */
const HIDDEN = '…';

/**
 * The URL of `request` as a log line may show it: the route's template (`/v1/sequences/:name/ids`)
 * with the sequence's name only if the service knows it ({@link ServedSequences.isKnown}), and
 * of the query only a `count` of digits and a `format` the API takes. The rest is text a client
 * chose, where a token may have been put by mistake (`/v1/sequences/<token>/ids`,
 * `?format=<token>`, `?token=…`, `?<token>`, a path no route matches): it shows as `…`.
 */
function loggedUrl(request: FastifyRequest, served: ServedSequences): string {
  const route = request.routeOptions.url;
  const name = (request.params as { name?: unknown } | undefined)?.name;
  const shownName = typeof name === 'string' && served.isKnown(name) ? name : HIDDEN;
  const path = route === undefined ? HIDDEN : route.replace(':name', shownName);
  const at = request.url.indexOf('?');
  if (at < 0) return path;
  const query = request.url
    .slice(at + 1)
    .split('&')
    .map((pair) => {
      const [key, value] = splitPair(pair);
      if (key === 'count') return /^[0-9]{1,16}$/.test(value) ? pair : `count=${HIDDEN}`;
      if (key === 'format') {
        return (ID_FORMATS as readonly string[]).includes(value) ? pair : `format=${HIDDEN}`;
      }
      // Another parameter's name may be the secret itself (`?<token>`): neither is shown.
      return HIDDEN;
    });
  return `${path}?${query.join('&')}`;
}

/** `name=value` as its name and value (`''` without `=`). */
function splitPair(pair: string): [string, string] {
  const at = pair.indexOf('=');
  return at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
}

/**
 * fastify's request log lines at debug rather than info, showing of a request what
 * {@link loggedUrl} shows; errors are the error handler's. The class extends fastify's, so it
 * is made once fastify is loaded (lazy-modules.ts).
 */
function debugRequestLogs(served: ServedSequences): InstanceType<typeof Fastify.LogController> {
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

/**
 * The refusal for a request fastify rejected before the handler: a schema violation, keeping the
 * library's code where there is one (a bad count or name), or a body it could not read.
 */
function requestRefusal(
  error: FastifyError,
  route: string | undefined,
  request: { readonly params: unknown; readonly query: unknown },
  settings: Settings,
): ServeRefusal | undefined {
  const failed = error.validation?.[0];
  if (failed !== undefined) {
    const details = failed.params as {
      readonly missingProperty?: unknown;
      readonly additionalProperty?: unknown;
      readonly allowedValues?: unknown;
    };
    if (failed.keyword === 'additionalProperties') {
      const query = route === ID_ROUTES.ranges ? RANGES_QUERY : idsQuery(settings);
      return new ServeRefusal(
        'IDGEN_BAD_REQUEST',
        `Unknown query parameter "${String(details.additionalProperty)}": this endpoint takes ${Object.keys(query.properties).join(' and ')}.`,
      );
    }
    const field = failed.instancePath.replace(/^\//, '') || String(details.missingProperty ?? '');
    if (failed.keyword === 'enum' && Array.isArray(details.allowedValues)) {
      const given = (request.query as Record<string, unknown> | undefined)?.[field];
      return new ServeRefusal(
        'IDGEN_BAD_REQUEST',
        `Invalid ${field} ${JSON.stringify(given)}: one of ${details.allowedValues.join(', ')}.`,
      );
    }
    if (error.validationContext === 'params' && field === 'name') {
      const name = (request.params as { name?: unknown } | undefined)?.name;
      return new ServeRefusal('IDGEN_INVALID_NAME', new InvalidNameError('sequence', name).message);
    }
    if (field === 'count') return countRefusal(route, settings, failed.keyword === 'required');
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

/** The refusal of a missing or invalid `count` on `route`. */
function countRefusal(
  route: string | undefined,
  settings: Settings,
  missing: boolean,
): ServeRefusal {
  const allowed =
    route === ID_ROUTES.ids
      ? `an integer from 1 to ${settings.maxIdsPerRequest}`
      : "an integer from 1 to the sequence's largest block size (maxBlockSize)";
  return new ServeRefusal(
    'IDGEN_INVALID_COUNT',
    missing ? `Missing count: add ?count=N, ${allowed}.` : `Invalid count: ${allowed}.`,
  );
}

const READYZ_QUERY = {
  type: 'object',
  properties: { sequence: { type: 'string', minLength: 1 } },
} as const;

/**
 * What `/readyz` answers. Ready means this process can hand out IDs from what its DC holds, which
 * a partition between DCs alone does not change: Cassandra answers in the local DC, and every
 * sequence served (`ready`), or some of them (`degraded`), holds IDs here. `not_ready` when the
 * sequences cannot be listed, or none served holds IDs. With `only`, that one sequence decides.
 */
async function readiness(
  ids: IdGen,
  served: ServedSequences,
  timeoutMs: number,
  only: string | undefined,
): Promise<Readiness> {
  const base = { dc: ids.dc, keyspace: ids.keyspace };
  let names: readonly string[];
  try {
    // One read at LOCAL_QUORUM even with an allowlist: readiness means Cassandra answers here.
    const listed = await within(timeoutMs, ids.listSequences(), 'listing the sequences');
    names = only !== undefined ? [only] : (served.allowlist ?? listed.map((s) => s.name));
  } catch (error) {
    return { status: 'not_ready', ...base, sequences: [], ...httpErrorOf(error).body };
  }
  const sequences = await Promise.all(
    names.map(async (sequence): Promise<SequenceReadiness> => {
      try {
        return { sequence, ready: true, held: await served.ready(sequence, timeoutMs) };
      } catch (error) {
        return { sequence, ready: false, ...httpErrorOf(error).body };
      }
    }),
  );
  const status = sequences.every((s) => s.ready)
    ? 'ready'
    : sequences.some((s) => s.ready)
      ? 'degraded'
      : 'not_ready';
  return { status, ...base, sequences };
}

/** `promise`, or {@link StoreUnavailableError} once `timeoutMs` pass first. */
async function within<T>(timeoutMs: number, promise: Promise<T>, operation: string): Promise<T> {
  try {
    const outcome = await settleWithin(promise, timeoutMs);
    if (outcome === TIMED_OUT) {
      throw new StoreUnavailableError('local', operation, `no answer within ${timeoutMs} ms`);
    }
    return outcome;
  } finally {
    promise.catch(() => undefined);
  }
}

/**
 * Checks `options` as {@link createServer} does, for callers that want bad options refused
 * before they connect (the CLI).
 * @throws what {@link createServer} throws for them.
 */
export function checkServeOptions(options: ServeOptions): void {
  resolveOptions(options);
}

/** Every key of {@link ServeOptions}. */
const SERVE_KEYS = everyKeyOf<ServeOptions>()([
  'sequences',
  'token',
  'registry',
  'logger',
  'timeoutMs',
  'maxIdsPerRequest',
  'readyTimeoutMs',
]);

/** The options with their defaults, each checked once. */
function resolveOptions(options: ServeOptions): Settings {
  checkKeys(options, SERVE_KEYS);
  checkLogger('logger', options.logger);
  const sequences = options.sequences;
  if (sequences !== undefined) {
    if (!Array.isArray(sequences) || sequences.length === 0) {
      throw new InvalidOptionError(
        'sequences',
        sequences,
        'a non-empty list of sequence names, or no list to serve every sequence of the keyspace',
      );
    }
    for (const name of sequences) validateSequenceName(name);
  }
  return {
    sequences: sequences === undefined ? undefined : [...new Set(sequences)],
    token: options.token === undefined ? undefined : new BearerToken(options.token),
    registry: options.registry,
    logger: options.logger,
    timeoutMs: positive('timeoutMs', options.timeoutMs ?? SERVE_DEFAULTS.timeoutMs),
    maxIdsPerRequest: countOption(
      'maxIdsPerRequest',
      options.maxIdsPerRequest ?? SERVE_DEFAULTS.maxIdsPerRequest,
    ),
    readyTimeoutMs: positive(
      'readyTimeoutMs',
      options.readyTimeoutMs ?? SERVE_DEFAULTS.readyTimeoutMs,
    ),
  };
}

function positive(option: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || !(value > 0)) {
    throw new InvalidOptionError(option, value, 'a finite number of milliseconds above 0');
  }
  return value;
}

function countOption(option: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_IDS_PER_REQUEST) {
    throw new InvalidOptionError(option, value, `an integer from 1 to ${MAX_IDS_PER_REQUEST}`);
  }
  return value;
}
