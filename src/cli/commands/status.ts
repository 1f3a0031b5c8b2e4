/** `idgen-cass status`: how each sequence stands in every DC, as seen from the local DC. */
import { Option, type Command } from 'commander';

import { ADMIN_DEFAULTS } from '../../admin/admin.js';
import type { StatusReport } from '../../admin/status.js';
import { InvalidOptionError } from '../../errors.js';
import { sleep } from '../../timers.js';
import type { CliContext } from '../context.js';
import { stopSignal } from './serve.js';
import { durationParser, timerParser, typedDuration } from '../parse.js';
import { nodeSafetyWarnings, renderStatus, statusJson, statusOutcome } from '../status-view.js';

/** Durations in milliseconds, but `failIfRunwayBelow` in seconds. */
interface StatusOptions {
  readonly watch?: number;
  readonly sample: number;
  readonly serialTimeout: number;
  readonly failIfRunwayBelow?: number;
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
        .argParser(timerParser('sample', 'no rates'))
        .default(ADMIN_DEFAULTS.sampleMs, typedDuration(ADMIN_DEFAULTS.sampleMs)),
    )
    .addOption(
      new Option(
        '--watch [duration]',
        'refresh every so often (e.g. 500ms, 10s) until Ctrl-C; rates from refresh to refresh; with --json one document per line',
      )
        .argParser(timerParser('watch'))
        .preset(typedDuration(DEFAULT_WATCH_MS)),
    )
    .addOption(
      new Option(
        '--serial-timeout <duration>',
        'how long the SERIAL probe may take before SERIAL counts as unreachable, e.g. 3s',
      )
        .argParser(timerParser('serialTimeout'))
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
Reads only the local DC (LOCAL_QUORUM), so it works inside a partitioned DC; the SERIAL probe
says whether new DC ranges can be granted from here. Unsafe settings of the local DC's nodes are
a warning on stderr ("nodeSafety" in --json); "idgen-cass preflight" checks every DC. Runway:
how long a DC's IDs last at its rate without a new grant. * marks the local DC. A DC's row folds
its shards (runway the shortest shard's); --shards and --json give every shard.

For scripts, status prints everything, then exits 13 when SERIAL is unreachable from here, and
14 when a DC's runway is below --fail-if-runway-below (14 when both hold; a DC without a range
is not judged). --watch ends with 0 on Ctrl-C. Rates move by whole blocks: in scripts, sample
over several block claims.

Example:
  $ idgen-cass status orders
  $ idgen-cass status --sample 60s --fail-if-runway-below 30m > /dev/null || alert "status exited $?"`,
    )
    .action(async (sequence: string | undefined, options: StatusOptions) => {
      if (options.failIfRunwayBelow !== undefined) {
        // Runways need rates, and a watch never ends on its own.
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
      if (options.watch === undefined) {
        const report = await admin.status(base);
        warn(ctx, report);
        await show(ctx, report, options.shards === true, false);
        const outcome = statusOutcome(report, options.failIfRunwayBelow);
        if (outcome !== undefined) throw outcome;
        return;
      }

      const stop = new AbortController();
      const signals = stopSignal();
      void signals.received.then(() => stop.abort());
      try {
        let last: StatusReport | undefined;
        while (!stop.signal.aborted) {
          const previous = last;
          last = await admin.status({ ...base, since: previous, signal: stop.signal });
          if (previous === undefined) warn(ctx, last);
          await show(ctx, last, options.shards === true, true);
          if (ctx.stdoutClosed) break; // `| head`: ends as Ctrl-C does
          await sleep(options.watch, stop.signal);
        }
      } catch (error) {
        if (!stop.signal.aborted) throw error; // Ctrl-C ends a watch normally
      } finally {
        signals.release();
      }
    });
}

function warn(ctx: CliContext, report: StatusReport): void {
  for (const line of nodeSafetyWarnings(report)) ctx.warn(line);
}

async function show(
  ctx: CliContext,
  report: StatusReport,
  perShard: boolean,
  watching: boolean,
): Promise<void> {
  if (ctx.json) return ctx.printJson(statusJson(report), watching ? 0 : 2);
  const clear = watching && ctx.interactive ? '\x1b[2J\x1b[H' : '';
  const separator = watching && !ctx.interactive ? [''] : [];
  const lines = renderStatus(report, perShard);
  await ctx.print([...separator, `${clear}${lines[0] ?? ''}`, ...lines.slice(1)]);
}
