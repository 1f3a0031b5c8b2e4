/** `idgen-cass retire-ranges`: spend a DC's ranges after its rows went back (allocator/retire.ts). */
import type { Command } from 'commander';

import type { RetiredState } from '../../allocator/retire.js';
import type { CliContext } from '../context.js';
import { table } from '../format.js';
import { count, span } from '../../quantities.js';

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
process of that DC that serves the sequence. Needs SERIAL and the DC's LOCAL_SERIAL. The IDs the
DC still held become a gap; the other DCs are not touched. Safe to run again.

Example:
  $ idgen-cass retire-ranges orders`,
    )
    .action(async (sequence: string) => {
      const ids = await ctx.idGen();
      const states = await ids.retireDcRanges(sequence);
      const json = {
        sequence,
        dc: ids.dc,
        states: states.map((s) => ({
          grantee: s.grantee,
          grant: s.grant ?? null,
          outcome: s.outcome,
          retired: s.retired,
          gap: s.gap,
        })),
      };
      await ctx.result(json, () => [headline(sequence, ids.dc, states), ...table(states.map(row))]);
    });
}

/** What the command did to the DC, as far as the rows show. */
function headline(sequence: string, dc: string, states: readonly RetiredState[]): string {
  const any = (outcome: RetiredState['outcome']) => states.some((s) => s.outcome === outcome);
  const spent = 'its next claim asks SERIAL for a new grant';
  if (any('retired')) return `Retired the ranges of "${sequence}" in ${dc}: ${spent}.`;
  if (any('spent-unknown')) {
    return `The ranges of "${sequence}" in ${dc} are spent: ${spent}. Another writer's write is in the rows; whether this command's write was applied before it cannot be told.`;
  }
  if (any('spent-by-another')) {
    return `The ranges of "${sequence}" in ${dc} were spent by another writer while this ran: ${spent}. This command retired nothing.`;
  }
  if (states.every((s) => s.outcome === 'no-grant')) {
    return `Nothing to retire for "${sequence}" in ${dc}: it has no grant yet, so it holds no IDs; nothing was written.`;
  }
  return `Nothing to retire for "${sequence}" in ${dc}: its ranges were spent already (written again as they were).`;
}

function row(s: RetiredState): string[] {
  const grant = s.grant && `grant ${s.grant.number} ${span(s.grant.min, s.grant.max)}`;
  switch (s.outcome) {
    case 'no-grant':
      return [s.grantee, 'no grant yet', 'nothing to retire'];
    case 'already-spent':
      return [s.grantee, grant!, 'already spent'];
    case 'retired':
      return [s.grantee, grant!, 'retired', `${count(s.gap)} IDs left as a gap`];
    case 'spent-by-another':
      return [s.grantee, grant!, 'spent by another writer meanwhile'];
    case 'spent-unknown':
      return [
        s.grantee,
        grant!,
        'spent by another writer',
        "this command's write may have been applied before (unknown)",
      ];
  }
}
