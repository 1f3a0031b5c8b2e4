/**
 * What every node runs, read from the node itself (`system_views.settings` is node-local): a run
 * is about one Paxos variant and one commitlog setting.
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
 * Reads `paxos_variant` and `commitlog_sync` from every node, each coordinating its own read, and
 * asks a node that does not answer again for up to `timeoutMs`.
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
 * How the nodes' settings differ from `expected`, or else from the first node's: one line per
 * node that differs. A setting a node did not report (`unknown`) differs too.
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
 * How the nodes' settings at the end of a run differ from those at its start, one line per node:
 * a restart rewrites a node's configuration.
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
