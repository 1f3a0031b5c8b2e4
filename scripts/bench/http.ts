/**
 * The HTTP phase: one `idgen-cass serve` per DC under autocannon, beside the library called in
 * this process with as many callers per DC; then one more service overloaded, its memory
 * sampled. IDs the services hand out in warm-ups and in the overload run are checked for repeats.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import autocannon from 'autocannon';

import { connect, SERVE_DEFAULTS, type IdGen, type Sequence } from '../../src/index.js';
import type { BenchCluster } from './cluster.js';
import { afterFailure, MAX_FAILURE_MESSAGES } from './draw-loop.js';
import { IdLedger } from './id-ledger.js';
import type {
  BenchSettings,
  HttpDcLoad,
  HttpLoad,
  HttpOverload,
  HttpResult,
  HttpRun,
  HttpServiceInfo,
  Log,
} from './results.js';
import { Histogram, latencySummary, sum, hrNow } from './stats.js';
import { formatNs, formatRate } from './report/format.js';
import { loadRate } from './report/http.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(ROOT, 'src/cli/main.ts');

export const HTTP_COUNTS: readonly number[] = Object.freeze([1, 100]);
const SERVICE_SEQUENCE = 'http_service';
const LIBRARY_SEQUENCE = 'http_library';
/** Default (adaptive) blocks; safe53 keeps IDs JSON numbers. */
const SEQUENCE_OPTIONS = Object.freeze({ domain: 'safe53' as const });
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;
/**
 * The overload run: 20 connections per request the service takes at once, each asking for the
 * most IDs a request may, on fixed blocks of that size, so that requests wait for block claims.
 */
export const OVERLOAD = Object.freeze({
  maxPendingRequests: 50,
  connections: 1_000,
  count: SERVE_DEFAULTS.maxIdsPerRequest,
  sequence: 'http_overload',
  sequenceOptions: Object.freeze({
    domain: 'safe53' as const,
    blockSize: SERVE_DEFAULTS.maxIdsPerRequest,
    dcRangeSize: 100 * SERVE_DEFAULTS.maxIdsPerRequest,
  }),
  sampleMs: 200,
  /** Long enough for the heap to settle: RSS climbs for the first 10–20 s of any load. */
  seconds: 30,
});

type ServiceTarget = Readonly<{ dc: string; url: string }>;
type DcMeasure = Readonly<{ load: HttpDcLoad; histogram: Histogram }>;

export interface LoadPlan {
  readonly sequence: string;
  readonly count: number;
  readonly connections: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
}

function combine(measures: readonly DcMeasure[]): HttpLoad {
  const histogram = Histogram.merged(measures.map((m) => m.histogram));
  return { dcs: measures.map((m) => m.load), latency: latencySummary(histogram) };
}

function idsOf(body: string): number[] {
  const { ids } = JSON.parse(body) as { ids?: unknown };
  if (!Array.isArray(ids) || !ids.every((id): id is number => typeof id === 'number')) {
    throw new Error(`not an answer of the ids endpoint: ${body.slice(0, 200)}`);
  }
  return ids;
}

function failureOf(status: number, body: string): string {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    if (typeof code === 'string') return `${status} ${code}`;
  } catch {
    // not JSON
  }
  return `${status} ${body.slice(0, 100)}`;
}

type OnResponse = (status: number, body: string, headers: Record<string, unknown>) => void;

/** One autocannon run; `onResponse` sees every answer, body and headers (at a cost per answer). */
async function cannon(
  target: ServiceTarget,
  plan: LoadPlan,
  seconds: number,
  onResponse?: OnResponse,
) {
  const histogram = new Histogram();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const options: autocannon.Options = {
      url: `${target.url}/v1/sequences/${plan.sequence}/ids?count=${plan.count}`,
      method: 'POST',
      connections: plan.connections,
      duration: seconds,
    };
    if (onResponse !== undefined) {
      options.requests = [{ onResponse: (s, b, _c, headers) => onResponse(s, b, headers ?? {}) }];
    }
    const instance = autocannon(options, (error: unknown, result: autocannon.Result) => {
      if (error === null || error === undefined) resolve(result);
      else reject(error instanceof Error ? error : new Error(String(error)));
    });
    // autocannon's own histogram keeps whole milliseconds: too coarse.
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      if (statusCode >= 200 && statusCode < 300) histogram.record(responseTimeMs * 1e6);
    });
  });
  return { result, histogram };
}

/**
 * A warm-up whose IDs all go to `ledger`, then the measured run, which keeps no body (its IDs:
 * 2xx answers × count, as the warm-up checked).
 * @throws when a 2xx answer of the warm-up is not a list of `count` IDs.
 */
export async function loadService(
  target: ServiceTarget,
  plan: LoadPlan,
  ledger: IdLedger,
): Promise<DcMeasure> {
  const failures = new Set<string>();
  if (plan.warmupSeconds > 0) {
    const bodies: string[] = [];
    await cannon(target, plan, plan.warmupSeconds, (status, body) => {
      if (status >= 200 && status < 300) bodies.push(body);
      else if (failures.size < MAX_FAILURE_MESSAGES)
        failures.add(`warm-up: ${failureOf(status, body)}`);
    });
    for (const body of bodies) {
      const drawn = idsOf(body);
      if (drawn.length !== plan.count) {
        throw new Error(`${target.dc} answered ${drawn.length} IDs to ?count=${plan.count}`);
      }
      ledger.add(drawn);
    }
    ledger.compact();
  }
  const { result, histogram } = await cannon(target, plan, plan.seconds);
  for (const [status, { count }] of Object.entries(result.statusCodeStats ?? {})) {
    if (!status.startsWith('2')) failures.add(`${status} × ${count ?? 0}`);
  }
  if (result.errors > 0) {
    failures.add(`${result.errors} connection errors (${result.timeouts} timeouts)`);
  }
  return {
    load: {
      dc: target.dc,
      ok: result['2xx'],
      ids: result['2xx'] * plan.count,
      seconds: result.duration,
      non2xx: result.non2xx,
      errors: result.errors,
      latency: latencySummary(histogram),
      failureMessages: [...failures],
    },
    histogram,
  };
}

export async function loadServices(
  targets: readonly ServiceTarget[],
  plan: LoadPlan,
  ledger: IdLedger,
): Promise<HttpLoad> {
  return combine(await Promise.all(targets.map((t) => loadService(t, plan, ledger))));
}

/** A process's resident set from /proc (Linux), in MiB to 0.1. */
export async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`/proc/${pid}/status has no VmRSS line`);
  return Math.round((Number(kib) / 1024) * 10) / 10;
}

async function sampleRss(pid: number, ms: number): Promise<number[]> {
  const samples: number[] = [];
  for (const end = Date.now() + ms; Date.now() < end; await sleep(OVERLOAD.sampleMs)) {
    samples.push(await rssMiB(pid));
  }
  return samples;
}

/**
 * Samples the RSS of `pid` (the service at `target`) for a second, then loads the service with
 * no warm-up while sampling it on. Every 2xx answer's IDs are checked for repeats; a 503
 * `IDGEN_OVERLOADED` counts as shed only with its `Retry-After` header.
 */
export async function overloadService(
  target: ServiceTarget,
  pid: number,
  plan: LoadPlan,
  maxPendingRequests: number,
): Promise<HttpOverload> {
  const rssBeforeMiB = await sampleRss(pid, 1_000);
  const ledger = new IdLedger();
  const failures = new Set<string>();
  let overloaded = 0;
  const onResponse: OnResponse = (status, body, headers) => {
    if (status >= 200 && status < 300) return ledger.add(idsOf(body));
    const failure = failureOf(status, body);
    const retryAfter = Object.keys(headers).some((name) => name.toLowerCase() === 'retry-after');
    if (failure === '503 IDGEN_OVERLOADED' && retryAfter) overloaded++;
    else if (failures.size < MAX_FAILURE_MESSAGES) failures.add(failure);
  };
  const [{ result }, rssDuring] = await Promise.all([
    cannon(target, plan, plan.seconds, onResponse),
    sampleRss(pid, plan.seconds * 1_000),
  ]);
  ledger.compact();
  if (result.errors > 0) failures.add(`${result.errors} connection errors`);
  return {
    dc: target.dc,
    maxPendingRequests,
    connections: plan.connections,
    count: plan.count,
    seconds: result.duration,
    ok: result['2xx'],
    overloaded,
    other: Math.max(0, result.non2xx - overloaded) + result.errors,
    failureMessages: [...failures],
    rssSampleMs: OVERLOAD.sampleMs,
    rssBeforeMiB,
    rssMiB: rssDuring,
    uniqueness: { ids: ledger.added, duplicates: ledger.duplicates },
  };
}

/** The library doing what the endpoint does: `plan.connections` callers per DC. */
export async function loadLibrary(
  targets: readonly Readonly<{ dc: string; sequence: Sequence<number> }>[],
  plan: LoadPlan,
): Promise<HttpLoad> {
  const measureFrom = hrNow() + plan.warmupSeconds * 1e9;
  const end = measureFrom + plan.seconds * 1e9;
  const measures = targets.map(async ({ dc, sequence }): Promise<DcMeasure> => {
    const histogram = new Histogram();
    const failures = new Set<string>();
    const load = { dc, ok: 0, ids: 0, seconds: 0, non2xx: 0, errors: 0 };
    const call = async (): Promise<number> => {
      if (plan.count === 1) return (await sequence.next(), 1);
      const range = await sequence.take(plan.count);
      return range.last - range.first + 1;
    };
    const caller = async (): Promise<void> => {
      while (hrNow() < end) {
        const t0 = hrNow();
        try {
          const drawn = await call();
          if (t0 >= measureFrom) {
            histogram.record(hrNow() - t0);
            load.ok++;
            load.ids += drawn;
          }
        } catch (error) {
          if (t0 >= measureFrom) load.non2xx++;
          await afterFailure(error, failures);
        }
      }
    };
    await Promise.all(Array.from({ length: plan.connections }, caller));
    const seconds = (hrNow() - measureFrom) / 1e9;
    const latency = latencySummary(histogram);
    return { load: { ...load, seconds, latency, failureMessages: [...failures] }, histogram };
  });
  return combine(await Promise.all(measures));
}

class ServiceProcess {
  private stderr = '';
  private readonly exited: Promise<number | null>;
  private readonly spawnedAt = Date.now();
  readyMs = NaN;

  private constructor(
    readonly dc: string,
    readonly child: ChildProcess,
  ) {
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-20_000);
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static spawn(
    cluster: BenchCluster,
    dc: string,
    sequence: string,
    serveArgs: readonly string[] = [],
  ) {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('IDGEN_')),
    );
    const args = [
      ...['--import', 'tsx', MAIN, '--contact-points', cluster.contactPoints[dc]!.join(',')],
      ...['--dc', dc, '--keyspace', cluster.keyspace, 'serve', '--host', '127.0.0.1'],
      ...['--port', '0', '--sequence', sequence, ...serveArgs],
    ];
    const options: SpawnOptions = { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] };
    return new ServiceProcess(dc, spawn(process.execPath, args, options));
  }

  /** The service's URL, once `/readyz` answers 200; throws if it exits or times out. */
  async ready(): Promise<string> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    let url: string | undefined;
    while (Date.now() < deadline && this.child.exitCode === null) {
      url ??= this.listeningUrl();
      if (url !== undefined) {
        const status = await fetch(`${url}/readyz`)
          .then((response) => response.status)
          .catch(() => 0);
        if (status === 200) {
          this.readyMs = Date.now() - this.spawnedAt;
          return url;
        }
      }
      await sleep(200);
    }
    throw new Error(
      `idgen-cass serve in ${this.dc} was not ready within ${START_TIMEOUT_MS / 1000} s (exit code ${this.child.exitCode ?? 'none yet'}); the end of its stderr:\n${this.stderr}`,
    );
  }

  private listeningUrl(): string | undefined {
    for (const line of this.stderr.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line) as { msg?: unknown; address?: unknown };
        if (entry.msg === 'listening' && typeof entry.address === 'string') return entry.address;
      } catch {
        // a line cut by the tail: the next poll reads it whole
      }
    }
    return undefined;
  }

  /** SIGTERM, then its exit code; null if it had to be killed. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.child.kill('SIGTERM');
    const late = sleep(STOP_TIMEOUT_MS).then(() => 'late' as const);
    const outcome = await Promise.race([this.exited, late]);
    if (outcome !== 'late') return outcome;
    this.child.kill('SIGKILL');
    await this.exited;
    return null;
  }
}

/** {@link run} never throws: a failure ends the phase early, keeping what was measured. */
export class HttpPhase {
  private services: ServiceProcess[] = [];
  private overloaded: ServiceProcess | undefined;
  private stopping: Promise<HttpServiceInfo[]> | undefined;

  constructor(
    private readonly settings: BenchSettings,
    private readonly cluster: BenchCluster,
    private readonly log: Log,
  ) {}

  async run(): Promise<HttpResult> {
    const { settings, cluster, log } = this;
    const ledger = new IdLedger();
    const counts = HTTP_COUNTS.map((count) => ({ count, runs: [] as HttpRun[] }));
    const libraries: IdGen[] = [];
    let overload: HttpOverload | undefined;
    let failure: string | undefined;
    try {
      await cluster.createSequence(SERVICE_SEQUENCE, SEQUENCE_OPTIONS);
      await cluster.createSequence(LIBRARY_SEQUENCE, SEQUENCE_OPTIONS);
      this.services = cluster.dcs.map((dc) => ServiceProcess.spawn(cluster, dc, SERVICE_SEQUENCE));
      const targets = await Promise.all(
        this.services.map(async (service) => ({ dc: service.dc, url: await service.ready() })),
      );
      log(`http: ${targets.map((t) => `${t.dc} ${t.url}`).join(', ')} ready`);
      for (const dc of cluster.dcs) libraries.push(await connect(cluster.connectOptions(dc)));
      const handles = libraries.map((ids) => ({
        dc: ids.dc,
        sequence: ids.sequence(LIBRARY_SEQUENCE),
      }));
      for (let r = 0; r < settings.runs; r++) {
        for (const entry of counts) {
          const plan = {
            count: entry.count,
            connections: settings.httpConnections,
            warmupSeconds: settings.httpWarmupSeconds,
            seconds: settings.httpSeconds,
          };
          const measureService = () =>
            loadServices(targets, { ...plan, sequence: SERVICE_SEQUENCE }, ledger);
          // Alternate which side goes first, so drift of the machine spreads over both.
          const serviceFirst = r % 2 === 1 ? await measureService() : undefined;
          const library = await loadLibrary(handles, { ...plan, sequence: LIBRARY_SEQUENCE });
          const run = { service: serviceFirst ?? (await measureService()), library };
          entry.runs.push(run);
          log(
            `http run ${r + 1}/${settings.runs} count=${entry.count}: service ${formatRate(loadRate(run.service, 'ok'))} requests, p99.9 ${formatNs(run.service.latency.p999)}, ${sum(run.service.dcs.map((d) => d.non2xx + d.errors))} failed; library ${formatRate(loadRate(run.library, 'ok'))} calls, p99.9 ${formatNs(run.library.latency.p999)}`,
          );
        }
      }
      overload = await this.overload();
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      log(`http: phase stopped early: ${failure}`);
    } finally {
      await Promise.allSettled(libraries.map((ids) => ids.close()));
    }
    const services = await this.stop();
    for (const s of services.filter((s) => s.exitCode !== 0)) {
      log(`http: the service in ${s.dc} exited with ${s.exitCode ?? 'a kill'} after SIGTERM`);
    }
    ledger.compact();
    const duplicates = ledger.duplicates + (overload?.uniqueness.duplicates ?? 0);
    if (duplicates > 0) log(`http: ${duplicates} IDs were handed out twice: a bug`);
    return {
      sequenceOptions: { ...SEQUENCE_OPTIONS },
      serviceRuntime:
        'node --import tsx src/cli/main.ts serve (from source, as the integration test runs it), log level info',
      autocannon: (createRequire(import.meta.url)('autocannon/package.json') as { version: string })
        .version,
      services,
      counts,
      ...(overload === undefined ? {} : { overload }),
      uniqueness: { ids: ledger.added, duplicates: ledger.duplicates },
      ...(failure === undefined ? {} : { failure }),
    };
  }

  /** One more service in the first DC, on a sequence of its own, shedding beyond a few requests. */
  private async overload(): Promise<HttpOverload> {
    const { cluster } = this;
    const dc = cluster.dcs[0]!;
    await cluster.createSequence(OVERLOAD.sequence, OVERLOAD.sequenceOptions);
    const args = ['--max-pending-requests', String(OVERLOAD.maxPendingRequests)];
    const service = ServiceProcess.spawn(cluster, dc, OVERLOAD.sequence, args);
    this.overloaded = service;
    try {
      const target = { dc, url: await service.ready() };
      const plan = { ...OVERLOAD, warmupSeconds: 0 };
      const pid = service.child.pid!;
      const result = await overloadService(target, pid, plan, OVERLOAD.maxPendingRequests);
      this.log(
        `http overload: ${result.ok} 2xx, ${result.overloaded} shed, ${result.other} other, ${result.uniqueness.duplicates} IDs repeated; RSS ${Math.max(...result.rssBeforeMiB)} MiB before, ${Math.max(...result.rssMiB)} MiB peak`,
      );
      return result;
    } finally {
      await service.stop();
    }
  }

  /** Idempotent. */
  stop(): Promise<HttpServiceInfo[]> {
    return (this.stopping ??= Promise.all([
      this.overloaded?.stop(),
      ...this.services.map(async (service) => ({
        dc: service.dc,
        readyMs: service.readyMs,
        exitCode: await service.stop(),
      })),
    ]).then(([, ...services]) => services));
  }
}
