import { describe, expect, it } from 'vitest';

import {
  settingsChanges,
  settingsProblems,
  type NodeSettings,
} from '../../scripts/cluster/settings.js';

const node = (name: string, paxos = 'v2', commitlogSync = 'batch'): NodeSettings => ({
  node: name,
  paxos,
  commitlogSync,
});

describe('cluster settings: every node runs the same', () => {
  it('finds no problem when every node agrees', () => {
    const nodes = [node('dc1-1'), node('dc2-1'), node('dc3-3')];
    expect(settingsProblems(nodes)).toEqual([]);
    expect(settingsProblems(nodes, { paxos: 'v2', commitlogSync: 'batch' })).toEqual([]);
  });

  it('names each node that differs from the others, not only from the first DC', () => {
    const nodes = [node('dc1-1'), node('dc2-2', 'v1'), node('dc3-3', 'v2', 'periodic')];
    expect(settingsProblems(nodes)).toEqual([
      "dc2-2 runs paxos_variant v1, not dc1-1's v2",
      "dc3-3 runs commitlog_sync periodic, not dc1-1's batch",
    ]);
  });

  it('names each node that differs from what the run asks for', () => {
    const nodes = [node('dc1-1'), node('dc2-1')];
    expect(settingsProblems(nodes, { paxos: 'v1', commitlogSync: 'batch' })).toEqual([
      'dc1-1 runs paxos_variant v2, not the expected v1',
      'dc2-1 runs paxos_variant v2, not the expected v1',
    ]);
  });

  it('counts a setting no node reported, or no node at all, as a problem', () => {
    expect(settingsProblems([node('dc1-1', 'unknown'), node('dc1-2', 'unknown')])).toEqual([
      "dc1-1 runs paxos_variant unknown, not dc1-1's unknown",
      "dc1-2 runs paxos_variant unknown, not dc1-1's unknown",
    ]);
    expect(settingsProblems([])).toEqual(['no node answered']);
  });
});

describe('cluster settings: the same at the end of a run as at its start', () => {
  it('names a node restarted with other settings, or that did not answer at the end', () => {
    const start = [node('dc1-1'), node('dc2-1'), node('dc3-1')];
    expect(settingsChanges(start, [node('dc3-1'), node('dc2-1'), node('dc1-1')])).toEqual([]);
    // Every node alike at the end, so settingsProblems alone would see nothing.
    const restarted = [node('dc1-1', 'v1'), node('dc2-1', 'v1'), node('dc3-1', 'v1')];
    expect(settingsProblems(restarted)).toEqual([]);
    expect(settingsChanges(start, restarted)).toHaveLength(3);
    expect(settingsChanges(start, [node('dc1-1'), node('dc2-1', 'v2', 'periodic')])).toEqual([
      'dc2-1 ran paxos_variant v2, commitlog_sync batch at the start, and paxos_variant v2, commitlog_sync periodic at the end',
      'dc3-1 did not report its settings at the end',
    ]);
  });
});
