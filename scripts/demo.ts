/**
 * `npm run demo`: the whole story in a couple of minutes. Brings up the local 3-DC cluster (or
 * uses IDGEN_CASSANDRA), runs `idgen-cass init` and `seed`, starts allocator processes in every
 * DC, cuts one DC off while they draw, heals, and ends with `status`, `check` and a summary:
 * IDs drawn per DC, duplicates found, IDs lost to gaps.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import cassandra from 'cassandra-driver';
import * as cluster from './cluster/manager.js';
import { DEFAULT_TOPOLOGY, parseClusterSpec } from './cluster/topology.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const KEYSPACE = 'idgen_demo';
const SEQUENCE = 'orders';
const PROCESSES_PER_DC = 2;
const RATE_PER_PROCESS = 200;
const DRAW_SECONDS = 60;
const PARTITION_AT_S = 15;
const PARTITION_FOR_S = 25;

function say(line: string): void {
  console.log(`\n\x1b[1m== ${line}\x1b[0m`);
}

/** Runs the built CLI against one DC and prints what it prints (unless `--json`). */
async function cli(dc: string, hosts: readonly string[], ...args: string[]): Promise<string> {
  const quiet = args.includes('--json');
  if (!quiet) console.log(`$ idgen-cass --dc ${dc} ${args.join(' ')}`);
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [CLI, '--contact-points', hosts.join(','), '--dc', dc, '--keyspace', KEYSPACE, ...args],
      { cwd: ROOT },
    );
    if (!quiet) process.stdout.write(stdout);
    if (stderr.trim()) process.stderr.write(stderr);
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    process.stdout.write(e.stdout ?? '');
    process.stderr.write(e.stderr ?? '');
    throw new Error(`idgen-cass ${args[0]} failed with exit code ${e.code ?? '?'}`);
  }
}

interface DrawProcess {
  readonly dc: string;
  readonly file: string;
  readonly done: Promise<void>;
}

function startDrawing(dc: string, hosts: readonly string[], dir: string, n: number): DrawProcess {
  const file = path.join(dir, `${dc}-${n}.ids`);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(ROOT, 'scripts', 'draw-worker.ts'),
      ...['--dc', dc, '--contact-points', hosts.join(','), '--keyspace', KEYSPACE],
      ...['--sequence', SEQUENCE, '--out', file],
      ...['--duration-ms', String(DRAW_SECONDS * 1000), '--rate', String(RATE_PER_PROCESS)],
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return { dc, file, done: new Promise((resolve) => child.on('close', () => resolve())) };
}

function idsOf(file: string): bigint[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => BigInt(l));
}

const started = Date.now();
let dcs: Record<string, string[]>;
let canPartition = false;
if (process.env['IDGEN_CASSANDRA']) {
  dcs = parseClusterSpec(process.env['IDGEN_CASSANDRA']);
  say(`Using the cluster in IDGEN_CASSANDRA: ${Object.keys(dcs).join(', ')}`);
} else {
  say('Starting the local 3-DC Cassandra (npm run cluster -- up)');
  const nodes = await cluster.up(DEFAULT_TOPOLOGY, (line) => console.log(line));
  for (const { node, cql } of nodes)
    console.log(`${node.name}  ${node.address}  ${node.dc}  ${cql ? 'UP' : 'DOWN'}`);
  dcs = cluster.contactPointsByDc();
  const unsupported = await cluster.partitionUnsupported();
  if (unsupported) console.log(`(the partition step will be skipped: ${unsupported})`);
  canPartition = unsupported === undefined;
}
const dcNames = Object.keys(dcs).sort();
const first = dcNames[0]!;
const hostsOf = (dc: string) => dcs[dc]!;

// A clean keyspace each run, so the summary counts only this run's IDs.
{
  const client = new cassandra.Client({ contactPoints: hostsOf(first), localDataCenter: first });
  await client.connect();
  await client.execute(`DROP KEYSPACE IF EXISTS ${KEYSPACE}`);
  await client.shutdown();
}

say('Create the keyspace and tables, then a 32-bit sequence');
await cli(first, hostsOf(first), 'init', '--replication', dcNames.map((dc) => `${dc}:1`).join(','));
await cli(
  first,
  hostsOf(first),
  ...[
    'seed',
    SEQUENCE,
    '--domain',
    'int32',
    '--start',
    '1000',
    '--dc-range',
    '20000',
    '--block',
    '100',
  ],
);

say(
  `${PROCESSES_PER_DC} allocator processes per DC draw ${RATE_PER_PROCESS} IDs/s each for ${DRAW_SECONDS} s`,
);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-demo-'));
const processes = dcNames.flatMap((dc) =>
  Array.from({ length: PROCESSES_PER_DC }, (_, i) => startDrawing(dc, hostsOf(dc), dir, i + 1)),
);
const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));
await sleep(PARTITION_AT_S);
await cli(first, hostsOf(first), 'status', SEQUENCE);

const cut = dcNames.at(-1)!;
if (canPartition) {
  say(`Cutting ${cut} off from the other DCs (npm run cluster -- partition ${cut})`);
  await cluster.partition(cut);
  await sleep(5);
  say(`status, seen from inside ${cut} while it is cut off`);
  await cli(cut, hostsOf(cut), 'status', SEQUENCE, '--sample', '3');
  await sleep(PARTITION_FOR_S - 8);
  say('Healing the partition');
  await cluster.heal();
} else {
  say('Skipping the partition: it needs the local cluster manager, as root, with iptables');
}

await Promise.all(processes.map((p) => p.done));

say('Final status and invariant check');
await cli(first, hostsOf(first), 'status', SEQUENCE, '--sample', '1');
await cli(first, hostsOf(first), 'check', SEQUENCE);

const statusJson = JSON.parse(
  await cli(first, hostsOf(first), 'status', SEQUENCE, '--json', '--sample', '1'),
) as StatusJson;
say('Summary');
const seen = new Set<bigint>();
let duplicates = 0;
for (const dc of dcNames) {
  let drawn = 0;
  for (const p of processes.filter((p) => p.dc === dc)) {
    for (const id of idsOf(p.file)) {
      if (seen.has(id)) duplicates++;
      seen.add(id);
      drawn++;
    }
  }
  console.log(`${dc}: ${drawn} IDs drawn by ${PROCESSES_PER_DC} processes`);
}
const granted = grantedIds(statusJson);
const lost = granted.granted - BigInt(seen.size) - granted.left;
console.log(`duplicates found: ${duplicates}`);
console.log(
  `IDs granted to DCs: ${granted.granted}; drawn: ${seen.size}; still available in DC ranges: ${granted.left}; lost to gaps: ${lost}`,
);
console.log(`demo finished in ${((Date.now() - started) / 1000).toFixed(0)} s; IDs in ${dir}`);
if (duplicates > 0) process.exitCode = 1;

/** The part of `idgen-cass status --json` the summary needs (an int32 sequence: exact numbers). */
interface StatusJson {
  readonly sequences: readonly {
    readonly settings: { readonly start: number };
    readonly globalLast: number;
    readonly dcs: readonly { readonly left: number }[];
  }[];
}

/** IDs granted to DCs so far, and those still unused in the DCs' ranges. */
function grantedIds(status: StatusJson): { granted: bigint; left: bigint } {
  const seq = status.sequences[0];
  if (!seq) throw new Error('status --json reported no sequence');
  const left = seq.dcs.reduce((sum, dc) => sum + BigInt(dc.left), 0n);
  return { granted: BigInt(seq.globalLast) - BigInt(seq.settings.start) + 1n, left };
}
