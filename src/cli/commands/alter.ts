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

/** The size flags: syntax, parser, help (each command adds its notes). */
const SIZE_FLAGS: readonly (readonly [string, (value: string) => unknown, string])[] = [
  ['--dc-range <n>', parseBigInt, 'IDs one grant gives a DC'],
  ['--block <n>', parseInteger, 'the least IDs one process claims at a time'],
  [
    '--threshold <share>',
    parseDecimal,
    'share of a block or DC range used before the next is loaded',
  ],
  [
    '--max-block-size <n>',
    parseInteger,
    'the largest block; between --block and it, each process sizes its blocks from its own rate (= --block: fixed)',
  ],
  [
    '--claim-interval <duration>',
    parseClaimInterval,
    'time between one process claims that adaptive blocks aim for, e.g. 2s or 500ms',
  ],
  ['--max-dc-range <n>', parseBigInt, 'the largest grant, when grants follow the DC rate'],
  [
    '--autonomy <duration>',
    parseAutonomy,
    'size each grant from the DC rate so that a cut-off DC serves this long, e.g. 24h; 0: fixed DC ranges',
  ],
  [
    '--shards <n>',
    parseInteger,
    "state partitions per DC that its processes' claims spread over, 1 to 256",
  ],
];

/** Adds the size flags to `command`, each with its entry of `notes` (by flag) in parentheses. */
export function addSizeOptions(command: Command, notes: Record<string, string>): Command {
  for (const [flags, parse, help] of SIZE_FLAGS) {
    const note = notes[flags];
    command.option(flags, note === undefined ? help : `${help} (${note})`, parse);
  }
  return command;
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
  const command = program
    .command('alter')
    .description("change a sequence's sizes or threshold (needs every DC reachable)")
    .argument('<sequence>', 'the sequence');
  addSizeOptions(command, {
    '--shards <n>': 'at least the current number; processes keep the shard they picked',
  })
    .addHelpText(
      'after',
      `
Running processes re-read the settings at their first block claim 10 s or more after they last
read them: a process drawing IDs takes an alter within about 10 s plus one claim interval.

Example:
  $ idgen-cass alter orders --block 5000`,
    )
    .action(async (sequence: string, options: SizeFlags, command: Command) => {
      const changes = sizeSettings(options);
      if (Object.values(changes).every((value) => value === undefined)) {
        command.error(
          `alter needs at least one of ${SIZE_FLAGS.map(([flags]) => flags.split(' ')[0]).join(', ')}`,
        );
      }
      // Values no stored setting could make valid are refused before connecting (exit 1).
      checkChanges(changes);
      const ids = await ctx.idGen();
      const settings = await ids.alterSequence(sequence, changes);
      if (ctx.json) return ctx.printJson(settingsJson(settings));
      await ctx.print([`Altered sequence "${sequence}".`, ...settingsLines(settings)]);
    });
}
