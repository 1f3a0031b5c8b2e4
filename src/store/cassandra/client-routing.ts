/**
 * Where a driver client sends our statements: only to hosts of the local DC, whatever its policy
 * yields; and the check of a user's client (docs/design.md, "The client").
 */

import cassandra from 'cassandra-driver';

import { InvalidOptionError } from '../../errors.js';
import { StalledCoordinators } from './stalled-coordinators.js';

type Host = cassandra.Host;
type LoadBalancingPolicy = cassandra.policies.loadBalancing.LoadBalancingPolicy;

/** What the driver's typings leave out of a client: its options and profiles at run time. */
interface DriverClientInternals {
  readonly options?: Readonly<cassandra.ClientOptions>;
  readonly profileManager?: {
    getDefaultLoadBalancing?: () => LoadBalancingPolicy;
    getDefault?: () => cassandra.ExecutionProfile;
  };
}

export function runtimeOptionsOf(client: cassandra.Client): cassandra.ClientOptions | undefined {
  return (client as unknown as DriverClientInternals).options;
}

/** The policy our statements are routed with: the `default` profile's, else the client's. */
export function routingPolicyOf(client: cassandra.Client): LoadBalancingPolicy | undefined {
  const runtime = client as unknown as DriverClientInternals;
  return (
    runtime.profileManager?.getDefaultLoadBalancing?.() ?? runtime.options?.policies?.loadBalancing
  );
}

/** The profile every statement is sent with: `policy`'s plans cut to hosts of `localDc`. */
export function localDcProfile(
  client: cassandra.Client,
  policy: LoadBalancingPolicy,
  localDc: string,
  stalled?: StalledCoordinators,
): cassandra.ExecutionProfile {
  // The client's own copy of the class: the driver recognises a profile object by instanceof,
  // and a user's client may come from another copy of the driver.
  const internals = client as unknown as DriverClientInternals;
  const Profile = (internals.profileManager?.getDefault?.().constructor ??
    cassandra.ExecutionProfile) as typeof cassandra.ExecutionProfile;
  return new Profile('idgen-local-dc', {
    loadBalancing: new LocalDcPolicy(policy, localDc, stalled),
  });
}

/**
 * A policy's plans cut to hosts of `localDc`, judged per plan, so a host that joined later and a
 * policy that changes its mind are covered too; the driver's retries and speculative executions
 * take their hosts from the plan, so they stay in the DC as well. Stalled coordinators come last.
 */
export class LocalDcPolicy extends cassandra.policies.loadBalancing.LoadBalancingPolicy {
  constructor(
    readonly child: LoadBalancingPolicy,
    readonly localDc: string,
    readonly stalled = new StalledCoordinators(),
  ) {
    super();
  }

  override init(
    client: cassandra.Client,
    hosts: cassandra.HostMap,
    callback: cassandra.EmptyCallback,
  ): void {
    this.child.init(client, hosts, callback);
  }

  override getDistance(host: Host): cassandra.types.distance {
    return host.datacenter === this.localDc
      ? this.child.getDistance(host)
      : cassandra.types.distance.ignored;
  }

  override getOptions(): Map<string, object> {
    return this.child.getOptions();
  }

  override newQueryPlan(
    keyspace: string,
    executionOptions: cassandra.ExecutionOptions,
    callback: (error: Error, iterator: Iterator<Host>) => void,
  ): void {
    this.child.newQueryPlan(keyspace, executionOptions, (error, iterator) => {
      callback(error, error ? iterator : this.#localPlan(iterator));
    });
  }

  /** `plan`'s local hosts, lazily (a plan need not be finite), stalled ones last. */
  *#localPlan(plan: Iterator<Host>): Generator<Host> {
    const stalled: Host[] = [];
    for (let item = plan.next(); item.done !== true; item = plan.next()) {
      if (item.value.datacenter !== this.localDc) continue;
      if (this.stalled.isStalled(item.value.address)) stalled.push(item.value);
      else yield item.value;
    }
    yield* stalled;
  }
}

/** The DC the client's routing policy is local to; undefined if it is not DC-aware. */
export function localDataCenterOf(client: cassandra.Client): string | undefined {
  const options = routingPolicyOf(client)?.getOptions();
  if (options === undefined || !options.has('localDataCenter')) return undefined;
  const fromPolicy = options.get('localDataCenter');
  if (typeof fromPolicy === 'string' && fromPolicy !== '') return fromPolicy;
  // A DC-aware policy without its own DC takes the client's on connect().
  const fromClient = runtimeOptionsOf(client)?.localDataCenter;
  return typeof fromClient === 'string' && fromClient !== '' ? fromClient : undefined;
}

/**
 * The one DC a connected user's client routes every statement within.
 * @throws {@link InvalidOptionError} when it routes to several or to another than `requestedDc`.
 */
export function checkClientRouting(
  client: cassandra.Client,
  requestedDc: string | undefined,
): string {
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
  const declared = runtimeOptionsOf(client)?.localDataCenter;
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
  return localDataCenter;
}

export function datacentersOf(client: cassandra.Client): string[] {
  return [...new Set(client.hosts.values().map((host) => host.datacenter))].sort();
}

export function unknownDataCenter(dc: string, known: readonly string[]): InvalidOptionError {
  return new InvalidOptionError(
    'localDataCenter',
    dc,
    known.length > 0 ? `one of: ${known.join(', ')}` : 'a datacenter of the cluster',
  );
}
