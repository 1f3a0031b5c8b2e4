/**
 * Opening the Cassandra client. LOCAL_SERIAL statements must be coordinated in the client's own
 * DC (its replicas are the Paxos quorum of its DC-state partitions), so load balancing must be
 * DC-aware with no remote-DC hosts: a client we build is; a user's client is checked
 * (client-routing.ts).
 */

import cassandra from 'cassandra-driver';

import { InvalidOptionError } from '../../errors.js';
import {
  checkClientRouting,
  datacentersOf,
  runtimeOptionsOf,
  unknownDataCenter,
} from './client-routing.js';
import { connectError } from './errors.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './request-options.js';
import { AvoidStalledCoordinatorsPolicy, StalledCoordinators } from './stalled-coordinators.js';
import { checkKeys, everyKeyOf } from '../../options.js';
import { MAX_TIMER_MS } from '../../timers.js';

/** Where and how to reach Cassandra. */
export interface ConnectionOptions {
  /**
   * Addresses (`host` or `host:port`) of nodes in the local datacenter. Required unless
   * `client` is given.
   */
  contactPoints?: readonly string[];
  /**
   * The datacenter this process runs in, as Cassandra names it (`nodetool status`). Every
   * statement is coordinated by a node of this DC. Required unless `client` is given.
   */
  localDataCenter?: string;
  /**
   * Keyspace holding the idgen tables. Letters, digits and `_`, starting with a letter (at most
   * 48). Used quoted, so it is case-sensitive.
   */
  keyspace: string;
  /** User for `PlainTextAuthProvider`. @default no authentication */
  username?: string;
  /** Password for `username`. Never logged. @default no authentication */
  password?: string;
  /**
   * Any other authentication (Kerberos, LDAP, a custom provider): the driver's `authProvider`.
   * Cannot be combined with `username`.
   * @default no authentication
   */
  authProvider?: cassandra.auth.AuthProvider;
  /**
   * TLS options for every connection, as Node's `tls.connect()` takes them. `{}` enables TLS with
   * the system's CAs. Certificates are verified unless you set `rejectUnauthorized: false`.
   * @default plain TCP
   */
  sslOptions?: import('node:tls').ConnectionOptions;
  /**
   * Milliseconds one request may take before the client gives up on it (its outcome is then
   * unknown and resolved by a re-read). Keep it above Cassandra's CAS timeout
   * (`cas_contention_timeout` + `write_request_timeout`) and below `callTimeoutMs`.
   * Schema changes get at least 12000.
   * @default 5000
   */
  requestTimeoutMs?: number;
  /**
   * Any other option of the driver's `Client`, passed through. What the protocol depends on
   * (contact points, `localDataCenter`, DC-local load balancing, execution profiles, each
   * statement's consistency, timeout and retry policy) is set by idgen-cass.
   * @default the driver's defaults
   */
  driverOptions?: Omit<
    cassandra.ClientOptions,
    'contactPoints' | 'localDataCenter' | 'keyspace' | 'profiles' | 'authProvider' | 'sslOptions'
  >;
  /**
   * A client of your own to share. Its load balancing must be DC-aware with a local DC and no
   * remote-DC hosts (the driver's default policy is). idgen-cass never shuts it down.
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

/**
 * Refuses a key of `options` that is neither a connection option nor one of the entry's own
 * (`others`): a misspelt one would be ignored.
 * @throws {InvalidOptionError} naming it.
 */
export function checkConnectionKeys(options: object, others: readonly string[]): void {
  checkKeys(options, [...CONNECTION_KEYS, ...others]);
}

/** The least timeout of a schema change, which waits for the other nodes to agree. */
export const SCHEMA_CHANGE_TIMEOUT_MS = 12_000;

/** The consistency of the driver's own requests; every statement sets its own level. */
const CLIENT_CONSISTENCY = cassandra.types.consistencies.localQuorum;
const CONNECT_TIMEOUT_MS = 5_000;

/** What {@link openClient} hands back. */
export interface OpenedClient {
  readonly client: cassandra.Client;
  /** Whether {@link openClient} built the client, which its user must then shut down. */
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
 *
 * @throws {@link InvalidOptionError} for missing or bad options, an unknown `localDataCenter`,
 *   or a given client whose load balancing is not DC-local.
 * @throws {@link StoreUnavailableError} (level `local`) when no contact point can be reached.
 */
export async function openClient(
  options: Omit<ConnectionOptions, 'keyspace'> & { keyspace?: string },
): Promise<OpenedClient> {
  if (options.client !== undefined) {
    requestTimeoutOf(options); // the store sets it on every request of the user's client
    return adoptClient(options.client, options.localDataCenter);
  }
  const { clientOptions, contactPoints, localDataCenter } = buildClientOptions(options);
  const client = await connected(
    new cassandra.Client(clientOptions),
    contactPoints,
    localDataCenter,
  );
  // The driver checks this too; checked here so that the error names the option.
  const dcs = datacentersOf(client);
  if (!dcs.includes(localDataCenter)) {
    await client.shutdown().catch(() => undefined);
    throw unknownDataCenter(localDataCenter, dcs);
  }
  return { client, ownsClient: true, localDataCenter };
}

/**
 * `requestTimeoutMs`, or the default.
 * @throws {InvalidOptionError} unless it is a number of milliseconds above 0 that one Node timer
 *   holds: the driver times each request with one, which past that fires after 1 ms.
 */
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
 * The driver options of a client built for idgen-cass, after validating the connection options:
 * the user's `driverOptions`, TLS and authentication, with what the protocol depends on (contact
 * points, local DC, DC-aware load balancing, timeouts) set on top.
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
    if (value !== undefined && typeof value !== 'string') {
      // A password is never shown, even one of the wrong type.
      throw new InvalidOptionError(
        option,
        value,
        'a string',
        option === 'password' ? 'kind' : 'value',
      );
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
  const driverOptions: unknown = options.driverOptions;
  if (
    driverOptions !== undefined &&
    (typeof driverOptions !== 'object' || driverOptions === null || Array.isArray(driverOptions))
  ) {
    throw new InvalidOptionError(
      'driverOptions',
      driverOptions,
      "an object of the driver's ClientOptions",
    );
  }
  // Also refused at run time (untyped callers): profiles could route to other DCs, and the
  // driver's TLS default verifies no certificate.
  for (const [key, instead] of Object.entries(OWN_DRIVER_OPTIONS)) {
    const value = (driverOptions as Record<string, unknown> | undefined)?.[key];
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
  const driver = options.driverOptions ?? {};
  const authProvider =
    options.username !== undefined
      ? new auth.PlainTextAuthProvider(options.username, options.password ?? '')
      : options.authProvider;
  const clientOptions: cassandra.ClientOptions = {
    ...driver,
    contactPoints: [...contactPoints],
    localDataCenter,
    policies: {
      ...driver.policies,
      // Local-DC hosts only; stalled coordinators last (stalled-coordinators.ts).
      loadBalancing: new AvoidStalledCoordinatorsPolicy(
        new policies.loadBalancing.TokenAwarePolicy(
          new policies.loadBalancing.DCAwareRoundRobinPolicy(localDataCenter),
        ),
        new StalledCoordinators(),
      ),
    },
    ...(authProvider !== undefined ? { authProvider } : {}),
    // The driver would not verify certificates by default.
    ...(options.sslOptions !== undefined
      ? { sslOptions: { rejectUnauthorized: true, ...options.sslOptions } }
      : {}),
    queryOptions: {
      ...driver.queryOptions,
      consistency: CLIENT_CONSISTENCY,
      prepare: true,
    },
    socketOptions: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      ...driver.socketOptions,
      readTimeout: requestTimeoutMs,
    },
  };
  return { clientOptions, contactPoints, localDataCenter };
}

/** Whether the client decodes and encodes CQL bigint as JS bigint instead of a driver `Long`. */
export function encodesBigIntAsLong(client: cassandra.Client): boolean {
  return runtimeOptionsOf(client)?.encoding?.useBigIntAsLong === true;
}

/** Options of {@link openClientInDc}. */
export interface OtherDcClientOptions {
  /** Milliseconds to connect, and to wait for each request. @default 5000 */
  readonly timeoutMs?: number | undefined;
}

/**
 * Opens a short-lived client local to `dc`, for statements only `dc`'s own nodes can answer
 * (virtual tables), with `client`'s hosts in `dc`, authentication, TLS and port. The caller shuts
 * it down.
 * @throws {@link InvalidOptionError} when `client` knows no host of `dc`.
 * @throws {@link StoreUnavailableError} when no host of `dc` can be reached.
 * @throws {@link AuthenticationError} when `dc`'s nodes refuse the credentials.
 */
export async function openClientInDc(
  client: cassandra.Client,
  dc: string,
  options: OtherDcClientOptions = {},
): Promise<cassandra.Client> {
  const contactPoints = client.hosts
    .values()
    .filter((host) => host.datacenter === dc)
    .map((host) => host.address);
  if (contactPoints.length === 0) throw unknownDataCenter(dc, datacentersOf(client));
  const timeoutMs = options.timeoutMs ?? 5_000;
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
  return connected(other, contactPoints, dc);
}

/** `client`, connected; shut down again if it cannot connect. */
async function connected(
  client: cassandra.Client,
  contactPoints: readonly string[],
  localDataCenter: string,
): Promise<cassandra.Client> {
  try {
    await client.connect();
  } catch (error) {
    await client.shutdown().catch(() => undefined);
    throw connectError(error, contactPoints, localDataCenter);
  }
  return client;
}

/** Connects a client the user passes in (a no-op when already connected) and checks its routing. */
async function adoptClient(
  client: cassandra.Client,
  requestedDc: string | undefined,
): Promise<OpenedClient> {
  const given = client as Partial<cassandra.Client> | null;
  if (typeof given?.connect !== 'function' || typeof given.execute !== 'function') {
    throw new InvalidOptionError('client', client, 'a cassandra-driver Client', 'kind');
  }
  const contactPoints = runtimeOptionsOf(client)?.contactPoints ?? [];
  try {
    await client.connect(); // a no-op when already connected
  } catch (error) {
    throw connectError(error, contactPoints, requestedDc);
  }
  return { client, ownsClient: false, localDataCenter: checkClientRouting(client, requestedDc) };
}

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
  for (const point of value) {
    const port = portOf(point.trim());
    if (
      port !== undefined &&
      !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65_535)
    ) {
      throw new InvalidOptionError(
        'contactPoints',
        point,
        'a node address as host, host:port or [IPv6]:port, with a port from 1 to 65535',
      );
    }
  }
  return value;
}

/**
 * The port of a contact point as the driver splits it (`[IPv6]:port` or `host:port`), else
 * undefined. Checked here: the driver reports a bad port as "Cassandra is down".
 */
function portOf(point: string): string | undefined {
  if (point.startsWith('[') && point.indexOf(']:') > 1) {
    return point.slice(point.lastIndexOf(']:') + 2);
  }
  const parts = point.split(':');
  return parts.length === 2 ? parts[1] : undefined;
}
