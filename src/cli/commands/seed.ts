/** `idgen-cass seed`: create a sequence. */
import { Option, type Command } from 'commander';
import { CREATOR_UNKNOWN, UnsafeClusterError } from '../../errors.js';
import { dcOfGrantee } from '../../names.js';
import { SEQUENCE_DEFAULTS as D } from '../../settings/defaults.js';
import { resolveFirstGrants } from '../../settings/first-ranges.js';
import {
  DOMAIN_MAX,
  GRANT_BLOCKS,
  type CreateSequenceOptions,
  type DomainPreset,
} from '../../settings/model.js';
import { resolveSequenceSettings, sizeDifferences } from '../../settings/resolve.js';
import type { FirstGrant } from '../../store/port.js';
import type { CliContext } from '../context.js';
import { addSizeOptions, sizeSettings } from './alter.js';
import { ALLOW_UNSAFE_FLAG, ALLOW_UNSAFE_HELP } from '../exit-codes.js';
import { settingsJson, settingsLines } from '../format.js';
import { count, span } from '../../quantities.js';
import { parseBigInt, typedDuration } from '../parse.js';
import { incompleteWarning, PREFLIGHT_FIRST } from './preflight.js';

interface SeedOptions {
  readonly domain?: DomainPreset;
  readonly min?: bigint;
  readonly max?: bigint;
  readonly start?: bigint;
  /** False with `--no-first-ranges`; undefined: the default. */
  readonly firstRanges?: readonly string[] | false;
  readonly ifNotExists?: boolean;
  readonly allowUnsafeCluster?: boolean;
}

export function seedCommand(program: Command, ctx: CliContext): void {
  // Both flags set one value (the last given wins): giving both is refused instead.
  const firstRangeFlags = new Set<string>();
  const command = program
    .command('seed')
    .on('option:first-ranges', () => firstRangeFlags.add('--first-ranges'))
    .on('option:no-first-ranges', () => firstRangeFlags.add('--no-first-ranges'))
    .description('create a sequence (needs every DC reachable); refuses an existing one')
    .argument('<sequence>', 'name: letters, digits and _, starting with a letter (at most 48)')
    .addOption(
      new Option('--domain <domain>', `bound of the IDs (default: ${D.domain})`).choices(
        Object.keys(DOMAIN_MAX),
      ),
    )
    .option('--max <n>', 'largest ID (inclusive) instead of a domain', parseBigInt)
    .option('--min <n>', `smallest ID (default: ${D.min})`, parseBigInt)
    .option(
      '--start <n>',
      'lowest ID handed out, e.g. above the current maximum of an IDENTITY column (default: --min)',
      parseBigInt,
    );
  addSizeOptions(command, {
    '--dc-range <n>': `default: ${D.dcRangeSize}, or the domain's size if smaller; ${D.largeDcRangeSize} for adaptive blocks in safe53, int63 and other domains of 2^48 IDs or more`,
    '--block <n>': `default: ${D.blockSize}, or --dc-range if smaller; alone: fixed blocks of this size`,
    '--threshold <share>': `default: ${D.threshold}`,
    '--max-block-size <n>': `default: ${D.maxBlockSize}, or --dc-range if smaller; ${D.largeMaxBlockSize} in domains of 2^48 IDs or more; --block if only --block is given`,
    '--claim-interval <duration>': `default: ${typedDuration(D.claimIntervalMs)}`,
    '--max-dc-range <n>': `default: with --autonomy ${D.maxDcRanges} x --dc-range; else with adaptive blocks ${GRANT_BLOCKS} x --max-block-size, with fixed ones --dc-range; at most an eighth of the domain, never below --dc-range`,
    '--autonomy <duration>': 'default: 0',
    '--shards <n>': `default: with adaptive blocks ${D.adaptiveShards}, or one per ${D.shardRoom} DC ranges the domain holds if fewer; with fixed blocks ${D.shards}`,
  })
    .option(
      '--first-ranges <dcs>',
      'DCs, separated by commas (e.g. dc1,dc2,dc3), granted their first DC range (one per shard) with the sequence, so that a fleet starting at once never crowds the grants partition all DCs share; list every DC that will allocate (default: with adaptive blocks every DC of the keyspace replication, if their ranges fit in an eighth of the domain; with fixed blocks none)',
      (value: string) => value.split(',').map((dc) => dc.trim()), // the library checks each
    )
    .option(
      '--no-first-ranges',
      'grant no DC its first range with the sequence: each DC asks when its first process starts',
    )
    .option(
      '--if-not-exists',
      'if the sequence exists with the IDs asked (--domain, --min, --max, --start), leave it unchanged and exit 0; other sizes than asked only warn',
    )
    .option(ALLOW_UNSAFE_FLAG, ALLOW_UNSAFE_HELP)
    .addHelpText(
      'after',
      `
${PREFLIGHT_FIRST}

Examples (moving off an IDENTITY column whose maximum is 48213577; grants that follow the
DC's rate; 4 shards per DC and first ranges for two DCs only):
  $ idgen-cass seed orders --domain int32 --start 48213578 --dc-range 1000000
  $ idgen-cass seed events --domain int63 --autonomy 24h
  $ idgen-cass seed orders --shards 4 --first-ranges dc1,dc2`,
    )
    .action(async (sequence: string, options: SeedOptions, command: Command) => {
      if (firstRangeFlags.size > 1) {
        command.error(
          "option '--first-ranges <dcs>' cannot be used with option '--no-first-ranges'",
        );
      }
      const create: CreateSequenceOptions = {
        domain: options.domain,
        min: options.min,
        max: options.max,
        start: options.start,
        ...sizeSettings(command.opts()),
        firstRanges: options.firstRanges === false ? [] : options.firstRanges,
      };
      // Bad input is refused before any connection.
      const asked = resolveSequenceSettings(sequence, create);
      resolveFirstGrants(asked, create.firstRanges);
      if (options.allowUnsafeCluster !== true) {
        const report = await (await ctx.admin()).preflight();
        if (report.verdict === 'unsafe') {
          throw new UnsafeClusterError(report.problems, ALLOW_UNSAFE_FLAG);
        }
        if (report.verdict === 'incomplete') ctx.warn(incompleteWarning(report));
      }
      const ids = await ctx.idGen();
      // An existing sequence's settings come from the create's SERIAL reads, never a local one.
      const {
        settings,
        firstGrants: granted,
        created,
      } = await ids.createSequenceGranting(sequence, {
        ...create,
        ifNotExists: options.ifNotExists === true,
      });
      if (created !== true) {
        const sizes = sizeDifferences(create, asked, settings);
        if (sizes.length > 0) {
          ctx.warn(
            `Sequence "${sequence}" exists with other sizes than asked: ${sizes.join(', ')}; left unchanged. Change them with "idgen-cass alter ${sequence}".`,
          );
        }
      }
      const json = {
        created: created ?? null,
        settings: settingsJson(settings),
        firstRanges: granted.map(({ grantee, grant }) => ({
          grantee,
          min: grant.min,
          max: grant.max,
        })),
      };
      await ctx.result(json, () => [
        created === true
          ? `Created sequence "${sequence}".`
          : created === false
            ? `Sequence "${sequence}" already exists in keyspace "${ids.keyspace}"; left unchanged (--if-not-exists).`
            : `Sequence "${sequence}" exists in keyspace "${ids.keyspace}", but whether this seed created it cannot be told: ${CREATOR_UNKNOWN}. Left as it is (--if-not-exists).`,
        ...settingsLines(settings),
        ...(granted.length === 0 ? [] : [firstRangesLine(granted)]),
      ]);
    });
}

/** What `seed` granted: `First DC ranges granted to dc1, dc2: 4 of 100 IDs…`. */
function firstRangesLine(granted: readonly FirstGrant[]): string {
  const dcs = [...new Set(granted.map(({ grantee }) => dcOfGrantee(grantee)))];
  const first = granted[0]!.grant;
  const last = granted.at(-1)!.grant;
  const size = first.max - first.min + 1n;
  return `First DC ranges granted to ${dcs.join(', ')}: ${count(granted.length)} of ${count(size)} IDs (one per shard), ${span(first.min, last.max)}.`;
}
