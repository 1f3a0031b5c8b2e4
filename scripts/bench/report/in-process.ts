/** "## 1. In-process cost of one ID": every generator's cost per ID with no network in the loop. */
import type { RawResults } from '../results.js';
import {
  formatCount,
  formatNs,
  formatRate,
  formatTimes,
  markdownTable,
  withSpread,
} from './format.js';
import type { Summary } from './summary.js';

export function renderInProcess(raw: RawResults, summary: Summary): string[] {
  const { settings } = raw;
  const out: string[] = [];
  out.push('## 1. In-process cost of one ID', '');
  out.push(
    `No network in the loop. idgen-cass runs on ${raw.inProcess.idgenStore}, ` +
      `with blocks of ${formatCount(raw.inProcess.idgenBlockSize)} IDs, so every timed call is served from a loaded block ` +
      `(calls that found no ID or claimed a block inside a timed loop: ${raw.inProcess.refillsInLoops}). ` +
      `Each loop runs about ${settings.inProcessSampleMs} ms; each run visits the generators in a rotated order.`,
    '',
  );
  out.push(
    markdownTable(
      ['generator', 'ns per ID', 'IDs per second', '× plain counter'],
      summary.inProcess.map((row) => [
        row.label,
        withSpread(row.nsPerId, formatNs),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.vsCounter, formatTimes),
      ]),
    ),
    '',
  );
  const repeats = raw.inProcess.snowflakeRepeats;
  out.push(
    `Snowflake here is @sapphire/snowflake; it does not wait for the next millisecond when its 12-bit increment wraps, ` +
      `so past 4,096 IDs per millisecond it repeats IDs: ${formatCount(repeats.repeated)} of ${formatCount(repeats.generated)} generated back to back were repeats. ` +
      'uuid `v7()` draws 16 bytes from `crypto.getRandomValues()` per call, while `crypto.randomUUID()` serves from a cached entropy pool.',
    '',
  );
  return out;
}
