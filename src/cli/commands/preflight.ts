/** `idgen-cass preflight`: every node's settings that the safety of the IDs rests on. */
import type { Command } from 'commander';
import type { CheckStatus, PreflightReport } from '../../admin/preflight.js';
import { UnsafeClusterError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { ALLOW_UNSAFE_FLAG, CommandOutcome } from '../exit-codes.js';
import { plural, table } from '../format.js';

export function preflightCommand(program: Command, ctx: CliContext): void {
  program
    .command('preflight')
    .description(
      'check every node of every DC for settings under which IDs could be handed out twice (exit 9 if any, 3 if a node could not be read)',
    )
    .addHelpText(
      'after',
      `
Each node is asked for its own settings, every DC through its own nodes: commitlog_sync batch or
group (periodic acknowledges writes before syncing them), commit_failure_policy not ignore, a
Paxos variant that is linearizable (and serial reads left linearizable), Paxos state kept at
least 3 h (gc_grace_seconds), no default_time_to_live on the idgen tables; Paxos repair and
commitlog replay give warnings only. A DC that cannot be reached is reported as not checked,
never as safe. init and seed run the same checks and refuse an unsafe cluster unless
${ALLOW_UNSAFE_FLAG} is given.

Example (a table of node, check, result and what was found; then the verdict):
  $ idgen-cass preflight`,
    )
    .action(async () => {
      const admin = await ctx.admin();
      const report = await admin.preflight();
      await ctx.result(preflightJson(report), () => renderPreflight(report));
      if (report.verdict === 'unsafe') {
        throw new UnsafeClusterError(report.problems, `${ALLOW_UNSAFE_FLAG} to init and seed`);
      }
      if (report.verdict === 'incomplete') {
        throw new CommandOutcome(
          'IDGEN_PREFLIGHT_INCOMPLETE',
          `preflight could not read every node (listed on stdout): ${report.unchecked.join('; ')}. Nothing unsafe was seen on the nodes it read; run it again once every DC is reachable from here.`,
        );
      }
    });
}

/** A check's result: a status that needs a look in capitals. */
function mark(status: CheckStatus): string {
  return status === 'ok' || status === 'info' ? status : status.toUpperCase();
}

export function renderPreflight(report: PreflightReport): string[] {
  const rows: string[][] = [['DC', 'node', 'version', 'check', 'result', 'found']];
  for (const node of report.nodes) {
    const version = node.version ?? '–';
    if (!node.checked) {
      rows.push([node.dc, node.host, version, '(not checked)', 'UNKNOWN', node.error ?? '']);
      continue;
    }
    for (const check of node.checks) {
      rows.push([node.dc, node.host, version, check.check, mark(check.status), check.message]);
    }
  }
  const dcs = [...new Set(report.nodes.map((node) => node.dc))];
  const scope = `${plural(report.nodes.length, 'node')} in ${dcs.join(', ')}`;
  const lines = [
    `keyspace ${report.keyspace} · checked from ${report.dc} · ${report.at.toISOString()}`,
    '',
    ...table(rows),
    '',
  ];
  switch (report.verdict) {
    case 'safe':
      lines.push(`safe: ${scope}; no setting under which an ID could be handed out twice`);
      break;
    case 'unsafe':
      lines.push(`UNSAFE: ${plural(report.problems.length, 'problem')} (${scope}):`);
      lines.push(...report.problems.map((problem) => `  ${problem}`));
      break;
    case 'incomplete':
      lines.push(`INCOMPLETE: nothing unsafe on the nodes read, but not every node could be read:`);
      lines.push(...report.unchecked.map((line) => `  ${line}`));
      break;
  }
  return lines;
}

export function preflightJson(report: PreflightReport): Record<string, unknown> {
  return {
    keyspace: report.keyspace,
    dc: report.dc,
    at: report.at,
    verdict: report.verdict,
    problems: report.problems,
    unchecked: report.unchecked,
    nodes: report.nodes.map((node) => ({
      host: node.host,
      dc: node.dc,
      version: node.version ?? null,
      checked: node.checked,
      error: node.error ?? null,
      checks: node.checks.map((check) => ({
        check: check.check,
        status: check.status,
        value: check.value ?? null,
        message: check.message,
      })),
    })),
  };
}

/** How `init` and `seed` start, in their help. */
export const PREFLIGHT_FIRST = `First checks every node of every DC as "idgen-cass preflight" does, and refuses (exit 9) when
one runs an unsafe setting such as commitlog_sync: periodic, unless ${ALLOW_UNSAFE_FLAG} is given.`;

/** The warning `init` and `seed` give when the preflight could not read every node. */
export function incompleteWarning(report: PreflightReport): string {
  return `preflight could not read every node (${report.unchecked.join('; ')}); nothing unsafe was seen on the others. Run "idgen-cass preflight" once every DC is reachable.`;
}
