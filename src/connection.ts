/**
 * Opening the Cassandra client idgen-cass talks through.
 *
 * The protocol's LOCAL_SERIAL statements must be coordinated in the client's own DC (that DC's
 * replicas are the Paxos quorum of its `idgen_dc_state` partitions), so the client's load
 * balancing must be DC-aware with no remote-DC hosts. A client we build guarantees that; a
 * client the user passes in is checked for it.
 */

import cassandra from 'cassandra-driver';

import { InvalidOptionError, StoreUnavailableError } from './errors.js';

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
   * A client of your own to share. Its load balancing must be DC-aware with a local DC and no
   * remote-DC hosts (the driver's default policy is). idgen-cass never shuts it down.
   * @default a client built from the options above, shut down by `close()`
   */
  client?: cassandra.Client;
}

/** Client settings for a client we build; `readTimeout` must exceed Cassandra's CAS timeout. */
const CLIENT_DEFAULTS = Object.freeze({
  /** The driver's default is LOCAL_ONE; the protocol sets every statement's level anyway. */
  consistency: cassandra.types.consistencies.localQuorum,
  /** ms; above Cassandra's cas_contention_timeout + write_request_timeout (1 s + 2 s by default). */
  readTimeout: 12_000,
  /** ms */
  connectTimeout: 5_000,
});

/** What {@link openClient} hands back. */
export interface OpenedClient {
  readonly client: cassandra.Client;
  /** True when {@link openClient} built the client, so its user must shut it down. */
  readonly ownsClient: boolean;
  /** The client's local datacenter. */
  readonly localDataCenter: string;
}

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
  if (options.client !== undefined) return adoptClient(options.client, options.localDataCenter);

  const contactPoints = validateContactPoints(options.contactPoints);
  const localDataCenter = options.localDataCenter;
  if (typeof localDataCenter !== 'string' || localDataCenter.trim() === '') {
    throw new InvalidOptionError(
      'localDataCenter',
      localDataCenter,
      'the name of the datacenter this process runs in, e.g. "dc1"',
    );
  }
  if (options.password !== undefined && options.username === undefined) {
    throw new InvalidOptionError('username', undefined, 'a user name whenever a password is given');
  }

  const { policies, auth } = cassandra;
  const client = new cassandra.Client({
    contactPoints: [...contactPoints],
    localDataCenter,
    policies: {
      // DC-aware: only local-DC hosts are ever used (the 4.x driver has no remote fallback).
      loadBalancing: new policies.loadBalancing.TokenAwarePolicy(
        new policies.loadBalancing.DCAwareRoundRobinPolicy(localDataCenter),
      ),
    },
    ...(options.username !== undefined
      ? { authProvider: new auth.PlainTextAuthProvider(options.username, options.password ?? '') }
      : {}),
    queryOptions: { consistency: CLIENT_DEFAULTS.consistency, prepare: true },
    socketOptions: {
      readTimeout: CLIENT_DEFAULTS.readTimeout,
      connectTimeout: CLIENT_DEFAULTS.connectTimeout,
    },
  });

  try {
    await client.connect();
  } catch (error) {
    await client.shutdown().catch(() => undefined);
    throw connectError(error, contactPoints, localDataCenter);
  }

  // The driver checks this too; keep the check explicit so the error names the option.
  const dcs = datacentersOf(client);
  if (!dcs.includes(localDataCenter)) {
    await client.shutdown().catch(() => undefined);
    throw unknownDataCenter(localDataCenter, dcs);
  }
  return { client, ownsClient: true, localDataCenter };
}

/**
 * The local datacenter of a client, read from its load-balancing policy, or undefined when the
 * policy is not DC-aware.
 */
export function localDataCenterOf(client: cassandra.Client): string | undefined {
  const clientOptions = (client as unknown as { options?: DriverClientOptions }).options;
  const fromPolicy = clientOptions?.policies?.loadBalancing?.getOptions().get('localDataCenter');
  if (typeof fromPolicy === 'string' && fromPolicy !== '') return fromPolicy;
  const fromOptions = clientOptions?.localDataCenter;
  return typeof fromOptions === 'string' && fromOptions !== '' ? fromOptions : undefined;
}

/** Whether the client decodes and encodes CQL bigint as JS bigint instead of a driver `Long`. */
export function encodesBigIntAsLong(client: cassandra.Client): boolean {
  const clientOptions = (client as unknown as { options?: DriverClientOptions }).options;
  return clientOptions?.encoding?.useBigIntAsLong === true;
}

/** The runtime `client.options` the driver's typings leave out. */
interface DriverClientOptions {
  readonly localDataCenter?: string;
  readonly encoding?: { readonly useBigIntAsLong?: boolean };
  readonly contactPoints?: readonly string[];
  readonly policies?: {
    readonly loadBalancing?: cassandra.policies.loadBalancing.LoadBalancingPolicy;
  };
}

async function adoptClient(
  client: cassandra.Client,
  requestedDc: string | undefined,
): Promise<OpenedClient> {
  const contactPoints =
    (client as unknown as { options?: DriverClientOptions }).options?.contactPoints ?? [];
  try {
    await client.connect(); // a no-op when already connected
  } catch (error) {
    throw connectError(error, contactPoints, requestedDc);
  }

  const localDataCenter = localDataCenterOf(client);
  if (localDataCenter === undefined) {
    throw new InvalidOptionError(
      'client',
      'a Client without a local datacenter',
      'a Client with a DC-aware load-balancing policy (set its "localDataCenter" option)',
    );
  }
  if (requestedDc !== undefined && requestedDc !== localDataCenter) {
    throw new InvalidOptionError(
      'localDataCenter',
      requestedDc,
      `the given client's own local datacenter "${localDataCenter}" (or leave it out)`,
    );
  }
  const dcs = datacentersOf(client);
  if (!dcs.includes(localDataCenter)) throw unknownDataCenter(localDataCenter, dcs);

  // LOCAL_SERIAL is only safe when coordinated in the local DC: refuse remote-DC hosts.
  const policy = (client as unknown as { options?: DriverClientOptions }).options?.policies
    ?.loadBalancing;
  const ignored = cassandra.types.distance.ignored;
  const remoteInUse = client.hosts
    .values()
    .filter((host) => host.datacenter !== localDataCenter && policy?.getDistance(host) !== ignored)
    .map((host) => `${host.address} (${host.datacenter})`);
  if (remoteInUse.length > 0) {
    throw new InvalidOptionError(
      'client',
      `a Client that uses hosts of other datacenters: ${remoteInUse.join(', ')}`,
      `a Client whose load balancing uses only hosts of its local datacenter "${localDataCenter}" (e.g. DCAwareRoundRobinPolicy)`,
    );
  }
  return { client, ownsClient: false, localDataCenter };
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
  return value;
}

function datacentersOf(client: cassandra.Client): string[] {
  return [...new Set(client.hosts.values().map((host) => host.datacenter))].sort();
}

function unknownDataCenter(dc: string, known: readonly string[]): InvalidOptionError {
  return new InvalidOptionError(
    'localDataCenter',
    dc,
    known.length > 0 ? `one of: ${known.join(', ')}` : 'a datacenter of the cluster',
  );
}

/** Maps a failed `client.connect()` to an error that names what to fix. */
function connectError(
  error: unknown,
  contactPoints: readonly string[],
  localDataCenter: string | undefined,
): Error {
  // The driver's own check of localDataCenter, possibly inside a NoHostAvailableError:
  // "… but only found hosts in data centers: [dc1, dc2]" or "… Available DCs are: [dc1,dc2]".
  if (localDataCenter !== undefined) {
    for (const candidate of [error, ...innerErrors(error)]) {
      if (!(candidate instanceof cassandra.errors.ArgumentError)) continue;
      const known = /(?:Available DCs are|found hosts in data centers): \[([^\]]*)\]/.exec(
        candidate.message,
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
  return new StoreUnavailableError(
    'local',
    'connect',
    `could not connect to contact points ${points}: ${describeDriverError(error)}`,
    { cause: error },
  );
}

/** A short, credential-free description of a driver error, inner host errors included. */
export function describeDriverError(error: unknown): string {
  if (error instanceof cassandra.errors.NoHostAvailableError) {
    const inner = error.innerErrors as Record<string, unknown> | null | undefined;
    const perHost = Object.entries(inner ?? {}).map(
      ([host, innerError]) =>
        `${host}: ${innerError instanceof Error ? innerError.message : String(innerError)}`,
    );
    return perHost.length > 0 ? perHost.join('; ') : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

function innerErrors(error: unknown): unknown[] {
  if (!(error instanceof cassandra.errors.NoHostAvailableError)) return [];
  return Object.values((error.innerErrors as Record<string, unknown> | null | undefined) ?? {});
}
