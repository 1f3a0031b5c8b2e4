/** The options of `createServer()` (server.ts): their defaults, and the one pass that checks them. */

import type { Logger as PinoLogger } from 'pino';

import { InvalidOptionError } from '../errors.js';
import { checkLogger } from '../logger.js';
import { checkKeys, everyKeyOf, validateSequenceName } from '../options.js';
import { BearerToken } from './auth.js';

/** What `/metrics` serves: a prom-client `Registry` fits as it is. */
export interface MetricsRegistry {
  /** The metrics in the Prometheus text format. */
  metrics(): Promise<string>;
  /** The `Content-Type` of {@link MetricsRegistry.metrics}'s text. */
  readonly contentType: string;
}

/** Options of `createServer()`. */
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
   * Logs failed requests (5xx at `error`) and every request at `debug`, never the token or text
   * a client chose (request-logs.ts). Without it the service is silent.
   * @default undefined
   */
  readonly logger?: PinoLogger | undefined;
  /**
   * How long one request to an ID endpoint may wait for IDs, in ms, before a 503 with
   * `Retry-After`. Below proxies' usual 10 s, so callers get the code, not a gateway timeout.
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

/** {@link ServeOptions} checked, with their defaults. */
export interface ServeSettings {
  readonly sequences: readonly string[] | undefined;
  readonly token: BearerToken | undefined;
  readonly registry: MetricsRegistry | undefined;
  readonly logger: PinoLogger | undefined;
  readonly timeoutMs: number;
  readonly maxIdsPerRequest: number;
  readonly readyTimeoutMs: number;
}

/**
 * Checks `options` as `createServer()` does, for callers that want bad options refused before
 * they connect (the CLI).
 * @throws what {@link resolveServeOptions} throws.
 */
export function checkServeOptions(options: ServeOptions): void {
  resolveServeOptions(options);
}

const SERVE_KEYS = everyKeyOf<ServeOptions>()([
  'sequences',
  'token',
  'registry',
  'logger',
  'timeoutMs',
  'maxIdsPerRequest',
  'readyTimeoutMs',
]);

/**
 * The options with their defaults, each checked once.
 * @throws {InvalidOptionError} for a bad option (the token's contents are never in the message).
 * @throws {InvalidNameError} for a bad name in `sequences`.
 */
export function resolveServeOptions(options: ServeOptions): ServeSettings {
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
