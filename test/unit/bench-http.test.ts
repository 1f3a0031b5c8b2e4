/**
 * The HTTP phase of the benchmark: its measuring functions against a service started in this
 * process on the in-memory store (autocannon for about a second), the overload run, the library
 * loop, the ID ledger, the options, and the report section on synthetic results.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

import { createServer, IdGen, type Sequence } from '../../src/index.js';
import { MemoryStore } from '../../src/testing.js';
import {
  loadLibrary,
  loadService,
  loadServices,
  OVERLOAD,
  overloadService,
  rssMiB,
  type LoadPlan,
} from '../../scripts/bench/http.js';
import { IdLedger } from '../../scripts/bench/id-ledger.js';
import {
  FULL_PRESET,
  HTTP_ONLY_OUT,
  program,
  parseBenchArgs,
  QUICK_PRESET,
  resolveSettings,
} from '../../scripts/bench/options.js';
import { buildReport, formatMarkdown } from '../../scripts/bench/report.js';
import type {
  BenchSettings,
  HttpDcLoad,
  HttpLoad,
  HttpResult,
  RawResults,
} from '../../scripts/bench/results.js';
import type { LatencySummary } from '../../scripts/bench/stats.js';

const servers: FastifyInstance[] = [];
const allocators: IdGen[] = [];

afterEach(async () => {
  for (const app of servers.splice(0)) await app.close();
  for (const ids of allocators.splice(0)) await ids.close();
});

/** An IdGen on its own in-memory store holding sequence "orders". */
async function allocator(store = new MemoryStore()): Promise<IdGen> {
  const ids = new IdGen({ store, dc: 'dc1', keyspace: 'unit' });
  allocators.push(ids);
  await ids.createSequence('orders', { domain: 'safe53' });
  return ids;
}

/** A service over its own in-memory store, listening on a free port of 127.0.0.1. */
async function service(): Promise<string> {
  const ids = await allocator();
  const app = createServer(ids, { sequences: ['orders'] });
  servers.push(app);
  return app.listen({ host: '127.0.0.1', port: 0 });
}

/** A service as the overload run starts it, over a store that answers in 5 ms. */
async function overloadTarget(maxPendingRequests: number): Promise<string> {
  const ids = await allocator(new MemoryStore({ latencyMs: 5 }));
  await ids.createSequence(OVERLOAD.sequence, OVERLOAD.sequenceOptions);
  const app = createServer(ids, { sequences: [OVERLOAD.sequence], maxPendingRequests });
  servers.push(app);
  return app.listen({ host: '127.0.0.1', port: 0 });
}

const plan = (count: number, overrides: Partial<LoadPlan> = {}): LoadPlan => ({
  sequence: 'orders',
  count,
  connections: 4,
  warmupSeconds: 1,
  seconds: 1,
  ...overrides,
});

describe('HTTP phase: measuring a service with autocannon', () => {
  it('counts answers and IDs, times them, and finds no repeat in what one service hands out', async () => {
    const url = await service();
    const ledger = new IdLedger();
    const started = performance.now();
    const { load, histogram } = await loadService({ dc: 'dc1', url }, plan(100), ledger);
    const wallSeconds = (performance.now() - started) / 1e3;
    expect(load.dc).toBe('dc1');
    // Some answers, however busy the machine: what is checked is how they are counted.
    expect(load.ok).toBeGreaterThan(0);
    expect(load).toMatchObject({ non2xx: 0, errors: 0, failureMessages: [] });
    expect(load.ids).toBe(load.ok * 100);
    expect(load.seconds).toBeGreaterThan(0.9);
    // The measured second only: the 1 s warm-up before it is not counted (a bound taken from
    // the wall clock, not a fixed one, which a busy machine can overrun; autocannon rounds its
    // duration to 10 ms, and a timer may fire a millisecond early).
    expect(load.seconds).toBeLessThanOrEqual(wallSeconds - 1 + 0.02);
    expect(histogram.count).toBe(load.ok);
    expect(load.latency.p50).toBeGreaterThan(0);
    expect(load.latency.p999).toBeGreaterThanOrEqual(load.latency.p50);
    expect(load.latency.max).toBeGreaterThanOrEqual(load.latency.p999);
    // The warm-up's IDs are checked: 100 in each answer, none repeated.
    expect(ledger.added).toBeGreaterThan(5_000);
    expect(ledger.added % 100).toBe(0);
    expect(ledger.duplicates).toBe(0);
  });

  it('reports refusals as non-2xx with their code', async () => {
    const url = await service();
    const ledger = new IdLedger();
    const { load } = await loadService(
      { dc: 'dc1', url },
      plan(1, { sequence: 'missing' }),
      ledger,
    );
    expect(load.ok).toBe(0);
    expect(load.non2xx).toBeGreaterThan(0);
    expect(load.failureMessages).toEqual([
      'warm-up: 404 IDGEN_SEQUENCE_NOT_SERVED',
      `404 × ${load.non2xx}`,
    ]);
    expect(ledger.added).toBe(0);
  });

  it('loads every service at once and catches IDs two services both hand out', async () => {
    // Two stores that know nothing of each other hand out the same IDs: the ledger must see it.
    const targets = [
      { dc: 'dc1', url: await service() },
      { dc: 'dc2', url: await service() },
    ];
    const ledger = new IdLedger();
    const load = await loadServices(targets, plan(1), ledger);
    expect(load.dcs.map((d) => d.dc)).toEqual(['dc1', 'dc2']);
    for (const dc of load.dcs) expect(dc.ok).toBeGreaterThan(0);
    expect(load.latency.count).toBe(load.dcs[0]!.ok + load.dcs[1]!.ok);
    expect(ledger.duplicates).toBeGreaterThan(0);
  });
});

describe('HTTP phase: the overload run', () => {
  // The service runs in this process, so the RSS sampled is this process's.
  const overloadPlan = plan(OVERLOAD.count, {
    sequence: OVERLOAD.sequence,
    connections: 100,
    warmupSeconds: 0,
  });

  it('counts answers shed with Retry-After, samples RSS, and checks the IDs of the rest', async () => {
    const url = await overloadTarget(5);
    const o = await overloadService({ dc: 'dc1', url }, process.pid, overloadPlan, 5);
    expect(o).toMatchObject({ dc: 'dc1', maxPendingRequests: 5, connections: 100, other: 0 });
    expect(o.ok).toBeGreaterThan(0);
    expect(o.overloaded).toBeGreaterThan(o.ok);
    expect(o.failureMessages).toEqual([]);
    expect(o.uniqueness).toEqual({ ids: o.ok * OVERLOAD.count, duplicates: 0 });
    // A second before the load and one during it, a sample every 200 ms or later: a busy
    // event loop takes fewer.
    for (const samples of [o.rssBeforeMiB, o.rssMiB]) {
      expect(samples.length).toBeGreaterThanOrEqual(1);
      expect(samples.length).toBeLessThanOrEqual(6);
      for (const mib of samples) expect(mib).toBeGreaterThan(10);
    }
  });

  it('sheds nothing under its limit', async () => {
    const url = await overloadTarget(1_000);
    const o = await overloadService({ dc: 'dc1', url }, process.pid, overloadPlan, 1_000);
    expect(o.ok).toBeGreaterThan(0);
    expect(o).toMatchObject({ overloaded: 0, other: 0 });
  });

  it('reads RSS from /proc', async () => {
    const mib = await rssMiB(process.pid);
    expect(mib / (process.memoryUsage().rss / 2 ** 20)).toBeCloseTo(1, 1);
  });
});

describe('HTTP phase: the library beside it', () => {
  it('calls next() for one ID and take(n) above, with the planned concurrency', async () => {
    const ids = await allocator();
    const sequence: Sequence<number> = ids.sequence('orders');
    for (const count of [1, 100]) {
      const load = await loadLibrary(
        [{ dc: 'dc1', sequence }],
        plan(count, { warmupSeconds: 0.2, seconds: 0.3 }),
      );
      const [dc] = load.dcs;
      expect(dc).toMatchObject({ dc: 'dc1', non2xx: 0, errors: 0 });
      expect(dc!.ok).toBeGreaterThan(100);
      expect(dc!.ids).toBe(dc!.ok * count);
      expect(dc!.seconds).toBeGreaterThan(0.29);
      expect(load.latency.count).toBe(dc!.ok);
    }
  });
});

describe('ID ledger', () => {
  it('finds repeats within a batch, across batches and inside intervals', () => {
    const ledger = new IdLedger();
    ledger.add([5, 1, 2, 3, 3]);
    ledger.compact();
    expect(ledger.duplicates).toBe(1);
    ledger.add([10, 11, 12, 4]);
    ledger.compact();
    expect(ledger.duplicates).toBe(1);
    ledger.add([2, 11, 100]);
    ledger.compact();
    expect(ledger).toMatchObject({ added: 12, duplicates: 3 });
    ledger.add([6, 7, 8, 9]);
    ledger.compact();
    expect(ledger.duplicates).toBe(3);
  });
});

describe('bench options of the HTTP phase', () => {
  const flags = { scale: true, http: true };

  it('runs the phase by default, shorter with --quick', () => {
    expect(resolveSettings(flags)).toMatchObject({
      http: true,
      httpOnly: false,
      httpSeconds: FULL_PRESET.httpSeconds,
      httpConnections: 10,
    });
    expect(FULL_PRESET.httpSeconds).toBe(10);
    expect(QUICK_PRESET.httpSeconds).toBe(3);
    expect(resolveSettings({ ...flags, quick: true }).httpSeconds).toBe(3);
  });

  it('--http-only keeps the in-process and HTTP phases and writes apart', async () => {
    const settings = await parseBenchArgs([
      '--quick',
      '--http-only',
      '--http-seconds',
      '2',
      '--http-connections',
      '4',
    ]);
    expect(settings).toMatchObject({
      http: true,
      httpOnly: true,
      scale: false,
      httpSeconds: 2,
      httpConnections: 4,
      out: HTTP_ONLY_OUT,
    });
  });

  it('--no-http and --scale-only leave it out', async () => {
    expect((await parseBenchArgs(['--no-http'])).http).toBe(false);
    expect(await parseBenchArgs(['--scale-only'])).toMatchObject({ http: false, scale: true });
  });

  it('refuses --http-only with --no-http or --scale-only, and bad numbers, naming the option', () => {
    const parse = (argv: string[]): string => {
      const command = program()
        .exitOverride()
        .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
      try {
        command.parse(argv, { from: 'user' });
      } catch (error) {
        return error instanceof Error ? error.message : String(error);
      }
      return 'accepted';
    };
    expect(parse(['--http-only', '--no-http'])).toMatch(
      /--http-only.*cannot be used with.*--no-http/,
    );
    expect(parse(['--http-only', '--scale-only'])).toMatch(/--http-only.*--scale-only/);
    expect(parse(['--http-seconds', '0'])).toMatch(/--http-seconds.*from 1 to 3600/);
    expect(parse(['--http-seconds', '2.5'])).toMatch(/--http-seconds.*an integer/);
    expect(parse(['--http-connections', '2.5'])).toMatch(/--http-connections.*integer/);
  });

  it('--help documents the options', () => {
    const help = program().helpInformation();
    for (const option of [
      '--http-only',
      '--no-http',
      '--http-seconds <s>',
      '--http-connections <n>',
    ]) {
      expect(help).toContain(option);
    }
  });
});

const latency = (p50: number, p999: number): LatencySummary => ({
  count: 1_000,
  p50,
  p99: (p50 + p999) / 2,
  p999,
  max: p999 * 2,
  mean: p50,
});

const dcLoad = (dc: string, perSecond: number, count: number, p50: number): HttpDcLoad => ({
  dc,
  ok: perSecond * 2,
  ids: perSecond * 2 * count,
  seconds: 2,
  non2xx: 0,
  errors: 0,
  latency: latency(p50, p50 * 4),
  failureMessages: [],
});

/** Both DCs at `perSecond` each. */
const load = (perSecond: number, count: number, p50: number): HttpLoad => ({
  dcs: [dcLoad('dc1', perSecond, count, p50), dcLoad('dc2', perSecond, count, p50)],
  latency: latency(p50, p50 * 4),
});

const SETTINGS: BenchSettings = {
  ...QUICK_PRESET,
  runs: 2,
  scale: false,
  httpOnly: true,
  httpSeconds: 2,
  out: HTTP_ONLY_OUT,
};

function raw(http: HttpResult): RawResults {
  return {
    startedAt: '2025-01-02T03:04:05.000Z',
    finishedAt: '2025-01-02T03:06:05.000Z',
    wallSeconds: 120,
    command: 'npm run bench -- --quick --http-only',
    settings: SETTINGS,
    machine: {
      cpuModel: 'Test CPU 9000',
      cores: 2,
      memoryGiB: 7.8,
      os: 'Linux 6.1 x64',
      node: 'v20.20.2',
      cassandra: { dc1: '5.0.8', dc2: '5.0.8' },
      topology: '2 DCs × 1 node, all on this machine',
      loadAverage: [1.5, 1.2, 1],
    },
    inProcess: {
      idgenStore: 'the in-memory store',
      idgenBlockSize: 10_000_000,
      candidates: [],
      runs: [],
      refillsInLoops: 0,
      snowflakeRepeats: { generated: 0, repeated: 0 },
      timerPairNs: 40,
    },
    cluster: {
      keyspace: 'bench_test',
      workerRuntime: 'tsx',
      rssAfterConnectMiB: [],
      naive: [],
      draws: [],
      burst: { blockSize: 1_000, calls: 0, runs: [] },
      coldStart: [],
    },
    http,
  };
}

const HTTP: HttpResult = {
  sequenceOptions: { domain: 'safe53' },
  serviceRuntime: 'node --import tsx src/cli/main.ts serve',
  autocannon: '9.0.0',
  services: [
    { dc: 'dc1', readyMs: 1_500, exitCode: 0 },
    { dc: 'dc2', readyMs: 1_700, exitCode: 0 },
  ],
  counts: [
    {
      count: 1,
      runs: [
        // Service 2 × 1,500 = 3,000 IDs/s against library 300,000: 1 %; then 2 × 2,000 against
        // 2 × 100,000: 2 %. The median of the per-run ratios is 1.5 %.
        { service: load(1_500, 1, 500_000), library: load(150_000, 1, 1_000) },
        { service: load(2_000, 1, 400_000), library: load(100_000, 1, 2_000) },
      ],
    },
    {
      count: 100,
      runs: [
        { service: load(1_000, 100, 800_000), library: load(5_000, 100, 20_000) },
        { service: load(1_000, 100, 800_000), library: load(5_000, 100, 20_000) },
      ],
    },
  ],
  overload: {
    dc: 'dc1',
    maxPendingRequests: 50,
    connections: 1_000,
    count: 10_000,
    seconds: 2,
    ok: 400,
    overloaded: 30_000,
    other: 0,
    failureMessages: [],
    rssSampleMs: 200,
    rssBeforeMiB: [100, 101, 99, 100, 100],
    rssMiB: [110, 150, 140, 120],
    uniqueness: { ids: 4_000_000, duplicates: 0 },
  },
  uniqueness: { ids: 1_234_567, duplicates: 0 },
};

describe('bench report: HTTP service section', () => {
  it('puts each count side by side with the library, with the ratios taken within each run', async () => {
    const report = buildReport(raw(HTTP));
    const md = report.markdown;
    expect(md).toContain('## 5. HTTP service');
    expect(md).toContain('### 1 ID per request');
    expect(md).toContain('### 100 IDs per request');
    // Every DC together, count 1: median of 3,000 and 4,000 requests/s.
    expect(md).toContain('| HTTP `POST …/ids?count=1` | **all** | 3.5 k/s (3–4) | 3.5 k/s (3–4) |');
    expect(md).toContain('| library `await next()` | dc1 | 125 k/s (100–150) |');
    expect(md).toContain('| library `await take(100)` | **all** | 10 k/s | 1 M/s |');
    expect(md).toMatch(/\| 1 \| 1\.5 % \(1–2\) \| 350× \(200–500\) \| 350× \(200–500\) \|/);
    expect(md).toMatch(/\| 100 \| 20 % \| 40× \| 40× \|/);
    expect(md).toContain('Every service exited 0 on SIGTERM.');
    expect(md).toContain('1,234,567 IDs handed out by the services in the warm-ups');
    expect(md).toContain('none repeated.');
    expect(md).toContain(
      'Context, not a target: Meituan Leaf publishes close to 50,000 requests/s',
    );
    expect(md).toContain('3.5 k/s (3–4) requests with p99.9 1.8 ms (1.6–2)');
    expect(md).toContain('Machine: Test CPU 9000, 2 cores');
    expect(md).toContain('did not run (`--http-only`)');
    expect(md).not.toContain('allocator processes and the benchmark');

    const ratios = report.json.summary.ratios.filter((r) => r.key.startsWith('httpVsLibrary'));
    expect(ratios.map((r) => [r.key, r.value.median])).toEqual([
      ['httpVsLibrary1', 0.015],
      ['httpVsLibrary100', 0.2],
    ]);
    expect(md).toContain('| HTTP `POST …/ids?count=100` | **all** | 2 k/s | 200 k/s |');
    expect(report.json.raw.http).toBe(HTTP);
    // The overload run: 30,400 answers in 2 s; RSS 100 MiB before, 150 at its peak.
    expect(md).toContain('### Overload');
    expect(md).toContain('with `--max-pending-requests 50`, under 1,000 connections');
    expect(md).toContain(
      '| 400 | 30,000 | 0 | 200/s | 15.2 k/s | 100 MiB | 150 MiB | 120 MiB | 1.5× | 0.933× |',
    );
    // The halves of the load: [110, 150] then [140, 120].
    expect(md).toContain(
      "answered 503 `IDGEN_OVERLOADED` at once, and the service's memory peaked at 1.5× its level before the load; its second half peaked at 0.933× its first: bounded.",
    );
    expect(md).toContain('Its 2xx answers held 4,000,000 IDs: none repeated.');
    expect(report.json.summary.http?.overload).toMatchObject({ rssPeakRatio: 1.5 });
    // The report passes the repository's formatter as written.
    await expect(formatMarkdown(md, 'bench/REPORT.md')).resolves.toContain('## 5. HTTP service');
  });

  it('says so when the phase failed, services misbehaved or IDs repeated', () => {
    const failed: HttpResult = {
      ...HTTP,
      counts: [
        { count: 1, runs: [] },
        { count: 100, runs: [] },
      ],
      services: [{ dc: 'dc1', readyMs: Number.NaN, exitCode: null }],
      uniqueness: { ids: 10, duplicates: 2 },
      failure:
        'idgen-cass serve in dc2 was not ready (exit code 3); the end of its stderr:\nlong log',
    };
    const { markdown, json } = buildReport(raw(failed));
    expect(markdown).toContain(
      '**The phase stopped early:** idgen-cass serve in dc2 was not ready (exit code 3); the end of its stderr. The tables hold what was measured before.',
    );
    expect(markdown).toContain('Nothing was measured.');
    expect(markdown).not.toContain('### 1 ID per request');
    expect(markdown).toContain('dc1 ready after –, exit none (killed)');
    expect(markdown).toContain('**Not every service exited 0 on SIGTERM.**');
    expect(markdown).toContain('**2 repeated.**');
    expect(markdown).toContain('This run measured no single-ID requests to set beside it.');
    expect(markdown).not.toContain('long log');
    expect(json.summary.ratios.some((r) => r.key.startsWith('httpVsLibrary'))).toBe(false);
  });

  it('says so when the overload run shed nothing, and leaves it out when absent', () => {
    const calm = {
      ...HTTP.overload!,
      ok: 900,
      overloaded: 0,
      failureMessages: ['500 IDGEN_X'],
      uniqueness: { ids: 9_000_000, duplicates: 3 },
    };
    const { markdown } = buildReport(raw({ ...HTTP, overload: calm }));
    expect(markdown).toContain(
      '**No request was answered 503 `IDGEN_OVERLOADED`: this run did not overload the service, and shows nothing about shedding.** Other answers: "500 IDGEN_X". Its 2xx answers held 9,000,000 IDs: **3 repeated.**',
    );
    expect(markdown).not.toContain('at once, and the service');
    const growing = { ...HTTP.overload!, rssMiB: [110, 120, 140, 160] };
    expect(buildReport(raw({ ...HTTP, overload: growing })).markdown).toContain(
      '**its second half peaked at 1.33× its first, above 1.25×: this run does not show its memory bounded.**',
    );
    const oneSample = { ...HTTP.overload!, rssMiB: [110] };
    expect(buildReport(raw({ ...HTTP, overload: oneSample })).markdown).toContain(
      'this run does not show its memory bounded.**',
    );
    const without = buildReport(raw({ ...HTTP, overload: undefined })).markdown;
    expect(without).not.toContain('### Overload');
    expect(without).not.toContain('IDGEN_OVERLOADED');
  });

  it('lists failed requests with their codes', () => {
    const refused = load(1_000, 1, 500_000);
    const withFailures: HttpLoad = {
      ...refused,
      dcs: [
        { ...refused.dcs[0]!, non2xx: 7, failureMessages: ['503 IDGEN_DEADLINE_EXCEEDED'] },
        refused.dcs[1]!,
      ],
    };
    const { markdown } = buildReport(
      raw({
        ...HTTP,
        counts: [{ count: 1, runs: [{ service: withFailures, library: load(100_000, 1, 1_000) }] }],
      }),
    );
    expect(markdown).toMatch(/\| HTTP `POST …\/ids\?count=1` \| dc1 \|[^\n]*\| 7 \| 0 \|/);
    expect(markdown).toContain('Failed requests and calls: "503 IDGEN_DEADLINE_EXCEEDED".');
  });
});
