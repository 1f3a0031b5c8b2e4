import { describe, expect, it } from 'vitest';

import {
  drawnWhileInForce,
  faultsInForce,
  idleWhileNotHit,
  type FaultInForce,
  type ProcessProgress,
} from '../../scripts/torture/fault-progress.js';
import { LATE, type TimelineEntry } from '../../scripts/torture/nemesis.js';

const dcOfNode = { 'dc1-2': 'dc1', 'dc2-1': 'dc2', 'dc3-3': 'dc3' };
const entry = (at: number, action: string, target: string, result: string): TimelineEntry => ({
  at,
  action,
  target,
  result,
});

describe('torture: the cluster faults in force, from the timeline', () => {
  // As the nemesis records them (campaign 1000309's, shortened): skipped faults, process faults,
  // a node kill's restart, a DC partition still in force when the window ends.
  const window = { from: 20.4, to: 200.4 };
  const timeline = [
    entry(26.7, 'pause-node', 'dc1-2', 'ok, for 3072 ms'),
    entry(35.4, 'partition-dc', '-', 'skipped: undo of pause of dc1-2 still in force'),
    entry(35.4, 'undo', 'pause of dc1-2', 'ok'),
    entry(46.7, 'start-process', 'dc3', 'ok'),
    entry(87.3, 'kill-node', 'dc3-3', 'ok, restart after 1007 ms'),
    entry(96.1, 'kill-process', 'process 16 (dc3, paced)', 'ok, raw SIGKILL'),
    entry(112.3, 'kill-node', 'dc3-3', 'restarted'),
    entry(112.3, 'undo', 'restart of dc3-3', 'ok'),
    entry(120.0, 'partition-node', 'dc2-1', 'ok, for 5000 ms'),
    entry(130.5, 'undo', 'partition of dc2-1', 'failed: iptables exited 1'),
    entry(150.2, 'kill-dc', 'dc2', 'ok: dc2-1, dc2-2, dc2-3 killed at once, restart after 2000 ms'),
    entry(190.0, 'undo', 'restart of dc2', 'ok'),
    entry(195.0, 'partition-dc', 'dc3', 'ok, for 9000 ms'),
    entry(204.6, 'undo', 'partition of dc3', 'ok'),
    entry(205.0, 'partition-node', 'dc1-2', `${LATE}ok, for 4000 ms`),
    entry(210.0, 'undo', 'partition of dc1-2', 'ok'),
  ];

  it('takes each from its ok entry to its undo, or the window end; a late one counts as none', () => {
    expect(faultsInForce(timeline, window, dcOfNode)).toEqual([
      { kind: 'pause-node', target: 'dc1-2', from: 26.7, to: 35.4, undone: true, hit: ['dc1'] },
      { kind: 'kill-node', target: 'dc3-3', from: 87.3, to: 112.3, undone: true, hit: ['dc3'] },
      // Its undo failed: in force, as far as the timeline tells, to the end of the window.
      {
        kind: 'partition-node',
        target: 'dc2-1',
        from: 120,
        to: 200.4,
        undone: false,
        hit: ['dc2'],
      },
      { kind: 'kill-dc', target: 'dc2', from: 150.2, to: 190, undone: true, hit: ['dc2'] },
      // Undone after the window.
      { kind: 'partition-dc', target: 'dc3', from: 195, to: 200.4, undone: false, hit: ['dc3'] },
    ]);
  });

  it('takes a partition from when its rules went in, where its ok entry came once the cut showed', () => {
    const shown = {
      ...entry(60.5, 'partition-dc', 'dc1', 'ok, for 9000 ms (its rules in place 7.2 s before)'),
      effectiveAt: 53.3,
    };
    const undone = entry(69.6, 'undo', 'partition of dc1', 'ok');
    expect(faultsInForce([shown, undone], window, dcOfNode)).toEqual([
      { kind: 'partition-dc', target: 'dc1', from: 53.3, to: 69.6, undone: true, hit: ['dc1'] },
    ]);
  });
});

describe('torture: the IDs each DC drew while a fault was in force', () => {
  const fault = (from: number, to: number, hit = ['dc1']): FaultInForce => ({
    kind: 'partition-dc',
    target: 'dc1',
    from,
    to,
    undone: true,
    hit,
  });
  const process = (
    dc: string,
    from: number,
    to: number | undefined,
    counts: Record<number, number>,
  ): ProcessProgress => ({
    dc,
    from,
    to,
    progress: new Map(Object.entries(counts).map(([s, n]) => [Number(s), n])),
  });

  it('counts only the whole seconds inside, and the processes alive throughout', () => {
    // Seconds 9 and 13 are partly outside [9.5, 13.2]: whole seconds 10, 11 and 12 count.
    const counts = { 9: 1_000, 10: 10, 11: 20, 12: 30, 13: 2_000 };
    const processes = [
      process('dc1', 0, undefined, counts),
      process('dc2', 0, 50, counts),
      process('dc2', 5, 12, { 10: 5, 11: 5 }), // killed inside: its IDs count, it is not alive
      process('dc2', 11, undefined, { 11: 7, 12: 8 }), // started inside
      process('dc3', 0, 9, { 5: 100 }), // ended before
    ];
    const [drawn] = drawnWhileInForce([fault(9.5, 13.2)], ['dc1', 'dc2', 'dc3'], processes);
    expect(drawn).toMatchObject({
      seconds: { first: 10, end: 13 },
      byDc: {
        dc1: { ids: 60, processes: 1 },
        dc2: { ids: 60 + 10 + 15, processes: 1 },
        dc3: { ids: 0, processes: 0 },
      },
    });
  });

  it('counts no second of a fault shorter than one whole second', () => {
    const processes = [process('dc1', 0, undefined, { 10: 5, 11: 5 })];
    const [drawn] = drawnWhileInForce([fault(10.2, 11.8)], ['dc1'], processes);
    expect(drawn).toMatchObject({ seconds: { first: 11, end: 11 }, byDc: { dc1: { ids: 0 } } });
  });

  it('names a DC not hit that drew nothing through a fault of 5 s or more, with processes running', () => {
    const processes = [
      process('dc1', 0, undefined, { 45: 3 }), // hit by the first two: drawing nothing is no news
      process('dc2', 0, undefined, {}), // hit by the third
      process('dc3', 0, undefined, { 20: 1, 50: 2 }),
    ];
    const dcs = ['dc1', 'dc2', 'dc3', 'dc4']; // dc4 has no process
    const drawn = drawnWhileInForce(
      [fault(16.7, 21.7), fault(30.0, 34.9), fault(40.0, 60.0, ['dc2'])],
      dcs,
      processes,
    );
    expect(idleWhileNotHit(drawn)).toEqual([
      'dc2 (not hit) recorded no ID in the 4 whole seconds of partition-dc dc1 (16.7 s to 21.7 s), 1 of its processes alive throughout',
    ]);
    // Under 5 s, the same DC drawing nothing is not named.
    expect(idleWhileNotHit(drawn.slice(1, 2))).toEqual([]);
  });
});
