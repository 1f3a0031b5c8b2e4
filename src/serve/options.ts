/** The options of `createServer()`, their defaults, and the one pass that checks them. */

import type { Logger as PinoLogger } from 'pino';

import { InvalidOptionError } from '../errors.js';
import { checkLogger } from '../logger.js';
import { checkKeys, everyKeyOf, milliseconds, validateName } from '../options.js';
import { fixedTokens, tokenFile as fileTokens, type TokenSource } from './auth.js';
import type { StatusSource } from './status-page.js';

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
  /** Tokens accepted, any one (rotation); not with token or tokenFile. @default undefined */
  readonly tokens?: readonly string[] | undefined;
  /**
   * A file of the bearer tokens the ID endpoints accept, one per line, re-read when it changes:
   * a version without a valid token leaves the previous tokens. @default undefined
   */
  readonly tokenFile?: string | undefined;
  /** Whether `/metrics` needs a token as well (a token option is then required). @default false */
  readonly metricsAuth?: boolean | undefined;
  /** The PEM certificate chain and private key, making the service HTTPS. @default undefined */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer } | undefined;
  /** What `/metrics` serves; without it `/metrics` answers 404. @default undefined */
  readonly registry?: MetricsRegistry | undefined;
  /** What `GET /status` shows; without it `/status` answers 404. @default undefined */
  readonly status?: StatusSource | undefined;
  /** Logs failed requests at `error`, every request at `debug`. @default undefined (silent) */
  readonly logger?: PinoLogger | undefined;
  /** Longest wait for IDs before a 503, in ms (below proxies' usual 10 s). @default 5000 */
  readonly timeoutMs?: number | undefined;
  /** The most IDs one `POST /v1/sequences/{name}/ids` returns. @default 10000 */
  readonly maxIdsPerRequest?: number | undefined;
  /** How long `/readyz` waits for each of its checks, in ms. @default 2000 */
  readonly readyTimeoutMs?: number | undefined;
  /**
   * The most ID requests under way at once (most wait for a block); one more is answered 503
   * `IDGEN_OVERLOADED` at once, so that overload sheds instead of queueing. @default 1000
   */
  readonly maxPendingRequests?: number | undefined;
  /**
   * How long a client may take to send a request in full (headers and body), in ms; a slower
   * one, or a connection that sends nothing, is refused and disconnected. @default 10000
   */
  readonly receiveTimeoutMs?: number | undefined;
}

export const SERVE_DEFAULTS = Object.freeze({
  timeoutMs: 5_000,
  maxIdsPerRequest: 10_000,
  readyTimeoutMs: 2_000,
  maxPendingRequests: 1_000,
  receiveTimeoutMs: 10_000,
});

/** {@link ServeOptions} checked, with their defaults; `tokens` undefined: none needed. */
export type ServeSettings = Readonly<ReturnType<typeof resolveServeOptions>>;

const SERVE_KEYS = everyKeyOf<ServeOptions>()([
  'sequences',
  'token',
  'tokens',
  'tokenFile',
  'metricsAuth',
  'tls',
  'registry',
  'status',
  'logger',
  'timeoutMs',
  'maxIdsPerRequest',
  'readyTimeoutMs',
  'maxPendingRequests',
  'receiveTimeoutMs',
]);

/** Checks `options` as `createServer()` does, before connecting. */
export function checkServeOptions(options: ServeOptions): void {
  resolveServeOptions(options);
}

/** The options with their defaults, each checked once; throws as `createServer()` does. */
export function resolveServeOptions(options: ServeOptions) {
  checkKeys(options, SERVE_KEYS);
  checkLogger('logger', options.logger);
  const { sequences } = options;
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
  const ms = (option: 'timeoutMs' | 'readyTimeoutMs' | 'receiveTimeoutMs') =>
    milliseconds(option, options[option], SERVE_DEFAULTS[option], true);
  const { token, tokens, tokenFile, metricsAuth = false, tls, status, ...rest } = options;
  const given = Object.entries({ token, tokens, tokenFile }).filter(([, v]) => v !== undefined);
  if (given.length > 1) {
    const both = `both ${given.map(([name]) => name).join(' and ')}`;
    throw new InvalidOptionError(given[1]![0], both, 'one of token, tokens and tokenFile');
  }
  const source: TokenSource | undefined =
    tokenFile !== undefined
      ? fileTokens(tokenFile)
      : tokens !== undefined || token !== undefined
        ? fixedTokens(tokens ?? [token], tokens === undefined ? 'token' : 'tokens')
        : undefined;
  if (typeof metricsAuth !== 'boolean' || (metricsAuth && source === undefined)) {
    const allowed = 'true (with token, tokens or tokenFile: /metrics then needs a token) or false';
    throw new InvalidOptionError('metricsAuth', metricsAuth, allowed);
  }
  if (status !== undefined && typeof status?.status !== 'function') {
    const allowed = 'an object with a status() method, such as an Admin from openAdmin()';
    throw new InvalidOptionError('status', status, allowed);
  }
  if (tls !== undefined && !(isPem(tls.cert) && isPem(tls.key))) {
    throw new InvalidOptionError(
      'tls',
      '(not shown)',
      '{ cert, key }: a PEM certificate chain and its private key',
    );
  }
  return {
    ...rest,
    tls,
    status,
    sequences: sequences && [...new Set(sequences)],
    tokens: source,
    metricsAuth,
    timeoutMs: ms('timeoutMs'),
    // A response of more IDs is better a range.
    maxIdsPerRequest: count('maxIdsPerRequest', options.maxIdsPerRequest, 1_000_000),
    readyTimeoutMs: ms('readyTimeoutMs'),
    maxPendingRequests: count('maxPendingRequests', options.maxPendingRequests, 1_000_000),
    receiveTimeoutMs: ms('receiveTimeoutMs'),
  };
}

function count(option: keyof typeof SERVE_DEFAULTS, value: unknown, most: number): number {
  const chosen = value ?? SERVE_DEFAULTS[option];
  if (!Number.isInteger(chosen) || (chosen as number) < 1 || (chosen as number) > most) {
    throw new InvalidOptionError(option, chosen, `an integer from 1 to ${most}`);
  }
  return chosen as number;
}

function isPem(value: unknown): boolean {
  return (typeof value === 'string' || Buffer.isBuffer(value)) && value.includes('-----BEGIN ');
}
