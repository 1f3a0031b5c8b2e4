/**
 * A user's client whose default policy passes connect()'s check but puts hosts of other DCs first
 * in its plans: every statement still goes to a coordinator of the local DC (docs/design.md,
 * "The client").
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import { connect } from '../../src/index.js';
import { withKeyspace } from '../support/cluster.js';

type Host = cassandra.Host;
const { DCAwareRoundRobinPolicy } = cassandra.policies.loadBalancing;

const ks = withKeyspace('routing');

/** DC-aware in what it reports (other DCs ignored), but its plans start with every remote host. */
class RemoteFirstPolicy extends DCAwareRoundRobinPolicy {
  private known: cassandra.HostMap | undefined;
  constructor(private readonly localDc: string) {
    super(localDc);
  }
  override init(
    client: cassandra.Client,
    hosts: cassandra.HostMap,
    callback: cassandra.EmptyCallback,
  ): void {
    this.known = hosts;
    super.init(client, hosts, callback);
  }
  override newQueryPlan(
    keyspace: string,
    options: cassandra.ExecutionOptions,
    callback: (error: Error, iterator: Iterator<Host>) => void,
  ): void {
    super.newQueryPlan(keyspace, options, (error, local) => {
      const remote = (this.known?.values() ?? []).filter((h) => h.datacenter !== this.localDc);
      const plan = [...remote, ...{ [Symbol.iterator]: () => local }];
      callback(error, plan[Symbol.iterator]());
    });
  }
}

/** The coordinator and CQL of every request the client sent, answered or not. */
class Coordinators extends cassandra.tracker.RequestLogger {
  readonly seen: { readonly dc: string; readonly address: string; readonly cql: string }[] = [];
  constructor() {
    super({});
  }
  override onSuccess(host: Host, query: string | readonly { query: string }[]): void {
    this.record(host, query);
  }
  override onError(host: Host, query: string | readonly { query: string }[]): void {
    this.record(host, query);
  }
  private record(host: Host, query: string | readonly { query: string }[]): void {
    const cql = typeof query === 'string' ? query : query.map((q) => q.query).join('; ');
    this.seen.push({ dc: host.datacenter, address: host.address, cql });
  }
}

describe('a client whose policy yields hosts of other DCs', () => {
  it('never has a statement coordinated outside the local DC', async () => {
    const [localDc, otherDc] = ks.dcs as [string, string];
    const coordinators = new Coordinators();
    const client = new cassandra.Client({
      contactPoints: ks.contactPoints(localDc),
      localDataCenter: localDc,
      policies: { loadBalancing: new RemoteFirstPolicy(localDc) },
      // A profile of the application's own for another DC: the driver then keeps connections to
      // that DC's hosts, so a plan that names them first is obeyed.
      profiles: [
        new cassandra.ExecutionProfile('reports', {
          loadBalancing: new DCAwareRoundRobinPolicy(otherDc),
        }),
      ],
      requestTracker: coordinators,
    });
    try {
      const ids = await connect({ client, keyspace: ks.name });
      try {
        await ids.createSequence('orders', { blockSize: 10 });
        const drawn = await ids.sequence('orders').nextIds(25, { timeoutMs: 30_000 });
        expect(new Set(drawn).size).toBe(25);
      } finally {
        await ids.close();
      }
      // The client's plans do lead elsewhere: a request of its own goes to the other DC.
      await client.execute('SELECT release_version FROM system.local');
      expect(coordinators.seen.at(-1)?.dc).not.toBe(localDc);
      coordinators.seen.pop();

      const dcState = coordinators.seen.filter(({ cql }) => cql.includes('idgen_dc_state'));
      expect(dcState.length).toBeGreaterThan(0);
      const elsewhere = coordinators.seen.filter(({ dc }) => dc !== localDc);
      expect(elsewhere).toEqual([]);
    } finally {
      await client.shutdown();
    }
  });
});
