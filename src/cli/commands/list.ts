/** `idgen-cass list`: every sequence's settings. */

import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { count, settingsJson, span, table } from '../format.js';

export function listCommand(program: Command, ctx: CliContext): void {
  program
    .command('list')
    .description('list the sequences with their settings (needs only the local DC)')
    .addHelpText(
      'after',
      `
Example:
  $ idgen-cass list
  sequence  domain  IDs                    start     DC range  block  threshold
  orders    int32   [1, 2147483647]        48213578  1,000,000  1,000        0.5`,
    )
    .action(async () => {
      const ids = await ctx.idGen();
      const sequences = await ids.listSequences();
      if (ctx.json) return ctx.printJson(sequences.map(settingsJson));
      if (sequences.length === 0) {
        return ctx.print(
          `No sequences in keyspace "${ids.keyspace}". Create one with: idgen-cass seed <sequence>`,
        );
      }
      await ctx.print(
        table(
          [
            ['sequence', 'domain', 'IDs', 'start', 'DC range', 'block', 'threshold'],
            ...sequences.map((s) => [
              s.name,
              s.domain,
              span(s.min, s.max),
              String(s.start),
              count(s.dcRangeSize),
              count(s.blockSize),
              String(s.threshold),
            ]),
          ],
          ['left', 'left', 'left', 'right', 'right', 'right', 'right'],
        ),
      );
    });
}
