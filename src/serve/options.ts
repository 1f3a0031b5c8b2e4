/** The options of `createServer()`, their defaults, and the one pass that checks them. */

import type { Logger as PinoLogger } from 'pino';

import { InvalidOptionError } from '../errors.js';
import { checkLogger } from '../logger.js';
import { checkKeys, everyKeyOf, milliseconds, validateName } from '../options.js';
import { BearerToken } from './auth.js';

/** What `/metrics` serves: a prom-client `Registry` fits as it is. */
export interface MetricsRegistry {
  /** The metrics in the Prometheus text format. */
  metrics(): Promise<string>;
  readonly contentType: string;
}

/** Options of `createServer()`. */
export interface ServeOptions {
  /** The only sequences served (and checked by `/readyz`). @default undefined (every one) */
  readonly sequences?: readonly string[] | undefined;
  /** The bearer token the ID endpoints require; never logged. @default undefined (none) */
  readonly token?: string | undefined;
  /** What `/metrics` serves; without it `/metrics` answers 404. @default undefined */
  readonly registry?: MetricsRegistry | undefined;
  /** Logs failed requests at `error`, every request at `debug`. @default undefined (silent) */
  readonly logger?: PinoLogger | undefined;
  /**
   * How long a request may wait for IDs before a 503, in ms; below proxies' usual 10 s, so
   * callers get the code. @default 5000
   */
  readonly timeoutMs?: number | undefined;
  /** The most IDs one `POST /v1/sequences/{name}/ids` returns. @default 10000 */
  readonly maxIdsPerRequest?: number | undefined;
  /** How long `/readyz` waits for each of its checks, in ms. @default 2000 */
  readonly readyTimeoutMs?: number | undefined;
}

export const SERVE_DEFAULTS = Object.freeze({
  timeoutMs: 5_000,
  maxIdsPerRequest: 10_000,
  readyTimeoutMs: 2_000,
});

/** The largest `maxIdsPerRequest`: a response of more IDs is better a range. */
const MAX_IDS_PER_REQUEST = 1_000_000;

/** {@link ServeOptions} checked, with their defaults. */
export type ServeSettings = Omit<ServeOptions, 'token' | keyof typeof SERVE_DEFAULTS> &
  Readonly<Record<keyof typeof SERVE_DEFAULTS, number>> & {
    readonly token: BearerToken | undefined;
  };

const SERVE_KEYS = everyKeyOf<ServeOptions>()([
  'sequences',
  'token',
  'registry',
  'logger',
  'timeoutMs',
  'maxIdsPerRequest',
  'readyTimeoutMs',
]);

/** Checks `options` as `createServer()` does, before connecting (the CLI). */
export function checkServeOptions(options: ServeOptions): void {
  resolveServeOptions(options);
}

/**
 * The options with their defaults, each checked once.
 * @throws {InvalidOptionError} for a bad option (the token's contents are never in the message).
 * @throws {InvalidNameError} for a bad name in `sequences`.
 */
export function resolveServeOptions(options: ServeOptions): ServeSettings {
  checkKeys(options, SERVE_KEYS);
  checkLogger('logger', options.logger);
  const { sequences, token } = options;
  if (sequences !== undefined) {
    if (!Array.isArray(sequences) || sequences.length === 0) {
      throw new InvalidOptionError(
        'sequences',
        sequences,
        'a non-empty list of sequence names, or no list to serve every sequence of the keyspace',
      );
    }
    for (const name of sequences) validateName('sequence', name);
  }
  const ms = (option: 'timeoutMs' | 'readyTimeoutMs') =>
    milliseconds(option, options[option], SERVE_DEFAULTS[option], true);
  return {
    ...options,
    sequences: sequences && [...new Set(sequences)],
    token: token === undefined ? undefined : new BearerToken(token),
    timeoutMs: ms('timeoutMs'),
    maxIdsPerRequest: idsPerRequest(options.maxIdsPerRequest ?? SERVE_DEFAULTS.maxIdsPerRequest),
    readyTimeoutMs: ms('readyTimeoutMs'),
  };
}

function idsPerRequest(value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_IDS_PER_REQUEST) {
    const allowed = `an integer from 1 to ${MAX_IDS_PER_REQUEST}`;
    throw new InvalidOptionError('maxIdsPerRequest', value, allowed);
  }
  return value;
}
