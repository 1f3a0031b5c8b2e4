/** Stalled coordinators: which errors mark a host, how long, and the plans that try it last. */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import { LocalDcPolicy, routingPolicyOf } from '../../src/store/cassandra/client-routing.js';
import { StalledCoordinators } from '../../src/store/cassandra/stalled-coordinators.js';
import { CassandraStore } from '../../src/store/cassandra/store.js';

/** A driver error as another copy of the driver would build it: recognised by name. */
function driverError(name: string, fields: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(name), { name }, fields);
}

function clock(start = 0): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

/** A policy over fixed hosts, in a fixed order. */
class FixedPolicy extends cassandra.policies.loadBalancing.LoadBalancingPolicy {
  constructor(private readonly hosts: readonly cassandra.Host[]) {
    super();
  }
  override newQueryPlan(
    _keyspace: string,
    _options: cassandra.ExecutionOptions,
    callback: (error: Error, iterator: Iterator<cassandra.Host>) => void,
  ): void {
    callback(null as unknown as Error, this.hosts[Symbol.iterator]());
  }
  override getOptions(): Map<string, object> {
    return new Map([['localDataCenter', 'dc1' as unknown as object]]);
  }
}

function host(address: string): cassandra.Host {
  return { address, datacenter: 'dc1' } as cassandra.Host;
}

function plan(policy: cassandra.policies.loadBalancing.LoadBalancingPolicy): string[] {
  let hosts: string[] = [];
  policy.newQueryPlan('ks', {} as cassandra.ExecutionOptions, (error, iterator) => {
    expect(error).toBeFalsy();
    hosts = [...{ [Symbol.iterator]: () => iterator }].map((h) => h.address);
  });
  return hosts;
}

describe('StalledCoordinators', () => {
  it('marks the coordinator of a client-side timeout for the quarantine, then forgets it', () => {
    const time = clock();
    const stalled = new StalledCoordinators(30_000, time.now);
    stalled.markTimedOut(driverError('OperationTimedOutError', { coordinator: '10.0.0.2:9042' }));
    expect(stalled.isStalled('10.0.0.2:9042')).toBe(true);
    expect(stalled.isStalled('10.0.0.1:9042')).toBe(false);
    time.advance(29_999);
    expect(stalled.isStalled('10.0.0.2:9042')).toBe(true);
    time.advance(1);
    expect(stalled.isStalled('10.0.0.2:9042')).toBe(false);
  });

  it('takes the host the driver names on the error, and each host of a NoHostAvailableError', () => {
    const stalled = new StalledCoordinators();
    stalled.markTimedOut(driverError('OperationTimedOutError', { host: '10.0.0.3:9042' }));
    stalled.markTimedOut(
      driverError('NoHostAvailableError', {
        innerErrors: {
          '10.0.0.1:9042': driverError('OperationTimedOutError'),
          '10.0.0.2:9042': driverError('ResponseError', { code: 0x1100 }),
        },
      }),
    );
    expect(stalled.isStalled('10.0.0.3:9042')).toBe(true);
    expect(stalled.isStalled('10.0.0.1:9042')).toBe(true);
    expect(stalled.isStalled('10.0.0.2:9042')).toBe(false);
  });

  it('leaves hosts that answered, even with an error, unmarked', () => {
    const stalled = new StalledCoordinators();
    // A server-side timeout is an answer: the coordinator is alive and counted the replicas.
    stalled.markTimedOut(
      driverError('ResponseError', { code: 0x1100, coordinator: '10.0.0.1:9042' }),
    );
    stalled.markTimedOut(new Error('not a driver error'));
    stalled.markTimedOut(undefined);
    expect(stalled.isStalled('10.0.0.1:9042')).toBe(false);
  });
});

describe('LocalDcPolicy with stalled coordinators', () => {
  const hosts = ['10.0.0.1:9042', '10.0.0.2:9042', '10.0.0.3:9042'].map(host);

  it('keeps the wrapped plan, moving stalled coordinators to its end', () => {
    const stalled = new StalledCoordinators();
    const policy = new LocalDcPolicy(new FixedPolicy(hosts), 'dc1', stalled);
    expect(plan(policy)).toEqual(['10.0.0.1:9042', '10.0.0.2:9042', '10.0.0.3:9042']);
    stalled.mark('10.0.0.1:9042');
    expect(plan(policy)).toEqual(['10.0.0.2:9042', '10.0.0.3:9042', '10.0.0.1:9042']);
    // Never left out: with every host stalled the plan is the wrapped one.
    stalled.mark('10.0.0.2:9042');
    stalled.mark('10.0.0.3:9042');
    expect(plan(policy)).toEqual(['10.0.0.1:9042', '10.0.0.2:9042', '10.0.0.3:9042']);
  });

  it("shows the wrapped policy's options, so that the routing checks see its local DC", () => {
    const child = new cassandra.policies.loadBalancing.TokenAwarePolicy(
      new cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy('dc2'),
    );
    const policy = new LocalDcPolicy(child, 'dc2');
    expect(policy.getOptions().get('localDataCenter')).toBe('dc2');
  });

  it('is found by the store, which marks a coordinator whose request timed out', async () => {
    const stalled = new StalledCoordinators();
    const policy = new LocalDcPolicy(new FixedPolicy(hosts), 'dc1', stalled);
    const timeout = driverError('OperationTimedOutError', { coordinator: '10.0.0.2:9042' });
    // Only what the store touches: routing, the encoding it checks and one failing execute.
    const client = {
      options: { localDataCenter: 'dc1', policies: { loadBalancing: policy }, encoding: {} },
      execute: () => Promise.reject(timeout),
    } as unknown as cassandra.Client;
    expect(routingPolicyOf(client)).toBe(policy);
    const store = new CassandraStore(client, 'ks', { ownsClient: false });
    await expect(store.readDcState('orders', 'dc1')).rejects.toThrow();
    expect(stalled.isStalled('10.0.0.2:9042')).toBe(true);
    expect(plan(policy)).toEqual(['10.0.0.1:9042', '10.0.0.3:9042', '10.0.0.2:9042']);
  });
});
