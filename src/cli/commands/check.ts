/** `idgen-cass check`: verify the stored rows against the protocol's invariants. */
import type { Command } from 'commander';
import type { CheckResult } from '../../admin/admin.js';
import { describeFacts, describeUnverified, type Violation } from '../../admin/check.js';
import { IdGenError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { CommandOutcome } from '../exit-codes.js';
import { plural } from '../format.js';

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
      await ctx.result(checkJson(results), () => renderCheck(results, admin.keyspace));
      const outcome = checkOutcome(results);
      if (outcome !== undefined) throw outcome;
    });
}

/** One sequence's check; `grantsLine`: `dc1 #1-#3, dc2 #1`, or `none yet`. */
export interface SequenceCheck extends CheckResult {
  readonly name: string;
  readonly grantsLine: string;
}

/** One string per line, ending with a summary. */
export function renderCheck(results: readonly SequenceCheck[], keyspace: string): string[] {
  const width = Math.max(0, ...results.map((r) => r.name.length));
  const lines: string[] = [];
  for (const r of results) {
    const name = r.name.padEnd(width);
    if (r.verdict === 'ok') {
      lines.push(`${name}  ok  (grants: ${r.grantsLine})`);
      continue;
    }
    lines.push(
      r.verdict === 'violated'
        ? `${name}  ${r.violations.filter((v) => v.confirmed).length} VIOLATED`
        : `${name}  INCOMPLETE  (grants: ${r.grantsLine})`,
    );
    for (const v of r.violations) lines.push(`  ${violationLine(r.name, v)}`);
    for (const line of describeUnverified(r.unverified)) lines.push(`  unverified: ${line}`);
  }
  const { violated, incomplete, confirmed } = tally(results);
  const count = results.length;
  lines.push(
    count === 0
      ? `no sequences in keyspace "${keyspace}"`
      : violated.length > 0
        ? `${plural(confirmed, 'violation')} in ${violated.length} of ${plural(count, 'sequence')}`
        : incomplete.length > 0
          ? `no violation confirmed; ${incomplete.length} of ${plural(count, 'sequence')} could not be read consistently`
          : `every invariant holds in ${plural(count, 'sequence')}`,
  );
  return lines;
}

/** `kind: detail`, without the sequence's name (the line above names it). */
function violationLine(sequence: string, v: Violation): string {
  const prefix = `${sequence}: `;
  const detail = v.message.startsWith(prefix) ? v.message.slice(prefix.length) : v.message;
  if (v.confirmed) return `${v.kind}: ${detail}`;
  return `unconfirmed ${v.kind}: ${detail} (rests on ${describeFacts(v.unverified)}, read locally)`;
}

export function checkJson(results: readonly SequenceCheck[]): Record<string, unknown> {
  const { violated, incomplete } = tally(results);
  const verdict = violated.length > 0 ? 'violated' : incomplete.length > 0 ? 'incomplete' : 'ok';
  return {
    ok: verdict === 'ok',
    verdict,
    sequences: results.map((r) => ({
      name: r.name,
      ok: r.verdict === 'ok',
      verdict: r.verdict,
      violations: r.violations.map((v) => ({
        kind: v.kind,
        dc: v.dc,
        message: v.message,
        confirmed: v.confirmed,
      })),
      unverified: r.unverified.map((fact) => ({
        fact: fact.fact,
        dc: fact.dc ?? null,
        read: fact.read ?? null,
        reason: fact.reason,
      })),
    })),
  };
}

/** Exit 4 on a confirmed violation, else 11 when facts could not be read consistently. */
export function checkOutcome(
  results: readonly SequenceCheck[],
): IdGenError | CommandOutcome | undefined {
  const { violated, incomplete, confirmed } = tally(results);
  if (violated.length > 0) {
    return new IdGenError(
      'IDGEN_INVARIANT_BROKEN',
      `check found ${plural(confirmed, 'violation')} in ${violated.map((r) => `"${r.name}"`).join(', ')} (listed on stdout); read docs/design.md ("Why no ID is handed out twice") before allocating from these rows again.`,
    );
  }
  if (incomplete.length > 0) {
    const why = incomplete.flatMap((r) =>
      describeUnverified(r.unverified).map((line) => `"${r.name}": ${line}`),
    );
    return new CommandOutcome(
      'IDGEN_CHECK_INCOMPLETE',
      `check could not read every fact consistently, so it confirms no violation: ${why.join('; ')}. Run it again once every DC is reachable (or from a DC that reaches SERIAL).`,
    );
  }
  return undefined;
}

function tally(results: readonly SequenceCheck[]) {
  const violated = results.filter((r) => r.verdict === 'violated');
  return {
    violated,
    incomplete: results.filter((r) => r.verdict === 'incomplete'),
    confirmed: violated.reduce((sum, r) => sum + r.violations.filter((v) => v.confirmed).length, 0),
  };
}
