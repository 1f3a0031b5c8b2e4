/** `idgen-cass seed`: create a sequence. */

import { Option, type Command } from 'commander';

import { CREATOR_UNKNOWN, UnsafeClusterError } from '../../errors.js';
import { dcOfGrantee } from '../../names.js';
import { SEQUENCE_DEFAULTS } from '../../settings/defaults.js';
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
import { sizeSettings, type SizeFlags } from './alter.js';
import { ALLOW_UNSAFE_FLAG } from '../exit-codes.js';
import { count, settingsJson, settingsLines, span } from '../format.js';
import {
  parseAutonomy,
  parseBigInt,
  parseClaimInterval,
  parseDecimal,
  parseFirstRanges,
  parseInteger,
  typedDuration,
} from '../parse.js';
import { incompleteWarning } from '../preflight-view.js';

interface SeedOptions extends SizeFlags {
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
  program
    .command('seed')
    .on('option:first-ranges', () => firstRangeFlags.add('--first-ranges'))
    .on('option:no-first-ranges', () => firstRangeFlags.add('--no-first-ranges'))
    .description('create a sequence (needs every DC reachable); refuses an existing one')
    .argument('<sequence>', 'name: letters, digits and _, starting with a letter (at most 48)')
    .addOption(
      new Option(
        '--domain <domain>',
        `bound of the IDs (default: ${SEQUENCE_DEFAULTS.domain})`,
      ).choices(Object.keys(DOMAIN_MAX)),
    )
    .option('--max <n>', 'largest ID (inclusive) instead of a domain', parseBigInt)
    .option('--min <n>', `smallest ID (default: ${SEQUENCE_DEFAULTS.min})`, parseBigInt)
    .option(
      '--start <n>',
      'lowest ID handed out, e.g. above the current maximum of an IDENTITY column (default: --min)',
      parseBigInt,
    )
    .option(
      '--dc-range <n>',
      `IDs one grant gives a DC (default: ${SEQUENCE_DEFAULTS.dcRangeSize}, or the domain's size if smaller; ${SEQUENCE_DEFAULTS.largeDcRangeSize} for adaptive blocks in safe53, int63 and other domains of 2^48 IDs or more)`,
      parseBigInt,
    )
    .option(
      '--block <n>',
      `the least IDs one process claims at a time (default: ${SEQUENCE_DEFAULTS.blockSize}, or --dc-range if smaller); alone: fixed blocks of this size`,
      parseInteger,
    )
    .option(
      '--max-block-size <n>',
      `the largest block; between --block and it, each process sizes its blocks from its own rate (default: ${SEQUENCE_DEFAULTS.maxBlockSize}, or --dc-range if smaller; ${SEQUENCE_DEFAULTS.largeMaxBlockSize} in domains of 2^48 IDs or more; --block if only --block is given)`,
      parseInteger,
    )
    .option(
      '--claim-interval <duration>',
      `time between one process claims that adaptive blocks aim for, e.g. 2s or 500ms (default: ${typedDuration(SEQUENCE_DEFAULTS.claimIntervalMs)})`,
      parseClaimInterval,
    )
    .option(
      '--autonomy <duration>',
      'size each grant from the DC rate so that the DC holds this long a partition, e.g. 24h (default: 0, fixed DC ranges of --dc-range)',
      parseAutonomy,
    )
    .option(
      '--max-dc-range <n>',
      `the largest grant (default: with --autonomy ${SEQUENCE_DEFAULTS.maxDcRanges} x --dc-range; else with adaptive blocks ${GRANT_BLOCKS} x --max-block-size, with fixed ones --dc-range; at most an eighth of the domain, never below --dc-range)`,
      parseBigInt,
    )
    .option(
      '--shards <n>',
      `state partitions per DC that its processes' claims spread over, 1 to 256; each holds DC ranges of its own (default: with adaptive blocks ${SEQUENCE_DEFAULTS.adaptiveShards}, or one per ${SEQUENCE_DEFAULTS.shardRoom} DC ranges the domain holds if fewer; with fixed blocks ${SEQUENCE_DEFAULTS.shards})`,
      parseInteger,
    )
    .option(
      '--first-ranges <dcs>',
      'DCs, separated by commas (e.g. dc1,dc2,dc3), granted their first DC range (one per shard) with the sequence, so that a fleet starting at once never crowds the grants partition all DCs share; list every DC that will allocate (default: with adaptive blocks every DC of the keyspace replication, if their ranges fit in an eighth of the domain; with fixed blocks none)',
      parseFirstRanges,
    )
    .option(
      '--no-first-ranges',
      'grant no DC its first range with the sequence: each DC asks when its first process starts',
    )
    .option(
      '--threshold <share>',
      `share of a block or DC range used before the next is loaded (default: ${SEQUENCE_DEFAULTS.threshold})`,
      parseDecimal,
    )
    .option(
      '--if-not-exists',
      'if the sequence exists with the IDs asked (--domain, --min, --max, --start), leave it unchanged and exit 0; other sizes than asked only warn',
    )
    .option(
      ALLOW_UNSAFE_FLAG,
      'create it even if a node runs settings under which IDs could be handed out twice (test clusters only)',
    )
    .addHelpText(
      'after',
      `
First checks every node of every DC as "idgen-cass preflight" does, and refuses (exit 9) when
one runs an unsafe setting such as commitlog_sync: periodic, unless ${ALLOW_UNSAFE_FLAG} is given.

Example (a team moving off an IDENTITY column whose maximum is 48213577; a keyspace replicated
to dc1, dc2 and dc3):
  $ idgen-cass seed orders --domain int32 --start 48213578 --dc-range 1000000
  Created sequence "orders".
  sequence   orders
  domain     int32 [1, 2147483647]
  start      48213578
  DC range   1,000,000 IDs
  block      1,000 to 100,000 IDs, sized for a claim every 2 s
  threshold  0.5
  shards     2 per DC
  First DC ranges granted to dc1, dc2, dc3: 6 of 1,000,000 IDs (one per shard), [48213578, 54213577].

With an autonomy target, grants follow the DC's measured rate:
  $ idgen-cass seed events --domain int63 --autonomy 24h

With 4 shards per DC, and first ranges for two DCs only:
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
        ...sizeSettings(options),
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
      // With --if-not-exists, the settings an existing sequence has come from the create's own
      // reads at SERIAL: a local read could miss a sequence committed in other DCs only.
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
      // `granted`: the first ranges this command granted (none if the sequence existed).
      if (ctx.json) {
        return ctx.printJson({
          created: created ?? null,
          settings: settingsJson(settings),
          firstRanges: granted.map(({ grantee, grant }) => ({
            grantee,
            min: grant.min,
            max: grant.max,
          })),
        });
      }
      await ctx.print([
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
