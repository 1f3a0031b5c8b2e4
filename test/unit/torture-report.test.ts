import fs from 'node:fs';

import { describe, expect, it } from 'vitest';

import {
  drawnWhileInForce,
  faultsInForce,
  idleWhileNotHit,
} from '../../scripts/torture/fault-progress.js';
import { firstIdIn } from '../../scripts/torture/fleet.js';
import {
  drawnWhileInForceSection,
  firstBlocksOf,
  killsOf,
  renderMarkdown,
  type CampaignReport,
} from '../../scripts/torture/report.js';

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

describe('torture report: IDs drawn while each cluster fault was in force', () => {
  const window = { from: 20.4, to: 80.4 };
  const timeline = [
    { at: 26.7, action: 'pause-node', target: 'dc1-2', result: 'ok, for 3072 ms' },
    { at: 35.4, action: 'undo', target: 'pause of dc1-2', result: 'ok' },
    {
      at: 40.2,
      action: 'kill-dc',
      target: 'dc3',
      result: 'ok: dc3-1, dc3-2, dc3-3 killed at once',
    },
    { at: 61.5, action: 'undo', target: 'restart of dc3', result: 'ok' },
    { at: 75.0, action: 'partition-node', target: 'dc2-1', result: 'ok, for 9000 ms' },
  ];
  const dcOfNode = { 'dc1-2': 'dc1', 'dc2-1': 'dc2' };
  /** A process drawing `rate` IDs in every second from `from` to `to`. */
  const steady = (dc: string, rate: number, from = 0, to = 81) => ({
    dc,
    from,
    to: undefined,
    progress: new Map(Array.from({ length: to - from }, (_, i) => [from + i, rate] as const)),
  });
  const drawn = drawnWhileInForce(
    faultsInForce(timeline, window, dcOfNode),
    ['dc1', 'dc2', 'dc3'],
    // dc3's processes draw nothing while it is down, nor dc2's at all once dc3 is back.
    [
      steady('dc1', 1_000),
      steady('dc1', 500),
      steady('dc2', 2_000, 0, 62),
      steady('dc3', 10, 0, 40),
    ],
  );

  it('has a row per fault: its interval, what it hit, and per DC the IDs and the processes', () => {
    expect(drawnWhileInForceSection(drawn, window, idleWhileNotHit(drawn)).slice(4)).toEqual([
      '| in force (s) | fault | target | hit | whole seconds | dc1 | dc2 | dc3 |',
      '| --- | --- | --- | --- | ---: | ---: | ---: | ---: |',
      '| 26.7 to 35.4 | pause-node | dc1-2 | dc1 | 8 | 12,000 (2) | 16,000 (1) | 80 (1) |',
      '| 40.2 to 61.5 | kill-dc | dc3 | dc3 | 20 | 30,000 (2) | 40,000 (1) | 0 (1) |',
      '| 75.0 to 80.4 (window end) | partition-node | dc2-1 | dc2 | 5 | 7,500 (2) | 0 (1) | 0 (1) |',
      '',
      'DCs not hit that drew no ID through a fault of 5 s or more with processes running (reported, not judged): dc3 (not hit) recorded no ID in the 5 whole seconds of partition-node dc2-1 (75.0 s to 80.4 s), 1 of its processes alive throughout.',
    ]);
  });

  it('is in the markdown of a report that has it, before the timeline, and not in an older one', () => {
    const dir = 'torture/campaigns/2026-11-28-paxos-v2-seed-1000309';
    const older = JSON.parse(fs.readFileSync(`${dir}/report.json`, 'utf8')) as CampaignReport;
    expect(renderMarkdown(older)).not.toContain('while each cluster fault was in force');
    const markdown = renderMarkdown({
      ...older,
      faultWindow: window,
      drawnWhileInForce: drawn,
      idleWhileNotHit: idleWhileNotHit(drawn),
    });
    const section = markdown.indexOf('## IDs drawn while each cluster fault was in force');
    expect(section).toBeGreaterThan(0);
    expect(section).toBeLessThan(markdown.indexOf('## Faults'));
    expect(markdown).toContain(
      '| 40.2 to 61.5 | kill-dc | dc3 | dc3 | 20 | 30,000 (2) | 40,000 (1) | 0 (1) |',
    );
  });

  it('says so when no cluster fault took effect', () => {
    expect(drawnWhileInForceSection([], window).at(-1)).toBe(
      'No cluster fault took effect in the window.',
    );
  });
});

describe('torture report: the duplicates row', () => {
  const dir = 'torture/campaigns/2026-11-28-paxos-v2-seed-1000309';
  const report = JSON.parse(fs.readFileSync(`${dir}/report.json`, 'utf8')) as CampaignReport;
  const row = (r: CampaignReport) =>
    renderMarkdown(r)
      .split('\n')
      .find((line) => line.startsWith('| duplicates |'));

  it('says what a raw SIGKILL left unrecorded', () => {
    expect(report.fleet.kills).toMatchObject({ raw: 1, 'flush-timed-out': 0 });
    expect(row(report)).toBe(
      '| duplicates | 0 among the IDs recorded (1 process SIGKILLed raw left its last 20 ms or so of IDs unrecorded) |',
    );
    // One more that did not die of its SIGHUP in time, and one more tight one killed raw.
    const more = report.incarnations.map((i, index) =>
      index === 0
        ? { ...i, killed: 'flush-timed-out' as const }
        : index === 1
          ? { ...i, mode: 'tight', killed: 'raw' as const }
          : i,
    );
    expect(row({ ...report, incarnations: more })).toContain('(3 processes SIGKILLed raw');
  });

  it("counts concurrent callers' missed deadlines of their own apart from the errors", () => {
    const fleet = { ...report.fleet, byMode: { ...report.fleet.byMode, callers: 2 } };
    const markdown = renderMarkdown({ ...report, fleet: { ...fleet, ownDeadlinesMissed: 1234 } });
    expect(markdown).toContain(
      'Calls of concurrent callers with a deadline of their own (one in 8, up to 100 ms) that passed, counted apart from the errors: 1,234.',
    );
    // A campaign with no such process, or a report from before they were counted, says nothing.
    expect(renderMarkdown(report)).not.toContain('deadline of their own');
  });

  it('counts the processes stopped before they could connect', () => {
    const markdown = renderMarkdown({ ...report, fleet: { ...report.fleet, neverConnected: 2 } });
    expect(markdown).toContain(
      "Processes stopped before they could connect (every connect failed, as while their DC's nodes are all down, so they drew nothing): 2.",
    );
    expect(renderMarkdown(report)).not.toContain('before they could connect');
  });

  it('says nothing more when every kill wrote its history first, or was of a paced process', () => {
    // A paced process writes each ID before its next call: a raw kill leaves nothing unrecorded.
    const paced = report.incarnations.map((i) =>
      i.killed === 'raw' ? { ...i, mode: 'paced' } : i,
    );
    expect(row({ ...report, incarnations: paced })).toBe('| duplicates | 0 |');
  });
});

describe('torture report: the reconciliation row (review B1)', () => {
  const dir = 'torture/campaigns/2026-11-28-paxos-v2-seed-1000309';
  const report = JSON.parse(fs.readFileSync(`${dir}/report.json`, 'utf8')) as CampaignReport;
  const row = (r: CampaignReport) =>
    renderMarkdown(r)
      .split('\n')
      .find((line) => line.startsWith('| no recorded ID in a range the final state still holds'));

  it('claims what the sum shows, and calls its remainder unaccounted, not balanced', () => {
    // The sum holds whatever is lost (its last term is the remainder): it shows only that the
    // recorded and the held do not overlap, and that the held lie inside the grants.
    const markdown = renderMarkdown(report);
    expect(markdown).not.toContain('balanced');
    expect(row(report)).toBe(
      "| no recorded ID in a range the final state still holds; held ranges inside their holder's grants, none overlapping | yes: granted 185,514,088 = recorded 183,705,613 + still held 1,201,789 + unaccounted 606,686 (neither recorded nor held, by cause below) |",
    );
    const verdict = {
      ...report.verdict,
      reconciliation: { ...report.verdict.reconciliation, balanced: false },
    };
    expect(row({ ...report, verdict })).toContain('overlapping | NO: granted');
  });
});
