/** The local-DC cut of a client's query plans, and the profile that carries it. */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import {
  LocalDcPolicy,
  localDcProfile,
  routingPolicyOf,
} from '../../src/store/cassandra/client-routing.js';

type Host = cassandra.Host;

function host(address: string, datacenter: string | undefined): Host {
  return { address, datacenter } as Host;
}

/** A policy whose plans are `plan()`, remote hosts and all; it counts the hosts it handed out. */
class ListPolicy extends cassandra.policies.loadBalancing.LoadBalancingPolicy {
  handedOut = 0;
  constructor(private readonly plan: () => Iterable<Host>) {
    super();
  }
  override getDistance(): cassandra.types.distance {
    return cassandra.types.distance.local;
  }
  override newQueryPlan(
    _keyspace: string,
    _options: cassandra.ExecutionOptions,
    callback: (error: Error, iterator: Iterator<Host>) => void,
  ): void {
    const counted = function* (this: ListPolicy, hosts: Iterable<Host>) {
      for (const h of hosts) {
        this.handedOut++;
        yield h;
      }
    }.call(this, this.plan());
    callback(null as unknown as Error, counted);
  }
}

/** The first `take` hosts of a plan of `policy`, asked for one by one. */
function planOf(policy: cassandra.policies.loadBalancing.LoadBalancingPolicy, take = 10): string[] {
  const addresses: string[] = [];
  policy.newQueryPlan('ks', {} as cassandra.ExecutionOptions, (error, iterator) => {
    expect(error).toBeFalsy();
    while (addresses.length < take) {
      const item = iterator.next();
      if (item.done === true) break;
      addresses.push(item.value.address);
    }
  });
  return addresses;
}

describe('LocalDcPolicy', () => {
  it('keeps only the local DC hosts of each plan, in the child order', () => {
    const hosts = [
      host('10.0.2.1:9042', 'dc2'),
      host('10.0.1.1:9042', 'dc1'),
      host('10.0.3.1:9042', 'dc3'),
      host('10.0.9.9:9042', undefined),
      host('10.0.1.2:9042', 'dc1'),
    ];
    const policy = new LocalDcPolicy(new ListPolicy(() => hosts), 'dc1');
    expect(planOf(policy)).toEqual(['10.0.1.1:9042', '10.0.1.2:9042']);
  });

  it('judges each plan anew, so a host of another DC that joined later is left out too', () => {
    const hosts = [host('10.0.1.1:9042', 'dc1')];
    const policy = new LocalDcPolicy(new ListPolicy(() => [...hosts]), 'dc1');
    expect(planOf(policy)).toEqual(['10.0.1.1:9042']);
    hosts.unshift(host('10.0.4.1:9042', 'dc4'), host('10.0.1.3:9042', 'dc1'));
    expect(planOf(policy)).toEqual(['10.0.1.3:9042', '10.0.1.1:9042']);
  });

  it('reads a plan lazily, so an endless plan is no hang', () => {
    const child = new ListPolicy(function* () {
      for (let i = 0; ; i++)
        yield host(`10.0.${i % 2 === 0 ? 2 : 1}.${i}:9042`, `dc${i % 2 === 0 ? 2 : 1}`);
    });
    expect(planOf(new LocalDcPolicy(child, 'dc1'), 3)).toEqual([
      '10.0.1.1:9042',
      '10.0.1.3:9042',
      '10.0.1.5:9042',
    ]);
    expect(child.handedOut).toBe(6);
  });

  it('ignores hosts of other DCs and takes the child distance and options otherwise', () => {
    const child = new cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy('dc1');
    const policy = new LocalDcPolicy(new ListPolicy(() => []), 'dc1');
    expect(policy.getDistance(host('10.0.2.1:9042', 'dc2'))).toBe(cassandra.types.distance.ignored);
    expect(policy.getDistance(host('10.0.1.1:9042', 'dc1'))).toBe(cassandra.types.distance.local);
    expect(new LocalDcPolicy(child, 'dc1').getOptions()).toEqual(child.getOptions());
  });

  it('passes a failed plan on as it is', () => {
    const failing = new ListPolicy(() => []);
    failing.newQueryPlan = (_k, _o, callback) =>
      callback(new Error('no plan'), [][Symbol.iterator]());
    let seen: unknown;
    new LocalDcPolicy(failing, 'dc1').newQueryPlan('ks', {} as cassandra.ExecutionOptions, (e) => {
      seen = e;
    });
    expect(seen).toMatchObject({ message: 'no plan' });
  });
});

describe('localDcProfile', () => {
  it("is a profile the client's driver takes, routing with the cut of the client's policy", () => {
    // Never connected: the profile is built and looked up without a cluster.
    const client = new cassandra.Client({ contactPoints: ['127.0.0.1'], localDataCenter: 'dc1' });
    const policy = routingPolicyOf(client)!;
    const profile = localDcProfile(client, policy, 'dc1');
    expect(profile).toBeInstanceOf(cassandra.ExecutionProfile);
    expect(profile.loadBalancing).toBeInstanceOf(LocalDcPolicy);
    expect(profile.loadBalancing).toMatchObject({ child: policy, localDc: 'dc1' });
    // Only what the statement does not set falls back to the client's; the profile sets none.
    expect(profile).toMatchObject({
      consistency: undefined,
      retry: undefined,
      readTimeout: undefined,
    });
    const internals = client as unknown as {
      profileManager: { getProfile: (p: unknown) => unknown };
    };
    expect(internals.profileManager.getProfile(profile)).toBe(profile);
  });

  it("is built with the ExecutionProfile class of the client's own copy of the driver", () => {
    class OtherCopyProfile {
      constructor(
        readonly name: string,
        readonly options: object,
      ) {}
    }
    const client = {
      profileManager: { getDefault: () => new OtherCopyProfile('default', {}) },
    } as unknown as cassandra.Client;
    const policy = new ListPolicy(() => []);
    expect(localDcProfile(client, policy, 'dc1')).toBeInstanceOf(OtherCopyProfile);
  });
});
