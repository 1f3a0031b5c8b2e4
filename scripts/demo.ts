/**
 * `npm run demo`: on the local 3-DC cluster (or IDGEN_CASSANDRA's), `init`, `seed`, processes
 * drawing in every DC, one DC cut off and healed, then `status`, `check` and a summary. Exits 0
 * unless a step fails or an ID was drawn twice. The partition is healed however the demo ends.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as cluster from './cluster/manager.js';
import { run } from './cluster/nodes.js';
import { defaultTopology, describeTopology, parseClusterSpec } from './cluster/topology.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
/** Never dropped: a keyspace recreated at once under a dropped one's name can break a node. */
const KEYSPACE = 'idgen_demo';
/** Each run seeds its own sequence (`orders_2`, ...), so the summary counts its IDs. */
const SEQUENCE_PREFIX = 'orders';
let sequence = SEQUENCE_PREFIX;
const PROCESSES_PER_DC = 2;
const RATE_PER_PROCESS = 200;
const DRAW_SECONDS = 90;
const PARTITION_AT_S = 15;
const PARTITION_FOR_S = 25;
/** Seconds after the heal that SERIAL may take to grant the DC cut off a range again. */
const SERIAL_BACK_S = 20;
const CUT_NEEDS = (PARTITION_FOR_S + SERIAL_BACK_S) * PROCESSES_PER_DC * RATE_PER_PROCESS;
/**
 * How long after PARTITION_AT_S the DC to cut may take to hold CUT_NEEDS IDs: it holds half a range
 * to one and a half, so a cycle at most (50 s at 400 IDs/s); a cut after it ends in DRAW_SECONDS.
 */
const RUNWAY_WAIT_S = 45;
/** Nine nodes and six drawing processes on one machine can keep a SERIAL round past 3 s. */
const SERIAL_PATIENCE = ['--serial-timeout', '10s'];
const EXIT_SERIAL_UNREACHABLE = 13;

const say = (line: string) => console.log(`\n\x1b[1m== ${line}\x1b[0m`);
const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));

/** Runs the built CLI in one DC; throws on exit codes not in `results`. */
async function cli(
  dc: string,
  hosts: readonly string[],
  args: readonly string[],
  results: Readonly<Record<number, string>> = {},
): Promise<{ stdout: string; code: number }> {
  const quiet = args.includes('--json');
  if (!quiet) console.log(`$ idgen-cass --dc ${dc} ${args.join(' ')}`);
  const connection = ['--contact-points', hosts.join(','), '--dc', dc, '--keyspace', KEYSPACE];
  const argv = [CLI, ...connection, ...args];
  try {
    const { stdout, stderr } = await run(process.execPath, argv, { cwd: ROOT });
    if (!quiet) process.stdout.write(stdout);
    if (stderr.trim()) process.stderr.write(stderr);
    return { stdout, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    process.stdout.write(e.stdout ?? '');
    process.stderr.write(e.stderr ?? '');
    const meaning = e.code === undefined ? undefined : results[e.code];
    if (meaning === undefined)
      throw new Error(`idgen-cass ${args[0]} failed with exit code ${e.code ?? '?'}`);
    console.log(`(exit code ${e.code}: ${meaning})`);
    return { stdout: e.stdout ?? '', code: e.code! };
  }
}

function startDrawing(dc: string, hosts: readonly string[], dir: string, n: number) {
  const file = path.join(dir, `${dc}-${n}.ids`);
  const child = spawn(
    process.execPath,
    [
      ...['--import', 'tsx', path.join(ROOT, 'scripts', 'draw-worker.ts')],
      ...['--dc', dc, '--contact-points', hosts.join(','), '--keyspace', KEYSPACE],
      ...['--sequence', sequence, '--out', file],
      ...['--duration-ms', String(DRAW_SECONDS * 1000), '--rate', String(RATE_PER_PROCESS)],
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return { dc, file, child, done: new Promise<void>((resolve) => child.on('close', resolve)) };
}

function idsOf(file: string): bigint[] {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(BigInt);
}

async function startCluster() {
  if (process.env['IDGEN_CASSANDRA']) {
    const dcs = parseClusterSpec(process.env['IDGEN_CASSANDRA']);
    say(`Using the cluster in IDGEN_CASSANDRA: ${Object.keys(dcs).join(', ')}`);
    return {
      dcs,
      noPartition: "the cluster in IDGEN_CASSANDRA is not the local cluster manager's",
    };
  }
  // An existing cluster keeps its shape and Paxos variant (the tests reuse it).
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

/** The part of `idgen-cass status --json` the demo reads (an int32 sequence: exact numbers). */
interface StatusJson {
  readonly sequences: readonly {
    readonly settings: { readonly start: number };
    readonly globalLast: number;
    readonly dcs: readonly {
      readonly dc: string;
      readonly pendingGrant: { readonly min: number; readonly max: number } | null;
      readonly left: number;
    }[];
  }[];
}

async function statusJson(dc: string, hosts: readonly string[]) {
  const args = ['status', sequence, ...SERIAL_PATIENCE, '--json', '--sample', '1s'];
  const seq = (JSON.parse((await cli(dc, hosts, args)).stdout) as StatusJson).sequences[0];
  if (!seq) throw new Error('status --json reported no sequence');
  return seq;
}

/** Waits until `dc` holds the IDs it draws while cut off: with fewer, it runs dry before the heal. */
async function waitForRunway(dc: string, from: string, hosts: readonly string[]) {
  console.log(`waiting until ${dc} holds ${CUT_NEEDS} IDs or more (at most ${RUNWAY_WAIT_S} s)`);
  const deadline = Date.now() + RUNWAY_WAIT_S * 1000;
  for (;;) {
    const row = (await statusJson(from, hosts)).dcs.find((d) => d.dc === dc);
    const pending = row?.pendingGrant ? row.pendingGrant.max - row.pendingGrant.min + 1 : 0;
    const held = (row?.left ?? 0) + pending;
    if (held >= CUT_NEEDS) return;
    if (Date.now() > deadline) {
      throw new Error(
        `${dc} held ${held} IDs ${PARTITION_AT_S + RUNWAY_WAIT_S} s after the draws started, fewer than the ${CUT_NEEDS} it draws while cut off; the demo stops here`,
      );
    }
    await sleep(2);
  }
}

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

async function freshSequenceName(dc: string, hosts: readonly string[]): Promise<string> {
  const { stdout } = await cli(dc, hosts, ['list', '--json']);
  const taken = new Set((JSON.parse(stdout) as { name: string }[]).map((s) => s.name));
  const nameOf = (i: number) => (i === 1 ? SEQUENCE_PREFIX : `${SEQUENCE_PREFIX}_${i}`);
  let n = 1;
  while (taken.has(nameOf(n))) n++;
  return nameOf(n);
}

async function main(): Promise<void> {
  const started = Date.now();
  const { dcs, noPartition } = await startCluster();
  const dcNames = Object.keys(dcs).sort();
  const first = dcNames[0]!;
  const hosts = dcs[first]!;
  const replication = dcNames.map((dc) => `${dc}:${Math.min(3, dcs[dc]!.length)}`).join(',');

  say('Create the keyspace and tables, then a 32-bit sequence');
  await cli(first, hosts, ['init', '--replication', replication]);
  sequence = await freshSequenceName(first, hosts);
  await cli(first, hosts, [
    ...['seed', sequence, '--domain', 'int32', '--start', '1000'],
    ...['--dc-range', '20000', '--block', '100'],
  ]);

  say(
    `${PROCESSES_PER_DC} allocator processes per DC draw ${RATE_PER_PROCESS} IDs/s each for ${DRAW_SECONDS} s`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-demo-'));
  drawing = dcNames.flatMap((dc) =>
    Array.from({ length: PROCESSES_PER_DC }, (_, i) => startDrawing(dc, dcs[dc]!, dir, i + 1)),
  );
  await sleep(PARTITION_AT_S);
  const cut = dcNames.at(-1)!;
  if (noPartition === undefined) await waitForRunway(cut, first, hosts);
  await cli(first, hosts, ['status', sequence, ...SERIAL_PATIENCE]);
  if (noPartition === undefined) await partitionStep(cut, dcs[cut]!);
  else say(`Skipping the partition of ${cut}: ${noPartition}`);

  await Promise.all(drawing.map((p) => p.done));

  say('Final status and invariant check');
  await cli(first, hosts, ['status', sequence, '--sample', '1s', ...SERIAL_PATIENCE]);
  await cli(first, hosts, ['check', sequence]);
  const status = await statusJson(first, hosts);

  say('Summary');
  const seen = new Set<bigint>();
  let duplicates = 0;
  for (const dc of dcNames) {
    let drawn = 0;
    for (const id of drawing.filter((p) => p.dc === dc).flatMap((p) => idsOf(p.file))) {
      if (seen.has(id)) duplicates++;
      seen.add(id);
      drawn++;
    }
    console.log(`${dc}: ${drawn} IDs drawn by ${PROCESSES_PER_DC} processes`);
  }
  const granted = BigInt(status.globalLast) - BigInt(status.settings.start) + 1n;
  const left = status.dcs.reduce((sum, dc) => sum + BigInt(dc.left), 0n);
  console.log(`duplicates found: ${duplicates}`);
  console.log(
    `IDs granted to DCs: ${granted}; drawn: ${seen.size}; still available in DC ranges: ${left}; lost to gaps: ${granted - BigInt(seen.size) - left}`,
  );
  console.log(
    `demo finished in ${((Date.now() - started) / 1000).toFixed(0)} s; keyspace ${KEYSPACE}, sequence ${sequence}; IDs in ${dir}`,
  );
  if (duplicates > 0) process.exitCode = 1;
}

let drawing: ReturnType<typeof startDrawing>[] = [];
let partitioned = false;
let cleaning: Promise<void> | undefined;
/** The command a signal interrupted fails, and that is no news. */
let stoppedBy: string | undefined;
let healFailed = false;

/** Leaves the cluster whole and no draw process behind; once, however often it is called. */
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

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stoppedBy = signal;
    console.log(`\n${signal}: stopping`);
    const code = 128 + os.constants.signals[signal];
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
