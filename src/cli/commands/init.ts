/** `idgen-cass init`: the keyspace and the tables. */
import type { Command } from 'commander';

import { InvalidOptionError } from '../../errors.js';
import { initSchema } from '../../schema.js';
import type { CliContext } from '../context.js';
import { ALLOW_UNSAFE_FLAG, ALLOW_UNSAFE_HELP } from '../exit-codes.js';
import { parseReplication } from '../parse.js';
import { incompleteWarning, PREFLIGHT_FIRST } from './preflight.js';

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
    .option(ALLOW_UNSAFE_FLAG, ALLOW_UNSAFE_HELP)
    .addHelpText(
      'after',
      `
${PREFLIGHT_FIRST}

Example:
  $ idgen-cass init --replication dc1:3,dc2:3,dc3:3`,
    )
    .action(async (options: { replication: string; allowUnsafeCluster?: boolean }) => {
      const result = await initSchema({
        ...ctx.connection(),
        replication: parseReplication(options.replication),
        allowUnsafeCluster: options.allowUnsafeCluster === true,
      }).catch((error: unknown) => {
        // The library also refuses DCs the cluster lacks: the message shows the map as typed.
        if (error instanceof InvalidOptionError && error.option === 'replication') {
          throw new InvalidOptionError('replication', options.replication, error.allowed);
        }
        throw error;
      });
      if (result.preflight?.verdict === 'incomplete') {
        ctx.warn(incompleteWarning(result.preflight));
      }
      if (result.replicationDiffers.length > 0) {
        ctx.warn(
          `Keyspace "${result.keyspace}" exists with other replication than asked: ${result.replicationDiffers.join(', ')}; left unchanged. Processes in a DC it does not replicate to cannot allocate; change it (add a DC, raise or lower a DC's factor) as docs/operations.md, "Changing the replication", says, never by ALTER KEYSPACE alone while IDs are drawn.`,
        );
      }
      const json = { ...result, preflight: result.preflight?.verdict ?? 'skipped' };
      const factors = Object.entries(result.replication)
        .map(([dc, factor]) => `${dc}:${factor}`)
        .join(', ');
      await ctx.result(json, () => [
        result.keyspaceCreated
          ? `Created keyspace "${result.keyspace}" with replication ${factors}.`
          : `Keyspace "${result.keyspace}" exists; its replication (${factors}) is left unchanged.`,
        `Tables ready: ${result.tables.join(', ')}.`,
      ]);
    });
}
