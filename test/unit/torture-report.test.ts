import { describe, expect, it } from 'vitest';

import { firstIdIn } from '../../scripts/torture/fleet.js';
import { firstBlocksOf, killsOf } from '../../scripts/torture/report.js';

describe('torture report: where first blocks came from', () => {
  it('reads the first-ID line of a worker, and none from a line cut short by a kill', () => {
    const ready = '{"event":"ready","pid":7}';
    const first = '{"event":"first-id","shard":"dc2/3","shardMoves":1}';
    expect(firstIdIn(`${ready}\n${first}\n`)).toEqual({
      event: 'first-id',
      shard: 'dc2/3',
      shardMoves: 1,
    });
    expect(firstIdIn(`${ready}\n{"event":"first-id","shard":"dc2`)).toBeUndefined();
    expect(firstIdIn(`${ready}\n`)).toBeUndefined();
  });

  it('counts incarnations by shard and those that moved, leaving out those that drew nothing', () => {
    const at = (shard: string, shardMoves: number) => ({
      firstId: { event: 'first-id' as const, shard, shardMoves },
    });
    expect(
      firstBlocksOf([at('dc1', 0), at('dc1/2', 2), at('dc1/2', 0), { firstId: undefined }]),
    ).toEqual({ byShard: { dc1: 1, 'dc1/2': 2 }, moved: 1, moves: 2 });
  });

  it("counts the nemesis's kills by how, not those of the liveness check or of a hung stop", () => {
    const i = (killed: 'flushed' | 'raw' | 'flush-timed-out' | undefined, more = {}) => ({
      killed,
      liveness: false,
      hungOnStop: false,
      ...more,
    });
    expect(
      killsOf([
        i('flushed'),
        i('flushed'),
        i('raw'),
        i('flush-timed-out'),
        i(undefined),
        i('flushed', { liveness: true }),
        i('raw', { hungOnStop: true }),
      ]),
    ).toEqual({ flushed: 2, raw: 1, 'flush-timed-out': 1 });
  });
});
