/** "## Key ratios": each comparison computed within every run, then its median. */
import { formatRatio, markdownTable, withSpread } from './format.js';
import type { Summary } from './summary.js';

export function renderKeyRatios(summary: Summary): string[] {
  const out: string[] = [];
  out.push('## Key ratios', '');
  out.push(
    markdownTable(
      ['comparison', 'how many times'],
      summary.ratios.map((r) => [r.label, withSpread(r.value, formatRatio(r.unit))]),
    ),
    '',
  );
  return out;
}
