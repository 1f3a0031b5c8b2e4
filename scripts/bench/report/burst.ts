/** "## 3. Burst": many calls at once on one process, and what the single-flight claim does with them. */
import { formatCount, formatMs, formatNs, markdownTable, withSpread } from './format.js';
import type { Summary } from './summary.js';

export function renderBurst(summary: Summary): string[] {
  const out: string[] = [];
  const burst = summary.burst;
  out.push('## 3. Burst', '');
  out.push(
    `One process in dc1 loads one block (\`ready()\`: ${withSpread(burst.heldBefore, formatCount)} IDs held), then ${formatCount(burst.calls)} \`next()\` calls arrive at once ` +
      `(\`Promise.all\`, ${formatCount(burst.calls / burst.blockSize)} × the block size of ${formatCount(burst.blockSize)}). Latency is from the burst's start to each call's resolution.`,
    '',
  );
  out.push(
    markdownTable(
      [
        'whole burst',
        'p50',
        'p99',
        'max',
        'waits (calls queued)',
        'blocks claimed',
        'ranges granted',
        'LWTs',
        'CAS retries',
      ],
      [
        [
          withSpread(burst.totalMs, formatMs),
          withSpread(burst.latency.p50, formatNs),
          withSpread(burst.latency.p99, formatNs),
          withSpread(burst.latency.max, formatNs),
          withSpread(burst.waits, formatCount),
          withSpread(burst.blocksClaimed, formatCount),
          withSpread(burst.rangesGranted, formatCount),
          withSpread(burst.lwt, formatCount),
          withSpread(burst.casRejections, formatCount),
        ],
      ],
    ),
    '',
  );
  out.push(
    'What the allocator did: the IDs held are served at once; every later call queues on the one claim in flight (single flight), ' +
      'and each claim, when it lands, serves one block of the queue while the rest wait for the next claim. ' +
      'So a burst of k blocks costs about k − 1 claims one after another, and its tail is that many LOCAL_SERIAL round trips; ' +
      '`take(n)` or a larger block avoid it.',
    '',
  );
  return out;
}
