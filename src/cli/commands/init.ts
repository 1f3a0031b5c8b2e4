/** `idgen-cass init`: the keyspace and the tables. */

import type { Command } from 'commander';

import { initSchema } from '../../schema.js';
import type { CliContext } from '../context.js';
import { parseReplication } from '../parse.js';

export function initCommand(program: Command, ctx: CliContext): void {
  program
    .command('init')
    .description(
      'create the keyspace (NetworkTopologyStrategy) and the idgen tables if missing; safe to re-run',
    )
    .requiredOption(
      '--replication <map>',
      'replication factor per DC, e.g. dc1:3,dc2:3,dc3:3 (an existing keyspace keeps its own)',
    )
    .addHelpText(
      'after',
      `
Example:
  $ idgen-cass init --replication dc1:3,dc2:3,dc3:3
  Created keyspace "idgen" with replication dc1:3, dc2:3, dc3:3.
  Tables ready: idgen_grants, idgen_dc_state.`,
    )
    .action(async (options: { replication: string }) => {
      const replication = parseReplication(options.replication);
      const result = await initSchema({ ...ctx.connection(), replication, logger: ctx.logger });
      if (ctx.json) return ctx.printJson(result);
      const factors = Object.entries(result.replication)
        .map(([dc, factor]) => `${dc}:${factor}`)
        .join(', ');
      await ctx.print([
        result.keyspaceCreated
          ? `Created keyspace "${result.keyspace}" with replication ${factors}.`
          : `Keyspace "${result.keyspace}" exists; its replication (${factors}) is left unchanged.`,
        `Tables ready: ${result.tables.join(', ')}.`,
      ]);
    });
}
