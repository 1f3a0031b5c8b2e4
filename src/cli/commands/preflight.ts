/** `idgen-cass preflight`: every node's settings that the safety of the IDs rests on. */
import type { Command } from 'commander';

import { UnsafeClusterError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { ALLOW_UNSAFE_FLAG, CommandOutcome } from '../exit-codes.js';
import { preflightJson, renderPreflight } from '../preflight-view.js';

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
      if (ctx.json) await ctx.printJson(preflightJson(report));
      else await ctx.print(renderPreflight(report));
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
