/** `idgen-cass check`: verify the stored rows against the protocol's invariants. */

import type { Command } from 'commander';

import type { Violation } from '../../admin.js';
import { IdGenError } from '../../errors.js';
import type { CliContext } from '../context.js';

export function checkCommand(program: Command, ctx: CliContext): void {
  program
    .command('check')
    .description(
      "verify a sequence's rows (every sequence's without an argument); exit code 4 on violations",
    )
    .argument('[sequence]', 'the sequence (default: every sequence)')
    .addHelpText(
      'after',
      `
Checked: grants disjoint across all DCs, inside [start, max] and at or below GLOBAL last_integer;
each DC's grants numbered 1, 2, 3…; each DC state's reserved and preloaded ranges equal to the
grants they name, last_integer within the reserved range, installed_grant at most the latest
grant and at most one grant waiting to be installed. Reads only the local DC (LOCAL_ONE); a read
that shows violations is confirmed by a second one.

Example:
  $ idgen-cass check
  orders  ok  (grants: dc1 #1-#3, dc2 #1-#2, dc3 #1)
  every invariant holds in 1 sequence`,
    )
    .action(async (sequence: string | undefined) => {
      const admin = await ctx.admin();
      const names =
        sequence === undefined
          ? (await admin.listSequences()).map((s) => s.name)
          : [(await admin.readSequence(sequence)).name];
      const results: { name: string; grants: string; violations: readonly Violation[] }[] = [];
      for (const name of names) {
        const { violations, snapshot } = await admin.check(name);
        const grants = [...snapshot.grants]
          .map(([dc, list]) =>
            list.length === 1 ? `${dc} #1` : `${dc} #1-#${list.at(-1)?.number ?? 0}`,
          )
          .join(', ');
        results.push({ name, grants: grants === '' ? 'none yet' : grants, violations });
      }
      const broken = results.filter((r) => r.violations.length > 0);
      const total = broken.reduce((sum, r) => sum + r.violations.length, 0);

      if (ctx.json) {
        await ctx.printJson({
          ok: total === 0,
          sequences: results.map((r) => ({
            name: r.name,
            ok: r.violations.length === 0,
            violations: r.violations.map(({ kind, dc, message }) => ({ kind, dc, message })),
          })),
        });
      } else {
        const width = Math.max(0, ...results.map((r) => r.name.length));
        const lines: string[] = [];
        for (const r of results) {
          if (r.violations.length === 0) {
            lines.push(`${r.name.padEnd(width)}  ok  (grants: ${r.grants})`);
            continue;
          }
          lines.push(`${r.name.padEnd(width)}  ${r.violations.length} VIOLATED`);
          const prefix = `${r.name}: `; // already in the line above
          for (const v of r.violations) {
            const detail = v.message.startsWith(prefix)
              ? v.message.slice(prefix.length)
              : v.message;
            lines.push(`  ${v.kind}: ${detail}`);
          }
        }
        const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
        lines.push(
          names.length === 0
            ? `no sequences in keyspace "${admin.keyspace}"`
            : total === 0
              ? `every invariant holds in ${plural(names.length, 'sequence')}`
              : `${plural(total, 'violation')} in ${broken.length} of ${plural(names.length, 'sequence')}`,
        );
        await ctx.print(lines);
      }
      if (total > 0) {
        throw new IdGenError(
          'IDGEN_INVARIANT_BROKEN',
          `check found ${total} violation${total === 1 ? '' : 's'} in ${broken.map((r) => `"${r.name}"`).join(', ')} (listed on stdout); read docs/design.md ("Why no ID is handed out twice") before allocating from these rows again.`,
        );
      }
    });
}
