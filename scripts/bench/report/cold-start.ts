/** "### Cold start": from `connect()` to the first ID, in a DC with and without a range. */
import { formatMs, markdownTable, withSpread } from './format.js';
import type { Summary } from './summary.js';

export function renderColdStart(summary: Summary): string[] {
  const out: string[] = [];
  const cold = summary.coldStart;
  out.push('### Cold start', '');
  out.push(
    `A fresh \`connect()\` in each DC, then the first \`next()\` of a new sequence (${cold.samples} samples: every DC in every run). ` +
      'The first process of a DC needs a DC range granted at SERIAL (across all DCs) and installed at LOCAL_SERIAL before its block; a second process of the same DC finds the range installed.',
    '',
  );
  out.push(
    markdownTable(
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
    '',
  );
  return out;
}
