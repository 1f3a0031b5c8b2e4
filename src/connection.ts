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
import { describeDriverError, innerErrors } from './store/cassandra-errors.js';

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
 * The load-balancing policy the driver routes our statements with: that of the client's
 * `default` execution profile (we never name another), which overrides the client-level
 * `policies.loadBalancing` when the profile sets its own.
 */
export function routingPolicyOf(
  client: cassandra.Client,
): cassandra.policies.loadBalancing.LoadBalancingPolicy | undefined {
  const runtime = client as unknown as DriverClientInternals;
  return (
    runtime.profileManager?.getDefaultLoadBalancing?.() ?? runtime.options?.policies?.loadBalancing
  );
}

/**
 * The local datacenter of a client: the one its routing policy ({@link routingPolicyOf}) is
 * local to, or undefined when that policy is not DC-aware.
 */
export function localDataCenterOf(client: cassandra.Client): string | undefined {
  const fromPolicy = routingPolicyOf(client)?.getOptions().get('localDataCenter');
  return typeof fromPolicy === 'string' && fromPolicy !== '' ? fromPolicy : undefined;
}

/** Whether the client decodes and encodes CQL bigint as JS bigint instead of a driver `Long`. */
export function encodesBigIntAsLong(client: cassandra.Client): boolean {
  const clientOptions = (client as unknown as { options?: DriverClientOptions }).options;
  return clientOptions?.encoding?.useBigIntAsLong === true;
}

/** The parts of a driver client at runtime that its typings leave out. */
interface DriverClientInternals {
  readonly options?: DriverClientOptions;
  readonly profileManager?: {
    getDefaultLoadBalancing?: () => cassandra.policies.loadBalancing.LoadBalancingPolicy;
  };
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

  const policy = routingPolicyOf(client);
  const policyName = policy?.constructor.name ?? 'none';
  const localDataCenter = localDataCenterOf(client);
  if (localDataCenter === undefined) {
    throw new InvalidOptionError(
      'client',
      `a Client whose default execution profile routes with ${policyName}, which is not local to one datacenter`,
      'a Client whose "default" execution profile (or, without one, its policies.loadBalancing) is DC-aware, e.g. new DCAwareRoundRobinPolicy("dc1") or the driver default with "localDataCenter" set',
    );
  }
  const declared = (client as unknown as DriverClientInternals).options?.localDataCenter;
  if (typeof declared === 'string' && declared !== '' && declared !== localDataCenter) {
    throw new InvalidOptionError(
      'client',
      `a Client whose localDataCenter is "${declared}" but whose default execution profile routes with ${policyName} to "${localDataCenter}"`,
      'a Client whose "default" execution profile routes to its own localDataCenter (or leave the profile\'s loadBalancing unset)',
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

  // LOCAL_SERIAL is only safe when coordinated in the local DC: the policy that routes our
  // statements must ignore every host of another DC.
  const ignored = cassandra.types.distance.ignored;
  const remoteInUse = client.hosts
    .values()
    .filter((host) => host.datacenter !== localDataCenter && policy?.getDistance(host) !== ignored)
    .map((host) => `${host.address} (${host.datacenter})`);
  if (remoteInUse.length > 0) {
    throw new InvalidOptionError(
      'client',
      `a Client whose default execution profile routes with ${policyName}, which uses hosts of other datacenters: ${remoteInUse.join(', ')}`,
      `a Client whose "default" execution profile (or, without one, its policies.loadBalancing) uses only hosts of its local datacenter "${localDataCenter}", e.g. DCAwareRoundRobinPolicy`,
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
      if ((candidate as { name?: unknown } | null)?.name !== 'ArgumentError') continue;
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
  return new StoreUnavailableError(
    'local',
    'connect',
    `could not connect to contact points ${points}: ${describeDriverError(error)}`,
    { cause: error },
  );
}
