/**
 * `idgen-cass retire-ranges`: after a DC's rows went back, set each of its state partitions to
 * its latest grant, spent, so that its next IDs come from a new grant (allocator/retire.ts).
 */

import type { Command } from 'commander';

import type { RetiredState } from '../../allocator/retire.js';
import type { CliContext } from '../context.js';
import { count, span, table } from '../format.js';

export function retireRangesCommand(program: Command, ctx: CliContext): void {
  program
    .command('retire-ranges')
    .description(
      "after the local DC's rows went back (lost writes, a restore): spend its ranges so its next IDs come from a new grant",
    )
    .argument('<sequence>', 'the sequence')
    .addHelpText(
      'after',
      `
Run it from the DC whose rows went back (its contact points and --dc), after stopping every
process of that DC that serves the sequence. Needs SERIAL (every DC's majority) and the DC's
LOCAL_SERIAL. The IDs the DC still held become a gap; the other DCs are not touched. Safe to run
again: a state partition already spent at its latest grant is left alone.

Example:
  $ idgen-cass retire-ranges orders
  Retired the ranges of "orders" in dc1: its next claim asks SERIAL for a new grant.
  dc1  grant 3 [2200001, 3200000]  retired  73,500 IDs left as a gap`,
    )
    .action(async (sequence: string) => {
      const ids = await ctx.idGen();
      const states = await ids.retireDcRanges(sequence);
      if (ctx.json) {
        return ctx.printJson({
          sequence,
          dc: ids.dc,
          states: states.map((s) => ({
            grantee: s.grantee,
            grant: s.grant ?? null,
            retired: s.retired,
            gap: s.gap,
          })),
        });
      }
      const changed = states.some((s) => s.retired);
      await ctx.print([
        changed
          ? `Retired the ranges of "${sequence}" in ${ids.dc}: its next claim asks SERIAL for a new grant.`
          : `Nothing to retire for "${sequence}" in ${ids.dc}: nothing was written.`,
        ...table(states.map(row)),
      ]);
    });
}

function row(s: RetiredState): string[] {
  if (s.grant === undefined) return [s.grantee, 'no grant yet', 'nothing to retire'];
  const grant = `grant ${s.grant.number} ${span(s.grant.min, s.grant.max)}`;
  if (!s.retired) return [s.grantee, grant, 'already spent'];
  return [s.grantee, grant, 'retired', `${count(s.gap)} IDs left as a gap`];
}
