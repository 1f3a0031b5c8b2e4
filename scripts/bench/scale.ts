/** The scale phase: N allocator instances per DC, tight and at a fixed rate, default settings. */
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

import { resolveSequenceSettings } from '../../src/settings/resolve.js';
import type { BenchCluster } from './cluster.js';
import type { Fleet } from './fleet.js';
import { addCounts, checkIncreasing, type WorkerScaleDraw } from './protocol.js';
import type {
  BenchSettings,
  ScaleDcRun,
  ScaleMode,
  ScaleResult,
  ScaleRun,
  Log,
} from './results.js';
import { Histogram, latencySummary, sum, sums } from './stats.js';
import { addTimings } from './timings.js';
import { formatCount, formatNs, formatRate } from './report/format.js';

export const SCALE_MODES: readonly ScaleMode[] = ['tight', 'rate'];

export function combineScale(
  answers: readonly { dc: string; result: WorkerScaleDraw }[],
  dcs: readonly string[],
  machineBusy: number,
): ScaleRun {
  const results = answers.map((a) => a.result);
  checkIncreasing(results, 'instance');
  const delays = results.flatMap((r) => (r.loopDelay == null ? [] : [r.loopDelay]));
  const worst = (of: 'p99Ms' | 'maxMs') => Math.max(...delays.map((d) => d[of]));
  const perDc = dcs.map((dc): ScaleDcRun => {
    const mine = answers.filter((a) => a.dc === dc).map((a) => a.result);
    const instances = sum(mine.map((r) => r.instances));
    const firstIds = mine.flatMap((r) => (r.slowestFirstIdMs === null ? [] : [r.slowestFirstIdMs]));
    return {
      dc,
      instances,
      ...sums(mine, ['ids', 'idsPerSecond', 'claimedIds', 'warmupWaits', 'failures']),
      ...sums(mine, ['warmupFailures', 'withoutId', 'serialReads']),
      seconds: instances > 0 ? sum(mine.map((r) => r.instanceSeconds)) / instances : NaN,
      lastBlockSizes: mine.flatMap((r) => r.lastBlockSizes),
      counts: addCounts(mine.map((r) => r.counts)),
      dcState: addTimings(mine.map((r) => r.dcState)),
      slowestFirstIdMs: firstIds.length === 0 ? null : Math.max(...firstIds),
    };
  });
  return {
    processes: answers.length,
    dcs: perDc,
    latency: latencySummary(Histogram.merged(results.map((r) => r.histogram))),
    failureMessages: [...new Set(answers.flatMap((a) => a.result.failureMessages))],
    workerCpuSeconds: sum(results.map((r) => r.cpuSeconds)),
    machineBusy,
    loopDelay: delays.length === 0 ? null : { p99Ms: worst('p99Ms'), maxMs: worst('maxMs') },
  };
}

/** Milliseconds of all cores since boot: busy, and in all. */
function cpuTimes(): { busy: number; total: number } {
  const times = os.cpus().map((cpu) => cpu.times);
  const idle = sum(times.map((t) => t.idle));
  const total = sum(times.map((t) => t.user + t.nice + t.sys + t.irq + t.idle));
  return { busy: total - idle, total };
}

/** Share of the machine's cores busy from `fromMs` to `toMs` after now. */
async function machineBusyBetween(fromMs: number, toMs: number): Promise<number> {
  await sleep(fromMs, undefined, { ref: false });
  const first = cpuTimes();
  await sleep(toMs - fromMs, undefined, { ref: false });
  const last = cpuTimes();
  const total = last.total - first.total;
  return total > 0 ? (last.busy - first.busy) / total : NaN;
}

export async function measureScale(
  settings: BenchSettings,
  cluster: BenchCluster,
  fleet: Fleet,
  log: Log,
): Promise<ScaleResult> {
  const warmupMs = settings.scaleWarmupSeconds * 1000;
  const durationMs = settings.scaleSeconds * 1000;
  // Then, untimed at N = 1, the rate to set beside the in-process `await next()`.
  const plan = [
    ...settings.scaleInstances.flatMap((n) => SCALE_MODES.map((mode) => [n, mode] as const)),
    [1, 'count'] as const,
  ].map(([instancesPerDc, mode]) => ({
    mode,
    instancesPerDc,
    ratePerInstance: mode === 'rate' ? settings.scaleRatePerDc / instancesPerDc : undefined,
    runs: [] as ScaleRun[],
  }));
  for (let r = 0; r < settings.scaleRuns; r++) {
    for (const config of plan) {
      const { mode, instancesPerDc, ratePerInstance } = config;
      const sequence = `scale_r${r}_n${instancesPerDc}_${mode}`;
      await cluster.createSequence(sequence, {});
      const busy = machineBusyBetween(warmupMs, warmupMs + durationMs);
      const answers = await fleet.scaleAll(instancesPerDc, {
        type: 'scale',
        sequence,
        ratePerInstance: ratePerInstance ?? 0,
        warmupMs,
        durationMs,
        timed: mode !== 'count',
      });
      const result = combineScale(answers, cluster.dcs, await busy);
      config.runs.push(result);
      const counts = addCounts(result.dcs.map((d) => d.counts));
      const failures = sum(result.dcs.map((d) => d.failures));
      const latency =
        mode === 'count'
          ? 'untimed'
          : `p99 ${formatNs(result.latency.p99)}, max ${formatNs(result.latency.max)}`;
      log(
        `scale run ${r + 1}/${settings.scaleRuns} N=${instancesPerDc} ${mode}: ${formatRate(sum(result.dcs.map((d) => d.idsPerSecond)))}, ${latency}, ${formatCount(counts.blocksClaimed)} claims, ${formatCount(counts.casRejections)} CAS retries, ${formatCount(counts.waits)} waits, ${failures} failed`,
      );
    }
  }
  const stored = Object.entries(resolveSequenceSettings('scale', {}));
  return {
    settings: Object.fromEntries(
      stored.flatMap(([k, v]) => (typeof v === 'number' ? [[k, v]] : [])),
    ),
    layout:
      `instances spread evenly over the ${settings.processesPerDc} allocator processes of each DC (fewer processes when N is smaller); ` +
      'each instance has its own IdGen, store and sequence handle, and the instances of one process share its one driver client (one connection per local node)',
    configs: plan,
  };
}
