/** `idgen-cass alter`: change a sequence's sizes or threshold. */

import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { settingsJson, settingsLines } from '../format.js';
import { parseBigInt, parseDecimal, parseInteger } from '../parse.js';

interface AlterOptions {
  readonly dcRange?: bigint;
  readonly block?: number;
  readonly threshold?: number;
}

export function alterCommand(program: Command, ctx: CliContext): void {
  program
    .command('alter')
    .description(
      "change a sequence's DC range size, block size or threshold (needs every DC reachable)",
    )
    .argument('<sequence>', 'the sequence')
    .option('--dc-range <n>', 'IDs one grant gives a DC', parseBigInt)
    .option('--block <n>', 'IDs one process claims at a time', parseInteger)
    .option(
      '--threshold <share>',
      'share of a block or DC range used before the next is loaded',
      parseDecimal,
    )
    .addHelpText(
      'after',
      `
Processes already running keep the settings they read; new ones use the new settings.

Example:
  $ idgen-cass alter orders --block 5000
  Altered sequence "orders".
  sequence   orders
  domain     int32 [1, 2147483647]
  start      48213578
  DC range   1,000,000 IDs
  block      5,000 IDs
  threshold  0.5`,
    )
    .action(async (sequence: string, options: AlterOptions, command: Command) => {
      const { dcRange, block, threshold } = options;
      if (dcRange === undefined && block === undefined && threshold === undefined) {
        command.error('alter needs at least one of --dc-range, --block, --threshold');
      }
      const ids = await ctx.idGen();
      const settings = await ids.alterSequence(sequence, {
        dcRangeSize: dcRange,
        blockSize: block,
        threshold,
      });
      if (ctx.json) return ctx.printJson(settingsJson(settings));
      await ctx.print([`Altered sequence "${sequence}".`, ...settingsLines(settings)]);
    });
}
