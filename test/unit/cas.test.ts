/** The one classification of conditional-write outcomes, and the judgements of each write. */
import { describe, expect, it } from 'vitest';

import { runConditionalWrite, type Judgement } from '../../src/allocator/cas.js';
import { judgeStateWrite } from '../../src/allocator/dc-state-row.js';
import { judgeGrant } from '../../src/allocator/dc-grants.js';
import {
  InvalidOptionError,
  InvariantError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../../src/errors.js';
import type { CasOutcome } from '../../src/store/port.js';

const ours = { version: 8, op: 'mine' };

describe('judgeStateWrite', () => {
  it.each<[string, { version: number; op: string } | undefined, Judgement]>([
    ['our op is there', { version: 8, op: 'mine' }, 'ours'],
    ['another write took the version ours was to write', { version: 8, op: 'theirs' }, 'lost'],
    ['the state moved further: ours may be under it', { version: 9, op: 'theirs' }, 'unknown'],
    [
      'the state has not moved: ours may still be in flight',
      { version: 7, op: 'before' },
      'unknown',
    ],
    ['no row', undefined, 'unknown'],
  ])('%s', (_label, found, judgement) => {
    expect(judgeStateWrite(found, ours)).toBe(judgement);
  });
});

describe('judgeGrant', () => {
  const grant = { number: 3, min: 201n, max: 300n };
  it.each<[string, Parameters<typeof judgeGrant>[0], Judgement]>([
    ['grant n with our bounds', { globalLast: 300n, grant }, 'ours'],
    [
      'grant n with other bounds',
      { globalLast: 400n, grant: { ...grant, min: 301n, max: 400n } },
      'lost',
    ],
    [
      'no grant n and GLOBAL moved past our expectation',
      { globalLast: 250n, grant: undefined },
      'lost',
    ],
    [
      'no grant n and GLOBAL unchanged: ours may be in flight',
      { globalLast: 200n, grant: undefined },
      'unknown',
    ],
    ['nothing known', undefined, 'unknown'],
  ])('%s', (_label, found, judgement) => {
    expect(judgeGrant(found, 200n, grant)).toBe(judgement);
  });
});

describe('runConditionalWrite', () => {
  const step = (
    outcome: CasOutcome<string> | Error,
    reread: () => Promise<string | undefined> = async () => 'mine',
  ) => ({
    write: async () => {
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    judge: (found: string | undefined): Judgement =>
      found === 'mine' ? 'ours' : found === 'taken' ? 'lost' : 'unknown',
    reread,
  });

  it('takes applied as applied, without reading', async () => {
    const result = await runConditionalWrite(
      step({ kind: 'applied' }, () => Promise.reject(new Error('no read expected'))),
    );
    expect(result).toMatchObject({ verdict: 'applied', reported: 'applied' });
  });

  it('judges a rejection by the row the round found, not by the report', async () => {
    expect(await runConditionalWrite(step({ kind: 'rejected', found: 'mine' }))).toMatchObject({
      verdict: 'ours',
      reported: 'rejected',
    });
    expect(await runConditionalWrite(step({ kind: 'rejected', found: 'taken' }))).toMatchObject({
      verdict: 'lost',
    });
  });

  it('re-reads after an unknown outcome, and after a throw, which is never "not written"', async () => {
    expect(await runConditionalWrite(step({ kind: 'unknown' }))).toMatchObject({
      verdict: 'ours',
      reported: 'unknown',
    });
    const failure = new StoreUnavailableError('local_serial', 'write', 'Unavailable');
    expect(await runConditionalWrite(step(failure, async () => 'other'))).toMatchObject({
      verdict: 'unknown',
      reported: 'unknown',
      cause: failure,
    });
  });

  it('throws a write refused as invalid (no idgen tables in the keyspace) as it is, without re-reading', async () => {
    // Cassandra refuses such a statement before any Paxos round, so it was never written; taken
    // for unknown, `seed` in a keyspace without the tables said the write "may or may not have
    // been applied" and exited 3 (unreachable) instead of 1 (bad input).
    const refused = new InvalidOptionError(
      'keyspace',
      'nosuch',
      'a keyspace that holds the idgen tables',
    );
    await expect(
      runConditionalWrite(step(refused, () => Promise.reject(new Error('no read expected')))),
    ).rejects.toBe(refused);
  });

  it('stays unknown, with the read error as cause, when the re-read fails', async () => {
    const readError = new StoreUnavailableError('local_serial', 'read', 'timeout');
    const result = await runConditionalWrite(
      step({ kind: 'unknown' }, () => Promise.reject(readError)),
    );
    expect(result).toMatchObject({ verdict: 'unknown', cause: readError, found: undefined });
  });

  it('stops, instead of staying unknown, when the re-read found the rows gone back or broken', async () => {
    for (const verdict of [
      new StateRolledBackError('orders', 'dc1', 'version 2 after version 3'),
      new InvariantError('orders', 'reserved_min above reserved_max'),
    ]) {
      await expect(
        runConditionalWrite(step({ kind: 'unknown' }, () => Promise.reject(verdict))),
      ).rejects.toBe(verdict);
    }
  });
});
