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
import { levelOf, type Statement } from './statements.js';

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

/** Response codes of a cluster that could not answer, and what each says. */
const UNAVAILABLE: ReadonlyMap<number, string> = new Map([
  [codes.unavailableException, 'not enough replicas alive'],
  [codes.readFailure, 'replicas failed the request'],
  [codes.writeFailure, 'replicas failed the request'],
  [codes.overloaded, 'the coordinator could not run it'],
  [codes.isBootstrapping, 'the coordinator could not run it'],
  [codes.serverError, 'the coordinator could not run it'],
  [codes.truncateError, 'the coordinator could not run it'],
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

export function isNoHostAvailable(error: unknown): boolean {
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
  const conditional = statement.serial !== undefined;
  const code = responseCode(error);
  const message = describeDriverError(error);
  const unavailable = (detail: string, timedOut = false) =>
    new StoreUnavailableError(statement.level, operation, detail, { cause: error, timedOut });

  const wrongKeyspace = KEYSPACE_REFUSALS.find(([pattern]) => pattern.test(message));
  if (code === codes.invalid && wrongKeyspace !== undefined) {
    return new InvalidOptionError('keyspace', context.keyspace, wrongKeyspace[1](message));
  }
  if (conditional && !(code !== undefined && NOT_EXECUTED.has(code)) && !isNoHostAvailable(error)) {
    return { kind: 'unknown', cause: error };
  }
  if (code === codes.readTimeout || code === codes.writeTimeout) {
    return unavailable(`${levelOf(statement.consistency)} read timed out: ${message}`, true);
  }
  const detail = code === undefined ? undefined : UNAVAILABLE.get(code);
  if (detail !== undefined) return unavailable(`${detail}: ${message}`);
  if (code === codes.unauthorized) {
    return new IdGenError(
      'IDGEN_AUTH_FAILED',
      `Cassandra refused ${operation} to this role: ${message}. Grant it SELECT and MODIFY on keyspace "${context.keyspace}".`,
      { cause: error },
    );
  }
  if (shape(error).name === 'OperationTimedOutError') {
    return unavailable(`no answer within the client's read timeout: ${message}`, true);
  }
  if (isNoHostAvailable(error)) {
    return unavailable(`no host of DC "${context.localDc}" could run it (${message})`);
  }
  if (shape(error).isSocketError === true) {
    return unavailable(`the connection to the coordinator broke: ${message}`);
  }
  return new Error(`Cassandra failed ${operation}: ${message}`, { cause: error });
}

/** A short, credential-free description of a driver error, inner host errors included. */
export function describeDriverError(error: unknown): string {
  const { innerErrors, message } = shape(error);
  if (isNoHostAvailable(error)) {
    const inner = (innerErrors ?? {}) as Record<string, unknown>;
    const perHost = Object.entries(inner).map(
      ([host, innerError]) =>
        `${host}: ${innerError instanceof Error ? innerError.message : String(innerError)}`,
    );
    if (perHost.length > 0) return perHost.join('; ');
  }
  if (typeof message === 'string') return message;
  return String(error);
}

function innerErrors(error: unknown): unknown[] {
  if (!isNoHostAvailable(error)) return [];
  return Object.values((shape(error).innerErrors as Record<string, unknown> | null) ?? {});
}

/** Maps a failed `client.connect()` to an error that names what to fix. */
export function connectError(
  error: unknown,
  contactPoints: readonly string[],
  localDataCenter: string | undefined,
): Error {
  // The driver's own check of localDataCenter, maybe inside a NoHostAvailableError.
  if (localDataCenter !== undefined) {
    for (const candidate of [error, ...innerErrors(error)]) {
      if (shape(candidate).name !== 'ArgumentError') continue;
      const known = /(?:Available DCs are|found hosts in data centers): \[([^\]]*)\]/.exec(
        (candidate as Error).message,
      )?.[1];
      if (known === undefined) continue;
      const dcs = known
        .split(',')
        .map((dc) => dc.trim())
        .filter((dc) => dc !== '')
        .sort();
      return unknownDataCenter(localDataCenter, dcs);
    }
  }
  const points =
    contactPoints.length > 0 ? contactPoints.join(', ') : "(the client's contact points)";
  const refused = [error, ...innerErrors(error)].find((candidate) => {
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
