/** `idgen-cass alter`: change a sequence's sizes or threshold. */
import { Option, type Command } from 'commander';
import type { AlterSequenceOptions } from '../../settings/model.js';
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

/** The size flags `seed` and `alter` share, by the setting each sets: syntax, parser, help. */
const SIZE_FLAGS = {
  dcRangeSize: ['--dc-range <n>', parseBigInt, 'IDs one grant gives a DC'],
  blockSize: ['--block <n>', parseInteger, 'the least IDs one process claims at a time'],
  threshold: [
    '--threshold <share>',
    parseDecimal,
    'share of a block or DC range used before the next is loaded',
  ],
  maxBlockSize: [
    '--max-block-size <n>',
    parseInteger,
    'the largest block; between --block and it, each process sizes its blocks from its own rate (= --block: fixed)',
  ],
  claimIntervalMs: [
    '--claim-interval <duration>',
    parseClaimInterval,
    'time between one process claims that adaptive blocks aim for, e.g. 2s or 500ms',
  ],
  maxDcRangeSize: [
    '--max-dc-range <n>',
    parseBigInt,
    'the largest grant, when grants follow the DC rate',
  ],
  autonomySeconds: [
    '--autonomy <duration>',
    parseAutonomy,
    'size each grant from the DC rate so that a cut-off DC serves this long, e.g. 24h; 0: fixed DC ranges',
  ],
  shards: [
    '--shards <n>',
    parseInteger,
    "state partitions per DC that its processes' claims spread over, 1 to 256",
  ],
} as const;

const SIZE_ENTRIES = Object.entries(SIZE_FLAGS);

/** Adds the size flags to `command`, each with its entry of `notes` (by flag) in parentheses. */
export function addSizeOptions(command: Command, notes: Record<string, string>): Command {
  for (const [, [flags, parse, help]] of SIZE_ENTRIES) {
    const note = notes[flags];
    const described = note === undefined ? help : `${help} (${note})`;
    command.addOption(new Option(flags, described).argParser(parse as (value: string) => unknown));
  }
  return command;
}

/** The settings the size flags in commander's `options` set (undefined: not given). */
export function sizeSettings(options: Record<string, unknown>): AlterSequenceOptions {
  const given = SIZE_ENTRIES.map(([setting, [flags]]) => [
    setting,
    options[new Option(flags).attributeName()],
  ]);
  return Object.fromEntries(given) as AlterSequenceOptions;
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
    .action(async (sequence: string, options: Record<string, unknown>, command: Command) => {
      const changes = sizeSettings(options);
      if (Object.values(changes).every((value) => value === undefined)) {
        command.error(
          `alter needs at least one of ${SIZE_ENTRIES.map(([, [flags]]) => flags.split(' ')[0]).join(', ')}`,
        );
      }
      // Values no stored setting could make valid are refused before connecting (exit 1).
      checkChanges(changes);
      const ids = await ctx.idGen();
      const settings = await ids.alterSequence(sequence, changes);
      await ctx.result(settingsJson(settings), () => [
        `Altered sequence "${sequence}".`,
        ...settingsLines(settings),
      ]);
    });
}
