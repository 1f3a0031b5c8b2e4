/** "### Naive baseline": one LWT per ID, the cost idgen-cass is measured against. */
import { formatNs, formatRate, markdownTable, significant, withSpread } from './format.js';
import type { Summary } from './summary.js';

export function renderNaive(summary: Summary): string[] {
  const out: string[] = [];
  out.push('### Naive baseline: one LWT per ID', '');
  out.push(
    'One row, `UPDATE … SET v = ? WHERE k = ? IF v = ?` at LOCAL_SERIAL (commit LOCAL_QUORUM) per ID, retried from the value a rejection returns; ' +
      'clients are concurrent loops in one process in dc1 sharing a driver pool. ' +
      'This is unique only within one DC: across DCs it would need SERIAL, which is slower still.',
    '',
  );
  out.push(
    markdownTable(
      ['clients', 'IDs/s', 'p50', 'p99', 'p99.9', 'max', 'LWTs per ID', 'rejections per ID'],
      summary.naive.map((row) => [
        String(row.clients),
        withSpread(row.idsPerSecond, formatRate),
        withSpread(row.latency.p50, formatNs),
        withSpread(row.latency.p99, formatNs),
        withSpread(row.latency.p999, formatNs),
        withSpread(row.latency.max, formatNs),
        withSpread(row.lwtPerId, significant),
        withSpread(row.rejectionsPerId, significant),
      ]),
    ),
    '',
  );
  return out;
}
