/** `idgen-cass next`: draw IDs. */
import type { Command } from 'commander';

import { InvalidOptionError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { ALLOW_UNSAFE_HELP, ALLOW_UNSAFE_FLAG } from '../exit-codes.js';
import { parseInteger } from '../parse.js';

/** More IDs are better drawn by a library client. */
const MAX_COUNT = 1_000_000;

export function nextCommand(program: Command, ctx: CliContext): void {
  program
    .command('next')
    .description('draw IDs from a sequence in the local DC, one per line')
    .argument('<sequence>', 'the sequence')
    .option('-n, --count <n>', `how many IDs, 1 to ${MAX_COUNT}`, parseInteger, 1)
    .option(ALLOW_UNSAFE_FLAG, ALLOW_UNSAFE_HELP)
    .addHelpText(
      'after',
      `
Unused IDs of the last block go back to the DC on exit when no other process claimed after it.

Example:
  $ idgen-cass next orders -n 3
  $ idgen-cass next orders -n 2 --json
  [48214578,48214579]`,
    )
    .action(async (sequence: string, options: { count: number; allowUnsafeCluster?: boolean }) => {
      if (options.count < 1 || options.count > MAX_COUNT) {
        throw new InvalidOptionError('count', options.count, `an integer from 1 to ${MAX_COUNT}`);
      }
      const ids = await ctx.idGen({ allowUnsafeCluster: options.allowUnsafeCluster === true });
      await ids.readSequence(sequence); // an unknown sequence fails here, before any claim
      const handle = ids.sequence(sequence, { bigint: true }); // every domain, int63 included
      const drawn: bigint[] = [];
      while (drawn.length < options.count) drawn.push(handle.tryNext() ?? (await handle.next()));
      if (ctx.json) return ctx.printJson(drawn, 0);
      await ctx.print(drawn.map(String));
    });
}
