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
Each node is asked for its own settings (system_views.settings and system_properties, and the
idgen tables' gc_grace_seconds and default_time_to_live), every DC through its own nodes:
  commitlog-sync                 batch or group (periodic acknowledges writes before syncing them)
  commit-failure-policy          not ignore
  paxos-variant                  v1 or v2, not a *_without_linearizable_* variant
  serial-reads-linearizability   -Dcassandra.unsafe.disable-serial-reads-linearizability unset
  paxos-state-lifetime           Paxos state kept at least 3 h (gc_grace_seconds with gc_grace purging)
  table-ttl                      no default_time_to_live on the idgen tables (their rows never expire)
  paxos-repair, commitlog-replay warnings only
A DC that cannot be reached is reported as not checked, never as safe. init and seed run the
same checks and refuse an unsafe cluster unless ${ALLOW_UNSAFE_FLAG} is given.

Example:
  $ idgen-cass preflight
  keyspace idgen · checked from dc1 · 2026-11-22T16:05:06.126Z

  DC   node            version  check                         result  found
  dc1  127.0.0.1:9042  5.0.9    commitlog-sync                ok      batch: every write is synced before it is acknowledged
  dc1  127.0.0.1:9042  5.0.9    commit-failure-policy         ok      stop
  dc1  127.0.0.1:9042  5.0.9    paxos-variant                 info    v2
  …
  safe: 9 nodes in dc1, dc2, dc3; no setting under which an ID could be handed out twice`,
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
