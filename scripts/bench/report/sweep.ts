/** "### Block-size sweep": every block size and mode, to size blocks by, and the `next()` calls that threw. */
import type { RawResults } from '../results.js';
import {
  formatCount,
  formatNs,
  formatRate,
  markdownTable,
  modeLabel,
  significant,
  withSpread,
} from './format.js';
import type { Summary } from './summary.js';

export function renderSweep(raw: RawResults, summary: Summary): string[] {
  const { settings } = raw;
  const out: string[] = [];
  out.push('### Block-size sweep', '');
  out.push(
    `DC range = ${settings.dcRangeBlocks} × block size. Use it to size blocks: LWTs per million IDs fall with the block size; the paced rate scales with it.`,
    '',
  );
  out.push(
    markdownTable(
      [
        'block size',
        'mode',
        'IDs/s',
        'p99',
        'p99.9',
        'max',
        'waits',
        'waits per block',
        'LWTs per M IDs',
        'CAS retries',
        'ranges granted',
        '`next()` threw, all runs (warm-up / measured)',
      ],
      summary.draws.map((row) => [
        formatCount(row.blockSize),
        modeLabel(row),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
        withSpread(row.waits, formatCount),
        withSpread(row.waitsPerBlock, significant),
        withSpread(row.lwtPerMillion, significant),
        withSpread(row.casRejections, formatCount),
        withSpread(row.rangesGranted, formatCount),
        `${row.warmupFailures} / ${row.failures}`,
      ]),
    ),
    '',
  );
  const failed = summary.draws.filter((d) => d.failures + d.warmupFailures > 0);
  if (failed.length > 0) {
    const messages = [...new Set(failed.flatMap((d) => d.failureMessages))];
    out.push(
      '`next()` calls that threw (the process paused 100 ms and went on), summed over all runs: ' +
        failed
          .map(
            (d) =>
              `block ${formatCount(d.blockSize)} ${d.mode}: ${d.warmupFailures} in warm-up, ${d.failures} measured`,
          )
          .join('; ') +
        `. Messages: ${messages.map((m) => `"${m}"`).join(', ')}`,
      '',
    );
  } else {
    out.push('No `next()` call threw, in warm-up or measured.', '');
  }
  return out;
}
