/**
 * The markdown report (REPORT.md): its title and what the run was, then one renderer per
 * section, in the order the report reads.
 */
import type { RawResults } from '../results.js';
import { renderBurst } from './burst.js';
import { renderColdStart } from './cold-start.js';
import { formatMs, plural } from './format.js';
import { renderHttp } from './http.js';
import { renderInProcess } from './in-process.js';
import { renderKeyRatios } from './key-ratios.js';
import { renderMachine } from './machine.js';
import { renderMethod } from './method.js';
import { renderNaive } from './naive.js';
import { renderScale } from './scale.js';
import { renderSteadyState } from './steady-state.js';
import type { Summary } from './summary.js';
import { renderSweep } from './sweep.js';

/** The report, not yet formatted (prettier prints it as the repository's settings say). */
export function renderMarkdown(raw: RawResults, summary: Summary): string {
  // `--scale-only` and `--http-only` skip the cluster phases of sections 2 and 3.
  const clusterPhases = raw.cluster.naive.length > 0 || raw.cluster.draws.length > 0;
  return [
    ...renderIntro(raw),
    ...renderMachine(raw),
    ...renderKeyRatios(summary),
    ...renderInProcess(raw, summary),
    ...renderClusterIntro(raw),
    ...(clusterPhases
      ? [
          ...renderNaive(summary),
          ...renderSteadyState(raw, summary),
          ...renderSweep(raw, summary),
          ...renderColdStart(summary),
          ...renderBurst(summary),
        ]
      : [
          `Sections 2 (naive, steady state, sweep, cold start) and 3 (burst) did not run (\`${raw.settings.httpOnly ? '--http-only' : '--scale-only'}\`).`,
          '',
        ]),
    ...renderScale(raw, summary),
    ...renderHttp(raw, summary),
    ...renderMethod(raw),
  ].join('\n');
}

/** The title, and which run this is: when, how long, the command, how figures are taken. */
function renderIntro(raw: RawResults): string[] {
  const { settings } = raw;
  const out: string[] = [];
  const mode = settings.quick ? 'Quick' : 'Full';
  out.push('# idgen-cass benchmark', '');
  out.push(
    `${mode} run started ${raw.startedAt}, finished in ${formatMs(raw.wallSeconds * 1e3)} wall time: \`${raw.command}\`. ` +
      `Every figure is the median of ${plural(settings.runs, 'run')} with the smallest and largest run in brackets; ` +
      'every ratio is computed within each run (both sides measured in that run), then its median taken.',
    '',
  );
  return out;
}

/** "RF 3 in every DC", or each DC's RF where they differ; runs that did not say used RF 1. */
function replicationText(replication: Readonly<Record<string, number>> | undefined): string {
  const factors = Object.entries(replication ?? {});
  if (factors.length === 0) return 'RF 1 in every DC';
  const distinct = new Set(factors.map(([, rf]) => rf));
  if (distinct.size === 1) return `RF ${factors[0]![1]} in every DC`;
  return factors.map(([dc, rf]) => `RF ${rf} in ${dc}`).join(', ');
}

/** "## 2. On the 3-DC cluster": its keyspace; the subsections follow. */
function renderClusterIntro(raw: RawResults): string[] {
  const out: string[] = [];
  out.push('## 2. On the 3-DC cluster', '');
  out.push(
    `Fresh keyspace \`${raw.cluster.keyspace}\` (${replicationText(raw.cluster.replication)}), dropped at the end.`,
    '',
  );
  return out;
}
