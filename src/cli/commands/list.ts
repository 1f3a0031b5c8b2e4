/** `idgen-cass list`: every sequence's settings. */
import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { settingsJson, table } from '../format.js';
import { count, span } from '../../quantities.js';

/** `least–most`, or the size alone when it is fixed. */
function bounds(least: bigint | number, most: bigint | number): string {
  return least === most ? count(least) : `${count(least)}–${count(most)}`;
}

export function listCommand(program: Command, ctx: CliContext): void {
  program
    .command('list')
    .description('list the sequences with their settings (needs only the local DC)')
    .addHelpText(
      'after',
      `
Example:
  $ idgen-cass list`,
    )
    .action(async () => {
      const ids = await ctx.idGen();
      const sequences = await ids.listSequences();
      if (ctx.json) return ctx.printJson(sequences.map((s) => settingsJson(s)));
      if (sequences.length === 0) {
        return ctx.print(
          `No sequences in keyspace "${ids.keyspace}". Create one with: idgen-cass seed <sequence>`,
        );
      }
      await ctx.print(
        table(
          [
            ['sequence', 'domain', 'IDs', 'start', 'DC range', 'block', 'threshold', 'shards'],
            ...sequences.map((s) => [
              s.name,
              s.domain,
              span(s.min, s.max),
              String(s.start),
              bounds(s.dcRangeSize, s.maxDcRangeSize),
              bounds(s.blockSize, s.maxBlockSize),
              String(s.threshold),
              String(s.shards),
            ]),
          ],
          ['left', 'left', 'left', 'right', 'right', 'right', 'right', 'right'],
        ),
      );
    });
}
