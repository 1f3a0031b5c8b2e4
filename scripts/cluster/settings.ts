/**
 * What every node runs, read from the node itself (`system_views.settings` is node-local): a
 * campaign or a test run is about one Paxos variant and one commitlog setting, and one node
 * restarted with others would make its verdict about a cluster that never existed.
 */
import { ClusterError } from './topology.js';
import type { NodeSpec } from './topology.js';
import { hostOf, sleep, withClient } from './nodes.js';

/** The settings of one node that a run's verdict depends on. */
export interface NodeSettings {
  readonly node: string;
  readonly paxos: string;
  readonly commitlogSync: string;
}

/**
 * Reads `paxos_variant` and `commitlog_sync` from every node, each coordinating its own read. A
 * node that does not answer is asked again for up to `timeoutMs`: a CQL probe of a loaded
 * machine can time out while the node is well.
 */
export async function readNodeSettings(
  nodes: readonly NodeSpec[],
  timeoutMs = 60_000,
): Promise<NodeSettings[]> {
  const settings: NodeSettings[] = [];
  for (const node of nodes) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        settings.push({ node: node.name, ...(await readSettingsOf(node)) });
        break;
      } catch (error) {
        if (Date.now() > deadline) {
          throw new ClusterError(
            `Could not read the settings of node ${node.name} (${node.address}) within ${timeoutMs / 1000} s: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        await sleep(2_000);
      }
    }
  }
  return settings;
}

function readSettingsOf(node: NodeSpec): Promise<Omit<NodeSettings, 'node'>> {
  return withClient(node, async (client) => {
    const host = hostOf(client, node);
    if (host === undefined) {
      throw new ClusterError(`The driver did not find node ${node.name} (${node.address}).`);
    }
    const read = async (name: string) => {
      const result = await client.execute(
        'SELECT value FROM system_views.settings WHERE name = ?',
        [name],
        { host, prepare: true },
      );
      return String(result.first()?.['value'] ?? 'unknown');
    };
    return { paxos: await read('paxos_variant'), commitlogSync: await read('commitlog_sync') };
  });
}

/**
 * How the nodes' settings differ from `expected`, or, without it, from each other (the first
 * node's): one line per node that differs, none when all agree. A setting a node did not report
 * (`unknown`) differs too.
 */
export function settingsProblems(
  settings: readonly NodeSettings[],
  expected?: { readonly paxos: string; readonly commitlogSync: string },
): string[] {
  const reference = expected ?? settings[0];
  if (reference === undefined) return ['no node answered'];
  const against = expected === undefined ? `${settings[0]!.node}'s` : 'the expected';
  return settings.flatMap((s) => {
    const differences = [
      ...(s.paxos !== reference.paxos || s.paxos === 'unknown'
        ? [`paxos_variant ${s.paxos}, not ${against} ${reference.paxos}`]
        : []),
      ...(s.commitlogSync !== reference.commitlogSync || s.commitlogSync === 'unknown'
        ? [`commitlog_sync ${s.commitlogSync}, not ${against} ${reference.commitlogSync}`]
        : []),
    ];
    return differences.length === 0 ? [] : [`${s.node} runs ${differences.join(' and ')}`];
  });
}

/**
 * How the nodes' settings read at the end of a run differ from those read at its start, one line
 * per node; none when every node of the start runs as it did. The nemesis restarts nodes, and a
 * restart rewrites a node's configuration: a node brought back with another Paxos variant or
 * commitlog setting would make the verdict about a cluster that never ran.
 */
export function settingsChanges(
  start: readonly NodeSettings[],
  end: readonly NodeSettings[],
): string[] {
  return start.flatMap((before) => {
    const after = end.find((s) => s.node === before.node);
    if (after === undefined) return [`${before.node} did not report its settings at the end`];
    const problems = settingsProblems([after], before);
    return problems.length === 0
      ? []
      : [
          `${before.node} ran paxos_variant ${before.paxos}, commitlog_sync ${before.commitlogSync} at the start, and paxos_variant ${after.paxos}, commitlog_sync ${after.commitlogSync} at the end`,
        ];
  });
}
