import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';

import { buildReport, formatMarkdown, headline } from '../../scripts/bench/report.js';
import { formatNs, withSpread } from '../../scripts/bench/report/format.js';
import { summarize } from '../../scripts/bench/report/summary.js';
import {
  RESULTS_SCHEMA,
  type AllocatorCounts,
  type DrawRun,
  type RawResults,
} from '../../scripts/bench/results.js';
import {
  Histogram,
  figure,
  latencySummary,
  type LatencySummary,
} from '../../scripts/bench/stats.js';

const latency = (p50: number, p99: number, max = p99 * 2): LatencySummary => ({
  count: 1_000,
  p50,
  p99,
  p999: (p99 + max) / 2,
  max,
  mean: p50,
});

const counts = (overrides: Partial<AllocatorCounts> = {}): AllocatorCounts => ({
  waits: 0,
  blocksClaimed: 10,
  rangesGranted: 0,
  lwtWrites: 10,
  serialReads: 0,
  localSerialReads: 10,
  casRejections: 0,
  casUnknown: 0,
  errors: 0,
  ...overrides,
});

const draw = (idsPerSecond: number, overrides: Partial<DrawRun> = {}): DrawRun => ({
  processes: 6,
  ids: idsPerSecond * 3,
  seconds: 3,
  idsPerSecond,
  latency: latency(200, 20_000),
  counts: counts(),
  warmupWaits: 3,
  rssMiB: [95.5, 101.2, 99, 97, 98, 96],
  failures: 0,
  warmupFailures: 0,
  failureMessages: [],
  ...overrides,
});

/** Three runs whose per-run ratios differ from the ratio of the medians. */
const SAMPLE: RawResults = {
  startedAt: '2025-01-02T03:04:05.000Z',
  finishedAt: '2025-01-02T03:08:05.000Z',
  wallSeconds: 240,
  command: 'npm run bench -- --quick',
  settings: {
    quick: true,
    durationSeconds: 3,
    warmupSeconds: 1.5,
    runs: 3,
    processesPerDc: 2,
    blockSizes: [100, 1_000],
    steadyBlockSize: 1_000,
    dcRangeBlocks: 100,
    pacedBlocksPerSecond: 2,
    naiveClients: 8,
    burstFactor: 5,
    inProcessSampleMs: 100,
    scale: false,
    scaleOnly: false,
    scaleInstances: [1, 4, 16],
    scaleSeconds: 3,
    scaleWarmupSeconds: 2,
    scaleRuns: 1,
    scaleRatePerDc: 10_000,
    http: false,
    httpOnly: false,
    httpSeconds: 3,
    httpWarmupSeconds: 1,
    httpConnections: 10,
    out: 'bench',
  },
  machine: {
    cpuModel: 'Test CPU 9000',
    cores: 2,
    memoryGiB: 7.8,
    os: 'Linux 6.1 x64',
    node: 'v20.20.2',
    cassandra: { dc1: '5.0.8', dc2: '5.0.8', dc3: '5.0.8' },
    topology: '3 DCs × 1 node, all on this machine',
    loadAverage: [1.5, 1.2, 1],
  },
  inProcess: {
    idgenStore: 'the in-memory store (MemoryStore)',
    idgenBlockSize: 10_000_000,
    candidates: [
      { key: 'counter', label: 'plain integer counter (the floor)' },
      { key: 'tryNext', label: 'idgen-cass `tryNext()`' },
      { key: 'asyncCounter', label: '`await` of an async counter' },
      { key: 'next', label: 'idgen-cass `await next()`' },
      { key: 'snowflake', label: 'Snowflake' },
      { key: 'randomUUID', label: '`crypto.randomUUID()`' },
      { key: 'uuidV7', label: 'uuid `v7()`' },
    ],
    runs: [
      {
        counter: 2,
        tryNext: 10,
        asyncCounter: 40,
        next: 60,
        snowflake: 150,
        randomUUID: 200,
        uuidV7: 2000,
      },
      {
        counter: 4,
        tryNext: 12,
        asyncCounter: 44,
        next: 66,
        snowflake: 160,
        randomUUID: 240,
        uuidV7: 2400,
      },
      {
        counter: 3,
        tryNext: 30,
        asyncCounter: 50,
        next: 90,
        snowflake: 170,
        randomUUID: 300,
        uuidV7: 2100,
      },
    ],
    refillsInLoops: 0,
    snowflakeRepeats: { generated: 100_000, repeated: 12_345 },
    timerPairNs: 110,
  },
  cluster: {
    keyspace: 'bench_0123abcd',
    workerRuntime: 'node, compiled (dist/)',
    rssAfterConnectMiB: [60, 61, 59, 60, 62, 60],
    naive: [
      {
        clients: 1,
        runs: [
          { ids: 600, seconds: 3, rejections: 0, errors: 0, latency: latency(4e6, 30e6) },
          { ids: 300, seconds: 3, rejections: 0, errors: 0, latency: latency(5e6, 40e6) },
          { ids: 450, seconds: 3, rejections: 0, errors: 1, latency: latency(6e6, 50e6) },
        ],
      },
      {
        clients: 8,
        runs: [
          { ids: 500, seconds: 3, rejections: 1_500, errors: 0, latency: latency(20e6, 90e6) },
          { ids: 400, seconds: 3, rejections: 1_600, errors: 0, latency: latency(25e6, 95e6) },
          { ids: 450, seconds: 3, rejections: 1_700, errors: 2, latency: latency(30e6, 99e6) },
        ],
      },
    ],
    draws: [
      {
        blockSize: 100,
        dcRangeSize: 10_000,
        mode: 'tight',
        ratePerProcess: undefined,
        runs: [
          draw(30_000),
          draw(25_000, {
            warmupFailures: 2,
            failures: 1,
            failureMessages: ['ContentionError: lost 12 races'],
          }),
          draw(35_000),
        ],
      },
      {
        blockSize: 100,
        dcRangeSize: 10_000,
        mode: 'paced',
        ratePerProcess: 200,
        runs: [draw(1_200), draw(1_200), draw(1_199)],
      },
      {
        blockSize: 1_000,
        dcRangeSize: 100_000,
        mode: 'tight',
        ratePerProcess: undefined,
        runs: [
          draw(120_000, { counts: counts({ waits: 360, blocksClaimed: 360 }) }),
          draw(90_000, { counts: counts({ waits: 270, blocksClaimed: 270 }) }),
          draw(150_000, { counts: counts({ waits: 450, blocksClaimed: 450, casRejections: 4 }) }),
        ],
      },
      {
        blockSize: 1_000,
        dcRangeSize: 100_000,
        mode: 'paced',
        ratePerProcess: 2_000,
        runs: [draw(12_000), draw(12_000), draw(11_990, { latency: latency(400, 9_000) })],
      },
    ],
    burst: {
      blockSize: 1_000,
      calls: 5_000,
      runs: [1, 2, 3].map((i) => ({
        calls: 5_000,
        heldBefore: 1_000,
        totalMs: 40 + i,
        latency: latency(25e6, 39e6),
        counts: counts({ waits: 4_000, blocksClaimed: 4, lwtWrites: 4, localSerialReads: 5 }),
      })),
    },
    coldStart: [1, 2, 3].map((run) =>
      ['dc1', 'dc2', 'dc3'].map((dc) => ({
        dc,
        connectMs: 100 + run,
        firstIdMs: 300 + run,
        firstIdWarmDcMs: 40 + run,
      })),
    ),
  },
};

describe('bench report builder', () => {
  const report = buildReport(SAMPLE);
  const ratio = (key: string) => report.json.summary.ratios.find((r) => r.key === key)?.value;

  it('takes every ratio within each run, then the median', () => {
    // Per run: 10/2, 12/4, 30/3 = 5, 3, 10; the ratio of the medians would be 12/3 = 4.
    expect(ratio('tryNextVsCounter')).toEqual({ median: 5, min: 3, max: 10, n: 3 });
    expect(ratio('nextVsCounter')?.median).toBe(30);
    expect(ratio('randomUUIDVsTryNext')).toEqual({ median: 20, min: 10, max: 20, n: 3 });
    // Tight 1,000: 120k, 90k, 150k IDs/s against naive 200, 100, 150 IDs/s.
    expect(ratio('tightVsNaive1')).toEqual({ median: 900, min: 600, max: 1_000, n: 3 });
    // Naive LWTs per ID 1, 1, 451/450; idgen: 20 LWTs per 360k, 270k, 450k IDs.
    const lwt = ratio('lwtPerIdNaiveVsTight')!;
    expect(lwt).toMatchObject({ min: 13_500, n: 3 });
    expect(lwt.median).toBeCloseTo(18_000, 6);
    expect(ratio('p50NaiveVsPaced')).toEqual({ median: 20_000, min: 15_000, max: 25_000, n: 3 });
  });

  it('summarises the in-process rows, the draws and the burst', () => {
    const { summary } = report.json;
    const tryNext = summary.inProcess.find((row) => row.key === 'tryNext')!;
    expect(tryNext.nsPerId).toEqual({ median: 12, min: 10, max: 30, n: 3 });
    expect(tryNext.idsPerSecond.median).toBeCloseTo(1e9 / 12);
    const tight = summary.draws.find((d) => d.blockSize === 1_000 && d.mode === 'tight')!;
    expect(tight.waits.median).toBe(360);
    expect(tight.waitsTotal).toBe(1_080);
    expect(tight.waitsPerBlock.median).toBe(1);
    expect(tight.lwtPerMillion.median).toBeCloseTo((20 / 360_000) * 1e6);
    expect(tight.rssMiB.median).toBe(101.2);
    const paced = summary.draws.find((d) => d.blockSize === 1_000 && d.mode === 'paced')!;
    expect(paced.waitsTotal).toBe(0);
    expect(summary.burst.waits.median).toBe(4_000);
    expect(summary.burst.lwt.median).toBe(9);
    expect(summary.coldStart).toMatchObject({ samples: 9, firstIdMs: { median: 302, n: 9 } });
  });

  it('writes markdown with the header, the machine and every table', () => {
    const md = report.markdown;
    expect(md).toMatch(/^# idgen-cass benchmark\n/);
    for (const text of [
      '## Machine',
      'Test CPU 9000, 2 cores',
      'v20.20.2',
      '5.0.8',
      '3 DCs × 1 node',
      '## Key ratios',
      '## 1. In-process cost of one ID',
      '| generator | ns per ID | IDs per second | × plain counter |',
      '12 ns (10–30)',
      '### Naive baseline: one LWT per ID',
      '### idgen-cass `next()`: steady state and block-size sweep',
      'block size 1,000 is the steady state',
      '### Cold start',
      '## 3. Burst',
      'the in-memory store (MemoryStore)',
      '60 MiB (59–62)',
      '12,345 of 100,000',
      'block 100 tight: 2 in warm-up, 1 measured',
      '"ContentionError: lost 12 races"',
    ]) {
      expect(md).toContain(text);
    }
  });

  it('formats the markdown so that prettier --check passes', async () => {
    const formatted = await formatMarkdown(report.markdown, 'bench/REPORT.md');
    const config = (await prettier.resolveConfig('bench/REPORT.md')) ?? {};
    expect(await prettier.check(formatted, { ...config, parser: 'markdown' })).toBe(true);
  }, 30_000);

  it('prints where the report is and its key ratios, without markdown', () => {
    const lines = headline(report, 'bench/REPORT.md').split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'Report: bench/REPORT.md',
      'Key ratios (per run, then median):',
    ]);
    expect(lines).toContain('5× (3–10)  tryNext() cost ÷ plain counter cost');
    expect(lines).toHaveLength(2 + report.json.summary.ratios.length + 1);
    expect(lines.join('\n')).not.toContain('`');
  });

  it('gives results.json its schema fields, and survives JSON', () => {
    const json = JSON.parse(JSON.stringify(report.json)) as Record<string, unknown>;
    expect(json['schema']).toBe(RESULTS_SCHEMA);
    expect(Object.keys(json).sort()).toEqual(['raw', 'schema', 'summary']);
    expect(Object.keys(json['summary'] as object).sort()).toEqual(
      ['burst', 'coldStart', 'draws', 'inProcess', 'naive', 'ratios'].sort(),
    );
    expect(Object.keys(json['raw'] as object).sort()).toEqual(
      [
        'cluster',
        'command',
        'finishedAt',
        'inProcess',
        'machine',
        'settings',
        'startedAt',
        'wallSeconds',
      ].sort(),
    );
  });

  it('summarises nothing measured as a dash, not a number', () => {
    const empty = summarize({
      ...SAMPLE,
      cluster: { ...SAMPLE.cluster, burst: { ...SAMPLE.cluster.burst, runs: [] } },
    });
    expect(empty.burst.totalMs).toEqual({ median: NaN, min: NaN, max: NaN, n: 0 });
    expect(formatNs(NaN)).toBe('–');
  });
});

describe('bench statistics', () => {
  it('medians with min–max spread', () => {
    expect(figure([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3, n: 3 });
    expect(figure([4, 1, 2, 3])).toEqual({ median: 2.5, min: 1, max: 4, n: 4 });
  });

  it('writes a spread with its unit once, or with each end when units differ', () => {
    expect(withSpread(figure([900, 1_000, 1_200]), formatNs)).toBe('1 µs (900 ns–1.2 µs)');
    expect(withSpread(figure([1_100, 1_000, 1_200]), formatNs)).toBe('1.1 µs (1–1.2)');
    expect(withSpread(figure([5, 5]), formatNs)).toBe('5 ns');
    expect(withSpread(figure([1, 1.0001, 1.0002]), formatNs)).toBe('1 ns');
  });

  it('histogram percentiles stay within 1.6 % and keep the exact max', () => {
    const histogram = new Histogram();
    for (let v = 1; v <= 100_000; v++) histogram.record(v * 1_000);
    const summary = latencySummary(histogram);
    expect(summary.count).toBe(100_000);
    expect(Math.abs(summary.p50 - 50_000_000) / 50_000_000).toBeLessThan(0.016);
    expect(Math.abs(summary.p99 - 99_000_000) / 99_000_000).toBeLessThan(0.016);
    expect(summary.max).toBe(100_000_000);
    const copy = Histogram.merged([JSON.parse(JSON.stringify(histogram.toJSON()))]);
    expect(copy.percentile(99.9)).toBe(histogram.percentile(99.9));
  });
});
