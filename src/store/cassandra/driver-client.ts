/**
 * Opening the Cassandra client: DC-aware load balancing with no remote-DC hosts, so LOCAL_SERIAL
 * is coordinated in the local DC (docs/design.md, "The client"); a user's client is checked.
 */

import cassandra from 'cassandra-driver';

import { InvalidOptionError } from '../../errors.js';
import {
  checkClientRouting,
  datacentersOf,
  LocalDcPolicy,
  runtimeOptionsOf,
  unknownDataCenter,
} from './client-routing.js';
import { connectError } from './errors.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './request-options.js';
import { checkKeys, everyKeyOf } from '../../options.js';
import { MAX_TIMER_MS } from '../../timers.js';

/** Where and how to reach Cassandra. */
export interface ConnectionOptions {
  /** Nodes of the local datacenter (`host` or `host:port`). Required unless `client` is given. */
  contactPoints?: readonly string[];
  /** This process's datacenter, as Cassandra names it. Required unless `client` is given. */
  localDataCenter?: string;
  /** Keyspace of the idgen tables: letters, digits and `_` (at most 48); case-sensitive. */
  keyspace: string;
  /** User for `PlainTextAuthProvider`. @default no authentication */
  username?: string;
  /** Password for `username`; never logged. @default no authentication */
  password?: string;
  /** Any other driver `authProvider`; not with `username`. @default no authentication */
  authProvider?: cassandra.auth.AuthProvider;
  /** TLS options as `tls.connect()` takes them; certificates are verified. @default plain TCP */
  sslOptions?: import('node:tls').ConnectionOptions;
  /**
   * Ms before a request's outcome is unknown; keep it above Cassandra's CAS timeout and below
   * `callTimeoutMs`. Schema changes get at least 12000.
   * @default 5000
   */
  requestTimeoutMs?: number;
  /**
   * Other driver `Client` options; what the protocol depends on is set by idgen-cass.
   * @default the driver's defaults
   */
  driverOptions?: Omit<
    cassandra.ClientOptions,
    'contactPoints' | 'localDataCenter' | 'keyspace' | 'profiles' | 'authProvider' | 'sslOptions'
  >;
  /**
   * A client to share; its load balancing must be DC-local (the driver's default is). Never shut
   * down by idgen-cass.
   * @default a client built from the options above, shut down by `close()`
   */
  client?: cassandra.Client;
}

const CONNECTION_KEYS = everyKeyOf<ConnectionOptions>()([
  'contactPoints',
  'localDataCenter',
  'keyspace',
  'username',
  'password',
  'authProvider',
  'sslOptions',
  'requestTimeoutMs',
  'driverOptions',
  'client',
]);

/** @throws {InvalidOptionError} for a key neither a connection option nor in `others`. */
export function checkConnectionKeys(options: object, others: readonly string[]): void {
  checkKeys(options, [...CONNECTION_KEYS, ...others]);
}

/** The least timeout of a schema change, which waits for the other nodes to agree. */
export const SCHEMA_CHANGE_TIMEOUT_MS = 12_000;

const CONNECT_TIMEOUT_MS = 5_000;
const LOCAL_QUORUM = cassandra.types.consistencies.localQuorum;

export interface OpenedClient {
  readonly client: cassandra.Client;
  /** Whether {@link openClient} built the client, which its user must shut down. */
  readonly ownsClient: boolean;
  readonly localDataCenter: string;
}

/** Driver options `driverOptions` may not hold, and what sets them instead. */
const OWN_DRIVER_OPTIONS: Readonly<Record<string, string>> = {
  contactPoints: 'set contactPoints',
  localDataCenter: 'set localDataCenter',
  keyspace: 'set keyspace',
  profiles: 'the library sets the execution profiles, and each statement its own options',
  authProvider: 'set username and password, or authProvider',
  sslOptions: 'set sslOptions (the library turns certificate checks on)',
};

/**
 * Uses `options.client` (connecting it if needed) or builds and connects a DC-aware client.
 * @throws {@link InvalidOptionError} for bad options, an unknown DC or a client not DC-local.
 * @throws {@link StoreUnavailableError} when no contact point can be reached.
 */
export async function openClient(
  options: Omit<ConnectionOptions, 'keyspace'> & { keyspace?: string },
): Promise<OpenedClient> {
  const { client: given, localDataCenter: requestedDc } = options;
  if (given !== undefined) {
    requestTimeoutOf(options); // validated: the store sets it on each request
    const client = given as Partial<cassandra.Client> | null;
    if (typeof client?.connect !== 'function' || typeof client.execute !== 'function') {
      throw new InvalidOptionError('client', given, 'a cassandra-driver Client', 'kind');
    }
    await connect(given, runtimeOptionsOf(given)?.contactPoints ?? [], requestedDc, false);
    const localDataCenter = checkClientRouting(given, requestedDc);
    return { client: given, ownsClient: false, localDataCenter };
  }
  const { clientOptions, contactPoints, localDataCenter } = buildClientOptions(options);
  const client = new cassandra.Client(clientOptions);
  await connect(client, contactPoints, localDataCenter, true);
  return { client, ownsClient: true, localDataCenter };
}

/** `requestTimeoutMs` or the default; at most MAX_TIMER_MS, past which a timer fires at once. */
function requestTimeoutOf(options: Pick<ConnectionOptions, 'requestTimeoutMs'>): number {
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (
    typeof requestTimeoutMs !== 'number' ||
    !(requestTimeoutMs > 0 && requestTimeoutMs <= MAX_TIMER_MS)
  ) {
    throw new InvalidOptionError(
      'requestTimeoutMs',
      requestTimeoutMs,
      `a number of milliseconds above 0 and up to ${MAX_TIMER_MS} (above Cassandra's CAS timeout, e.g. 5000)`,
    );
  }
  return requestTimeoutMs;
}

/**
 * Validates the connection options; the user's driver options, TLS and authentication with what
 * the protocol depends on set on top.
 * @throws {@link InvalidOptionError} naming the first bad option.
 */
export function buildClientOptions(options: Omit<ConnectionOptions, 'keyspace' | 'client'>): {
  readonly clientOptions: cassandra.ClientOptions;
  readonly contactPoints: readonly string[];
  readonly localDataCenter: string;
} {
  const contactPoints = validateContactPoints(options.contactPoints);
  const localDataCenter = options.localDataCenter;
  if (typeof localDataCenter !== 'string' || localDataCenter.trim() === '') {
    throw new InvalidOptionError(
      'localDataCenter',
      localDataCenter,
      'the name of the datacenter this process runs in, e.g. "dc1"',
    );
  }
  for (const option of ['username', 'password'] as const) {
    const value = options[option];
    const shown = option === 'password' ? 'kind' : 'value';
    if (value !== undefined && typeof value !== 'string') {
      throw new InvalidOptionError(option, value, 'a string', shown);
    }
  }
  if (
    options.authProvider !== undefined &&
    typeof (options.authProvider as Partial<cassandra.auth.AuthProvider> | null)
      ?.newAuthenticator !== 'function'
  ) {
    throw new InvalidOptionError(
      'authProvider',
      options.authProvider,
      "a cassandra-driver AuthProvider (one with newAuthenticator), e.g. the driver's auth.PlainTextAuthProvider",
      'kind',
    );
  }
  const driver: unknown = options.driverOptions === undefined ? {} : options.driverOptions;
  if (typeof driver !== 'object' || driver === null || Array.isArray(driver)) {
    const allowed = "an object of the driver's ClientOptions";
    throw new InvalidOptionError('driverOptions', driver, allowed);
  }
  // Profiles could route to other DCs; the driver's TLS default verifies no certificate.
  for (const [key, instead] of Object.entries(OWN_DRIVER_OPTIONS)) {
    const value = (driver as Record<string, unknown>)[key];
    if (value !== undefined) {
      throw new InvalidOptionError(`driverOptions.${key}`, value, `none: ${instead}`, 'kind');
    }
  }
  if (options.password !== undefined && options.username === undefined) {
    throw new InvalidOptionError('username', undefined, 'a user name whenever a password is given');
  }
  if (options.username !== undefined && options.authProvider !== undefined) {
    throw new InvalidOptionError(
      'authProvider',
      'an authProvider together with username',
      'either username (and password) or authProvider',
    );
  }
  const requestTimeoutMs = requestTimeoutOf(options);

  const { policies, auth } = cassandra;
  const { username, password, sslOptions } = options;
  const authProvider =
    username !== undefined
      ? new auth.PlainTextAuthProvider(username, password ?? '')
      : options.authProvider;
  const given = driver as NonNullable<ConnectionOptions['driverOptions']>;
  const clientOptions: cassandra.ClientOptions = {
    ...given,
    contactPoints: [...contactPoints],
    localDataCenter,
    policies: {
      ...given.policies,
      loadBalancing: new LocalDcPolicy(
        new policies.loadBalancing.TokenAwarePolicy(
          new policies.loadBalancing.DCAwareRoundRobinPolicy(localDataCenter),
        ),
        localDataCenter,
      ),
    },
    ...(authProvider !== undefined ? { authProvider } : {}),
    ...(sslOptions !== undefined
      ? { sslOptions: { rejectUnauthorized: true, ...sslOptions } }
      : {}),
    // The driver's own requests; every statement sets its own level.
    queryOptions: { ...given.queryOptions, consistency: LOCAL_QUORUM, prepare: true },
    socketOptions: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      ...given.socketOptions,
      readTimeout: requestTimeoutMs,
    },
  };
  return { clientOptions, contactPoints, localDataCenter };
}

/**
 * A short-lived client local to `dc` (for virtual tables), with `client`'s hosts there,
 * authentication, TLS and port; the caller shuts it down.
 * @throws {@link InvalidOptionError} when `client` knows no host of `dc`.
 * @throws {@link StoreUnavailableError} or {@link AuthenticationError} when it cannot connect.
 */
export async function openClientInDc(
  client: cassandra.Client,
  dc: string,
  { timeoutMs = 5_000 }: { readonly timeoutMs?: number } = {},
): Promise<cassandra.Client> {
  const contactPoints = client.hosts
    .values()
    .filter((host) => host.datacenter === dc)
    .map((host) => host.address);
  if (contactPoints.length === 0) throw unknownDataCenter(dc, datacentersOf(client));
  const runtime = runtimeOptionsOf(client) ?? {};
  const other = new cassandra.Client({
    contactPoints,
    localDataCenter: dc,
    policies: {
      loadBalancing: new cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy(dc),
    },
    ...(runtime.authProvider !== undefined ? { authProvider: runtime.authProvider } : {}),
    ...(runtime.sslOptions !== undefined ? { sslOptions: runtime.sslOptions } : {}),
    ...(runtime.protocolOptions !== undefined ? { protocolOptions: runtime.protocolOptions } : {}),
    socketOptions: { connectTimeout: timeoutMs, readTimeout: timeoutMs },
    queryOptions: { consistency: cassandra.types.consistencies.localOne, prepare: true },
  });
  await connect(other, contactPoints, dc, true);
  return other;
}

/** Connects `client` (a no-op when connected); an owned one is shut down if it cannot. */
async function connect(
  client: cassandra.Client,
  contactPoints: readonly string[],
  localDataCenter: string | undefined,
  owned: boolean,
): Promise<void> {
  try {
    await client.connect();
  } catch (error) {
    if (owned) await client.shutdown().catch(() => undefined);
    throw connectError(error, contactPoints, localDataCenter);
  }
}

/** A contact point's port as the driver splits it: after `host:` or `[IPv6]:`, not in `::1`. */
const PORT = /^(?:\[[^\]]+\]|[^:]*):(?<port>[^:]*)$/;

function validateContactPoints(value: unknown): readonly string[] {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every((point): point is string => typeof point === 'string' && point.trim() !== '')
  ) {
    throw new InvalidOptionError(
      'contactPoints',
      Array.isArray(value) ? `[${value.map(String).join(', ')}]` : value,
      'a non-empty list of node addresses of the local datacenter, e.g. ["10.0.0.1", "10.0.0.2:9042"]',
    );
  }
  // The driver reports a bad port as a node down.
  const badPort = value.find((point) => {
    const port = PORT.exec(point.trim())?.groups?.['port'];
    return port !== undefined && !(/^\d{1,5}$/.test(port) && +port >= 1 && +port <= 65_535);
  });
  if (badPort !== undefined) {
    throw new InvalidOptionError(
      'contactPoints',
      badPort,
      'a node address as host, host:port or [IPv6]:port, with a port from 1 to 65535',
    );
  }
  return value;
}
