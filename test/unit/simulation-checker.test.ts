/**
 * The simulation's checker (simulation/checker.ts) on histories written by hand: each test
 * holds one finding a simulated run could only show by chance.
 */
import { describe, expect, it } from 'vitest';

import type { CheckSnapshot } from '../../src/admin/check.js';
import { claim, giveBack, installGrant } from '../../src/allocator/dc-state.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { DcState, Grant } from '../../src/store/port.js';
import { checkHistory, type FindingKind } from './simulation/checker.js';
import type { HandleHistory, History, RowsAt, StateCall } from './simulation/history.js';

const SEQUENCE = 'sim';
const GRANT_1: Grant = { number: 1, min: 0n, max: 9n };
const GRANT_2: Grant = { number: 1, min: 10n, max: 19n };

/** The settings of a sequence of two shards per DC, as the store holds them. */
async function settings(): Promise<CheckSnapshot['settings']> {
  const store = new MemoryStore();
  await new IdGen({ store, dc: 'dc1', keyspace: 'sim' }).createSequence(SEQUENCE, {
    dcRangeSize: 10,
    blockSize: 2,
    shards: 2,
  });
  return (await store.listSequences())[0]!;
}

function claimed(state: DcState, size: bigint, op: string): DcState {
  return claim(state, size, op)!.next;
}

async function rowsAt(step: number, states: ReadonlyMap<string, DcState>): Promise<RowsAt> {
  return {
    step,
    event: step * 10,
    rows: {
      settings: await settings(),
      globalLast: 19n,
      grants: new Map([
        ['dc1/1', [GRANT_1]],
        ['dc1/2', [GRANT_2]],
      ]),
      states,
      readAt: 0,
    },
  };
}

function history(fields: Partial<History> & Pick<History, 'handles' | 'rowLog'>): History {
  return {
    otherErrors: [],
    heldLog: [],
    stateCalls: [],
    rollbackReports: [],
    rollback: undefined,
    repair: undefined,
    fired: {
      pauses: 0,
      aborts: 0,
      drained: 0,
      undelivered: 0,
      rollbacksLogged: 0,
      faultsLanded: {},
      unresolvedTwice: 0,
    },
    shardMoves: { 'lost races': 0, 'no IDs and no SERIAL': 0, 'shard spent': 0 },
    settled: true,
    steps: 0,
    trace: [],
    ...fields,
  };
}

function kinds(of: History): FindingKind[] {
  return checkHistory(of).violations.map((f) => f.kind);
}

describe('the simulation checker', () => {
  it('judges an ID against the state of the shard that claimed it, not only the last one its handle held', async () => {
    // dc1/1 claims [0, 1] for the handle, which then moves to dc1/2 and claims [10, 11]; later
    // dc1/1's state no longer counts 0 and 1 as claimed.
    const first = claimed(installGrant(undefined, GRANT_1, 'a')!, 2n, 'b');
    const second = claimed(installGrant(undefined, GRANT_2, 'c')!, 2n, 'd');
    const forgot = giveBack(first, 0n, 1n, 'e')!.next;
    const moved: HandleHistory = {
      name: 'p0.0/h1',
      dc: 'dc1/2',
      opened: 1,
      bigint: true,
      calls: [{ call: 'take(2)', count: 2, issued: 2, returned: 3, ids: [0n, 1n] }],
      crashed: false,
    };
    const rows = [
      await rowsAt(
        1,
        new Map([
          ['dc1/1', first],
          ['dc1/2', second],
        ]),
      ),
      await rowsAt(
        2,
        new Map([
          ['dc1/1', forgot],
          ['dc1/2', second],
        ]),
      ),
    ];
    expect(kinds(history({ handles: [moved], rowLog: rows }))).toContain('unclaimed');
  });

  it('requires a process that read its rows gone back at LOCAL_SERIAL to report it', async () => {
    const state = claimed(installGrant(undefined, GRANT_1, 'a')!, 2n, 'b');
    const rows = [await rowsAt(1, new Map([['dc1/1', state]]))];
    const call = (
      kind: StateCall['kind'],
      sent: number,
      replied: number,
      shown: StateCall['shown'],
    ): StateCall => ({ process: 'p0.0', grantee: 'dc1/1', kind, sent, replied, shown });
    // Its write of v3 was applied; a read sent after that shows v3 by another op: v3 was lost.
    const calls = [
      call('write', 1, 2, { version: 3, op: 'c' }),
      call('read', 3, 4, { version: 3, op: 'x' }),
    ];
    const run = (fields: Partial<History>) =>
      kinds(history({ handles: [], rowLog: rows, stateCalls: calls, ...fields }));
    expect(run({})).toContain('rollback-unreported');
    const told = { process: 'p0.0', grantee: 'dc1/1', at: 5 };
    expect(run({ rollbackReports: [told] })).not.toContain('rollback-unreported');
    // A read sent before the write's reply came proves nothing: it may have run first.
    const early = [call('write', 1, 4, { version: 3, op: 'c' }), call('read', 2, 3, 'none')];
    expect(run({ stateCalls: early })).not.toContain('rollback-unreported');
    // Nor does another process's read.
    const other = [calls[0]!, { ...calls[1]!, process: 'p1.0' }];
    expect(run({ stateCalls: other })).not.toContain('rollback-unreported');
  });
});
