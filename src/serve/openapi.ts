/**
 * The routes' request schemas and the OpenAPI 3.1 document built from them, so the document
 * states exactly the limits the service enforces.
 */

import { MAX_BLOCK_SIZE } from '../settings/model.js';
import { NAME_RULES } from '../names.js';
import { HTTP_ANSWERS, type ServeErrorCode } from './http-errors.js';

/** The limits a service enforces that its document states. */
export interface ApiLimits {
  readonly maxIdsPerRequest: number;
}

type Json = unknown;
type JsonObject = { readonly [key: string]: Json };

export interface OpenApiDocument extends JsonObject {
  readonly paths: { readonly [path: string]: { readonly [method: string]: JsonObject } };
}

export const ID_FORMATS = ['auto', 'string'] as const;

/** How the ID endpoints write IDs: `auto` (exact JSON numbers where they can be) or `string`. */
export type IdFormat = (typeof ID_FORMATS)[number];

const FORMAT_SCHEMA = {
  type: 'string',
  enum: ID_FORMATS,
  default: 'auto',
  description:
    'auto: IDs as JSON numbers when the sequence\'s domain ends at or below 2^53-1 (they are exact in every JSON parser), else as decimal strings; string: always strings. The header "Accept: application/json; ids=string" asks for strings as well.',
} as const;

/** The routes of the ID endpoints, as fastify writes them (the document's `{name}` is `:name`). */
export const ID_ROUTES = {
  ids: '/v1/sequences/:name/ids',
  ranges: '/v1/sequences/:name/ranges',
} as const;

export const SEQUENCE_PARAMS = {
  type: 'object',
  required: ['name'],
  properties: {
    name: {
      type: 'string',
      pattern: NAME_RULES.sequence.pattern.source,
      description: `The sequence's name: ${NAME_RULES.sequence.rule}.`,
    },
  },
} as const;

/** A query of an ID endpoint; a misspelt parameter is refused, not ignored for the default. */
function countQuery(count: JsonObject, required: readonly string[]) {
  const properties = { count: { type: 'integer', minimum: 1, ...count }, format: FORMAT_SCHEMA };
  return { type: 'object', additionalProperties: false, required, properties } as const;
}

export function idsQuery(limits: ApiLimits) {
  const most = limits.maxIdsPerRequest;
  const description = `How many IDs: 1 to ${most}, in decimal digits.`;
  return countQuery({ maximum: most, default: 1, description }, []);
}

export const RANGES_QUERY = countQuery(
  {
    maximum: MAX_BLOCK_SIZE,
    description:
      "How many contiguous IDs: 1 to the sequence's largest block size (maxBlockSize, at most 10,000,000), in decimal digits.",
  },
  ['count'],
);

export const READYZ_QUERY = {
  type: 'object',
  properties: {
    sequence: {
      type: 'string',
      minLength: 1,
      description: 'Check this one sequence only: 200 while this process holds IDs of it.',
    },
  },
} as const;

/** The codes the ID endpoints answer with, in the order their responses list them. */
const ID_ENDPOINT_ERRORS = (Object.keys(HTTP_ANSWERS) as ServeErrorCode[]).filter(
  (code) =>
    ![
      'IDGEN_NOT_FOUND',
      'IDGEN_SEQUENCE_EXISTS',
      'IDGEN_CONTENTION',
      'IDGEN_SEQUENCE_RECREATED',
      'IDGEN_DOMAIN_NEEDS_BIGINT',
      'IDGEN_INVALID_OPTION',
    ].includes(code),
);

/** A response whose body is `schema`: the name of one of the document's schemas, or a schema. */
function response(description: string, schema: Json, type = 'application/json'): JsonObject {
  const body = typeof schema === 'string' ? { $ref: `#/components/schemas/${schema}` } : schema;
  return { description, content: { [type]: { schema: body } } };
}

const RETRY_AFTER = {
  description: 'Seconds to wait before retrying the same request.',
  schema: { type: 'integer', minimum: 1 },
} as const;

/** One error response per status, listing its codes; `Retry-After` where they say to retry. */
function errorResponses(): JsonObject {
  const statuses = new Set(ID_ENDPOINT_ERRORS.map((code) => HTTP_ANSWERS[code].status));
  const responses = [...statuses].map((status) => {
    const codes = ID_ENDPOINT_ERRORS.filter((code) => HTTP_ANSWERS[code].status === status);
    const retry = codes.some((code) => HTTP_ANSWERS[code].retryAfterSeconds !== undefined);
    const notes = `${retry ? ' Retry after the seconds of Retry-After.' : ''}${status === 401 ? ' Sent with WWW-Authenticate: Bearer.' : ''}`;
    const answer = response(`Codes: ${codes.join(', ')}.${notes}`, 'Error');
    return [status, retry ? { ...answer, headers: { 'Retry-After': RETRY_AFTER } } : answer];
  });
  // Integer keys: the object lists the statuses in ascending order.
  return Object.fromEntries(responses) as JsonObject;
}

/** The document's parameters `in` the path or query, from the schema the route validates. */
function parametersOf(
  where: 'path' | 'query',
  schema: { readonly properties: JsonObject; readonly required?: readonly string[] },
): Json[] {
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    in: where,
    required: schema.required?.includes(name) ?? false,
    schema: property,
  }));
}

function idOperation(
  operationId: string,
  summary: string,
  description: string,
  query: Parameters<typeof parametersOf>[1],
  okSchema: string,
): { post: JsonObject } {
  const security = [{ bearerAuth: [] }, {}];
  const parameters = [...parametersOf('path', SEQUENCE_PARAMS), ...parametersOf('query', query)];
  const ok = response('The IDs, handed out to this caller only.', okSchema);
  const responses = { '200': ok, ...errorResponses() };
  return { post: { operationId, summary, description, security, parameters, responses } };
}

/** An object schema; every property is required unless listed in `optional`. */
function object(properties: JsonObject, optional: readonly string[] = []): JsonObject {
  const required = Object.keys(properties).filter((key) => !optional.includes(key));
  return { type: 'object', required, properties };
}

const STRING = { type: 'string' } as const;

const ID_VALUE: Json = {
  oneOf: [
    { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    { type: 'string', pattern: '^[0-9]+$' },
  ],
  description: 'An ID: a JSON number, or a decimal string (see the format parameter).',
};

const READINESS_ENTRY = object(
  {
    sequence: STRING,
    ready: { type: 'boolean' },
    held: { type: 'integer', description: 'IDs this process holds.' },
    code: STRING,
    message: STRING,
  },
  ['held', 'code', 'message'],
);

function getOperation(operationId: string, summary: string, rest: JsonObject) {
  return { get: { operationId, summary, ...rest } };
}

/** The OpenAPI document of a service with `limits`. */
export function openApiDocument(limits: ApiLimits): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'idgen-cass',
      version: '1.0.0',
      description:
        "Unique integer IDs from sequences shared by every datacenter, handed out by the allocator of this service's DC. Every ID is handed out once, to one caller; IDs of a failed request are never handed out (they stay a gap). Errors are JSON { code, message } with the stable codes of idgen-cass.",
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    paths: {
      '/v1/sequences/{name}/ids': idOperation(
        'drawIds',
        'Draw IDs',
        "count IDs of the sequence, strictly increasing, not necessarily contiguous. Served from the blocks this process holds; when they run out, waits for the next block up to the service's timeout.",
        idsQuery(limits),
        'Ids',
      ),
      '/v1/sequences/{name}/ranges': idOperation(
        'takeRange',
        'Take a contiguous range',
        'count contiguous IDs of the sequence: first, first + 1, …, last. If the current block holds fewer, its rest is skipped and the range comes from the next block.',
        RANGES_QUERY,
        'Range',
      ),
      '/healthz': getOperation('health', 'Liveness', {
        description: 'Answers 200 while the process runs; asks nothing of Cassandra.',
        responses: { '200': response('The process runs.', 'Health') },
      }),
      '/readyz': getOperation('readiness', 'Readiness', {
        description:
          'Whether this process can hand out IDs from what its DC holds: Cassandra answers in the local DC, and each sequence served (the allowlist, or every sequence of the keyspace) is loaded and this process holds IDs of it (claiming a block if it holds none). A partition between DCs alone does not make it not ready. status is ready when every sequence served holds IDs, degraded (still 200) when only some do, not_ready (503) when none does or the sequences cannot be listed. With ?sequence=NAME only that sequence is checked.',
        parameters: parametersOf('query', READYZ_QUERY),
        responses: {
          '200': response('Ready, or degraded: some sequences served hold IDs.', 'Readiness'),
          '503': response(
            'Not ready: no sequence asked about holds IDs; the body says why, per sequence.',
            'Readiness',
          ),
        },
      }),
      '/metrics': getOperation('metrics', 'Prometheus metrics', {
        description: 'The metrics of the registry the service was given, in its text format.',
        responses: {
          '200': response('The Prometheus text exposition format.', STRING, 'text/plain'),
          '404': response('Code IDGEN_NOT_FOUND: the service has no metrics registry.', 'Error'),
        },
      }),
      '/status': getOperation('statusPage', 'Status page', {
        description:
          "What idgen-cass status shows, seen from this service's DC, as an HTML page without script that refreshes itself: SERIAL reachability, hosts, and per sequence each DC's ranges, IDs left, rate, runway against the autonomy target and waste by cause. Needs a token when /metrics does.",
        responses: {
          '200': response('The page.', STRING, 'text/html'),
          '404': response('Code IDGEN_NOT_FOUND: the service has no status source.', 'Error'),
        },
      }),
      '/openapi.json': getOperation('openapi', 'This document', {
        responses: {
          '200': response('The OpenAPI document of the service.', { type: 'object' }),
        },
      }),
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Needed by the ID endpoints when the service was given a token (the token option of createServer()); the other endpoints never need it.',
        },
      },
      schemas: {
        Ids: {
          ...object({ sequence: STRING, ids: { type: 'array', items: ID_VALUE } }),
          examples: [{ sequence: 'orders', ids: [1001, 1002, 1003] }],
        },
        Range: {
          ...object({
            sequence: STRING,
            first: ID_VALUE,
            last: ID_VALUE,
            count: { type: 'integer', minimum: 1 },
          }),
          examples: [{ sequence: 'orders', first: 2001, last: 2100, count: 100 }],
        },
        Error: object({
          code: { type: 'string', enum: Object.keys(HTTP_ANSWERS).sort() },
          message: STRING,
        }),
        Health: object({ status: { const: 'ok' } }),
        Readiness: object(
          {
            status: { enum: ['ready', 'degraded', 'not_ready'] },
            dc: STRING,
            keyspace: STRING,
            sequences: { type: 'array', items: READINESS_ENTRY },
            code: { type: 'string', description: 'Why, when the sequences could not be listed.' },
            message: STRING,
          },
          ['code', 'message'],
        ),
      },
    },
  };
}
