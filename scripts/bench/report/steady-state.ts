/** "### idgen-cass steady state": every process drawing at the steady block size, tight and paced, and why the two modes differ. */
import { SEQUENCE_DEFAULTS } from '../../../src/index.js';
import type { RawResults } from '../results.js';
import { figure } from '../stats.js';
import {
  formatCount,
  formatMiB,
  formatMs,
  formatNs,
  formatRate,
  markdownTable,
  modeLabel,
  significant,
  withSpread,
} from './format.js';
import type { Summary } from './summary.js';

export function renderSteadyState(raw: RawResults, summary: Summary): string[] {
  const { settings } = raw;
  const out: string[] = [];
  const steady = summary.draws.filter((d) => d.blockSize === settings.steadyBlockSize);
  out.push(`### idgen-cass steady state (block size ${formatCount(settings.steadyBlockSize)})`, '');
  out.push(
    `${steady[0]?.processes ?? 0} allocator processes (${settings.processesPerDc} per DC; child processes run as ${raw.cluster.workerRuntime}; one connection each to its own DC) draw from one sequence ` +
      `(DC range ${formatCount(steady[0]?.dcRangeSize ?? NaN)}, threshold ${SEQUENCE_DEFAULTS.threshold}) for ${settings.warmupSeconds} s of warm-up, then ${settings.durationSeconds} s measured. ` +
      'Every `next()` of the window is timed with `process.hrtime.bigint()` ' +
      `(a pair of reads costs ${formatNs(raw.inProcess.timerPairNs)}, included). Counters are diffs of \`stats()\` across the window. ` +
      `RSS is the largest process's at the end of the window; right after \`connect()\`, before any sequence, the processes held ${withSpread(figure(raw.cluster.rssAfterConnectMiB), formatMiB)}.`,
    '',
  );
  out.push(
    markdownTable(
      [
        'mode',
        'IDs/s (all processes)',
        'p50',
        'p99',
        'p99.9',
        'max',
        'waits after warm-up',
        'LWTs per M IDs',
        'CAS retries',
        'RSS per process',
      ],
      steady.map((row) => [
        modeLabel(row),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p50, formatNs),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
        `${withSpread(row.waits, formatCount)}; ${formatCount(row.waitsTotal)} in all runs`,
        withSpread(row.lwtPerMillion, significant),
        withSpread(row.casRejections, formatCount),
        withSpread(row.rssMiB, formatMiB),
      ]),
    ),
    '',
  );
  out.push(
    '- **tight**: `await next()` of an ID the process holds resumes as a microtask; one call in 512 yields to the event loop, so the answer to the background refill started at the threshold is read while the block lasts. ' +
      'A block that is spent before that refill completes (small blocks, a tight loop on a busy machine) still ends in a wait (see waits per block below): a process then tops out near one block per refill round trip (a LOCAL_SERIAL read and a LOCAL_SERIAL write) plus the per-call cost, timing included. ' +
      'This is the ceiling of one process, not the zero-wait goal.',
    `- **paced**: each process draws ${settings.pacedBlocksPerSecond} blocks per second (${settings.pacedBlocksPerSecond} × block size IDs/s), sleeping whenever it is 1 ms ahead, so the event loop runs and the refill started at the threshold lands before the block is spent: ` +
      `it has ${formatMs((1000 * (1 - SEQUENCE_DEFAULTS.threshold)) / settings.pacedBlocksPerSecond)} of runway. Here waits after warm-up should be 0. ` +
      'Its median latency is above the tight one because its calls are spread out: each runs on cold caches and less optimised code, not on Cassandra.',
    '',
  );
  return out;
}
