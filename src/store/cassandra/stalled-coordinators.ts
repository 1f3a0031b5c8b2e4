/**
 * Coordinators that let a request time out client-side are tried last (never left out) for
 * {@link STALL_QUARANTINE_MS}: a stalled node keeps its connections, so the driver counts it up.
 */

import cassandra from 'cassandra-driver';

type Host = cassandra.Host;
type LoadBalancingPolicy = cassandra.policies.loadBalancing.LoadBalancingPolicy;
type ExecutionOptions = cassandra.ExecutionOptions;

export const STALL_QUARANTINE_MS = 30_000;

export class StalledCoordinators {
  readonly #until = new Map<string, number>();

  constructor(
    private readonly quarantineMs: number = STALL_QUARANTINE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** `address` as the driver names a host, `ip:port`. */
  mark(address: string): void {
    this.#until.set(address, this.now() + this.quarantineMs);
  }

  isStalled(address: string): boolean {
    const until = this.#until.get(address);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.#until.delete(address);
    return false;
  }

  markTimedOut(error: unknown): void {
    for (const [address, cause] of timeoutsOf(error)) {
      // By name, so that errors of another copy of the driver count too.
      if ((cause as { name?: unknown } | null)?.name === 'OperationTimedOutError')
        this.mark(address);
    }
  }
}

/** The host each part of a driver error came from. */
function timeoutsOf(error: unknown): [string, unknown][] {
  if (typeof error !== 'object' || error === null) return [];
  const e = error as { coordinator?: unknown; host?: unknown; innerErrors?: unknown };
  const found: [string, unknown][] = [];
  const address = typeof e.coordinator === 'string' ? e.coordinator : e.host;
  if (typeof address === 'string') found.push([address, error]);
  if (typeof e.innerErrors === 'object' && e.innerErrors !== null) {
    for (const [host, inner] of Object.entries(e.innerErrors)) found.push([host, inner]);
  }
  return found;
}

/** Puts stalled coordinators last; distances and options are the wrapped policy's. */
export class AvoidStalledCoordinatorsPolicy
  extends cassandra.policies.loadBalancing.LoadBalancingPolicy
{
  constructor(
    readonly child: LoadBalancingPolicy,
    readonly stalled: StalledCoordinators,
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
    return this.child.getDistance(host);
  }

  override getOptions(): Map<string, object> {
    return this.child.getOptions();
  }

  override newQueryPlan(
    keyspace: string,
    executionOptions: ExecutionOptions,
    callback: (error: Error, iterator: Iterator<Host>) => void,
  ): void {
    this.child.newQueryPlan(keyspace, executionOptions, (error, iterator) => {
      if (error) return callback(error, iterator);
      // The child's plans are finite (local hosts only), so they can be read whole.
      const first: Host[] = [];
      const last: Host[] = [];
      for (let item = iterator.next(); item.done !== true; item = iterator.next()) {
        (this.stalled.isStalled(item.value.address) ? last : first).push(item.value);
      }
      callback(error, [...first, ...last][Symbol.iterator]());
    });
  }
}
