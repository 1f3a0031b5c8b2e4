/** Sections 2 and 3: naive baseline, block-size sweep, burst, cold start. */
import { connect } from '../../src/index.js';
import type { BenchCluster } from './cluster.js';
import { WORKER_RUNTIME, type Fleet } from './fleet.js';
import { runNaive } from './naive.js';
import { addCounts, checkIncreasing, type WorkerDraw } from './protocol.js';
import type {
  BenchSettings,
  BurstRun,
  ClusterResult,
  ColdStartSample,
  DrawMode,
  DrawRun,
  NaiveRun,
  Log,
} from './results.js';
import { Histogram, latencySummary, sum, sums, hrNow } from './stats.js';
import { formatCount, formatNs, formatRate } from './report/format.js';
import { lwtCount } from './report/summary.js';

const MODES: readonly DrawMode[] = ['tight', 'paced'];
export function combineDraws(draws: readonly WorkerDraw[]): DrawRun {
  checkIncreasing(draws, 'process');
  return {
    processes: draws.length,
    ...sums(draws, ['ids', 'warmupWaits', 'failures', 'warmupFailures']),
    seconds: sum(draws.map((d) => d.seconds)) / draws.length,
    idsPerSecond: sum(draws.map((d) => d.ids / d.seconds)),
    latency: latencySummary(Histogram.merged(draws.map((d) => d.histogram))),
    counts: addCounts(draws.map((d) => d.counts)),
    rssMiB: draws.map((d) => Math.round(d.rssMiB * 10) / 10),
    failureMessages: [...new Set(draws.flatMap((d) => d.failureMessages))],
  };
}

async function coldStart(cluster: BenchCluster, sequence: string): Promise<ColdStartSample[]> {
  const samples: ColdStartSample[] = [];
  for (const dc of cluster.dcs) {
    const options = cluster.connectOptions(dc);
    const t0 = hrNow();
    const first = await connect(options);
    const t1 = hrNow();
    try {
      await first.sequence(sequence).next();
      const t2 = hrNow();
      const second = await connect(options);
      try {
        await second.sequence(sequence).next();
      } finally {
        await second.close();
      }
      const t3 = hrNow();
      samples.push({
        dc,
        connectMs: (t1 - t0) / 1e6,
        firstIdMs: (t2 - t0) / 1e6,
        firstIdWarmDcMs: (t3 - t2) / 1e6,
      });
    } finally {
      await first.close();
    }
  }
  return samples;
}

/** What `--scale-only` and `--http-only` report for the phases they skip. */
export function skippedCluster(
  settings: BenchSettings,
  cluster: BenchCluster,
  fleet: Fleet | undefined,
): ClusterResult {
  return {
    keyspace: cluster.keyspace,
    replication: cluster.replication,
    workerRuntime: WORKER_RUNTIME,
    rssAfterConnectMiB: fleet?.rssAfterConnectMiB ?? [],
    naive: [],
    draws: [],
    burst: { blockSize: settings.steadyBlockSize, calls: 0, runs: [] },
    coldStart: [],
  };
}

export async function measureCluster(
  settings: BenchSettings,
  cluster: BenchCluster,
  fleet: Fleet,
  log: Log,
): Promise<ClusterResult> {
  const firstDc = cluster.dcs[0]!;
  const sequenceOptions = (blockSize: number) => ({
    blockSize,
    dcRangeSize: blockSize * settings.dcRangeBlocks,
  });
  const naive = [1, settings.naiveClients].map((clients) => ({ clients, runs: [] as NaiveRun[] }));
  const draws = settings.blockSizes.flatMap((blockSize) =>
    MODES.map((mode) => ({
      ...sequenceOptions(blockSize),
      mode,
      ratePerProcess: mode === 'paced' ? settings.pacedBlocksPerSecond * blockSize : undefined,
      runs: [] as DrawRun[],
    })),
  );
  const bursts: BurstRun[] = [];
  const coldStarts: ColdStartSample[][] = [];
  const durationMs = settings.durationSeconds * 1000;
  const burstCalls = settings.burstFactor * settings.steadyBlockSize;
  for (let r = 0; r < settings.runs; r++) {
    const run = `run ${r + 1}/${settings.runs}`;
    for (const { clients, runs } of naive) {
      const result = await runNaive(cluster, `r${r}_c${clients}`, clients, durationMs);
      runs.push(result);
      log(
        `${run} naive ${clients} client(s): ${formatRate(result.ids / result.seconds)}, p50 ${formatNs(result.latency.p50)}, ${result.rejections} rejections`,
      );
    }
    for (const { blockSize, mode, ratePerProcess, runs } of draws) {
      const sequence = `s_r${r}_b${blockSize}_${mode}`;
      await cluster.createSequence(sequence, sequenceOptions(blockSize));
      const result = combineDraws(
        await fleet.drawAll({
          type: 'draw',
          sequence,
          mode,
          ratePerSecond: ratePerProcess ?? 0,
          warmupMs: settings.warmupSeconds * 1000,
          durationMs,
        }),
      );
      runs.push(result);
      const lwt = lwtCount(result.counts);
      log(
        `${run} block ${formatCount(blockSize)} ${mode}: ${formatRate(result.idsPerSecond)}, p99 ${formatNs(result.latency.p99)}, ` +
          `waits ${result.counts.waits}, ${formatCount(Math.round((lwt / Math.max(result.ids, 1)) * 1e6))} LWT/M IDs`,
      );
    }
    const sequence = `burst_r${r}`;
    await cluster.createSequence(sequence, sequenceOptions(settings.steadyBlockSize));
    const burst = await fleet.burst(firstDc, { type: 'burst', sequence, calls: burstCalls });
    bursts.push(burst);
    log(
      `${run} burst of ${formatCount(burst.calls)}: ${burst.totalMs.toFixed(1)} ms, ${burst.counts.waits} waits, ${burst.counts.blocksClaimed} blocks claimed`,
    );
    const coldSequence = `cold_r${r}`;
    await cluster.createSequence(coldSequence, sequenceOptions(settings.steadyBlockSize));
    const samples = await coldStart(cluster, coldSequence);
    coldStarts.push(samples);
    log(
      `${run} cold start: ${samples.map((s) => `${s.dc} ${s.firstIdMs.toFixed(0)}/${s.firstIdWarmDcMs.toFixed(0)} ms`).join(', ')}`,
    );
  }
  return {
    ...skippedCluster(settings, cluster, fleet),
    naive,
    draws,
    burst: { blockSize: settings.steadyBlockSize, calls: burstCalls, runs: bursts },
    coldStart: coldStarts,
  };
}
