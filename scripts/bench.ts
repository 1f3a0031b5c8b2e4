/**
 * `npm run bench [-- --quick] [options]`: 1. in-process cost of one ID; on the local 3-DC
 * cluster, 2. naive baseline, block-size sweep, cold start; 3. burst; 4. scale; 5. HTTP service.
 * Writes results.json and REPORT.md into `--out`, prints the report's path and key ratios (progress
 * on stderr); works in a fresh keyspace that it drops at the end. `--help` lists the options.
 */
import os from 'node:os';

import { BenchCluster, ensureCluster, machineInfo } from './bench/cluster.js';
import { Fleet } from './bench/fleet.js';
import { HTTP_COUNTS, HttpPhase, OVERLOAD } from './bench/http.js';
import { measureInProcess } from './bench/in-process.js';
import { parseBenchArgs } from './bench/options.js';
import { measureCluster, skippedCluster } from './bench/phases.js';
import { buildReport, headline, writeReport } from './bench/report.js';
import type { BenchSettings, RawResults } from './bench/results.js';
import { measureScale, SCALE_MODES } from './bench/scale.js';

const started = Date.now();
const log = (line: string): void => {
  const seconds = ((Date.now() - started) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[bench ${seconds} s] ${line}\n`);
};

/** Measured seconds plus warm-ups and about 2 s of set-up per configuration, then minutes. */
function estimateMinutes(s: BenchSettings): number {
  const cluster =
    2 * s.durationSeconds + s.blockSizes.length * 2 * (s.warmupSeconds + s.durationSeconds + 2) + 8;
  const scale =
    (s.scaleInstances.length * SCALE_MODES.length + 1) *
    (s.scaleWarmupSeconds + s.scaleSeconds + 2);
  const http = HTTP_COUNTS.length * 2 * (s.httpWarmupSeconds + s.httpSeconds + 1);
  const phases = [
    s.scaleOnly || s.httpOnly ? 0 : s.runs * cluster,
    s.scale ? s.scaleRuns * scale : 0,
    // The overload run adds its service's start, a second of samples, and one load.
    s.http ? s.runs * http + OVERLOAD.seconds + 30 : 0,
  ];
  return (phases.reduce((a, b) => a + b) + 20) / 60;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const settings = await parseBenchArgs(argv);
  const startedAt = new Date(started).toISOString();
  const loadAverage = os.loadavg();
  const s = settings;
  const plan = [
    `${s.quick ? 'quick' : 'full'} run: ${s.runs} runs, ${s.durationSeconds} s measured per cluster phase, ${s.processesPerDc} processes per DC, block sizes ${s.blockSizes.join(', ')}`,
    s.scale &&
      `scale: ${s.scaleRuns} runs, ${s.scaleInstances.join(', ')} instances per DC, ${s.scaleSeconds} s measured`,
    s.http &&
      `http: ${s.httpSeconds} s measured per load, ${s.httpConnections} connections per service`,
    s.scaleOnly && 'scale phase only',
    s.httpOnly && 'HTTP phase only',
    `about ${estimateMinutes(s).toFixed(0)} min`,
  ];
  log(plan.filter(Boolean).join('; '));
  log('1. in-process cost of one ID');
  const inProcess = await measureInProcess(settings, log);
  const contactPoints = await ensureCluster(log);
  const cluster = await BenchCluster.open(contactPoints, log);
  let fleet: Fleet | undefined;
  const httpPhase = settings.http ? new HttpPhase(settings, cluster, log) : undefined;
  let cleaning: Promise<void> | undefined;
  const cleanUp = (): Promise<void> =>
    (cleaning ??= (async () => {
      await fleet?.stop();
      await httpPhase?.stop();
      await cluster.close(log);
    })());
  const interrupted = (): void => {
    log('interrupted: stopping the allocator processes and services, dropping the keyspace');
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  let raw: RawResults;
  try {
    const machine = machineInfo(await cluster.cassandraVersions(), loadAverage);
    if (!settings.httpOnly) fleet = await Fleet.start(cluster, settings.processesPerDc, log);
    const clusterPhases = fleet !== undefined && !settings.scaleOnly;
    if (clusterPhases) log('2. cluster phases and 3. burst');
    const clusterResult = clusterPhases
      ? await measureCluster(settings, cluster, fleet!, log)
      : skippedCluster(settings, cluster, fleet);
    if (settings.scale) log('4. scale: N allocator instances per DC');
    const scale =
      settings.scale && fleet !== undefined
        ? await measureScale(settings, cluster, fleet, log)
        : undefined;
    if (httpPhase !== undefined)
      log('5. HTTP service: one idgen-cass serve per DC under autocannon');
    const http = await httpPhase?.run();
    raw = {
      startedAt,
      finishedAt: new Date().toISOString(),
      wallSeconds: (Date.now() - started) / 1000,
      command: ['npm run bench', ...(argv.length > 0 ? ['--', ...argv] : [])].join(' '),
      settings,
      machine,
      inProcess,
      cluster: clusterResult,
      ...(scale === undefined ? {} : { scale }),
      ...(http === undefined ? {} : { http }),
    };
  } finally {
    await cleanUp();
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  const report = buildReport(raw);
  const files = await writeReport(report, settings.out);
  process.stdout.write(headline(report, files.markdown));
  log(
    `wrote ${files.json} and ${files.markdown}; wall time ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
