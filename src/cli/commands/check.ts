/** `idgen-cass check`: verify the stored rows against the protocol's invariants. */
import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { checkJson, checkOutcome, renderCheck, type SequenceCheck } from '../check-view.js';

export function checkCommand(program: Command, ctx: CliContext): void {
  program
    .command('check')
    .description(
      "verify a sequence's rows (every sequence's without an argument); exit 4 on violations, 11 if some rows could not be read consistently",
    )
    .argument('[sequence]', 'the sequence (default: every sequence)')
    .addHelpText(
      'after',
      `
Checked: grants disjoint across DCs, inside [start, max] and at or below GLOBAL last_integer,
numbered 1, 2, 3… per DC; each DC state's own invariants and ranges equal to their grants. Reads
the DC states at EACH_QUORUM and the grants at SERIAL; what cannot be read so is read locally and
named unverified, and a violation resting on it is "unconfirmed". Exit 4 (VIOLATED) rests only
on consistent reads; with nothing confirmed but facts unverified, exit 11.

Example:
  $ idgen-cass check
  orders  ok  (grants: dc1 #1-#3, dc2 #1-#2, dc3 #1)`,
    )
    .action(async (sequence: string | undefined) => {
      const admin = await ctx.admin();
      const names =
        sequence === undefined
          ? (await admin.listSequences()).map((s) => s.name)
          : [(await admin.readSequence(sequence)).name];
      const results: SequenceCheck[] = [];
      for (const name of names) {
        const result = await admin.check(name);
        const grants = [...result.snapshot.grants]
          .map(([dc, list]) =>
            list.length === 1 ? `${dc} #1` : `${dc} #1-#${list.at(-1)?.number ?? 0}`,
          )
          .join(', ');
        results.push({ ...result, name, grantsLine: grants === '' ? 'none yet' : grants });
      }
      if (ctx.json) await ctx.printJson(checkJson(results));
      else await ctx.print(renderCheck(results, admin.keyspace));
      const outcome = checkOutcome(results);
      if (outcome !== undefined) throw outcome;
    });
}
