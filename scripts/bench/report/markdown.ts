/** REPORT.md: sections 1 to 3 and the method here; 4 and 5 in scale.ts and http.ts. */
import { SEQUENCE_DEFAULTS } from '../../../src/index.js';
import type { RawResults } from '../results.js';
import { figure } from '../stats.js';
import {
  formatCount,
  formatMiB,
  formatMs,
  formatNs,
  formatRate,
  formatTimes,
  grid,
  latencyColumns,
  plural,
  quoted,
  significant,
  table,
  withSpread,
} from './format.js';
import { renderHttp } from './http.js';
import { renderScale } from './scale.js';
import { ratioText } from './summary.js';
import type { BurstSummary, DrawRow, NaiveRow, Summary } from './summary.js';

export function renderMarkdown(raw: RawResults, summary: Summary): string {
  // `--scale-only` and `--http-only` skip the cluster phases of sections 2 and 3.
  const clusterPhases = raw.cluster.naive.length > 0 || raw.cluster.draws.length > 0;
  return [
    ...renderIntro(raw),
    ...renderMachine(raw),
    '## Key ratios',
    '',
    ...grid(
      ['comparison', 'how many times'],
      summary.ratios.map((r) => [r.label, ratioText(r)]),
    ),
    ...renderInProcess(raw, summary),
    '## 2. On the 3-DC cluster',
    '',
    `Fresh keyspace \`${raw.cluster.keyspace}\` (${replicationText(raw.cluster.replication)}), dropped at the end.`,
    '',
    ...(clusterPhases
      ? [
          ...renderNaive(summary),
          ...renderDraws(raw, summary),
          ...renderColdStart(summary),
          ...renderBurst(summary),
        ]
      : [
          `Sections 2 (naive, steady state, sweep, cold start) and 3 (burst) did not run (\`${raw.settings.httpOnly ? '--http-only' : '--scale-only'}\`).`,
          '',
        ]),
    ...renderScale(raw, summary.scale),
    ...renderHttp(raw, summary),
    ...renderMethod(raw),
  ].join('\n');
}

const modeLabel = (row: DrawRow): string =>
  row.mode === 'tight'
    ? 'tight (`await next()` in a loop)'
    : `paced (${formatRate(row.ratePerProcess ?? NaN)} per process)`;

function renderIntro(raw: RawResults): string[] {
  return [
    '# idgen-cass benchmark',
    '',
    `${raw.settings.quick ? 'Quick' : 'Full'} run started ${raw.startedAt}, finished in ${formatMs(raw.wallSeconds * 1e3)} wall time: \`${raw.command}\`. Every figure is the median of ${plural(raw.settings.runs, 'run')} with the smallest and largest run in brackets; every ratio is computed within each run (both sides measured in that run), then its median taken.`,
    '',
  ];
}

function renderMachine(raw: RawResults): string[] {
  const { machine, settings } = raw;
  const dcs = Object.keys(machine.cassandra);
  const sharers = [
    settings.httpOnly ? [] : `the ${settings.processesPerDc * dcs.length} allocator processes`,
    raw.http === undefined ? [] : `the ${raw.http.services.length} HTTP services (section 5)`,
  ].flat();
  return [
    '## Machine',
    '',
    ...grid(
      ['', ''],
      [
        ['CPU', `${machine.cpuModel}, ${machine.cores} cores`],
        ['Memory', `${machine.memoryGiB} GiB`],
        ['OS', machine.os],
        ['Node', machine.node],
        [
          'Cassandra',
          `${[...new Set(Object.values(machine.cassandra))].join(', ')} (\`SELECT release_version FROM system.local\` in ${dcs.join(', ')})`,
        ],
        ['Cluster', machine.topology],
        ['Load average at start', machine.loadAverage.join(', ')],
      ],
    ),
    `The Cassandra JVMs, ${sharers.length === 0 ? 'nothing else' : sharers.join(', ')} and the benchmark share these ${machine.cores} cores, so absolute numbers are those of a crowded laptop-class machine; the ratios travel better.`,
    '',
  ];
}

/** Runs that did not say used RF 1. */
function replicationText(replication: Readonly<Record<string, number>> | undefined): string {
  const factors = Object.entries(replication ?? {});
  if (factors.length === 0) return 'RF 1 in every DC';
  if (new Set(factors.map(([, rf]) => rf)).size === 1) return `RF ${factors[0]![1]} in every DC`;
  return factors.map(([dc, rf]) => `RF ${rf} in ${dc}`).join(', ');
}

function renderInProcess(raw: RawResults, summary: Summary): string[] {
  const { inProcess } = raw;
  const repeats = inProcess.snowflakeRepeats;
  return [
    '## 1. In-process cost of one ID',
    '',
    `No network in the loop. idgen-cass runs on ${inProcess.idgenStore}, with blocks of ${formatCount(inProcess.idgenBlockSize)} IDs, so every timed call is served from a loaded block (calls that found no ID or claimed a block inside a timed loop: ${inProcess.refillsInLoops}). Each loop runs about ${raw.settings.inProcessSampleMs} ms; each run visits the generators in a rotated order.`,
    '',
    ...table(
      [
        ['generator', (row) => row.label],
        ['ns per ID', (row) => withSpread(row.nsPerId, formatNs)],
        ['IDs per second', (row) => withSpread(row.idsPerSecond, formatRate)],
        ['× plain counter', (row) => withSpread(row.vsCounter, formatTimes)],
      ],
      summary.inProcess,
    ),
    `Snowflake here is @sapphire/snowflake; it does not wait for the next millisecond when its 12-bit increment wraps, so past 4,096 IDs per millisecond it repeats IDs: ${formatCount(repeats.repeated)} of ${formatCount(repeats.generated)} generated back to back were repeats. uuid \`v7()\` draws 16 bytes from \`crypto.getRandomValues()\` per call, while \`crypto.randomUUID()\` serves from a cached entropy pool.`,
    '',
  ];
}

function renderNaive(summary: Summary): string[] {
  return [
    '### Naive baseline: one LWT per ID',
    '',
    'One row, `UPDATE … SET v = ? WHERE k = ? IF v = ?` at LOCAL_SERIAL (commit LOCAL_QUORUM) per ID, retried from the value a rejection returns; clients are concurrent loops in one process in dc1 sharing a driver pool. This is unique only within one DC: across DCs it would need SERIAL, which is slower still.',
    '',
    ...table<NaiveRow>(
      [
        ['clients', (row) => String(row.clients)],
        ['IDs/s', (row) => withSpread(row.idsPerSecond, formatRate)],
        ...latencyColumns((row: NaiveRow) => row.latency),
        ['LWTs per ID', (row) => withSpread(row.lwtPerId, significant)],
        ['rejections per ID', (row) => withSpread(row.rejectionsPerId, significant)],
      ],
      summary.naive,
    ),
  ];
}

function renderDraws(raw: RawResults, summary: Summary): string[] {
  const { settings } = raw;
  const paced = settings.pacedBlocksPerSecond;
  const failed = summary.draws.filter((d) => d.failures + d.warmupFailures > 0);
  const messages = [...new Set(failed.flatMap((d) => d.failureMessages))];
  return [
    '### idgen-cass `next()`: steady state and block-size sweep',
    '',
    `${summary.draws[0]?.processes ?? 0} allocator processes (${settings.processesPerDc} per DC; child processes run as ${raw.cluster.workerRuntime}; one connection each to its own DC) draw from one sequence per row (DC range ${settings.dcRangeBlocks} × block size, threshold ${SEQUENCE_DEFAULTS.threshold}) for ${settings.warmupSeconds} s of warm-up, then ${settings.durationSeconds} s measured; block size ${formatCount(settings.steadyBlockSize)} is the steady state. Every \`next()\` of the window is timed with \`process.hrtime.bigint()\` (a pair of reads costs ${formatNs(raw.inProcess.timerPairNs)}, included). Counters are diffs of \`stats()\` across the window. RSS is the largest process's at the end of the window; right after \`connect()\`, before any sequence, the processes held ${withSpread(figure(raw.cluster.rssAfterConnectMiB), formatMiB)}. Use it to size blocks: LWTs per million IDs fall with the block size; the paced rate scales with it.`,
    '',
    ...table<DrawRow>(
      [
        ['block size', (row) => formatCount(row.blockSize)],
        ['mode', modeLabel],
        ['IDs/s (all processes)', (row) => withSpread(row.idsPerSecond, formatRate)],
        ...latencyColumns((row: DrawRow) => row.latency),
        [
          'waits after warm-up',
          (row) =>
            `${withSpread(row.waits, formatCount)}; ${formatCount(row.waitsTotal)} in all runs`,
        ],
        ['waits per block', (row) => withSpread(row.waitsPerBlock, significant)],
        ['LWTs per M IDs', (row) => withSpread(row.lwtPerMillion, significant)],
        ['CAS retries', (row) => withSpread(row.casRejections, formatCount)],
        ['ranges granted', (row) => withSpread(row.rangesGranted, formatCount)],
        ['RSS per process', (row) => withSpread(row.rssMiB, formatMiB)],
        [
          '`next()` threw, all runs (warm-up / measured)',
          (row) => `${row.warmupFailures} / ${row.failures}`,
        ],
      ],
      summary.draws,
    ),
    '- **tight**: `await next()` of an ID the process holds resumes as a microtask; one call in 512 yields to the event loop, so the answer to the background refill started at the threshold is read while the block lasts. A block that is spent before that refill completes (small blocks, a tight loop on a busy machine) still ends in a wait (see waits per block): a process then tops out near one block per refill round trip (a LOCAL_SERIAL read and a LOCAL_SERIAL write) plus the per-call cost, timing included. This is the ceiling of one process, not the zero-wait goal.',
    `- **paced**: each process draws ${paced} blocks per second (${paced} × block size IDs/s), sleeping whenever it is 1 ms ahead, so the event loop runs and the refill started at the threshold lands before the block is spent: it has ${formatMs((1000 * (1 - SEQUENCE_DEFAULTS.threshold)) / paced)} of runway. Here waits after warm-up should be 0. Its median latency is above the tight one because its calls are spread out: each runs on cold caches and less optimised code, not on Cassandra.`,
    '',
    failed.length === 0
      ? 'No `next()` call threw, in warm-up or measured.'
      : '`next()` calls that threw (the process paused 100 ms and went on), summed over all runs: ' +
        failed
          .map(
            (d) =>
              `block ${formatCount(d.blockSize)} ${d.mode}: ${d.warmupFailures} in warm-up, ${d.failures} measured`,
          )
          .join('; ') +
        `. Messages: ${quoted(messages)}`,
    '',
  ];
}

function renderColdStart(summary: Summary): string[] {
  const cold = summary.coldStart;
  return [
    '### Cold start',
    '',
    `A fresh \`connect()\` in each DC, then the first \`next()\` of a new sequence (${cold.samples} samples: every DC in every run). The first process of a DC needs a DC range granted at SERIAL (across all DCs) and installed at LOCAL_SERIAL before its block; a second process of the same DC finds the range installed.`,
    '',
    ...grid(
      ['step', 'time'],
      [
        ['`connect()`', withSpread(cold.connectMs, formatMs)],
        ['`connect()` to first ID, first process of its DC', withSpread(cold.firstIdMs, formatMs)],
        [
          '`connect()` to first ID, DC already holds a range',
          withSpread(cold.firstIdWarmDcMs, formatMs),
        ],
      ],
    ),
  ];
}

function renderBurst(summary: Summary): string[] {
  const burst = summary.burst;
  type Counted = 'waits' | 'blocksClaimed' | 'rangesGranted' | 'lwt' | 'casRejections';
  const count = (key: Counted) => (b: BurstSummary) => withSpread(b[key], formatCount);
  return [
    '## 3. Burst',
    '',
    `One process in dc1 loads one block (\`ready()\`: ${withSpread(burst.heldBefore, formatCount)} IDs held), then ${formatCount(burst.calls)} \`next()\` calls arrive at once (\`Promise.all\`, ${formatCount(burst.calls / burst.blockSize)} × the block size of ${formatCount(burst.blockSize)}). Latency is from the burst's start to each call's resolution.`,
    '',
    ...table<BurstSummary>(
      [
        ['whole burst', (b) => withSpread(b.totalMs, formatMs)],
        ...latencyColumns((b: BurstSummary) => b.latency, ['p50', 'p99', 'max']),
        ['waits (calls queued)', count('waits')],
        ['blocks claimed', count('blocksClaimed')],
        ['ranges granted', count('rangesGranted')],
        ['LWTs', count('lwt')],
        ['CAS retries', count('casRejections')],
      ],
      [burst],
    ),
    'What the allocator did: the IDs held are served at once; every later call queues on the one claim in flight (single flight), and each claim, when it lands, serves one block of the queue while the rest wait for the next claim. So a burst of k blocks costs about k − 1 claims one after another, and its tail is that many LOCAL_SERIAL round trips; `take(n)` or a larger block avoid it.',
    '',
  ];
}

function renderMethod(raw: RawResults): string[] {
  const { settings } = raw;
  const lines = [
    '## Method',
    '',
    `- Options: ${plural(settings.runs, 'run')}, measured ${settings.durationSeconds} s and warm-up ${settings.warmupSeconds} s per cluster run, ${plural(settings.processesPerDc, 'process', 'processes')} per DC, block sizes ${settings.blockSizes.join(', ')}, naive clients 1 and ${settings.naiveClients}, burst ${settings.burstFactor} blocks.`,
    '- Each run of the cluster phases does them all in turn (naive, each block size tight then paced, burst, cold start), on fresh sequences, so the ratios pair measurements taken minutes apart at most.',
    '- LWTs are counted by the allocator: conditional writes (`lwtWrites`) plus reads at SERIAL and LOCAL_SERIAL; the naive baseline counts its conditional updates.',
    '- Waits are `stats().waits` diffed over the measured window, i.e. after warm-up; CAS retries are `casRejections` (lost races, each retried).',
    '- Latency percentiles come from a log-linear histogram (1.6 % precision) merged over the processes of a run.',
    raw.scale !== undefined &&
      `- Scale: ${plural(settings.scaleRuns, 'run')}, instances per DC ${settings.scaleInstances.join(', ')}, warm-up ${settings.scaleWarmupSeconds} s and measured ${settings.scaleSeconds} s per configuration, fixed rate ${settings.scaleRatePerDc} IDs/s per DC; each run visits every N, tight then at the fixed rate, then one instance per DC untimed, on a fresh sequence each. ` +
        "Claim and lost-race costs are the DC-state reads and writes timed at each instance's store; the machine's busy share is read from `os.cpus()` over the measured window.",
    raw.http !== undefined &&
      `- HTTP: ${plural(settings.runs, 'run')}; in each, for 1 and 100 IDs per request, the services under autocannon (${settings.httpConnections} connections each, every DC at once) and the library (${settings.httpConnections} callers per DC, every DC at once), each ${settings.httpWarmupSeconds} s of warm-up then ${settings.httpSeconds} s measured; ratios pair the two sides of one run. The bodies of the warm-ups are kept and parsed after each, every ID checked for repeats across the whole phase; the measured windows keep none, so that autocannon does no extra work per response there, and count 2xx answers × IDs per request. Then the overload run (its own section says how it is set up).`,
    '',
  ];
  return lines.filter((line) => line !== false);
}
