/**
 * `npm run demo`: the whole story in a couple of minutes. Brings up the local 3-DC cluster (or
 * uses IDGEN_CASSANDRA), runs `idgen-cass init` and `seed`, starts allocator processes in every
 * DC, cuts one DC off while they draw, heals, and ends with `status`, `check` and a summary:
 * IDs drawn per DC, duplicates found, IDs lost to gaps. Exits 0 unless a step fails or an ID was
 * drawn twice; the partition is healed whatever ends it (a failure, SIGINT, SIGTERM), and where
 * partitions cannot be made (no root or no iptables) it says so and skips that step.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as cluster from './cluster/manager.js';
import { defaultTopology, describeTopology, parseClusterSpec } from './cluster/topology.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
/**
 * One keyspace for every run, created by the first and never dropped: a run makes no schema
 * change on a cluster that has it. Cassandra 5.0 was seen taking minutes to agree on a schema
 * change made right after a partition healed, and leaving a node with a table it never opened
 * ("Unknown CF") when a keyspace was created again at once under a dropped one's name.
 */
const KEYSPACE = 'idgen_demo';
/** Each run seeds a sequence of its own (`orders`, then `orders_2`, ...): the summary counts only its IDs. */
const SEQUENCE_PREFIX = 'orders';
let sequence = SEQUENCE_PREFIX;
const PROCESSES_PER_DC = 2;
const RATE_PER_PROCESS = 200;
const DRAW_SECONDS = 60;
const PARTITION_AT_S = 15;
const PARTITION_FOR_S = 25;
/**
 * Where every DC is connected, `status` waits up to 10 s for its SERIAL probe instead of 3 s: nine
 * Cassandra nodes and six drawing processes on one machine can keep a round past 3 s, and status
 * would then report SERIAL unreachable (exit 13) although no link is cut.
 */
const SERIAL_PATIENCE = ['--serial-timeout', '10s'];

function say(line: string): void {
  console.log(`\n\x1b[1m== ${line}\x1b[0m`);
}

/**
 * Runs the built CLI against one DC and prints what it prints (unless `--json`). An exit code in
 * `results` is one of the command's documented results (e.g. 13, SERIAL unreachable, from
 * `status` inside a cut-off DC): it is said and returned; any other non-zero code throws.
 */
async function cli(
  dc: string,
  hosts: readonly string[],
  args: readonly string[],
  results: Readonly<Record<number, string>> = {},
): Promise<{ stdout: string; code: number }> {
  const quiet = args.includes('--json');
  if (!quiet) console.log(`$ idgen-cass --dc ${dc} ${args.join(' ')}`);
  const argv = [CLI, '--contact-points', hosts.join(','), '--dc', dc, '--keyspace', KEYSPACE];
  try {
    const { stdout, stderr } = await run(process.execPath, [...argv, ...args], { cwd: ROOT });
    if (!quiet) process.stdout.write(stdout);
    if (stderr.trim()) process.stderr.write(stderr);
    return { stdout, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    process.stdout.write(e.stdout ?? '');
    process.stderr.write(e.stderr ?? '');
    const meaning = e.code === undefined ? undefined : results[e.code];
    if (meaning === undefined) {
      throw new Error(`idgen-cass ${args[0]} failed with exit code ${e.code ?? '?'}`);
    }
    console.log(`(exit code ${e.code}: ${meaning})`);
    return { stdout: e.stdout ?? '', code: e.code! };
  }
}

interface DrawProcess {
  readonly dc: string;
  readonly file: string;
  readonly child: ChildProcess;
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
      ...['--sequence', sequence, '--out', file],
      ...['--duration-ms', String(DRAW_SECONDS * 1000), '--rate', String(RATE_PER_PROCESS)],
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return { dc, file, child, done: new Promise((resolve) => child.on('close', () => resolve())) };
}

function idsOf(file: string): bigint[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => BigInt(l));
}

const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));

interface Cluster {
  readonly dcs: Record<string, string[]>;
  /** Why the partition step cannot run here, or undefined if it can. */
  readonly noPartition: string | undefined;
}

/** The cluster of IDGEN_CASSANDRA, else the local one: as it is if it exists, else the default. */
async function startCluster(): Promise<Cluster> {
  if (process.env['IDGEN_CASSANDRA']) {
    const dcs = parseClusterSpec(process.env['IDGEN_CASSANDRA']);
    say(`Using the cluster in IDGEN_CASSANDRA: ${Object.keys(dcs).join(', ')}`);
    return {
      dcs,
      noPartition: "the cluster in IDGEN_CASSANDRA is not the local cluster manager's",
    };
  }
  // An existing local cluster keeps its shape and Paxos variant (the tests reuse it afterwards);
  // init and seed need the durable commitlog.
  const topology = cluster.hasCluster()
    ? { ...cluster.currentTopology(), commitlog: 'batch' as const }
    : defaultTopology();
  say(`Starting the local Cassandra: ${describeTopology(topology)} (npm run cluster -- up)`);
  const nodes = await cluster.up(topology, (line) => console.log(line));
  for (const { node, cql } of nodes)
    console.log(`${node.name}  ${node.address}  ${node.dc}  ${cql ? 'UP' : 'DOWN'}`);
  const noPartition = await cluster.partitionUnsupported();
  if (noPartition) console.log(`(the partition step will be skipped: ${noPartition})`);
  return { dcs: cluster.contactPointsByDc(), noPartition };
}

/**
 * Cuts `dc` off, shows `status` from inside it, and heals. The heal also runs on any failure or
 * signal (see the end of this file), so the demo never leaves the cluster partitioned.
 */
async function partitionStep(dc: string, hosts: readonly string[]): Promise<void> {
  say(`Cutting ${dc} off from the other DCs (npm run cluster -- partition ${dc})`);
  partitioned = true;
  await cluster.partition(dc);
  await sleep(5);
  say(`status, seen from inside ${dc} while it is cut off`);
  await cli(dc, hosts, ['status', sequence, '--sample', '3s'], {
    [EXIT_SERIAL_UNREACHABLE]: `SERIAL is unreachable from ${dc}, as expected while it is cut off: its processes draw from its DC range, and only new DC ranges wait`,
  });
  await sleep(PARTITION_FOR_S - 8);
  say(`Healing the partition of ${dc}`);
  await cluster.heal();
  partitioned = false;
  console.log(`${dc} is connected again`);
}

/** The first of `orders`, `orders_2`, `orders_3`, ... that names no sequence in the keyspace yet. */
async function freshSequenceName(dc: string, hosts: readonly string[]): Promise<string> {
  const { stdout } = await cli(dc, hosts, ['list', '--json']);
  const taken = new Set((JSON.parse(stdout) as { name: string }[]).map((s) => s.name));
  let n = 1;
  const nameOf = (i: number) => (i === 1 ? SEQUENCE_PREFIX : `${SEQUENCE_PREFIX}_${i}`);
  while (taken.has(nameOf(n))) n++;
  return nameOf(n);
}

async function main(): Promise<void> {
  const started = Date.now();
  const { dcs, noPartition } = await startCluster();
  const dcNames = Object.keys(dcs).sort();
  const first = dcNames[0]!;
  const hostsOf = (dc: string) => dcs[dc]!;
  // RF 3 per DC where the DC has 3 nodes (a node can fail), else one copy per node.
  const replication = dcNames.map((dc) => `${dc}:${Math.min(3, hostsOf(dc).length)}`).join(',');

  say('Create the keyspace and tables, then a 32-bit sequence');
  await cli(first, hostsOf(first), ['init', '--replication', replication]);
  sequence = await freshSequenceName(first, hostsOf(first));
  await cli(first, hostsOf(first), [
    ...['seed', sequence, '--domain', 'int32', '--start', '1000'],
    ...['--dc-range', '20000', '--block', '100'],
  ]);

  say(
    `${PROCESSES_PER_DC} allocator processes per DC draw ${RATE_PER_PROCESS} IDs/s each for ${DRAW_SECONDS} s`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-demo-'));
  drawing = dcNames.flatMap((dc) =>
    Array.from({ length: PROCESSES_PER_DC }, (_, i) => startDrawing(dc, hostsOf(dc), dir, i + 1)),
  );
  await sleep(PARTITION_AT_S);
  await cli(first, hostsOf(first), ['status', sequence, ...SERIAL_PATIENCE]);

  const cut = dcNames.at(-1)!;
  if (noPartition === undefined) {
    await partitionStep(cut, hostsOf(cut));
  } else {
    say(`Skipping the partition of ${cut}: ${noPartition}`);
  }

  await Promise.all(drawing.map((p) => p.done));

  say('Final status and invariant check');
  await cli(first, hostsOf(first), ['status', sequence, '--sample', '1s', ...SERIAL_PATIENCE]);
  await cli(first, hostsOf(first), ['check', sequence]);
  const { stdout } = await cli(first, hostsOf(first), [
    'status',
    sequence,
    ...SERIAL_PATIENCE,
    '--json',
    '--sample',
    '1s',
  ]);

  say('Summary');
  const seen = new Set<bigint>();
  let duplicates = 0;
  for (const dc of dcNames) {
    let drawn = 0;
    for (const p of drawing.filter((p) => p.dc === dc)) {
      for (const id of idsOf(p.file)) {
        if (seen.has(id)) duplicates++;
        seen.add(id);
        drawn++;
      }
    }
    console.log(`${dc}: ${drawn} IDs drawn by ${PROCESSES_PER_DC} processes`);
  }
  const granted = grantedIds(JSON.parse(stdout) as StatusJson);
  const lost = granted.granted - BigInt(seen.size) - granted.left;
  console.log(`duplicates found: ${duplicates}`);
  console.log(
    `IDs granted to DCs: ${granted.granted}; drawn: ${seen.size}; still available in DC ranges: ${granted.left}; lost to gaps: ${lost}`,
  );
  console.log(
    `demo finished in ${((Date.now() - started) / 1000).toFixed(0)} s; keyspace ${KEYSPACE}, sequence ${sequence}; IDs in ${dir}`,
  );
  if (duplicates > 0) process.exitCode = 1;
}

/** `status`'s documented exit code when SERIAL is unreachable (docs/cli.md, exit codes). */
const EXIT_SERIAL_UNREACHABLE = 13;
let drawing: DrawProcess[] = [];
let partitioned = false;

let cleaning: Promise<void> | undefined;
/** The signal that is ending the demo: the command it interrupted fails, and that is no news. */
let stoppedBy: string | undefined;
let healFailed = false;

/**
 * Leaves the cluster whole and no draw process behind, whatever ended the demo; once, however
 * often it is called (a signal and the failure it causes both call it).
 */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const p of drawing) if (p.child.exitCode === null) p.child.kill('SIGTERM');
    if (!partitioned) return;
    console.log('healing the partition before exiting');
    try {
      await cluster.heal(cluster.currentTopology(), { verify: false });
      partitioned = false;
    } catch (error) {
      console.error(
        `the partition could not be healed (${error instanceof Error ? error.message : String(error)}); run "npm run cluster -- heal"`,
      );
      healFailed = true;
      process.exitCode = 1;
    }
  })();
  return cleaning;
}

for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => {
    stoppedBy = signal;
    console.log(`\n${signal}: stopping`);
    void cleanUp().finally(() => process.exit(healFailed ? 1 : code));
  });
}

try {
  await main();
} catch (error) {
  if (stoppedBy === undefined) {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
} finally {
  await cleanUp();
}

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
