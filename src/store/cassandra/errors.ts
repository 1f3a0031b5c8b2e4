/**
 * The one place driver errors are mapped to idgen-cass errors, by name and code rather than
 * `instanceof`, so a client of another copy of cassandra-driver maps too.
 */

import cassandra from 'cassandra-driver';

import {
  AuthenticationError,
  IdGenError,
  InvalidOptionError,
  StoreUnavailableError,
} from '../../errors.js';
import type { CasOutcome } from '../port.js';
import { unknownDataCenter } from './client-routing.js';
import type { Statement } from './statements.js';

const codes = cassandra.types.responseErrorCodes;

/** Response codes under which Cassandra refused the request before executing anything. */
const NOT_EXECUTED: ReadonlySet<number> = new Set([
  codes.syntaxError,
  codes.invalid,
  codes.unauthorized,
  codes.configError,
  codes.badCredentials,
  codes.protocolError,
]);

/**
 * Failures of a cluster that could not answer, by response code or error name: what each says,
 * and whether it is a timeout (contention or overload as often as a node down).
 */
const UNAVAILABLE = new Map<unknown, readonly [detail: string, timedOut?: boolean]>([
  [codes.readTimeout, ['read timed out', true]],
  [codes.writeTimeout, ['read timed out', true]],
  [codes.unavailableException, ['not enough replicas alive']],
  [codes.readFailure, ['replicas failed the request']],
  [codes.writeFailure, ['replicas failed the request']],
  [codes.overloaded, ['the coordinator could not run it']],
  [codes.isBootstrapping, ['the coordinator could not run it']],
  [codes.serverError, ['the coordinator could not run it']],
  [codes.truncateError, ['the coordinator could not run it']],
  ['OperationTimedOutError', ["no answer within the client's read timeout", true]],
  ['socket', ['the connection to the coordinator broke']],
]);

/** Refusals that mean the keyspace is not one initSchema() made, and the keyspace wanted. */
const KEYSPACE_REFUSALS: readonly (readonly [RegExp, (message: string) => string])[] = [
  [
    /unconfigured table|does not exist/i,
    () => 'a keyspace that holds the idgen tables (create them with initSchema())',
  ],
  [
    /undefined column name|type .* is not compatible/i,
    (message) => `a keyspace whose idgen tables match this version's schema.cql (${message})`,
  ],
  [
    /not compatible with replication strategy/i,
    (message) => `a keyspace with NetworkTopologyStrategy, as initSchema() creates (${message})`,
  ],
];

export type UnknownOutcome = Extract<CasOutcome<never>, { readonly kind: 'unknown' }>;

interface DriverErrorShape {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
  readonly innerErrors?: unknown;
  readonly isSocketError?: unknown;
}

function shape(error: unknown): DriverErrorShape {
  return typeof error === 'object' && error !== null ? (error as DriverErrorShape) : {};
}

function responseCode(error: unknown): number | undefined {
  const { name, code } = shape(error);
  return name === 'ResponseError' && typeof code === 'number' ? code : undefined;
}

function isNoHostAvailable(error: unknown): boolean {
  return shape(error).name === 'NoHostAvailableError';
}

/**
 * Maps a failed statement. A conditional write's failure is an {@link UnknownOutcome} unless
 * Cassandra refused it before executing (docs/design.md, "Outcomes of a conditional write").
 */
export function mapFailure(
  error: unknown,
  statement: Omit<Statement, 'cql' | 'onePage'>,
  operation: string,
  context: { readonly keyspace: string; readonly localDc: string },
): Error | UnknownOutcome {
  if (error instanceof IdGenError) return error;
  const { name, isSocketError } = shape(error);
  const code = responseCode(error);
  const message = describeDriverError(error);
  const wrongKeyspace = KEYSPACE_REFUSALS.find(([pattern]) => pattern.test(message));
  if (code === codes.invalid && wrongKeyspace !== undefined) {
    return new InvalidOptionError('keyspace', context.keyspace, wrongKeyspace[1](message));
  }
  const conditional = statement.serial !== undefined;
  if (conditional && !(code !== undefined && NOT_EXECUTED.has(code)) && !isNoHostAvailable(error)) {
    return { kind: 'unknown', cause: error };
  }
  const socket = isSocketError === true && !UNAVAILABLE.has(name) && !isNoHostAvailable(error);
  const kind = code ?? (socket ? 'socket' : name);
  const [detail, timedOut = false] =
    kind === 'NoHostAvailableError'
      ? [`no host of DC "${context.localDc}" could run it`]
      : (UNAVAILABLE.get(kind) ?? []);
  if (detail !== undefined) {
    const cause = { cause: error, timedOut };
    return new StoreUnavailableError(statement.level, operation, `${detail}: ${message}`, cause);
  }
  if (code === codes.unauthorized) {
    return new IdGenError(
      'IDGEN_AUTH_FAILED',
      `Cassandra refused ${operation} to this role: ${message}. Grant it SELECT and MODIFY on keyspace "${context.keyspace}".`,
      { cause: error },
    );
  }
  return new Error(`Cassandra failed ${operation}: ${message}`, { cause: error });
}

/** A short, credential-free description of a driver error, inner host errors included. */
export function describeDriverError(error: unknown): string {
  const perHost = Object.entries(innerErrorsOf(error)).map(
    ([host, inner]) => `${host}: ${inner instanceof Error ? inner.message : String(inner)}`,
  );
  if (perHost.length > 0) return perHost.join('; ');
  const { message } = shape(error);
  return typeof message === 'string' ? message : String(error);
}

/** A NoHostAvailableError's errors, by host. */
function innerErrorsOf(error: unknown): Record<string, unknown> {
  const inner = isNoHostAvailable(error) ? shape(error).innerErrors : undefined;
  return (inner ?? {}) as Record<string, unknown>;
}

/** The DCs the driver lists when it refuses an unknown localDataCenter. */
const KNOWN_DCS = /(?:Available DCs are|found hosts in data centers): \[([^\]]*)\]/;

/** Maps a failed `client.connect()` to an error that names what to fix. */
export function connectError(
  error: unknown,
  contactPoints: readonly string[],
  localDataCenter: string | undefined,
): Error {
  const candidates = [error, ...Object.values(innerErrorsOf(error))];
  const known = candidates
    .filter((candidate) => shape(candidate).name === 'ArgumentError')
    .map((candidate) => KNOWN_DCS.exec(String(shape(candidate).message))?.[1])
    .find((dcs) => dcs !== undefined);
  if (localDataCenter !== undefined && known !== undefined) {
    const dcs = known.split(',').map((dc) => dc.trim());
    return unknownDataCenter(localDataCenter, dcs.filter((dc) => dc !== '').sort());
  }
  const points =
    contactPoints.length > 0 ? contactPoints.join(', ') : "(the client's contact points)";
  const refused = candidates.find((candidate) => {
    const { name, code } = shape(candidate);
    return name === 'AuthenticationError' || code === codes.badCredentials;
  });
  if (refused !== undefined) {
    return new AuthenticationError(points, describeDriverError(refused), { cause: error });
  }
  return new StoreUnavailableError(
    'local',
    'connect',
    `could not connect to contact points ${points}: ${describeDriverError(error)}`,
    { cause: error },
  );
}
