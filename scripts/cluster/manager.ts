/**
 * The local multi-DC Cassandra cluster: start, stop, status and faults (partition, pause, kill).
 * Used by the `npm run cluster` CLI, the test harness, the demo and the benchmarks.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import cassandra from 'cassandra-driver';
import { waitForSchemaAgreement } from '../../src/schema.js';
import { checkPrerequisites, installCassandra, writeNodeConfig } from './install.js';
import {
  CQL_PORT,
  ClusterError,
  DEFAULT_TOPOLOGY,
  STORAGE_PORT,
  clusterDir,
  findNode,
  nodeSpecs,
} from './topology.js';
import type { NodeSpec, Topology } from './topology.js';

const run = promisify(execFile);
const PROBE_KEYSPACE = 'idgen_cluster_probe';
const PARTITION_TAG = 'idgen-cass-partition';

export type NodeState = 'running' | 'paused' | 'stopped' | 'absent';

export interface NodeStatus {
  readonly node: NodeSpec;
  readonly state: NodeState;
  readonly cql: boolean;
  readonly partitioned: boolean;
}

type Log = (line: string) => void;

/** The topology recorded by `up`, or the default before the first `up`. */
export function currentTopology(): Topology {
  const file = path.join(clusterDir(), 'topology.json');
  if (!fs.existsSync(file)) return DEFAULT_TOPOLOGY;
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Topology;
}

/** Contact points per DC, e.g. `{ dc1: ['127.0.0.1'], … }`. */
export function contactPointsByDc(
  topology: Topology = currentTopology(),
): Record<string, string[]> {
  const byDc: Record<string, string[]> = {};
  for (const node of nodeSpecs(topology)) (byDc[node.dc] ??= []).push(node.address);
  return byDc;
}

/**
 * Installs Cassandra if needed, starts every node that is not running, and returns once every
 * node accepts CQL and every node sees every other node up. Safe to run twice.
 */
export async function up(topology: Topology, log: Log): Promise<NodeStatus[]> {
  const recorded = path.join(clusterDir(), 'topology.json');
  if (fs.existsSync(recorded)) {
    const existing = currentTopology();
    if (existing.dcs !== topology.dcs || existing.nodesPerDc !== topology.nodesPerDc) {
      throw new ClusterError(
        `A cluster of ${existing.dcs} DCs × ${existing.nodesPerDc} nodes already exists in ${clusterDir()}; run "npm run cluster -- destroy" before changing the topology.`,
      );
    }
  }
  await checkPrerequisites();
  await installCassandra(log);
  fs.mkdirSync(clusterDir(), { recursive: true });
  fs.writeFileSync(recorded, JSON.stringify(topology));

  // A run killed mid-test may have left a partition behind; a fresh `up` starts whole.
  await heal(topology, { verify: false });
  const specs = nodeSpecs(topology);
  const seeds = specs.filter((s) => s.name.endsWith('-1')).map((s) => s.address);
  const toStart = specs.filter(
    (s) => processState(s) === 'stopped' || processState(s) === 'absent',
  );
  for (const node of specs) if (processState(node) === 'paused') await signal(node, 'SIGCONT');
  for (const node of toStart) await assertPortsFree(node);
  for (const node of toStart) {
    writeNodeConfig(node, seeds);
    await launch(node);
  }
  await Promise.all(toStart.map((node) => waitForCql(node)));
  await waitForClusterUp(topology);
  return status(topology);
}

export async function status(topology: Topology = currentTopology()): Promise<NodeStatus[]> {
  const cut = await partitionedDcs();
  return Promise.all(
    nodeSpecs(topology).map(async (node) => ({
      node,
      state: processState(node),
      cql: await portOpen(node.address, CQL_PORT),
      partitioned: cut.has(node.dc),
    })),
  );
}

/** Stops every node (SIGTERM, then SIGKILL after a minute); data is kept. */
export async function down(topology: Topology = currentTopology()): Promise<void> {
  await heal(topology, { verify: false });
  await Promise.all(nodeSpecs(topology).map((node) => stopNode(node)));
}

/** Stops every node and deletes the cluster's data (the installed jars stay cached). */
export async function destroy(topology: Topology = currentTopology()): Promise<void> {
  await down(topology);
  fs.rmSync(clusterDir(), { recursive: true, force: true });
}

/** SIGSTOP: the node stops answering but keeps its connections, like a long GC pause. */
export async function pause(name: string): Promise<void> {
  const node = findNode(nodeSpecs(currentTopology()), name);
  requireRunning(node);
  await signal(node, 'SIGSTOP');
}

export async function resume(name: string): Promise<void> {
  const node = findNode(nodeSpecs(currentTopology()), name);
  if (processState(node) !== 'paused') throw new ClusterError(`Node ${node.name} is not paused.`);
  await signal(node, 'SIGCONT');
}

/** SIGKILL: a crash, no drain. */
export async function kill(name: string): Promise<void> {
  const node = findNode(nodeSpecs(currentTopology()), name);
  requireRunning(node);
  await signal(node, 'SIGKILL');
  await waitFor(() => processState(node) === 'stopped', 30_000, `${node.name} to exit`);
}

/** Starts one stopped node and waits until the cluster sees it up again. */
export async function start(name: string): Promise<void> {
  const topology = currentTopology();
  const specs = nodeSpecs(topology);
  const node = findNode(specs, name);
  if (processState(node) === 'absent') {
    throw new ClusterError(`Node ${node.name} was never created; run "npm run cluster -- up".`);
  }
  if (processState(node) !== 'stopped') return;
  await assertPortsFree(node);
  writeNodeConfig(
    node,
    specs.filter((s) => s.name.endsWith('-1')).map((s) => s.address),
  );
  await launch(node);
  await waitForCql(node);
  await waitForClusterUp(topology);
}

/**
 * Cuts `dc` off from every other DC in both directions (node-to-node traffic only: clients
 * still reach every node), then waits until the cut shows: SERIAL fails from `dc` while
 * LOCAL_SERIAL works there, and SERIAL works from another DC when a majority remains.
 */
export async function partition(dc: string, log: Log = () => undefined): Promise<void> {
  const topology = currentTopology();
  const specs = nodeSpecs(topology);
  const inside = specs.filter((s) => s.dc === dc);
  if (inside.length === 0) {
    throw new ClusterError(
      `Unknown DC "${dc}". DCs: ${[...new Set(specs.map((s) => s.dc))].join(', ')}.`,
    );
  }
  await requirePartitionSupport(specs);
  const outside = specs.filter((s) => s.dc !== dc);
  const rules: string[][] = [];
  for (const a of inside) for (const b of outside) rules.push(dropRule(dc, a.osUser, b.address));
  for (const b of outside) for (const a of inside) rules.push(dropRule(dc, b.osUser, a.address));
  for (const rule of rules) await iptables(['-A', ...rule]);
  log(`partition ${dc}: ${rules.length} iptables rules; waiting for the cut to show`);

  const other = outside[0]!;
  const majority = topology.dcs >= 3;
  await waitFor(
    async () =>
      !(await serialWorks(inside[0]!, 'serial')) &&
      (await serialWorks(inside[0]!, 'localSerial')) &&
      (!majority || (await serialWorks(other, 'serial'))),
    120_000,
    `SERIAL to fail and LOCAL_SERIAL to work from ${dc}`,
  );
}

/** Removes every partition and, unless told otherwise, waits until SERIAL works everywhere. */
export async function heal(
  topology: Topology = currentTopology(),
  options: { verify: boolean } = { verify: true },
): Promise<void> {
  const cut = await partitionedDcs();
  if (cut.size === 0) return;
  const listing = await iptables(['-S', 'OUTPUT']);
  for (const line of listing.split('\n')) {
    if (line.startsWith('-A OUTPUT') && line.includes(PARTITION_TAG)) {
      await iptables(['-D', ...splitRule(line.slice('-A '.length))]);
    }
  }
  if (!options.verify) return;
  const specs = nodeSpecs(topology);
  for (const dc of cut) {
    const node = specs.find((s) => s.dc === dc);
    if (node && processState(node) === 'running') {
      await waitFor(() => serialWorks(node, 'serial'), 180_000, `SERIAL to work from ${dc}`);
    }
  }
}

/** The DCs currently cut off by `partition`. */
export async function partitionedDcs(): Promise<Set<string>> {
  const cut = new Set<string>();
  if (!(await hasIptables())) return cut;
  const listing = await iptables(['-S', 'OUTPUT']).catch(() => '');
  for (const m of listing.matchAll(new RegExp(`${PARTITION_TAG}:([A-Za-z0-9_]+)`, 'g'))) {
    cut.add(m[1]!);
  }
  return cut;
}

// ---------------------------------------------------------------------------------------------

function pidFile(node: NodeSpec): string {
  return path.join(node.dir, 'cassandra.pid');
}

export function logFile(node: NodeSpec): string {
  return path.join(node.dir, 'logs', 'system.log');
}

function readPid(node: NodeSpec): number | undefined {
  try {
    const pid = Number(fs.readFileSync(pidFile(node), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Our JVM for this node, checked by its command line so a recycled pid is not mistaken for it. */
export function processState(node: NodeSpec): NodeState {
  if (!fs.existsSync(node.dir)) return 'absent';
  const pid = readPid(node);
  if (pid === undefined) return 'stopped';
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmdline.includes(path.join(node.dir, 'conf'))) return 'stopped';
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
    if (state === 'Z' || state === 'X') return 'stopped';
    return state === 'T' ? 'paused' : 'running';
  } catch {
    return 'stopped';
  }
}

function requireRunning(node: NodeSpec): void {
  const state = processState(node);
  if (state !== 'running') throw new ClusterError(`Node ${node.name} is ${state}, not running.`);
}

async function signal(node: NodeSpec, sig: NodeJS.Signals): Promise<void> {
  const pid = readPid(node);
  if (pid !== undefined) process.kill(pid, sig);
}

async function stopNode(node: NodeSpec): Promise<void> {
  const state = processState(node);
  if (state === 'absent' || state === 'stopped') return;
  if (state === 'paused') await signal(node, 'SIGCONT');
  await signal(node, 'SIGTERM');
  try {
    await waitFor(() => processState(node) === 'stopped', 60_000, `${node.name} to stop`);
  } catch {
    await signal(node, 'SIGKILL');
    await waitFor(() => processState(node) === 'stopped', 15_000, `${node.name} to die`);
  }
}

/** As root each DC runs as its own OS user, so that partitions can match its packets. */
async function osIdentity(node: NodeSpec): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => {
    const { stdout: uid } = await run('id', ['-u', node.osUser]);
    const { stdout: gid } = await run('id', ['-g', node.osUser]);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  };
  try {
    return await lookup();
  } catch {
    await run('useradd', [
      '--system',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      node.osUser,
    ]);
    return lookup();
  }
}

async function launch(node: NodeSpec): Promise<void> {
  const id = await osIdentity(node);
  if (id) await run('chown', ['-R', `${id.uid}:${id.gid}`, node.dir]);
  fs.rmSync(logFile(node), { force: true });
  const out = fs.openSync(path.join(node.dir, 'logs', 'stdout.log'), 'a');
  const child = spawn('java', [`@${path.join(node.dir, 'conf', 'jvm.args')}`], {
    cwd: node.dir,
    detached: true,
    stdio: ['ignore', out, out],
    ...(id ?? {}),
  });
  fs.closeSync(out);
  if (child.pid === undefined) throw new ClusterError(`Could not start java for ${node.name}.`);
  child.unref();
  fs.writeFileSync(pidFile(node), String(child.pid));
}

async function waitForCql(node: NodeSpec): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (processState(node) === 'stopped') {
      throw new ClusterError(
        `Node ${node.name} (${node.address}) exited while starting; see ${logFile(node)} and ${path.join(node.dir, 'logs', 'stdout.log')}.`,
      );
    }
    const log = fs.existsSync(logFile(node)) ? fs.readFileSync(logFile(node), 'utf8') : '';
    if (
      log.includes('Starting listening for CQL clients') &&
      (await portOpen(node.address, CQL_PORT))
    ) {
      return;
    }
    if (Date.now() > deadline) {
      throw new ClusterError(
        `Node ${node.name} (${node.address}) did not accept CQL within 300 s; see ${logFile(node)}.`,
      );
    }
    await sleep(500);
  }
}

async function assertPortsFree(node: NodeSpec): Promise<void> {
  for (const port of [CQL_PORT, STORAGE_PORT]) {
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, node.address, () => server.close(() => resolve(true)));
    });
    if (!free) {
      throw new ClusterError(
        `Port ${port} on ${node.address} is taken by another process, so node ${node.name} cannot start; stop that process (e.g. another Cassandra) and retry.`,
      );
    }
  }
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

async function withClient<T>(
  node: NodeSpec,
  fn: (client: cassandra.Client) => Promise<T>,
): Promise<T> {
  const client = new cassandra.Client({
    contactPoints: [node.address],
    localDataCenter: node.dc,
    socketOptions: { connectTimeout: 3000, readTimeout: 8000 },
  });
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.shutdown().catch(() => undefined);
  }
}

/** Every node, as coordinator, writes at ALL to a keyspace replicated on every node. */
async function waitForClusterUp(topology: Topology): Promise<void> {
  const specs = nodeSpecs(topology);
  const first = specs[0]!;
  const replication = [...new Set(specs.map((s) => s.dc))]
    .map((dc) => `'${dc}': ${topology.nodesPerDc}`)
    .join(', ');
  await waitFor(
    () =>
      withClient(first, async (client) => {
        await client.execute(
          `CREATE KEYSPACE IF NOT EXISTS ${PROBE_KEYSPACE} WITH replication = {'class': 'NetworkTopologyStrategy', ${replication}}`,
        );
        await client.execute(
          `CREATE TABLE IF NOT EXISTS ${PROBE_KEYSPACE}.probe (k int PRIMARY KEY, v int)`,
        );
        await waitForSchemaAgreement(client);
        return true;
      }).catch(() => false),
    180_000,
    'the probe keyspace to reach every node',
  );
  for (const node of specs) {
    await waitFor(
      () =>
        withClient(node, async (client) => {
          await client.execute(`INSERT INTO ${PROBE_KEYSPACE}.probe (k, v) VALUES (0, 0)`, [], {
            consistency: cassandra.types.consistencies.all,
          });
          return true;
        }).catch(() => false),
      180_000,
      `${node.name} to see every node up`,
    );
  }
}

/** Whether a serial read coordinated by `node` succeeds right now at the given level. */
export async function serialWorks(
  node: NodeSpec,
  level: 'serial' | 'localSerial',
): Promise<boolean> {
  try {
    return await withClient(node, async (client) => {
      await client.execute(`SELECT v FROM ${PROBE_KEYSPACE}.probe WHERE k = 1`, [], {
        consistency: cassandra.types.consistencies[level],
        prepare: true,
      });
      return true;
    });
  } catch {
    return false;
  }
}

async function hasIptables(): Promise<boolean> {
  try {
    await run('iptables', ['--version']);
    return true;
  } catch {
    return false;
  }
}

/** Why DCs cannot be partitioned here, or undefined when they can. */
export async function partitionUnsupported(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) {
    return 'Partitions need root: each DC runs as its own OS user and iptables drops its node-to-node packets. Run the cluster manager as root.';
  }
  if (!(await hasIptables())) {
    return 'iptables was not found; install it (apt-get install iptables) to partition DCs.';
  }
  return undefined;
}

async function requirePartitionSupport(specs: readonly NodeSpec[]): Promise<void> {
  const reason = await partitionUnsupported();
  if (reason !== undefined) throw new ClusterError(reason);
  for (const node of specs) {
    const pid = readPid(node);
    if (processState(node) !== 'running' || pid === undefined) continue;
    const owner = fs.statSync(`/proc/${pid}`).uid;
    const { stdout } = await run('id', ['-u', node.osUser]).catch(() => ({ stdout: '' }));
    if (String(owner) !== stdout.trim()) {
      throw new ClusterError(
        `Node ${node.name} does not run as OS user ${node.osUser}, so its packets cannot be matched; restart the cluster as root ("npm run cluster -- down" then "up").`,
      );
    }
  }
}

function dropRule(dc: string, owner: string, destination: string): string[] {
  return [
    'OUTPUT',
    '-o',
    'lo',
    '-p',
    'tcp',
    '-d',
    destination,
    '--dport',
    String(STORAGE_PORT),
    '-m',
    'owner',
    '--uid-owner',
    owner,
    '-m',
    'comment',
    '--comment',
    `${PARTITION_TAG}:${dc}`,
    '-j',
    'DROP',
  ];
}

function splitRule(rule: string): string[] {
  return (rule.match(/"[^"]*"|\S+/g) ?? []).map((t) => t.replace(/^"|"$/g, ''));
}

async function iptables(args: string[]): Promise<string> {
  const { stdout } = await run('iptables', ['-w', ...args]);
  return stdout;
}

async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) {
      throw new ClusterError(`Timed out after ${timeoutMs / 1000} s waiting for ${what}.`);
    }
    await sleep(1000);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
