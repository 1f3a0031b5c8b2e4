/** The local cluster's layout: node j of datacenter k listens on 127.0.(j-1).k, port 9042. */
import os from 'node:os';
import path from 'node:path';

/** Pinned so every machine tests against the same Cassandra. */
export const CASSANDRA_VERSION = '5.0.9';
export const CQL_PORT = 9042;
export const STORAGE_PORT = 7000;

export interface NodeSpec {
  readonly name: string;
  readonly dc: string;
  readonly address: string;
  readonly jmxPort: number;
  readonly token: string;
  /** Runs the node's JVM as root: what tells nodes' packets apart in iptables. */
  readonly osUser: string;
  readonly dir: string;
}

export type PaxosVariant = 'v1' | 'v2';
export const PAXOS_VARIANTS: readonly PaxosVariant[] = ['v1', 'v2'];
/** `batch` syncs before acknowledging; `periodic` (negative controls only) may lose writes. */
export type CommitlogSync = 'batch' | 'periodic';

export interface Topology {
  readonly dcs: number;
  readonly nodesPerDc: number;
  readonly paxos: PaxosVariant;
  readonly commitlog: CommitlogSync;
}

export const DEFAULT_TOPOLOGY: Readonly<Topology> = Object.freeze({
  dcs: 3,
  nodesPerDc: 3,
  paxos: 'v2',
  commitlog: 'batch',
});

/** What `up` starts without flags or cluster: the default, IDGEN_NODES_PER_DC, IDGEN_PAXOS. */
export function defaultTopology(env: NodeJS.ProcessEnv = process.env): Topology {
  const nodesPerDc = Number(env['IDGEN_NODES_PER_DC'] ?? DEFAULT_TOPOLOGY.nodesPerDc);
  if (!Number.isInteger(nodesPerDc) || nodesPerDc < 1 || nodesPerDc > 9) {
    throw new ClusterError(
      `IDGEN_NODES_PER_DC must be an integer from 1 to 9; got "${env['IDGEN_NODES_PER_DC']}".`,
    );
  }
  const paxos = (env['IDGEN_PAXOS'] ?? DEFAULT_TOPOLOGY.paxos) as PaxosVariant;
  if (!PAXOS_VARIANTS.includes(paxos))
    throw new ClusterError(`IDGEN_PAXOS must be v1 or v2; got "${paxos}".`);
  return Object.freeze({ ...DEFAULT_TOPOLOGY, nodesPerDc, paxos });
}

/** The integration tests': an existing cluster's (at least 3 nodes per DC) where no variable says. */
export function testTopology(
  existing: Topology | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Topology {
  const topology = defaultTopology(env);
  if (existing === undefined) return topology;
  return Object.freeze({
    ...topology,
    nodesPerDc:
      env['IDGEN_NODES_PER_DC'] === undefined
        ? Math.max(existing.nodesPerDc, DEFAULT_TOPOLOGY.nodesPerDc)
        : topology.nodesPerDc,
    paxos: env['IDGEN_PAXOS'] === undefined ? existing.paxos : topology.paxos,
  });
}

export function describeTopology(t: Topology): string {
  return `${t.dcs} DCs × ${t.nodesPerDc} node${t.nodesPerDc === 1 ? '' : 's'}, Paxos ${t.paxos}, commitlog_sync ${t.commitlog}`;
}

/** Outside the repository; as root not under /root, which the per-DC users cannot read. */
export function cacheDir(): string {
  const override = process.env['IDGEN_CACHE_DIR'];
  if (override) return path.resolve(override);
  if (process.getuid?.() === 0) return '/var/cache/idgen-cass';
  const xdg = process.env['XDG_CACHE_HOME'];
  return path.join(xdg ? xdg : path.join(os.homedir(), '.cache'), 'idgen-cass');
}

export const clusterDir = (): string => path.join(cacheDir(), 'cluster');

export function nodeSpecs(topology: Topology): NodeSpec[] {
  const total = BigInt(topology.dcs * topology.nodesPerDc);
  const specs: NodeSpec[] = [];
  for (let k = 1; k <= topology.dcs; k++) {
    for (let j = 1; j <= topology.nodesPerDc; j++) {
      const index = specs.length;
      const name = `dc${k}-${j}`;
      specs.push({
        name,
        dc: `dc${k}`,
        address: `127.0.${j - 1}.${k}`,
        jmxPort: 7100 + 100 * index,
        // Evenly spaced Murmur3 tokens: fresh nodes start together without bootstrapping.
        token: (-(2n ** 63n) + (2n ** 64n * BigInt(index)) / total).toString(),
        osUser: `idgen-${name}`,
        dir: path.join(clusterDir(), name),
      });
    }
  }
  return specs;
}

export const isDcName = (specs: readonly NodeSpec[], name: string): boolean =>
  specs.some((s) => s.dc === name);

export function findNode(specs: readonly NodeSpec[], name: string): NodeSpec {
  const wanted = /^dc\d+$/.test(name) ? `${name}-1` : name;
  const node = specs.find((s) => s.name === wanted);
  if (!node) {
    throw new ClusterError(
      `Unknown node "${name}". Nodes: ${specs.map((s) => s.name).join(', ')} (a DC name means its first node).`,
    );
  }
  return node;
}

export class ClusterError extends Error {
  override name = 'ClusterError';
}

/** `dc1=10.0.0.5,dc2=10.1.0.5;10.1.0.6` → `{ dc1: ['10.0.0.5'], dc2: [...] }`. */
export function parseClusterSpec(spec: string): Record<string, string[]> {
  const dcs: Record<string, string[]> = {};
  for (const part of spec.split(',').map((p) => p.trim())) {
    if (part === '') continue;
    const [dc, hosts] = part.split('=');
    if (!dc || !hosts || !/^[A-Za-z0-9_.-]+$/.test(dc)) {
      throw new Error(
        `IDGEN_CASSANDRA must look like "dc1=10.0.0.5,dc2=10.1.0.5" (hosts of one DC separated by ";"); got "${spec}".`,
      );
    }
    (dcs[dc] ??= []).push(...hosts.split(';').filter(Boolean));
  }
  if (Object.keys(dcs).length < 2)
    throw new Error(`IDGEN_CASSANDRA must name at least two datacenters; got "${spec}".`);
  return dcs;
}
