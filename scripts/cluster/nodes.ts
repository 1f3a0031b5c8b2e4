/** One node of the local cluster as a process, and the probes that tell when it works. */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { promisify } from 'node:util';
import cassandra from 'cassandra-driver';
import { CQL_PORT, ClusterError, DEFAULT_TOPOLOGY, STORAGE_PORT, clusterDir } from './topology.js';
import type { NodeSpec, Topology } from './topology.js';

export const run = promisify(execFile);
export const PROBE_KEYSPACE = 'idgen_cluster_probe';
export type NodeState = 'running' | 'paused' | 'stopped' | 'absent';
export type Log = (line: string) => void;

export const topologyFile = (): string => path.join(clusterDir(), 'topology.json');

export const hasCluster = (): boolean => fs.existsSync(topologyFile());

export function currentTopology(): Topology {
  if (!hasCluster()) return DEFAULT_TOPOLOGY;
  const recorded = JSON.parse(fs.readFileSync(topologyFile(), 'utf8')) as Partial<Topology>;
  return { ...DEFAULT_TOPOLOGY, ...recorded };
}

const pidFile = (node: NodeSpec) => path.join(node.dir, 'cassandra.pid');

export const logFile = (node: NodeSpec): string => path.join(node.dir, 'logs', 'system.log');

/**
 * The lines of `node`'s system.log from byte `from` on that `pattern` (not global) matches, read
 * in chunks: the log is kept across restarts and can outgrow the longest string Node can make.
 */
export function logLines(node: NodeSpec, pattern: RegExp, from = 0): string[] {
  if (pattern.global || pattern.sticky) throw new Error('logLines takes a non-global pattern');
  let fd: number;
  try {
    fd = fs.openSync(logFile(node), 'r');
  } catch {
    return [];
  }
  try {
    const found: string[] = [];
    const chunk = Buffer.alloc(8 * 1024 * 1024);
    const decoder = new StringDecoder('utf8');
    let position = from;
    let partial = '';
    for (;;) {
      const read = fs.readSync(fd, chunk, 0, chunk.length, position);
      if (read === 0) break;
      position += read;
      const lines = (partial + decoder.write(chunk.subarray(0, read))).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (pattern.test(line)) found.push(line);
    }
    partial += decoder.end();
    if (partial !== '' && pattern.test(partial)) found.push(partial);
    return found;
  } finally {
    fs.closeSync(fd);
  }
}

export function readPid(node: NodeSpec): number | undefined {
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

export function requireRunning(node: NodeSpec): void {
  const state = processState(node);
  if (state !== 'running') throw new ClusterError(`Node ${node.name} is ${state}, not running.`);
}

export async function signal(node: NodeSpec, sig: NodeJS.Signals): Promise<void> {
  const pid = readPid(node);
  if (pid !== undefined) process.kill(pid, sig);
}

export async function stopNode(node: NodeSpec): Promise<void> {
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

/** As root each node runs as its own OS user (created if missing): what partitions match on. */
async function osIdentity(node: NodeSpec): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => ({
    uid: Number((await run('id', ['-u', node.osUser])).stdout.trim()),
    gid: Number((await run('id', ['-g', node.osUser])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    const options = ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin'];
    await run('useradd', [...options, node.osUser]);
    return lookup();
  }
}

const startOffsets = new Map<string, number>();

export async function launch(node: NodeSpec): Promise<void> {
  const id = await osIdentity(node);
  if (id) await run('chown', ['-R', `${id.uid}:${id.gid}`, node.dir]);
  // The log is kept across restarts (a violation logged before a kill must stay visible).
  startOffsets.set(node.name, fs.existsSync(logFile(node)) ? fs.statSync(logFile(node)).size : 0);
  const out = fs.openSync(path.join(node.dir, 'logs', 'stdout.log'), 'a');
  const child = spawn('java', [`@${path.join(node.dir, 'conf', 'jvm.args')}`], {
    cwd: node.dir,
    detached: true,
    stdio: ['ignore', out, out],
    ...id,
  });
  fs.closeSync(out);
  if (child.pid === undefined) throw new ClusterError(`Could not start java for ${node.name}.`);
  child.unref();
  fs.writeFileSync(pidFile(node), String(child.pid));
}

export async function waitForCql(node: NodeSpec, timeoutMs = 300_000): Promise<void> {
  const from = startOffsets.get(node.name) ?? 0;
  const accepting = async () => {
    if (processState(node) === 'stopped') {
      throw new ClusterError(
        `Node ${node.name} (${node.address}) exited while starting; see ${logFile(node)} and ${path.join(node.dir, 'logs', 'stdout.log')}.`,
      );
    }
    const listening = logLines(node, /Starting listening for CQL clients/, from).length > 0;
    return listening && (await portOpen(node.address, CQL_PORT));
  };
  const what = `node ${node.name} (${node.address}) to accept CQL; see ${logFile(node)}`;
  await waitFor(accepting, timeoutMs, what, 500);
}

export async function assertPortsFree(node: NodeSpec): Promise<void> {
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

export function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(1000);
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => resolve(false));
  });
}

export async function withClient<T>(
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

export const works = (node: NodeSpec, fn: (client: cassandra.Client) => Promise<unknown>) =>
  withClient(node, fn)
    .then((answer) => answer !== false)
    .catch(() => false);

/** The driver's host for `node`: statements pinned to it are coordinated by that node. */
export function hostOf(client: cassandra.Client, node: NodeSpec): cassandra.Host | undefined {
  return client.hosts.values().find((h) => h.address.startsWith(`${node.address}:`));
}

export function serialWorks(node: NodeSpec, level: 'serial' | 'localSerial'): Promise<boolean> {
  return probeWorks(node, `SELECT v FROM ${PROBE_KEYSPACE}.probe WHERE k = 1`, level);
}

/** Whether `node` as coordinator holds every node up: a write at ALL to the probe table works. */
export function seesEveryNodeUp(node: NodeSpec): Promise<boolean> {
  return probeWorks(node, `INSERT INTO ${PROBE_KEYSPACE}.probe (k, v) VALUES (2, 2)`, 'all');
}

function probeWorks(node: NodeSpec, cql: string, level: 'serial' | 'localSerial' | 'all') {
  return works(node, async (client) => {
    const host = hostOf(client, node);
    if (host === undefined) return false;
    const consistency = cassandra.types.consistencies[level];
    await client.execute(cql, [], { consistency, host, prepare: true });
    return true;
  });
}

export async function runsAsOsUser(node: NodeSpec): Promise<boolean> {
  const pid = readPid(node);
  if (processState(node) !== 'running' || pid === undefined) return true;
  const owner = fs.statSync(`/proc/${pid}`).uid;
  const { stdout } = await run('id', ['-u', node.osUser]).catch(() => ({ stdout: '' }));
  return String(owner) === stdout.trim();
}

export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 1000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new ClusterError(`Timed out after ${timeoutMs / 1000} s waiting for ${what}.`);
    await sleep(everyMs);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
