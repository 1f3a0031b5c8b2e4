/**
 * `npm run torture [-- options]`: a seeded, Jepsen-style fault campaign against the local cluster.
 * Processes in every DC draw and record IDs while the nemesis acts; then everything heals, every DC
 * must draw again, and the checker judges the history against the rows. Writes report.md and
 * report.json into --out; exits 1 if any property failed, 2 on bad usage or a broken run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';

import * as manager from './cluster/manager.js';
import { readNodeSettings, settingsChanges, settingsProblems } from './cluster/settings.js';
import { nodeSpecs } from './cluster/topology.js';
import { connect, initSchema, openAdmin, type DcState } from '../src/index.js';
import { MUTATIONS, type Mutation } from '../src/mutations.js';
import { dcOfGrantee } from '../src/names.js';
import { checkHistory } from './torture/checker.js';
import { Fleet, type Incarnation } from './torture/fleet.js';
import {
  checkLiveness,
  connectedAfter,
  startLivenessWorker,
  type LivenessFleet,
} from './torture/liveness.js';
import {
  DEFAULT_MIX,
  FAULT_KINDS,
  Nemesis,
  secondsSince,
  WORKER_MODES,
  type FaultKind,
  type FaultMix,
} from './torture/nemesis.js';
import { freshSeed, Random } from './torture/random.js';
import { drawnWhileInForce, faultsInForce, idleWhileNotHit } from './torture/fault-progress.js';
import { parseProgress } from './torture/progress.js';
import { ALARM_CODES } from './torture/errors.js';
import { closeViolations, conductProblems, unexpectedErrors } from './torture/verdict.js';
import {
  firstBlocksOf,
  incarnationRow,
  killsOf,
  renderMarkdown,
  type CampaignReport,
} from './torture/report.js';

const positive =
  (integer = false) =>
  (value: string): number => {
    const n = Number(value);
    if (Number.isFinite(n) && n > 0 && (!integer || Number.isInteger(n))) return n;
    throw new InvalidArgumentError(`a positive ${integer ? 'integer' : 'number'}`);
  };

function parseMix(value: string): FaultMix {
  const mix: Record<string, number> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0]));
  for (const part of value.split(',').filter(Boolean)) {
    const [kind, weight] = part.split('=');
    if (!FAULT_KINDS.includes(kind as FaultKind) || !(Number(weight) >= 0)) {
      throw new InvalidArgumentError(
        `"${part}": give kind=weight pairs, kinds: ${FAULT_KINDS.join(', ')}`,
      );
    }
    mix[kind!] = Number(weight);
  }
  return mix as FaultMix;
}

function parseInterval(value: string): [number, number] {
  const match = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(value);
  if (match === null || Number(match[1]) > Number(match[2]) || Number(match[2]) <= 0)
    throw new InvalidArgumentError('give seconds as min-max, e.g. 3-12');
  return [Number(match[1]), Number(match[2])];
}

function parseOptions(argv: readonly string[]) {
  const o = new Command('torture')
    .description('a seeded, randomized fault campaign against the running local cluster')
    .option('--minutes <n>', 'how long the nemesis acts', positive(), 5)
    .option('--seed <n>', 'the seed of every random choice (default: a fresh one)', positive(true))
    .option('--processes-per-dc <n>', 'allocator processes kept running per DC', positive(true), 3)
    .option('--rate <n>', 'IDs per second of each paced process', positive(), 2_000)
    .option('--mix <kind=weight,...>', `fault mix (kinds: ${FAULT_KINDS.join(', ')})`, parseMix)
    .option('--interval <min-max>', 'seconds between nemesis actions', parseInterval, [3, 12])
    .option(
      '--out <dir>',
      "where report.md, report.json and each process's stderr (stderr/) go (default torture/runs/<time>-seed-<seed>)",
    )
    .option('--keep-history', 'keep the history files (IDs, counts by second) by the report', false)
    .option('--liveness-ids <n>', 'IDs each DC must draw after healing', positive(true), 1_000)
    .addOption(
      new Option(
        '--mutation <name>',
        'negative control: run a deliberately broken protocol; the checks must then fail',
      ).choices(MUTATIONS),
    )
    .exitOverride()
    .parse(['node', 'torture', ...argv])
    .opts<{
      minutes: number;
      seed?: number;
      processesPerDc: number;
      rate: number;
      mix?: FaultMix;
      interval: [number, number];
      out?: string;
      keepHistory: boolean;
      livenessIds: number;
      mutation?: Mutation;
    }>();
  const seed = o.seed ?? freshSeed();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const out = path.resolve(o.out ?? path.join('torture', 'runs', `${stamp}-seed-${seed}`));
  return { ...o, seed, mix: o.mix ?? DEFAULT_MIX, out };
}

/** Most IDs a campaign's processes record: the checker sorts them all in memory. */
const HISTORY_BUDGET = 300_000_000;

const started = Date.now();
const log = (line: string): void => {
  process.stderr.write(
    `[torture ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`,
  );
};

/** The campaign's fleet: a campaign that fails midway kills what it started. */
let campaignFleet: Fleet | undefined;

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  log(
    `seed ${options.seed}: ${options.minutes} min, ${options.processesPerDc} processes per DC; report in ${options.out}`,
  );
  const random = new Random(options.seed);

  const statuses = await manager.status();
  const down = statuses.filter((s) => s.state !== 'running' || !s.cql);
  if (statuses.length === 0 || down.length > 0) {
    throw new Error(
      `the local cluster is not up (${down.map((s) => `${s.node.name}: ${s.state}`).join(', ') || 'no nodes'}); start it with "npm run cluster -- up".`,
    );
  }
  const unsupported = await manager.partitionUnsupported();
  if (unsupported !== undefined) throw new Error(unsupported);
  const topology = manager.currentTopology();
  const contactPoints = manager.contactPointsByDc(topology);
  const dcs = Object.keys(contactPoints).sort();
  const firstDc = dcs[0]!;
  const replication = Object.fromEntries(dcs.map((dc) => [dc, Math.min(3, topology.nodesPerDc)]));
  // A campaign judges one Paxos variant and one commitlog setting.
  const settings = await readNodeSettings(nodeSpecs(topology));
  const disagreements = settingsProblems(settings);
  if (disagreements.length > 0) {
    throw new Error(
      `the nodes do not run the same settings (${disagreements.join('; ')}); restart them alike with "npm run cluster -- up --paxos v1|v2".`,
    );
  }
  const { paxos, commitlogSync } = settings[0]!;
  log(`every node of ${settings.length} runs Paxos ${paxos}, commitlog_sync ${commitlogSync}`);
  // A cluster with commitlog periodic is a negative control of its own: initSchema must be told.
  const unsafeCluster = commitlogSync === 'periodic';

  fs.mkdirSync(options.out, { recursive: true });
  const historyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-torture-'));
  const keyspace = `torture_${options.seed}_${Date.now().toString(36)}`;
  const sequence = 'torture';
  const inFirstDc = { contactPoints: contactPoints[firstDc]!, localDataCenter: firstDc, keyspace };
  await initSchema({ ...inFirstDc, replication, allowUnsafeCluster: unsafeCluster });
  const admin = await connect({ ...inFirstDc, allowUnsafeCluster: unsafeCluster });
  const dcRangeSize = random.pick([50_000, 100_000, 200_000]);
  const initial = {
    domain: 'int32' as const,
    dcRangeSize,
    blockSize: random.pick([100, 200, 500, 1_000]),
    threshold: random.pick([0.3, 0.5, 0.7]),
    ...random.pick([{}, { maxBlockSize: dcRangeSize, claimIntervalMs: random.pick([500, 2_000]) }]),
    ...random.pick([{}, { autonomySeconds: random.pick([5, 30]), maxDcRangeSize: 2_000_000 }]),
    shards: random.pick([1, 1, 2, 3]),
  };
  // Drawn apart from `random`, so that a seed's other draws stay what they were before these.
  const firstRanges = new Random(options.seed ^ 0x5f1e57).pick([[], dcs]);
  // In a third of the campaigns the create takes the library's own shards and first ranges.
  const libraryDefaults = new Random(options.seed ^ 0xd3fa17).pick([false, false, true]);
  const { shards: drawnShards, ...sizes } = initial;
  const made = await admin.createSequenceGranting(
    sequence,
    libraryDefaults ? sizes : { ...sizes, shards: drawnShards, firstRanges },
  );
  const grantedTo = [...new Set(made.firstGrants.map(({ grantee }) => dcOfGrantee(grantee)))];
  const created = {
    ...sizes,
    shards: made.settings.shards,
    firstRanges: grantedTo.join(',') || 'none',
    ...(libraryDefaults ? { defaults: 'shards and first ranges' } : {}),
  };
  log(`keyspace ${keyspace}, sequence ${JSON.stringify(created)}`);

  const fleet = new Fleet({
    keyspace,
    sequence,
    contactPoints,
    historyDir,
    stderrDir: path.join(options.out, 'stderr'),
    startedAt: started,
    mutation: options.mutation,
    allowUnsafeCluster: unsafeCluster,
    seed: options.seed,
  });
  campaignFleet = fleet;
  const processRandom = random.fork();
  // Each process slot may draw its share of HISTORY_BUDGET over the campaign and the healing.
  const maxRate = Math.ceil(
    HISTORY_BUDGET / (dcs.length * options.processesPerDc * (options.minutes * 60 + 180)),
  );
  const startProcess = (dc: string): Incarnation =>
    fleet.start(dc, processRandom.pick(WORKER_MODES), {
      rate: options.rate,
      maxTake: processRandom.pick([1, 10, 50]),
      callers: processRandom.pick([2, 4, 8]),
      maxRate,
    });
  for (const dc of dcs) for (let i = 0; i < options.processesPerDc; i++) startProcess(dc);
  await Promise.all(fleet.incarnations.map((i) => i.ready));
  log(
    `${fleet.incarnations.length} processes drawing (tight, take and callers loops at most ${maxRate.toLocaleString('en-US')} IDs/s each)`,
  );

  const nemesis = new Nemesis({
    random: random.fork(),
    fleet,
    admin,
    sequence,
    mix: options.mix,
    intervalS: options.interval,
    processesPerDc: options.processesPerDc,
    startProcess: (dc) => void startProcess(dc),
    canPartitionNodes: topology.nodesPerDc > 1,
    startedAt: started,
    log,
  });
  const recordedAtStart = recordedByDc(fleet, dcs);
  const windowFrom = secondsSince(started);
  nemesis.start();
  const progress = setInterval(() => {
    const recorded = Object.values(recordedByDc(fleet, dcs)).reduce((a, b) => a + b, 0);
    log(`${recorded.toLocaleString('en-US')} IDs recorded`);
  }, 15_000);
  await new Promise((resolve) => setTimeout(resolve, options.minutes * 60_000));
  clearInterval(progress);
  const recordedAtEnd = recordedByDc(fleet, dcs);
  const drawnUnderFaults = Object.fromEntries(
    dcs.map((dc) => [dc, recordedAtEnd[dc]! - recordedAtStart[dc]!]),
  );

  // The liveness workers' processes start now and connect once everything is healed.
  const livenessFleet: LivenessFleet<Incarnation> = {
    start: (dc) =>
      fleet.start(dc, 'tight', {
        rate: options.rate,
        maxTake: 1,
        count: options.livenessIds,
        waitForGo: true,
      }),
    go: (worker) => fleet.go(worker),
    kill: (worker) => fleet.kill(worker),
  };
  const livenessWorkers = dcs.map((dc) => startLivenessWorker(livenessFleet, dc));
  log('healing: the nemesis stops and undoes its faults');
  const faultWindow = { from: windowFrom, to: secondsSince(started) };
  await nemesis.stop();
  await manager.heal();
  for (const node of nodeSpecs(topology)) {
    const state = manager.processState(node);
    if (state === 'paused') await manager.resume(node.name);
    if (state === 'stopped') await manager.start(node.name);
  }
  for (const incarnation of fleet.incarnations) fleet.resume(incarnation);
  // The fleet stops before the liveness check: its load kept the fresh workers from starting.
  log('stopping the fleet');
  await fleet.stopAll((incarnation) => !incarnation.liveness);

  log('liveness: every DC must draw again');
  const liveness = await Promise.all(
    livenessWorkers.map((started) =>
      checkLiveness(
        livenessFleet,
        started,
        options.livenessIds,
        (file) => readHistory(file).length,
      ),
    ),
  );
  log(
    `liveness: ${liveness.map((l) => `${l.dc} ${l.ok ? 'ok' : 'FAILED'} (${l.drawn} IDs, ${l.seconds.toFixed(1)} s, ${connectedAfter(l)})`).join(', ')}`,
  );
  await fleet.stopAll();
  // A restarted node got its configuration written anew. One not answering fails the campaign.
  const settingsAtEnd = await readNodeSettings(nodeSpecs(topology)).catch((error: unknown) =>
    error instanceof Error ? error.message : String(error),
  );

  log('reading the rows back and checking');
  const grantsStore = await manager.openStore(keyspace, firstDc, topology);
  const overview = await grantsStore.readGrantsOverview(sequence, 'consistent');
  await grantsStore.close();
  if (overview === undefined) throw new Error(`sequence ${sequence} vanished from ${keyspace}`);
  const states = new Map<string, DcState>();
  for (const dc of dcs) {
    const store = await manager.openStore(keyspace, dc, topology);
    // The DC's own state and its shards' (a shard with a state has a grant).
    const grantees = [...overview.grants.keys()].filter((name) => dcOfGrantee(name) === dc);
    for (const grantee of new Set([dc, ...grantees])) {
      const state = await store.readDcState(sequence, grantee);
      if (state !== undefined) states.set(grantee, state);
    }
    await store.close();
  }
  const history = fleet.incarnations.map((i) => ({
    id: i.id,
    dc: i.dc,
    ending: i.ending,
    ids: readHistory(i.historyFile),
    calls: i.callsFile === undefined ? undefined : readHistory(i.callsFile, 3),
    cutShort: i.killed === 'raw' || i.killed === 'flush-timed-out',
  }));
  const verdict = checkHistory(history, { ...overview, states });

  const adminView = await openAdmin(inFirstDc);
  const checked = await adminView.check(sequence);
  await adminView.close();
  const violations = checked.violations.map((v) => v.message);
  const linearizabilityLines = nodeSpecs(topology).flatMap((node) =>
    manager
      .logLines(node, /linearizab/i)
      .filter((line) => !line.includes('Node configuration:'))
      .map((line) => `${node.name}: ${line}`),
  );
  const final = await admin.readSequence(sequence);
  await admin.close();

  const errorsByCode: Record<string, number> = {};
  const errorExamples: Record<string, string> = {};
  for (const incarnation of fleet.incarnations) {
    for (const [code, count] of Object.entries(incarnation.summary?.errors ?? {})) {
      errorsByCode[code] = (errorsByCode[code] ?? 0) + count;
      errorExamples[code] ??= incarnation.summary?.firstErrors[code] ?? '';
    }
  }
  const problems = [
    ...conductProblems({
      timeline: nemesis.timeline,
      drawnUnderFaults,
      incarnations: fleet.incarnations.map((i) => ({
        ...i,
        closedEarly: i.summary?.closedEarly ?? false,
      })),
    }),
    ...(typeof settingsAtEnd === 'string'
      ? [`node settings not read again once healed: ${settingsAtEnd}`]
      : settingsChanges(settings, settingsAtEnd).map(
          (change) => `node settings changed: ${change}`,
        )),
  ];
  const processes = fleet.incarnations
    .filter((i) => !i.liveness)
    .map((i) => ({
      dc: i.dc,
      from: (i.startedAt - started) / 1000,
      to: i.endedAt === undefined ? undefined : (i.endedAt - started) / 1000,
      progress: parseProgress(
        fs.existsSync(i.progressFile) ? fs.readFileSync(i.progressFile, 'utf8') : '',
      ),
    }));
  const nodeDcs = Object.fromEntries(nodeSpecs(topology).map((node) => [node.name, node.dc]));
  const underFaults = drawnWhileInForce(
    faultsInForce(nemesis.timeline, faultWindow, nodeDcs),
    dcs,
    processes,
  );
  const unexpected = unexpectedErrors(errorsByCode, errorExamples);
  const afterClose = closeViolations(
    fleet.incarnations.map((i) => ({ ...i, closeViolations: i.summary?.closeViolations })),
  );
  const count = (values: readonly string[]) =>
    values.reduce<Record<string, number>>((acc, v) => ({ ...acc, [v]: (acc[v] ?? 0) + 1 }), {});
  const report: CampaignReport = {
    seed: options.seed,
    startedAt: new Date(started).toISOString(),
    durationS: options.minutes * 60,
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}`,
    cluster: {
      dcs: topology.dcs,
      nodesPerDc: topology.nodesPerDc,
      paxos,
      commitlogSync,
      replication,
    },
    sequence: {
      name: sequence,
      keyspace,
      initial: created,
      final: {
        dcRangeSize: String(final.dcRangeSize),
        blockSize: final.blockSize,
        threshold: final.threshold,
      },
    },
    fleet: {
      processesPerDc: options.processesPerDc,
      incarnations: fleet.incarnations.length,
      byEnding: count(history.map((h) => h.ending)),
      byMode: count(fleet.incarnations.map((i) => i.mode)),
      firstBlocks: firstBlocksOf(fleet.incarnations),
      kills: killsOf(fleet.incarnations),
      ownDeadlinesMissed: fleet.incarnations.reduce(
        (sum, i) => sum + (i.summary?.ownDeadlinesMissed ?? 0),
        0,
      ),
      neverConnected: fleet.incarnations.filter((i) => i.summary?.connected === false).length,
    },
    mix: options.mix,
    mutation: options.mutation,
    timeline: nemesis.timeline,
    faultsDone: count(
      nemesis.timeline.filter((e) => e.result.startsWith('ok')).map((e) => e.action),
    ),
    drawnUnderFaults,
    faultWindow,
    drawnWhileInForce: underFaults,
    idleWhileNotHit: idleWhileNotHit(underFaults),
    conductProblems: problems,
    closeViolations: afterClose,
    unexpectedErrors: unexpected,
    errorsByCode,
    errorExamples,
    incarnations: fleet.incarnations.map((i, index) =>
      incarnationRow(i, history[index]!.ids.length),
    ),
    liveness,
    check: { violations },
    linearizabilityLines,
    verdict,
    passed:
      verdict.valid &&
      // Every history holds the IDs its summary says were drawn.
      fleet.incarnations.every(
        (i, k) => (i.summary?.drawn ?? history[k]!.ids.length) === history[k]!.ids.length,
      ) &&
      afterClose.length === 0 &&
      unexpected.length === 0 &&
      // The library's alarms fail a campaign unless the commitlog is `periodic`.
      (unsafeCluster || ALARM_CODES.every((code) => (errorsByCode[code] ?? 0) === 0)) &&
      liveness.every((l) => l.ok) &&
      violations.length === 0 &&
      linearizabilityLines.length === 0 &&
      problems.length === 0,
  };
  fs.writeFileSync(path.join(options.out, 'report.json'), JSON.stringify(report, null, 2) + '\n');
  fs.writeFileSync(path.join(options.out, 'report.md'), renderMarkdown(report));
  if (options.keepHistory)
    fs.cpSync(historyDir, path.join(options.out, 'history'), { recursive: true });
  fs.rmSync(historyDir, { recursive: true, force: true });
  // The keyspace stays: dropping one while hints for it arrive can break a node's schema.

  const r = verdict.reconciliation;
  log(
    `${report.passed ? 'PASSED' : 'FAILED'}: ${verdict.drawn.toLocaleString('en-US')} IDs, ${verdict.duplicateCount} duplicates, ` +
      `granted ${r.granted} = recorded ${r.drawn} + still held ${r.held} + unaccounted ${r.lost} (${r.balanced ? 'no recorded ID held, held inside grants' : 'a recorded ID still held, or held outside grants'}); seed ${options.seed}`,
  );
  for (const problem of problems) log(`campaign does not count: ${problem}`);
  for (const violation of afterClose) log(`close() broken: ${violation}`);
  for (const error of unexpected) log(`unexpected error: ${error}`);
  process.stdout.write(`${path.join(options.out, 'report.md')}\n`);
  process.exitCode = report.passed ? 0 : 1;
}

/** A file of float64 records of `numbers` each (IDs: 1; a calls file: 3). */
function readHistory(file: string, numbers = 1): Float64Array {
  if (!fs.existsSync(file)) return new Float64Array(0);
  const bytes = fs.readFileSync(file);
  const whole = bytes.length - (bytes.length % (8 * numbers));
  return new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + whole));
}

function recordedByDc(fleet: Fleet, dcs: readonly string[]): Record<string, number> {
  const byDc: Record<string, number> = Object.fromEntries(dcs.map((dc) => [dc, 0]));
  for (const i of fleet.incarnations) {
    const size = fs.existsSync(i.historyFile) ? fs.statSync(i.historyFile).size : 0;
    byDc[i.dc] = (byDc[i.dc] ?? 0) + Math.floor(size / 8);
  }
  return byDc;
}

main()
  .catch((error: unknown) => {
    // commander has printed its line; --help ends with exit code 0.
    if (error instanceof CommanderError) {
      if (error.exitCode !== 0) process.exitCode = 2;
      return;
    }
    log(`failed: ${error instanceof Error ? error.message : String(error)}`);
    if (process.env['IDGEN_VERBOSE']) console.error(error);
    const killed = campaignFleet?.abandon() ?? 0;
    if (killed > 0) log(`killed the ${killed} worker processes still running`);
    process.exitCode = 2;
  })
  // The verdict is written: exit, whatever driver sockets are still open.
  .finally(() => process.exit());
