/** What every node runs, read from the node itself (`system_views.settings` is node-local). */
import { ClusterError, type NodeSpec } from './topology.js';
import { hostOf, sleep, withClient } from './nodes.js';

export interface NodeSettings {
  readonly node: string;
  readonly paxos: string;
  readonly commitlogSync: string;
}

/** Reads every node's settings, each node coordinating its own read, retried for `timeoutMs`. */
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
    if (host === undefined)
      throw new ClusterError(`The driver did not find node ${node.name} (${node.address}).`);
    const query = 'SELECT value FROM system_views.settings WHERE name = ?';
    const read = async (name: string) => {
      const result = await client.execute(query, [name], { host, prepare: true });
      return String(result.first()?.['value'] ?? 'unknown');
    };
    return { paxos: await read('paxos_variant'), commitlogSync: await read('commitlog_sync') };
  });
}

/** A line per node whose settings differ from `expected` (else the first's); `unknown` differs. */
export function settingsProblems(
  settings: readonly NodeSettings[],
  expected?: Omit<NodeSettings, 'node'>,
): string[] {
  const reference = expected ?? settings[0];
  if (reference === undefined) return ['no node answered'];
  const against = expected === undefined ? `${settings[0]!.node}'s` : 'the expected';
  const differs = (mine: string, theirs: string) => mine !== theirs || mine === 'unknown';
  const names = { paxos: 'paxos_variant', commitlogSync: 'commitlog_sync' } as const;
  return settings.flatMap((s) => {
    const differences = (['paxos', 'commitlogSync'] as const)
      .filter((key) => differs(s[key], reference[key]))
      .map((key) => `${names[key]} ${s[key]}, not ${against} ${reference[key]}`);
    return differences.length === 0 ? [] : [`${s.node} runs ${differences.join(' and ')}`];
  });
}

export function settingsChanges(
  start: readonly NodeSettings[],
  end: readonly NodeSettings[],
): string[] {
  return start.flatMap((before) => {
    const after = end.find((s) => s.node === before.node);
    if (after === undefined) return [`${before.node} did not report its settings at the end`];
    return settingsProblems([after], before).length === 0
      ? []
      : [
          `${before.node} ran paxos_variant ${before.paxos}, commitlog_sync ${before.commitlogSync} at the start, and paxos_variant ${after.paxos}, commitlog_sync ${after.commitlogSync} at the end`,
        ];
  });
}
