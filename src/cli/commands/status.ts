/** `idgen-cass status`: how each sequence stands in every DC, as seen from the local DC. */

import { Option, type Command } from 'commander';

import { ADMIN_DEFAULTS } from '../../admin/admin.js';
import type { StatusReport } from '../../admin/status.js';
import { InvalidOptionError } from '../../errors.js';
import { sleep } from '../../timers.js';
import type { CliContext } from '../context.js';
import { durationParser, TIMER_MAX_MS, typedDuration } from '../parse.js';
import { statusOutcome } from '../status-outcome.js';
import { nodeSafetyWarnings, renderStatus, statusJson, type StatusView } from '../status-view.js';

interface StatusOptions {
  /** Milliseconds between refreshes; undefined without --watch. */
  readonly watch?: number;
  /** Milliseconds; 0: no rates. */
  readonly sample: number;
  /** Milliseconds. */
  readonly serialTimeout: number;
  /** Seconds. */
  readonly failIfRunwayBelow?: number;
  /** One row per shard rather than per DC. */
  readonly shards?: boolean;
}

const DEFAULT_WATCH_MS = 2_000;

export function statusCommand(program: Command, ctx: CliContext): void {
  program
    .command('status')
    .description(
      'GLOBAL high-water mark, domain used, and per DC ranges, IDs left, rate and runway; SERIAL and hosts as seen from here',
    )
    .argument('[sequence]', 'the sequence (default: every sequence)')
    .addOption(
      new Option(
        '--sample <duration>',
        'window over which rates are measured (two reads of the DC states), e.g. 10s; 0: no rates',
      )
        .argParser(
          durationParser({
            option: 'sample',
            unit: 'ms',
            min: 1,
            max: TIMER_MAX_MS,
            zero: 'no rates',
          }),
        )
        .default(ADMIN_DEFAULTS.sampleMs, typedDuration(ADMIN_DEFAULTS.sampleMs)),
    )
    .addOption(
      new Option(
        '--watch [duration]',
        'refresh every so often (e.g. 500ms, 10s) until Ctrl-C; rates from refresh to refresh; with --json one document per line',
      )
        .argParser(durationParser({ option: 'watch', unit: 'ms', min: 1, max: TIMER_MAX_MS }))
        .preset(typedDuration(DEFAULT_WATCH_MS)),
    )
    .addOption(
      new Option(
        '--serial-timeout <duration>',
        'how long the SERIAL probe may take before SERIAL counts as unreachable, e.g. 3s',
      )
        .argParser(
          durationParser({ option: 'serialTimeout', unit: 'ms', min: 1, max: TIMER_MAX_MS }),
        )
        .default(ADMIN_DEFAULTS.serialTimeoutMs, typedDuration(ADMIN_DEFAULTS.serialTimeoutMs)),
    )
    .addOption(
      new Option(
        '--fail-if-runway-below <duration>',
        'exit 14 when a DC holds IDs for less than this at its rate, e.g. 90s, 30m, 2h, 1d',
      ).argParser(durationParser({ option: 'failIfRunwayBelow', unit: 's', min: 1 })),
    )
    .option(
      '--shards',
      "one row per shard (state partition) of each DC, rather than one row per DC that folds its shards' ranges",
    )
    .addHelpText(
      'after',
      `
Reads only the local DC (LOCAL_QUORUM), so it works from inside a partitioned DC; the SERIAL probe
says whether new DC ranges can be granted from here (on a partition no sequence uses). The local
DC's nodes are asked for their settings: an unsafe one (e.g. commitlog_sync: periodic) is a
warning on stderr and in "nodeSafety" (--json); "idgen-cass preflight" checks every DC.
Runway: how long the IDs a DC holds last at its current rate without a new grant. * marks the
local DC. With several shards per DC, each DC's row folds its shards ("shards": those holding a
grant; IDs left and rates summed; runway the shortest shard's); --shards gives a row per shard,
and --json always gives every shard.

For scripts (cron, monitoring), status prints everything, then exits 13 when SERIAL is
unreachable from here, and 14 when --fail-if-runway-below is given and a DC's runway is below it
(14 when both hold). A DC that holds no range yet is not judged. --watch ends with 0 on Ctrl-C.

Example (processes in dc1 and dc2 drawing):
  $ idgen-cass status orders
  keyspace idgen · seen from dc1 · 2026-11-22T08:57:53.357Z · rates over 2.0 s
  SERIAL   reachable from dc1 (41 ms): new DC ranges can be granted
  hosts    dc1 127.0.0.1:9042 up · dc2 127.0.0.2:9042 up · dc3 127.0.0.3:9042 up (as this client sees them)

  orders  int32 [1, 2147483647] · start 48213578 · DC range 1,000,000 · block 5,000 · threshold 0.5
    GLOBAL last_integer 50213577  domain used [............]  2.3%  2,097,270,070 IDs left to grant  domain lasts 1d 15h at the current rate
    DC    reserved                 preloaded  last_integer  reserved used         IDs left      rate  runway
    dc1*  #1 [48213578, 49213577]  –              48233582  [............]  2.0%   979,995   2,488/s  6m 33s
    dc2   #1 [49213578, 50213577]  –              49294577  [#...........]  8.1%   919,000  12,438/s  1m 13s
    dc3   none yet                 –                     –  –                            0         –       –

  $ idgen-cass status --sample 60s --fail-if-runway-below 30m > /dev/null || alert "status exited $?"

Rates move by whole blocks: in scripts, sample over several block claims (--sample 60s).`,
    )
    .action(async (sequence: string | undefined, options: StatusOptions) => {
      if (options.failIfRunwayBelow !== undefined) {
        // Refused before connecting: runways need rates, and a watch never ends on its own.
        if (options.watch !== undefined) {
          throw new InvalidOptionError(
            'watch',
            typedDuration(options.watch),
            'no --watch with --fail-if-runway-below, which judges one status and exits',
          );
        }
        if (options.sample === 0) {
          throw new InvalidOptionError(
            'sample',
            options.sample,
            'a duration above 0 with --fail-if-runway-below, whose runways need rates measured over it',
          );
        }
      }
      const admin = await ctx.admin();
      const base = {
        sequences: sequence === undefined ? undefined : [sequence],
        sampleMs: options.sample,
        serialTimeoutMs: options.serialTimeout,
      };
      const view = { shards: options.shards === true };
      if (options.watch === undefined) {
        const report = await admin.status(base);
        warn(ctx, report);
        await show(ctx, report, view, false);
        const outcome = statusOutcome(report, options.failIfRunwayBelow);
        if (outcome !== undefined) throw outcome;
        return;
      }

      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        let last: StatusReport | undefined;
        while (!stop.signal.aborted) {
          const previous = last;
          last = await admin.status({ ...base, since: previous, signal: stop.signal });
          if (previous === undefined) warn(ctx, last); // once, not at every refresh
          await show(ctx, last, view, true);
          if (ctx.stdoutClosed) break; // nobody watches any more (`| head`): ends as Ctrl-C does
          await sleep(options.watch, stop.signal);
        }
      } catch (error) {
        if (!stop.signal.aborted) throw error; // Ctrl-C ends a watch normally
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}

/** Unsafe settings on the local DC's nodes: a warning on stderr (and `nodeSafety` in --json). */
function warn(ctx: CliContext, report: StatusReport): void {
  for (const line of nodeSafetyWarnings(report)) ctx.warn(line);
}

async function show(
  ctx: CliContext,
  report: StatusReport,
  view: StatusView,
  watching: boolean,
): Promise<void> {
  if (ctx.json) return ctx.printJson(statusJson(report), watching ? 0 : 2);
  const clear = watching && ctx.interactive ? '\x1b[2J\x1b[H' : '';
  const separator = watching && !ctx.interactive ? [''] : [];
  const lines = renderStatus(report, view);
  await ctx.print([...separator, `${clear}${lines[0] ?? ''}`, ...lines.slice(1)]);
}
