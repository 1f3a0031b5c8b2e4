/** `idgen-cass alter`: change a sequence's sizes or threshold. */

import type { Command } from 'commander';

import { checkChanges } from '../../settings/resolve.js';
import type { CliContext } from '../context.js';
import { settingsJson, settingsLines } from '../format.js';
import {
  parseAutonomy,
  parseBigInt,
  parseClaimInterval,
  parseDecimal,
  parseInteger,
} from '../parse.js';

/** The size flags `seed` and `alter` share. */
export interface SizeFlags {
  readonly dcRange?: bigint;
  readonly block?: number;
  readonly threshold?: number;
  readonly maxBlockSize?: number;
  readonly claimInterval?: number;
  readonly maxDcRange?: bigint;
  readonly autonomy?: number;
  readonly shards?: number;
}

/** The library's settings the size flags set (undefined: not given). */
export function sizeSettings(flags: SizeFlags) {
  return {
    dcRangeSize: flags.dcRange,
    blockSize: flags.block,
    threshold: flags.threshold,
    maxBlockSize: flags.maxBlockSize,
    claimIntervalMs: flags.claimInterval,
    maxDcRangeSize: flags.maxDcRange,
    autonomySeconds: flags.autonomy,
    shards: flags.shards,
  };
}

export function alterCommand(program: Command, ctx: CliContext): void {
  program
    .command('alter')
    .description("change a sequence's sizes or threshold (needs every DC reachable)")
    .argument('<sequence>', 'the sequence')
    .option('--dc-range <n>', 'IDs one grant gives a DC', parseBigInt)
    .option(
      '--block <n>',
      'IDs one process claims at a time (the least, if adaptive)',
      parseInteger,
    )
    .option(
      '--threshold <share>',
      'share of a block or DC range used before the next is loaded',
      parseDecimal,
    )
    .option(
      '--max-block-size <n>',
      'the largest block; above --block, blocks follow each process rate (= --block: fixed)',
      parseInteger,
    )
    .option(
      '--claim-interval <duration>',
      'time between one process claims that adaptive blocks aim for, e.g. 2s',
      parseClaimInterval,
    )
    .option('--max-dc-range <n>', 'the largest grant, when grants follow the DC rate', parseBigInt)
    .option(
      '--autonomy <duration>',
      'how long a cut-off DC must keep serving at its rate, e.g. 24h; 0: fixed DC ranges',
      parseAutonomy,
    )
    .option(
      '--shards <n>',
      'state partitions per DC, at least the current number (processes keep the shard they picked)',
      parseInteger,
    )
    .addHelpText(
      'after',
      `
Running processes re-read the settings at their first block claim 10 s or more after they last
read them: a process drawing IDs takes an alter within about 10 s plus one claim interval.

Example:
  $ idgen-cass alter orders --block 5000
  Altered sequence "orders".
  sequence   orders
  domain     int32 [1, 2147483647]
  start      48213578
  DC range   1,000,000 IDs
  block      5,000 to 100,000 IDs, sized for a claim every 2 s
  threshold  0.5
  shards     2 per DC`,
    )
    .action(async (sequence: string, options: SizeFlags, command: Command) => {
      const changes = sizeSettings(options);
      if (Object.values(changes).every((value) => value === undefined)) {
        command.error(
          'alter needs at least one of --dc-range, --block, --threshold, --max-block-size, --claim-interval, --max-dc-range, --autonomy, --shards',
        );
      }
      // A value that no stored setting could make valid is bad input (exit 1) whether Cassandra
      // is up or not: refused before connecting, as seed refuses its values. What depends on the
      // stored settings (a block above the largest one) is checked once they are read.
      checkChanges(changes);
      const ids = await ctx.idGen();
      const settings = await ids.alterSequence(sequence, changes);
      if (ctx.json) return ctx.printJson(settingsJson(settings));
      await ctx.print([`Altered sequence "${sequence}".`, ...settingsLines(settings)]);
    });
}
