/**
 * The torture nemesis (scripts/torture/nemesis.ts) against a stand-in fleet and cluster: whom
 * its process faults pick, and how it kills.
 */
import { describe, expect, it, vi } from 'vitest';

import type { Fleet, Incarnation } from '../../scripts/torture/fleet.js';
import { FAULT_KINDS, Nemesis, type FaultMix } from '../../scripts/torture/nemesis.js';
import { Random } from '../../scripts/torture/random.js';
import type { IdGen } from '../../src/index.js';

vi.mock('../../scripts/cluster/manager.js', () => ({
  currentTopology: () => ({ dcs: 3, nodesPerDc: 1, paxos: 'v1', commitlog: 'batch' }),
}));

const mixOf = (weights: Partial<FaultMix>): FaultMix =>
  ({ ...Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])), ...weights }) as FaultMix;

type FakeIncarnation = Pick<
  Incarnation,
  'id' | 'dc' | 'mode' | 'ending' | 'stopped' | 'drawing' | 'killed' | 'liveness'
>;

/** What a nemesis did to a stand-in fleet's processes. */
class FakeFleet {
  readonly incarnations: FakeIncarnation[] = [];
  readonly victims: { action: string; drawing: boolean }[] = [];

  start(dc: string, drawing: boolean): void {
    this.incarnations.push({
      ...{ id: this.incarnations.length + 1, dc, mode: 'tight', ending: 'running' },
      ...{ stopped: false, drawing, killed: undefined, liveness: false },
    });
  }

  running(): FakeIncarnation[] {
    return this.incarnations.filter((i) => i.ending === 'running');
  }

  kill(i: FakeIncarnation, how: 'flush' | 'raw' = 'flush'): void {
    this.victims.push({ action: `kill ${how}`, drawing: i.drawing });
    i.ending = 'killed';
    i.killed = how === 'raw' ? 'raw' : 'flushed';
  }

  closeWhileDrawing(i: FakeIncarnation): void {
    this.victims.push({ action: 'close', drawing: i.drawing });
    i.ending = 'closed-while-drawing';
  }

  pause(i: FakeIncarnation): void {
    this.victims.push({ action: 'pause', drawing: i.drawing });
    i.stopped = true;
  }

  resume(i: FakeIncarnation): void {
    i.stopped = false;
  }
}

/** Runs a nemesis of `mix` on `fleet` until it recorded `actions` entries. */
async function run(fleet: FakeFleet, mix: FaultMix, actions: number, startDrawing: boolean) {
  const nemesis = new Nemesis({
    random: new Random(42),
    fleet: fleet as unknown as Fleet,
    admin: {} as IdGen,
    sequence: 's',
    mix,
    intervalS: [0.001, 0.002],
    processesPerDc: 2,
    startProcess: (dc) => fleet.start(dc, startDrawing),
    canPartitionNodes: false,
    startedAt: Date.now(),
    log: () => undefined,
  });
  nemesis.start();
  const deadline = Date.now() + 20_000;
  while (nemesis.timeline.length < actions && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await nemesis.stop();
  return nemesis.timeline;
}

describe('torture nemesis: process faults', () => {
  it('pick only processes that have handed out IDs', async () => {
    const fleet = new FakeFleet();
    for (const dc of ['dc1', 'dc2', 'dc3']) {
      fleet.start(dc, true);
      fleet.start(dc, false);
    }
    // Processes the nemesis starts have drawn nothing yet.
    const mix = mixOf({ 'kill-process': 1, 'close-process': 1, 'stop-process': 1 });
    const timeline = await run(fleet, mix, 30, false);
    expect(fleet.victims.length).toBeGreaterThan(0);
    expect(fleet.victims.filter((v) => !v.drawing)).toEqual([]);
    expect(timeline.map((e) => e.result)).toContain('skipped: no process drawing');
  });

  it('kill a quarter or so raw, drawn from the seed, and let the others write their history', async () => {
    const fleet = new FakeFleet();
    for (const dc of ['dc1', 'dc2', 'dc3']) fleet.start(dc, true);
    const timeline = await run(fleet, mixOf({ 'kill-process': 1 }), 200, true);
    const kills = fleet.victims.map((v) => v.action);
    expect(kills.length).toBeGreaterThanOrEqual(200);
    const raw = kills.filter((k) => k === 'kill raw').length;
    expect(raw).toBeGreaterThan(kills.length * 0.1);
    expect(raw).toBeLessThan(kills.length * 0.4);
    expect(kills.filter((k) => k === 'kill flush').length).toBe(kills.length - raw);
    expect(timeline.filter((e) => e.result === 'ok, raw SIGKILL').length).toBe(raw);
  });
});
