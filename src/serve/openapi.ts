/**
 * The service's OpenAPI 3.1 document and the routes' request schemas, built from the same pieces
 * so the document states exactly the limits the service enforces.
 */

import { MAX_BLOCK_SIZE } from '../settings/model.js';
import { NAME_RULES } from '../names.js';
import { HTTP_ANSWERS, type ServeErrorCode } from './http-errors.js';

/** The limits a service enforces that its document states. */
export interface ApiLimits {
  /** The most IDs one `POST …/ids` returns. */
  readonly maxIdsPerRequest: number;
}

/** A JSON value, as the document is made of. */
export type Json =
  string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

type JsonObject = { readonly [key: string]: Json };

/** The OpenAPI document of the service. */
export interface OpenApiDocument extends JsonObject {
  readonly paths: { readonly [path: string]: { readonly [method: string]: JsonObject } };
}

/** The values of `format`: how the ID endpoints write IDs. */
export const ID_FORMATS = ['auto', 'string'] as const;

/** How the ID endpoints write IDs: `auto` (exact JSON numbers where they can be) or `string`. */
export type IdFormat = (typeof ID_FORMATS)[number];

const NAME_SCHEMA = {
  type: 'string',
  pattern: NAME_RULES.sequence.pattern.source,
  description: `The sequence's name: ${NAME_RULES.sequence.rule}.`,
} as const;

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

/** The path parameters of the ID endpoints. */
export const SEQUENCE_PARAMS = {
  type: 'object',
  required: ['name'],
  properties: { name: NAME_SCHEMA },
} as const;

/** The query of `POST /v1/sequences/{name}/ids`. */
export function idsQuery(limits: ApiLimits) {
  return {
    type: 'object',
    // A misspelt parameter (`cuont=100`) is refused, not ignored with the default used.
    additionalProperties: false,
    properties: {
      count: {
        type: 'integer',
        minimum: 1,
        maximum: limits.maxIdsPerRequest,
        default: 1,
        description: `How many IDs: 1 to ${limits.maxIdsPerRequest}, in decimal digits.`,
      },
      format: FORMAT_SCHEMA,
    },
  } as const;
}

/** The query of `GET /readyz`. */
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

/** The query of `POST /v1/sequences/{name}/ranges`. */
export const RANGES_QUERY = {
  type: 'object',
  additionalProperties: false,
  required: ['count'],
  properties: {
    count: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_BLOCK_SIZE,
      description:
        "How many contiguous IDs: 1 to the sequence's largest block size (maxBlockSize, at most 10,000,000), in decimal digits.",
    },
    format: FORMAT_SCHEMA,
  },
} as const;

/** The version of the API the document describes (the `/v1` of its paths). */
export const API_VERSION = '1.0.0';

const ID_ENDPOINT_ERRORS: readonly ServeErrorCode[] = [
  'IDGEN_INVALID_COUNT',
  'IDGEN_INVALID_NAME',
  'IDGEN_BAD_REQUEST',
  'IDGEN_UNAUTHORIZED',
  'IDGEN_SEQUENCE_NOT_FOUND',
  'IDGEN_SEQUENCE_NOT_SERVED',
  'IDGEN_SEQUENCE_EXHAUSTED',
  'IDGEN_SERIAL_UNAVAILABLE',
  'IDGEN_STORE_UNAVAILABLE',
  'IDGEN_DEADLINE_EXCEEDED',
  'IDGEN_CLOSED',
  // Answered to a caller that closed its connection first: nobody reads it, but logs and
  // proxies see the status.
  'IDGEN_ABORTED',
  'IDGEN_INVARIANT_BROKEN',
  'IDGEN_STATE_ROLLED_BACK',
  // A refill a request waits for, refused by Cassandra for want of a permission of the
  // service's role (errors.ts): the operator's to grant, not the caller's.
  'IDGEN_AUTH_FAILED',
  'IDGEN_INTERNAL',
];

/** A response of `description` whose JSON body is the component schema `schema`. */
function jsonResponse(description: string, schema: string): JsonObject {
  return {
    description,
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
  };
}

/**
 * The error responses of the ID endpoints, one per status, each listing its codes; a status
 * whose codes tell the caller to retry documents `Retry-After`.
 */
function errorResponses(): { [status: string]: Json } {
  const byStatus = new Map<number, ServeErrorCode[]>();
  for (const code of ID_ENDPOINT_ERRORS) {
    const { status } = HTTP_ANSWERS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: { [status: string]: Json } = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const retry = codes.some((code) => HTTP_ANSWERS[code].retryAfterSeconds !== undefined);
    const response = jsonResponse(
      `Codes: ${codes.join(', ')}.${retry ? ' Retry after the seconds of Retry-After.' : ''}${status === 401 ? ' Sent with WWW-Authenticate: Bearer.' : ''}`,
      'Error',
    );
    responses[String(status)] = retry
      ? { ...response, headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
      : response;
  }
  return responses;
}

/** An object schema a route validates with, as fastify takes it. */
interface ObjectSchema {
  readonly properties: { readonly [name: string]: Json };
  readonly required?: readonly string[];
}

/** The document's parameters `in` the path or query, from the schema the route validates. */
function parametersOf(where: 'path' | 'query', schema: ObjectSchema): Json[] {
  const required = new Set<string>(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    in: where,
    required: required.has(name),
    schema: property,
  }));
}

function idOperation(
  operationId: string,
  summary: string,
  description: string,
  query: ObjectSchema,
  okSchema: string,
): JsonObject {
  return {
    operationId,
    summary,
    description,
    security: [{ bearerAuth: [] }, {}],
    parameters: [...parametersOf('path', SEQUENCE_PARAMS), ...parametersOf('query', query)],
    responses: {
      '200': jsonResponse('The IDs, handed out to this caller only.', okSchema),
      ...errorResponses(),
    },
  };
}

const ID_VALUE: Json = {
  oneOf: [
    { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    { type: 'string', pattern: '^[0-9]+$' },
  ],
  description: 'An ID: a JSON number, or a decimal string (see the format parameter).',
};

/** The OpenAPI document of a service with `limits`. */
export function openApiDocument(limits: ApiLimits): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'idgen-cass',
      version: API_VERSION,
      description:
        "Unique integer IDs from sequences shared by every datacenter, handed out by the allocator of this service's DC. Every ID is handed out once, to one caller; IDs of a failed request are never handed out (they stay a gap). Errors are JSON { code, message } with the stable codes of idgen-cass.",
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    paths: {
      '/v1/sequences/{name}/ids': {
        post: idOperation(
          'drawIds',
          'Draw IDs',
          "count IDs of the sequence, strictly increasing, not necessarily contiguous. Served from the blocks this process holds; when they run out, waits for the next block up to the service's timeout.",
          idsQuery(limits),
          'Ids',
        ),
      },
      '/v1/sequences/{name}/ranges': {
        post: idOperation(
          'takeRange',
          'Take a contiguous range',
          'count contiguous IDs of the sequence: first, first + 1, …, last. If the current block holds fewer, its rest is skipped and the range comes from the next block.',
          RANGES_QUERY,
          'Range',
        ),
      },
      '/healthz': {
        get: {
          operationId: 'health',
          summary: 'Liveness',
          description: 'Answers 200 while the process runs; asks nothing of Cassandra.',
          responses: { '200': jsonResponse('The process runs.', 'Health') },
        },
      },
      '/readyz': {
        get: {
          operationId: 'readiness',
          summary: 'Readiness',
          description:
            'Whether this process can hand out IDs from what its DC holds: Cassandra answers in the local DC, and each sequence served (the allowlist, or every sequence of the keyspace) is loaded and this process holds IDs of it (claiming a block if it holds none). A partition between DCs alone does not make it not ready. status is ready when every sequence served holds IDs, degraded (still 200) when only some do, not_ready (503) when none does or the sequences cannot be listed. With ?sequence=NAME only that sequence is checked.',
          parameters: parametersOf('query', READYZ_QUERY),
          responses: {
            '200': jsonResponse('Ready, or degraded: some sequences served hold IDs.', 'Readiness'),
            '503': jsonResponse(
              'Not ready: no sequence asked about holds IDs; the body says why, per sequence.',
              'Readiness',
            ),
          },
        },
      },
      '/metrics': {
        get: {
          operationId: 'metrics',
          summary: 'Prometheus metrics',
          description: 'The metrics of the registry the service was given, in its text format.',
          responses: {
            '200': {
              description: 'The Prometheus text exposition format.',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
            '404': jsonResponse(
              'Code IDGEN_NOT_FOUND: the service has no metrics registry.',
              'Error',
            ),
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'openapi',
          summary: 'This document',
          responses: {
            '200': {
              description: 'The OpenAPI document of the service.',
              content: { 'application/json': { schema: { type: 'object' } } },
            },
          },
        },
      },
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
      headers: {
        RetryAfter: {
          description: 'Seconds to wait before retrying the same request.',
          schema: { type: 'integer', minimum: 1 },
        },
      },
      schemas: {
        Ids: {
          type: 'object',
          required: ['sequence', 'ids'],
          properties: {
            sequence: { type: 'string' },
            ids: { type: 'array', items: ID_VALUE },
          },
          examples: [{ sequence: 'orders', ids: [1001, 1002, 1003] }],
        },
        Range: {
          type: 'object',
          required: ['sequence', 'first', 'last', 'count'],
          properties: {
            sequence: { type: 'string' },
            first: ID_VALUE,
            last: ID_VALUE,
            count: { type: 'integer', minimum: 1 },
          },
          examples: [{ sequence: 'orders', first: 2001, last: 2100, count: 100 }],
        },
        Error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'string', enum: Object.keys(HTTP_ANSWERS).sort() },
            message: { type: 'string' },
          },
        },
        Health: {
          type: 'object',
          required: ['status'],
          properties: { status: { const: 'ok' } },
        },
        Readiness: {
          type: 'object',
          required: ['status', 'dc', 'keyspace', 'sequences'],
          properties: {
            status: { enum: ['ready', 'degraded', 'not_ready'] },
            dc: { type: 'string' },
            keyspace: { type: 'string' },
            sequences: {
              type: 'array',
              items: {
                type: 'object',
                required: ['sequence', 'ready'],
                properties: {
                  sequence: { type: 'string' },
                  ready: { type: 'boolean' },
                  held: { type: 'integer', description: 'IDs this process holds.' },
                  code: { type: 'string' },
                  message: { type: 'string' },
                },
              },
            },
            code: {
              type: 'string',
              description: 'Why, when the sequences could not even be listed.',
            },
            message: { type: 'string' },
          },
        },
      },
    },
  };
}
