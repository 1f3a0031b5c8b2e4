/**
 * The local cluster's shape: what `up`, the demo and the integration tests ask for, so that
 * `npm test` after the demo (or after any `npm run cluster -- up`) runs without variables.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TOPOLOGY,
  defaultTopology,
  testTopology,
  type Topology,
} from '../../scripts/cluster/topology.js';

const oneNode: Topology = { dcs: 3, nodesPerDc: 1, paxos: 'v1', commitlog: 'periodic' };

describe('defaultTopology', () => {
  it('is 3 DCs × 3 nodes, Paxos v2, durable commitlog, unless the variables say otherwise', () => {
    expect(defaultTopology({})).toEqual({ dcs: 3, nodesPerDc: 3, paxos: 'v2', commitlog: 'batch' });
    expect(DEFAULT_TOPOLOGY).toEqual(defaultTopology({}));
    expect(defaultTopology({ IDGEN_NODES_PER_DC: '1', IDGEN_PAXOS: 'v1' })).toMatchObject({
      nodesPerDc: 1,
      paxos: 'v1',
    });
  });

  it('refuses variables out of range, naming them', () => {
    expect(() => defaultTopology({ IDGEN_NODES_PER_DC: '0' })).toThrow(/IDGEN_NODES_PER_DC/);
    expect(() => defaultTopology({ IDGEN_PAXOS: 'v3' })).toThrow(/IDGEN_PAXOS must be v1 or v2/);
  });
});

describe('testTopology', () => {
  it('is the default without an existing cluster', () => {
    expect(testTopology(undefined, {})).toEqual(DEFAULT_TOPOLOGY);
  });

  it('grows a cluster of fewer than 3 nodes per DC, keeps its Paxos variant, asks for batch', () => {
    expect(testTopology(oneNode, {})).toEqual({
      dcs: 3,
      nodesPerDc: 3,
      paxos: 'v1',
      commitlog: 'batch',
    });
  });

  it('keeps a larger cluster as it is', () => {
    expect(testTopology({ ...oneNode, nodesPerDc: 5 }, {}).nodesPerDc).toBe(5);
  });

  it('follows IDGEN_NODES_PER_DC and IDGEN_PAXOS where set', () => {
    expect(testTopology(oneNode, { IDGEN_NODES_PER_DC: '1', IDGEN_PAXOS: 'v2' })).toMatchObject({
      nodesPerDc: 1,
      paxos: 'v2',
    });
  });
});
