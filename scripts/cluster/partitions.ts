/** Partitions on one machine: iptables drops packets by the sending node's OS user. */
import { spawn } from 'node:child_process';
import { CQL_PORT, STORAGE_PORT, ClusterError, findNode, isDcName, nodeSpecs } from './topology.js';
import type { NodeSpec } from './topology.js';
import { currentTopology, portOpen, processState, run, runsAsOsUser } from './nodes.js';
import { seesEveryNodeUp, serialWorks, waitFor } from './nodes.js';
import type { Log } from './nodes.js';

const PARTITION_TAG = 'idgen-cass-partition';

/**
 * Cuts `target` (`dc3` or `dc1-2`) off from every other node both ways, calls `rulesInPlace`, and
 * waits until the cut shows. A DC: SERIAL fails from it, LOCAL_SERIAL works there, and SERIAL
 * works from every other node if a majority of DCs remains. A node: LOCAL_SERIAL fails through
 * it, and works from another node of its DC if that DC keeps a quorum.
 */
export async function partition(
  target: string,
  log: Log = () => undefined,
  rulesInPlace: () => void = () => undefined,
): Promise<void> {
  const topology = currentTopology();
  const specs = nodeSpecs(topology);
  const dcCut = isDcName(specs, target);
  const inside = dcCut ? specs.filter((s) => s.dc === target) : [findNode(specs, target)];
  await requirePartitionSupport(specs);
  const outside = specs.filter((s) => !inside.includes(s));
  const changes = partitionChanges(target, inside, outside);
  await applyRules(changes);
  rulesInPlace();
  log(`partition ${target}: ${changes.length} iptables rules; waiting for the cut to show`);

  const cut = inside[0]!;
  if (dcCut) {
    const majority = topology.dcs >= 3;
    // Every node of the majority: one that does not yet hold the cut DC for down times out.
    const serialOutside = async () => {
      for (const node of outside) if (!(await serialWorks(node, 'serial'))) return false;
      return true;
    };
    await waitFor(
      async () =>
        !(await serialWorks(cut, 'serial')) &&
        (await serialWorks(cut, 'localSerial')) &&
        (!majority || (await serialOutside())),
      120_000,
      `SERIAL to fail and LOCAL_SERIAL to work from ${target}${majority ? ', and SERIAL to work from every other node' : ''}`,
    );
    return;
  }
  const sibling = outside.find((s) => s.dc === cut.dc);
  const quorumLeft = topology.nodesPerDc >= 3;
  await waitFor(
    async () =>
      !(await serialWorks(cut, 'localSerial')) &&
      (!quorumLeft || sibling === undefined || (await serialWorks(sibling, 'localSerial'))),
    120_000,
    `LOCAL_SERIAL to fail from ${cut.name}${quorumLeft ? ` and to work from the rest of ${cut.dc}` : ''}`,
  );
}

/** Drops this host's packets to `dc`'s CQL port, as a firewall would, until no node answers. */
export async function cutClients(dc: string, log: Log = () => undefined): Promise<void> {
  const specs = nodeSpecs(currentTopology());
  if (!isDcName(specs, dc)) throw new ClusterError(`No datacenter "${dc}" in this cluster.`);
  await requirePartitionSupport(specs);
  // requirePartitionSupport refuses any user but root, so this host's clients run as uid 0.
  const inside = specs.filter((s) => s.dc === dc);
  const changes = cutClientsChanges(dc, process.getuid!(), inside);
  await applyRules(changes);
  log(`clients of ${dc} cut: ${changes.length} iptables rules; waiting for the cut to show`);
  await waitFor(
    async () => {
      for (const node of inside) if (await portOpen(node.address, CQL_PORT)) return false;
      return true;
    },
    60_000,
    `every node of ${dc} to stop accepting this host's connections`,
  );
}

export function cutClientsChanges(
  dc: string,
  uid: number,
  inside: readonly Pick<NodeSpec, 'address'>[],
): string[][] {
  return inside.map((node) => firstDrop(`clients-${dc}`, String(uid), node.address, CQL_PORT));
}

export async function heal(topology = currentTopology(), options = { verify: true }) {
  const cut = await partitionedTargets();
  if (cut.size === 0) return;
  await applyRules(healChanges(await iptables(['-S', 'OUTPUT'])));
  if (options.verify) await waitHealed(cut, topology);
}

/** Waits until SERIAL works from each `cut` target, then (that needs only a majority) for all. */
export async function waitHealed(
  cut: ReadonlySet<string>,
  topology = currentTopology(),
): Promise<void> {
  const specs = nodeSpecs(topology);
  for (const target of cut) {
    const node = specs.find((s) => s.dc === target || s.name === target);
    if (node && processState(node) === 'running') {
      await waitFor(() => serialWorks(node, 'serial'), 180_000, `SERIAL to work from ${target}`);
    }
  }
  if (specs.every((node) => processState(node) === 'running')) {
    for (const node of specs) {
      await waitFor(() => seesEveryNodeUp(node), 180_000, `${node.name} to see every node up`);
    }
  }
}

export async function partitionedTargets(): Promise<Set<string>> {
  if (!(await hasIptables())) return new Set();
  const listing = await iptables(['-S', 'OUTPUT']).catch(() => '');
  const tags = listing.matchAll(new RegExp(`${PARTITION_TAG}:([A-Za-z0-9_-]+)`, 'g'));
  return new Set([...tags].map((m) => m[1]!));
}

export const isCut = (node: NodeSpec, cut: ReadonlySet<string>): boolean =>
  cut.has(node.dc) || cut.has(node.name);

function hasIptables(): Promise<boolean> {
  return run('iptables', ['--version']).then(
    () => true,
    () => false,
  );
}

export async function partitionUnsupported(): Promise<string | undefined> {
  if (process.getuid?.() !== 0)
    return 'Partitions need root: each DC runs as its own OS user and iptables drops its node-to-node packets. Run the cluster manager as root.';
  if (!(await hasIptables()))
    return 'iptables was not found; install it (apt-get install iptables) to partition DCs.';
  return undefined;
}

async function requirePartitionSupport(specs: readonly NodeSpec[]): Promise<void> {
  const reason = await partitionUnsupported();
  if (reason !== undefined) throw new ClusterError(reason);
  for (const node of specs) {
    if (!(await runsAsOsUser(node))) {
      throw new ClusterError(
        `Node ${node.name} does not run as OS user ${node.osUser}, so its packets cannot be matched; restart the cluster as root ("npm run cluster -- down" then "up").`,
      );
    }
  }
}

export function partitionChanges(
  target: string,
  inside: readonly Pick<NodeSpec, 'osUser' | 'address'>[],
  outside: readonly Pick<NodeSpec, 'osUser' | 'address'>[],
): string[][] {
  return [
    ...inside.flatMap((a) => outside.map((b) => firstDrop(target, a.osUser, b.address))),
    ...outside.flatMap((b) => inside.map((a) => firstDrop(target, b.osUser, a.address))),
  ];
}

export function healChanges(listing: string): string[][] {
  const tagged = new RegExp(`^${PARTITION_TAG}:[A-Za-z0-9_-]+$`);
  return listing
    .split('\n')
    .filter((line) => line.startsWith('-A OUTPUT '))
    .map((line) => splitRule(line.slice('-A '.length)))
    .filter((rule) => {
      const comment = rule.includes('--comment') ? rule[rule.indexOf('--comment') + 1] : undefined;
      return tagged.test(comment ?? '') && rule.at(-2) === '-j' && rule.at(-1) === 'DROP';
    })
    .map((rule) => ['-D', ...rule]);
}

/** A DROP of `owner`'s packets to `destination`, first in OUTPUT: before the host's own rules. */
function firstDrop(target: string, owner: string, destination: string, port = STORAGE_PORT) {
  const match = `-o lo -p tcp -d ${destination} --dport ${port} -m owner --uid-owner ${owner}`;
  const tag = `-m comment --comment ${PARTITION_TAG}:${target}`;
  return `-I OUTPUT 1 ${match} ${tag} -j DROP`.split(' ');
}

function splitRule(rule: string): string[] {
  return (rule.match(/"[^"]*"|\S+/g) ?? []).map((t) => t.replace(/^"|"$/g, ''));
}

/** Applies every change in one `iptables-restore` transaction: no half-made partition. */
async function applyRules(changes: readonly string[][]): Promise<void> {
  if (changes.length === 0) return;
  const quote = (arg: string) => (/^[\w.:/-]+$/.test(arg) ? arg : `"${arg}"`);
  const input = ['*filter', ...changes.map((c) => c.map(quote).join(' ')), 'COMMIT', ''].join('\n');
  await new Promise<void>((resolve, reject) => {
    const child = spawn('iptables-restore', ['-w', '--noflush'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new ClusterError(`iptables-restore exited with ${code}: ${stderr.trim()}`));
    });
    child.stdin.end(input);
  });
}

async function iptables(args: string[]): Promise<string> {
  return (await run('iptables', ['-w', ...args])).stdout;
}
