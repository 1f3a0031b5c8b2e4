/** "## 4. Scale": every sentence is computed from the run's numbers. */
import { BACKOFF_MAX_MS } from '../../../src/allocator/dc-context.js';
import { COUNT_BATCH } from '../draw-loop.js';
import { LOOP_DELAY_RESOLUTION_MS } from '../protocol.js';
import type { RawResults, ScaleMode } from '../results.js';
import {
  byColumns,
  formatCount,
  formatNs,
  formatPercent,
  formatRate,
  latencyColumns,
  markdownTable,
  significant,
  withSpread,
  type Column,
} from './format.js';
import type { ScaleRow, ScaleSummary, ScalingLimit } from './scale-summary.js';
import { CPU_SATURATED, GROWTH, PARTITION_SATURATED } from './scale-summary.js';
import type { Summary } from './summary.js';

const TIGHT_NOTE =
  'Instances of one process share its event loop: a tight loop resumes as microtasks while its block lasts and yields to I/O once per 512 IDs, ' +
  "so the replies to the other instances' refills wait for that loop's turn on a crowded event loop. " +
  'IDs/s is all instances of all DCs together.';

function modeText(mode: ScaleMode, raw: RawResults): [string, string] {
  const { scaleRatePerDc, scaleInstances } = raw.settings;
  if (mode === 'tight') return ['Tight: every instance `await next()` in a loop', TIGHT_NOTE];
  const perInstance = scaleInstances
    .map((n) => `${formatRate(scaleRatePerDc / n)} at N = ${n}`)
    .join(', ');
  return [
    `Fixed total rate: ${formatRate(scaleRatePerDc)} per DC, split evenly over its instances`,
    `Each instance draws at the DC's rate ÷ N (${perInstance}), sleeping on a timer whenever it is 1 ms ahead and giving up what it missed beyond 100 ms; share of target is IDs/s ÷ the rate of all DCs.`,
  ];
}

function table(rows: readonly ScaleRow[], mode: ScaleMode): string {
  const columns: Column<ScaleRow>[] = [
    ['instances per DC', (row) => formatCount(row.instancesPerDc)],
    ['blocks', (row) => row.label],
    ['IDs/s (all DCs)', (row) => withSpread(row.idsPerSecond, formatRate)],
    mode === 'rate' && ['share of target', (row) => withSpread(row.shareOfTarget, formatPercent)],
    ['claims/s per DC partition', (row) => withSpread(row.claimsPerSecondPerDc, significant)],
    ['CAS retries per claim', (row) => withSpread(row.retriesPerClaim, significant)],
    ...latencyColumns((row: ScaleRow) => row.latency),
    ['waits after warm-up', (row) => withSpread(row.waits, formatCount)],
    ['errors: `next()` threw (warm-up / measured)', errors],
    ['slowest first ID (instances that drew none)', firstIds],
    [
      'grant reads at SERIAL per instance',
      (r) => withSpread(r.serialReadsPerInstance, significant),
    ],
    ['mean block size', blockSizes],
  ];
  return markdownTable(...byColumns(columns, rows));
}

function firstIds(row: ScaleRow): string {
  const slowest = Number.isFinite(row.slowestFirstIdMs.median)
    ? withSpread(row.slowestFirstIdMs, (v) => formatNs(v * 1e6))
    : '–';
  return row.withoutId > 0 ? `${slowest} (${formatCount(row.withoutId)} drew none)` : slowest;
}

function errors(row: ScaleRow): string {
  const extra = [
    ...(row.storeErrors > 0 ? [`${formatCount(row.storeErrors)} failed store operations`] : []),
    ...(row.casUnknown > 0 ? [`${formatCount(row.casUnknown)} unknown CAS outcomes`] : []),
  ];
  return `${row.warmupFailures} / ${row.failures}${extra.length > 0 ? `; ${extra.join(', ')}` : ''}`;
}

function blockSizes(row: ScaleRow): string {
  const mean = withSpread(row.meanBlockSize, (v) => formatCount(Math.round(v)));
  const low = row.lastBlockMin.median;
  const high = row.lastBlockMax.median;
  if (!Number.isFinite(low) || !Number.isFinite(high)) return mean;
  const last = low === high ? formatCount(low) : `${formatCount(low)}–${formatCount(high)}`;
  return `${mean} (last ${last})`;
}

/** "×2.1 from N = 1 to 4, ×1.02 to 16". */
function growth(limit: ScalingLimit): string {
  const steps = limit.points.slice(1).map((to, i) => {
    const from = limit.points[i]!;
    const factor = `×${significant(to.idsPerSecond / from.idsPerSecond)}`;
    return i === 0 ? `${factor} from N = ${from.n} to ${to.n}` : `${factor} to ${to.n}`;
  });
  return steps.length === 0
    ? `${formatRate(limit.points[0]?.idsPerSecond ?? NaN)} at one N only`
    : steps.join(', ');
}

function why(row: ScaleRow, limit: ScalingLimit, scale: ScaleSummary, cores: number): string {
  const partition = `the busiest DC-state partition completed ${significant(row.busiestClaimsPerSecond.median)} claims/s (the most any configuration reached: ${significant(scale.partitionMax?.claimsPerSecond ?? NaN)}), with ${significant(row.retriesPerClaim.median)} CAS retries per claim and ${formatCount(row.warmupFailures + row.failures)} \`next()\` calls that threw`;
  const cpu = `the machine's ${cores} cores were ${formatPercent(row.machineBusy.median)} busy (the allocator processes used ${significant(row.workerCores.median)} of them)`;
  const at = `at N = ${limit.next}`;
  if (limit.cause === 'partition') {
    return `the DC-state partition: ${at} ${partition}. Claims of one DC are Paxos rounds on one partition, so more claimers only lose more races.`;
  }
  if (limit.cause === 'cpu') {
    return `the CPU: ${at} ${cpu}, so more instances share the same cores (the Cassandra nodes run on them too) and each gets less; the partition was not the limit (${partition}).`;
  }
  return `neither the partition nor the CPU by these measures: ${at} ${partition}; ${cpu}.`;
}

function limitsText(summary: ScaleSummary, raw: RawResults): string[] {
  const tight = summary.limits.filter((l) => l.mode === 'tight');
  const rate = summary.limits.filter((l) => l.mode === 'rate');
  return [
    ...tight.map((limit) => {
      const row = summary.rows.find(
        (r) => r.mode === 'tight' && r.variant === limit.variant && r.instancesPerDc === limit.next,
      );
      const head = `- **${limit.label}, tight**: IDs/s ${growth(limit)}`;
      return limit.stopsAt === undefined || row === undefined
        ? `${head}; it still grew by ${significant(GROWTH)}× or more at every step.`
        : `${head}; it stops growing after N = ${limit.stopsAt} (the next step gained less than ${significant(GROWTH)}×). The limit is ${why(row, limit, summary, raw.machine.cores)}`;
    }),
    ...rate.map((limit) => {
      const short = summary.rows.filter(
        (r) =>
          r.mode === 'rate' &&
          r.variant === limit.variant &&
          (r.failures + r.warmupFailures > 0 || r.waitsTotal > 0 || r.shareOfTarget.median < 0.99),
      );
      return `- **${limit.label}, fixed rate**: ${short.length === 0 ? 'the full rate at every N, no `next()` call waited after warm-up or threw.' : `short of the rate, waiting or throwing at N = ${short.map((r) => r.instancesPerDc).join(', ')}.`}`;
    }),
  ];
}

/** Where the tight rows' claims spent their time; rows of older results without it are left out. */
function claimTimeText(summary: ScaleSummary): string[] {
  const rows = summary.rows.filter(
    (r) => r.mode === 'tight' && Number.isFinite(r.loopDelayP99Ms.median),
  );
  if (rows.length === 0) return [];
  const ns = (pick: (r: ScaleRow) => number) => (r: ScaleRow) => formatNs(pick(r));
  return [
    '',
    `Where a claim's time went, tight: the mean DC-state read, applied claim write and backoff (from a lost race's rejection to the next attempt; its timer asks for at most ${BACKOFF_MAX_MS} ms), timed at each instance's store, against how late the allocator processes' event loops ran (p99 / max of the worst process, \`monitorEventLoopDelay\` less its ${LOOP_DELAY_RESOLUTION_MS} ms sampling interval), which every reply, backoff and deadline waits for.`,
    '',
    markdownTable(
      ...byColumns<ScaleRow>(
        [
          ['instances per DC', (r) => formatCount(r.instancesPerDc)],
          ['blocks', (r) => r.label],
          ['read', ns((r) => r.readNs.median)],
          ['write', ns((r) => r.appliedWriteNs.median)],
          ['backoff', ns((r) => r.backoffNs.median)],
          [
            'event loop late (p99 / max)',
            (r) =>
              `${formatNs(r.loopDelayP99Ms.median * 1e6)} / ${formatNs(r.loopDelayMaxMs.median * 1e6)}`,
          ],
          ['cores used by the allocator processes', (r) => significant(r.workerCores.median)],
        ],
        rows,
      ),
    ),
    '',
  ];
}

function costText(summary: ScaleSummary, raw: RawResults): string[] {
  const max = summary.partitionMax;
  const out = [
    `- **Cost of a claim**: a read of the DC state (a plain LOCAL_QUORUM read, or at LOCAL_SERIAL when that shows nothing to claim) and a LOCAL_SERIAL conditional write, timed at each instance's store: ${formatNs(summary.uncontendedClaimNs)} with ${summary.uncontendedAt} instance${summary.uncontendedAt === 1 ? '' : 's'} per DC` +
      (max === undefined ? '.' : `, ${formatNs(max.row.claimNs.median)} on the busiest partition.`),
    `- **Cost of a lost race**: the rejected write and the backoff before the next attempt (which goes on from the state the rejection returned, with no read): ${formatNs(summary.lostRaceNs)}, over ${formatCount(summary.lostRaces)} lost races in all runs.`,
  ];
  if (max === undefined) return out;
  const perClaimNs = 1e9 / max.claimsPerSecond;
  const claimNs = max.row.claimNs.median;
  const busy = perClaimNs / claimNs;
  const retries = Number.isFinite(max.retriesPerClaim) ? max.retriesPerClaim : 0;
  const adaptiveMs = raw.scale?.variants.find((v) => v.adaptive)?.settings['claimIntervalMs'];
  out.push(
    `- **What one DC-state partition serves**: at most C = ${significant(max.claimsPerSecond)} claims/s were measured on one partition (${max.row.label}, ${max.row.mode === 'tight' ? 'tight' : 'fixed rate'}, N = ${max.row.instancesPerDc}, ${significant(max.retriesPerClaim)} CAS retries per claim): one claim every ${formatNs(perClaimNs)}, ` +
      (busy <= 1.5
        ? `about one claim's own latency there (${formatNs(claimNs)}): the partition completed claims back to back, so C is close to what it can do on this machine. `
        : `${significant(busy)}× one claim's own latency there (${formatNs(claimNs)}): the partition was not kept busy (its claimers were held back elsewhere), so C is a lower bound of what it can do. `) +
      `Processes that each claim once every I seconds then number at most K = C × I per DC. From the costs alone, a partition running its rounds one at a time allows C' = 1 ÷ (t_claim + r × t_race) = 1 ÷ (${formatNs(summary.uncontendedClaimNs)} + ${significant(retries)} × ${formatNs(summary.lostRaceRoundNs)}) = ${significant(summary.claimsPerSecondFromCosts)} claims/s, with t_claim the uncontended claim, r the CAS retries per claim where C was measured and t_race a lost race's rejected write (its backoff leaves the partition to others); K' = C' × I:`,
    '',
    markdownTable(
      [
        'claim interval I',
        'processes per DC, measured: K = C × I',
        "processes per DC, from costs: K' = C' × I",
      ],
      summary.estimates.map((e) => [
        `${significant(e.claimIntervalSeconds)} s${adaptiveMs !== undefined && e.claimIntervalSeconds === adaptiveMs / 1000 ? ' (adaptive default `claimIntervalMs`)' : ''}`,
        formatCount(e.processes),
        formatCount(e.processesFromCosts),
      ]),
    ),
    '',
    `K is the ceiling at full load: the closer a DC runs to it, the more races its claims lose, so half of it leaves headroom. This counts claims only; a DC range install is one more write on the same partition per range. C comes from a machine whose ${raw.machine.cores} cores also run every Cassandra node, so on real hardware it is a floor.`,
  );
  return out;
}

function inProcessText(scale: ScaleSummary, raw: RawResults): string[] {
  if (scale.tightVsInProcess.length === 0) return [];
  return [
    '- **A tight loop on the cluster against the in-process `await next()`**: one instance per DC, its IDs/s ÷ the in-process rate of section 1 in the same run, per run. ' +
      (scale.tightVsInProcess.some((r) => r.untimed)
        ? `Both loops are untimed: this one reads the clock once per ${formatCount(COUNT_BATCH)} calls, since timing every call costs two clock reads (${formatNs(raw.inProcess.timerPairNs)} measured here), about as much as the \`await next()\` it times. `
        : 'Here the cluster loop times every call and the in-process one does not. ') +
      'The goal is 25 % or more with adaptive blocks.',
    '',
    markdownTable(
      [
        'blocks',
        'IDs/s of one instance',
        'waits after warm-up (all DCs)',
        '÷ in-process `await next()`',
      ],
      scale.tightVsInProcess.map((r) => [
        r.label,
        withSpread(r.idsPerSecondPerInstance, formatRate),
        withSpread(r.waits, formatCount),
        withSpread(r.value, formatPercent),
      ]),
    ),
    '',
  ];
}

export function renderScale(raw: RawResults, summary: Summary): string[] {
  const scale = summary.scale;
  const result = raw.scale;
  if (scale === undefined || result === undefined) return [];
  const { settings } = raw;
  const variants = result.variants.map((v) => [
    v.label,
    Object.keys(v.options).length === 0
      ? 'none (defaults)'
      : Object.entries(v.options)
          .map(([k, n]) => `\`${k}: ${n}\``)
          .join(', '),
    Object.entries(v.settings)
      .filter(([k]) => k !== 'min' && k !== 'max' && k !== 'start')
      .map(([k, n]) => `${k} ${formatCount(n)}`)
      .join(', '),
  ]);
  const out = [
    '## 4. Scale',
    '',
    `N allocator instances per DC (N = ${settings.scaleInstances.join(', ')}; ${result.layout}) draw from a fresh sequence per configuration, tight and at a fixed total rate, ${settings.scaleWarmupSeconds} s of warm-up (adaptive blocks grow there), then ${settings.scaleSeconds} s measured; ${settings.scaleRuns} run${settings.scaleRuns === 1 ? '' : 's'}, every block policy in each. ` +
      "Claims/s and CAS retries are counted per DC partition from `stats()` (`blocksClaimed`, `casRejections`, summed over the DC's instances); waits and errors are after warm-up unless said. " +
      'All instances of a configuration start at once on a fresh sequence, so each needs a block claim, and each that finds its DC without a range a grant read at SERIAL (two SERIAL statements on the grants partition every DC shares): the slowest first ID and those grant reads per instance are in the tables.',
    '',
    markdownTable(['blocks', 'options given to `createSequence`', 'settings stored'], variants),
    '',
  ];
  if (result.skipped.length > 0) out.push(`Not run: ${result.skipped.join('; ')}.`, '');
  for (const mode of ['tight', 'rate'] as const) {
    const rows = scale.rows.filter((r) => r.mode === mode);
    if (rows.length === 0) continue;
    const [title, note] = modeText(mode, raw);
    out.push(`### ${title}`, '', note, '', table(rows, mode), '');
  }
  out.push(
    '### What it shows',
    '',
    ...limitsText(scale, raw),
    ...costText(scale, raw),
    ...claimTimeText(scale),
    '',
    ...inProcessText(scale, raw),
    `Mean block size is the IDs that came into the instances in the window (IDs drawn plus the change in IDs held) ÷ the blocks they claimed: the size the policy chose, on average; "last" is the range of the instances' last blocks at the window's end (\`stats().blockSize\`). The limit is read at the first step that gains less than ${significant(GROWTH)}×: the partition if \`next()\` threw, a claim lost one race or more on average, or its busiest partition reached ${formatPercent(PARTITION_SATURATED)} of the most claims/s measured; else the CPU if the machine was ${formatPercent(CPU_SATURATED)} busy or more.`,
    '',
  );
  const messages = [...new Set(scale.rows.flatMap((r) => r.failureMessages))];
  if (messages.length > 0) {
    out.push(`Messages of the calls that threw: ${messages.map((m) => `"${m}"`).join(', ')}.`, '');
  }
  return out;
}
