/**
 * `idgen-cass serve` as real processes, one per DC, against the real multi-DC cluster, called
 * with a real HTTP client (fetch): IDs from every DC's service are unique; a DC cut off from the
 * others keeps serving from its ranges, and answers 503 with Retry-After once they are spent;
 * SIGTERM lets every request in flight finish with a 2xx, gives the unused IDs back and exits 0;
 * the hostile-input battery (test/support/serve-battery.ts) holds on the real store too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { connect, createServer, type IdGen } from '../../src/index.js';
import { clusterInfo, faults, withKeyspace } from '../support/cluster.js';
import { runBattery } from '../support/serve-battery.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = join(ROOT, 'src/cli/main.ts');

const ks = withKeyspace('serve');
let admin: IdGen;
const running = new Set<Service>();

beforeAll(async () => {
  admin = await connect(ks.connection('dc1'));
});

afterEach(async () => {
  // A test that failed half-way leaves no service behind.
  for (const service of running) service.child.kill('SIGKILL');
  await Promise.all([...running].map((service) => service.exited));
  running.clear();
});

afterAll(async () => {
  await admin?.close();
});

/** A pino line of a service's stderr. */
interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [key: string]: unknown;
}

interface Service {
  readonly dc: string;
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`, from its "listening" line. */
  readonly url: string;
  readonly exited: Promise<number | null>;
  stderr(): string;
  logs(): LogLine[];
}

/**
 * Spawns `idgen-cass serve` in `dc`, configured through the environment as a deployment would
 * be (`env` overrides it), and collects its stderr. Every test's services are killed after it.
 */
function spawnServe(dc: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Service {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', MAIN, 'serve', '--host', '127.0.0.1', ...args],
    {
      cwd: ROOT,
      env: {
        ...withoutIdgenVariables(process.env),
        IDGEN_CONTACT_POINTS: ks.contactPoints(dc).join(','),
        IDGEN_DC: dc,
        IDGEN_KEYSPACE: ks.name,
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close', not 'exit': stderr has been read to its end by then.
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => resolve(code)),
  );
  const logs = () =>
    stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  const service: Service = { dc, child, url: '', exited, stderr: () => stderr, logs };
  running.add(service);
  return service;
}

/** Starts `idgen-cass serve` in `dc` on a free port and resolves once it listens. */
async function startService(dc: string, args: readonly string[] = []): Promise<Service> {
  const service = spawnServe(dc, ['--port', '0', ...args]);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const listening = service.logs().find((line) => line.msg === 'listening');
    if (listening !== undefined) {
      expect(listening).toMatchObject({ dc, keyspace: ks.name });
      return { ...service, url: String(listening['address']) };
    }
    if (service.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(
        `serve in ${dc} did not start (exit ${service.child.exitCode}):\n${service.stderr()}`,
      );
    }
    await sleep(100);
  }
}

/** Sends SIGTERM and resolves with the exit code. */
async function stop(service: Service): Promise<number | null> {
  service.child.kill('SIGTERM');
  const code = await service.exited;
  for (const entry of running) if (entry.child === service.child) running.delete(entry);
  return code;
}

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: Record<string, unknown>;
}

async function call(service: Service, method: 'GET' | 'POST', path: string): Promise<Answer> {
  const response = await fetch(`${service.url}${path}`, { method });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** `count` IDs of `sequence` from `service`, as decimal strings (exact for every domain). */
async function draw(service: Service, sequence: string, count: number): Promise<Answer> {
  return call(service, 'POST', `/v1/sequences/${sequence}/ids?count=${count}&format=string`);
}

function idsOf(answer: Answer): string[] {
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body['ids'] as string[];
}

function duplicates(ids: readonly string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
}

describe('idgen-cass serve in every DC', () => {
  it('hands out IDs and ranges that are unique across the DCs', async () => {
    await admin.createSequence('shared', { dcRangeSize: 20_000, blockSize: 200 });
    const services = await Promise.all(ks.dcs.map((dc) => startService(dc)));
    const all: string[] = [];
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        services.flatMap((service) => [
          draw(service, 'shared', 150),
          draw(service, 'shared', 1),
          call(service, 'POST', '/v1/sequences/shared/ranges?count=120&format=string'),
        ]),
      );
      for (const answer of answers) {
        if ('ids' in answer.body) {
          all.push(...idsOf(answer));
          continue;
        }
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        const first = BigInt(answer.body['first'] as string);
        const last = BigInt(answer.body['last'] as string);
        expect(last - first + 1n).toBe(120n);
        for (let id = first; id <= last; id++) all.push(String(id));
      }
    }
    expect(all).toHaveLength(services.length * 10 * (150 + 1 + 120));
    expect(duplicates(all)).toEqual([]);

    // JSON numbers by default for an int32 sequence; errors as JSON with their codes.
    const [dc1] = services;
    const numbers = await call(dc1!, 'POST', '/v1/sequences/shared/ids?count=2');
    expect(numbers.body['ids']).toEqual([expect.any(Number), expect.any(Number)]);
    expect(await call(dc1!, 'POST', '/v1/sequences/missing/ids')).toMatchObject({
      status: 404,
      body: { code: 'IDGEN_SEQUENCE_NOT_FOUND' },
    });
    expect(await call(dc1!, 'POST', '/v1/sequences/shared/ids?count=0')).toMatchObject({
      status: 400,
      body: { code: 'IDGEN_INVALID_COUNT' },
    });
    for (const service of services) {
      expect(await call(service, 'GET', '/healthz')).toMatchObject({ status: 200 });
      expect(await call(service, 'GET', '/readyz')).toMatchObject({
        status: 200,
        body: {
          status: 'ready',
          dc: service.dc,
          sequences: expect.arrayContaining([
            expect.objectContaining({ sequence: 'shared', ready: true }),
          ]) as unknown,
        },
      });
      const metrics = await fetch(`${service.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(/^process_cpu_user_seconds_total /m);
      const openapi = await call(service, 'GET', '/openapi.json');
      expect(Object.keys(openapi.body['paths'] as object)).toContain('/v1/sequences/{name}/ids');
      // The status page opens its admin connection at its first request, not at start.
      const page = await fetch(`${service.url}/status`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await page.text()).toContain('shared');
    }
    for (const service of services) expect(await stop(service), service.stderr()).toBe(0);
  });

  it('refuses a port another process listens on, with exit code 1', async () => {
    const taken: Server = createTcpServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    try {
      const service = spawnServe('dc1', ['--port', String(port)]);
      expect(await service.exited, service.stderr()).toBe(1);
      expect(service.stderr()).toContain(`Invalid --port (IDGEN_SERVE_PORT): received ${port}`);
    } finally {
      taken.close();
    }
  });

  it('refuses a keyspace without the idgen tables at start, with exit code 1', async () => {
    const service = spawnServe('dc1', ['--port', '0'], { IDGEN_KEYSPACE: `${ks.name}_misspelt` });
    // A service that started anyway would listen for good: ended here, and the test fails.
    const timer = setTimeout(() => service.child.kill('SIGKILL'), 60_000);
    const code = await service.exited;
    clearTimeout(timer);
    const stderr = service.stderr();
    expect(code, stderr).toBe(1);
    expect(stderr).toContain(`"${ks.name}_misspelt"`);
    expect(stderr).toContain('a keyspace that holds the idgen tables');
    expect(stderr).not.toContain('listening');
  });

  it('lets every request in flight at SIGTERM finish with a 2xx, gives the IDs back, exits 0', async () => {
    // Fixed blocks of 1,000 in one large DC range: requests of 400 IDs often wait for a claim,
    // so that they are in flight, and the give-back leaves the DC right after the last ID served.
    await admin.createSequence('drain', { dcRangeSize: 1_000_000, blockSize: 1_000 });
    const service = await startService('dc1', ['--sequence', 'drain', '--log-level', 'debug']);
    idsOf(await draw(service, 'drain', 1));
    const received = () => service.logs().filter((line) => line.msg === 'incoming request').length;
    const before = received();
    const requests = Array.from({ length: 30 }, () => draw(service, 'drain', 400));
    // Every request has reached the service (it logged it) before the signal.
    const deadline = Date.now() + 30_000;
    while (received() < before + requests.length && Date.now() < deadline) await sleep(5);
    expect(received()).toBe(before + requests.length);
    const code = stop(service);
    const answers = await Promise.all(requests);
    expect(await code, service.stderr()).toBe(0);
    const served = answers.flatMap(idsOf);
    expect(served).toHaveLength(30 * 400);
    expect(duplicates(served)).toEqual([]);
    expect(service.logs().map((line) => line.msg)).toContain(
      'stopped; the unused IDs went back to the DC where they could',
    );
    expect(service.logs().filter((line) => line.level >= 40)).toEqual([]);

    // The unused IDs went back: the DC's next block starts right after the last ID served.
    const highest = served.map(BigInt).reduce((a, b) => (a > b ? a : b));
    expect(BigInt(await admin.sequence('drain').next())).toBe(highest + 1n);
  });
});

describe('the service on the real store under hostile input', () => {
  it('never crashes nor answers 5xx but 503 with Retry-After; every ID once, counted only once received', async () => {
    await admin.createSequence('hostile', { dcRangeSize: 2_000, blockSize: 20, maxBlockSize: 50 });
    await admin.createSequence('hostile_wide', {
      domain: 'int63',
      start: 2n ** 60n,
      blockSize: 20,
    });
    const ids = await connect(ks.connection('dc1'));
    const tokens = ['first-token', 'second.token~2=='];
    const app = createServer(ids, { tokens, maxPendingRequests: 4 });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.server.address() as AddressInfo;
      const sequences = ['hostile', 'hostile_wide'];
      const statuses = await runBattery({ host: '127.0.0.1', port, ids, sequences, tokens }, 15);
      console.info(`serve battery: answers by status ${JSON.stringify([...statuses])}`);
      expect(statuses.get(200)).toBeGreaterThan(0);
    } finally {
      await app.close();
      await ids.close();
    }
  });
});

describe.runIf(clusterInfo().faults)('idgen-cass serve in a DC cut off from the others', () => {
  afterAll(async () => {
    await faults.heal();
  });

  it('keeps serving from its DC ranges, then 503 with Retry-After once they are spent', async () => {
    // "cut": 20,000 IDs per grant, far more than dc3 draws while cut off; "tiny": grants of
    // 1,000, spent within the partition.
    await admin.createSequence('cut', { dcRangeSize: 20_000, blockSize: 100 });
    await admin.createSequence('tiny', { dcRangeSize: 1_000, blockSize: 100 });
    // Only these two: readiness then does not depend on the other tests' sequences, which dc3
    // could not get a first range of while cut off.
    const services = await Promise.all(
      ks.dcs.map((dc) => startService(dc, ['--timeout', '8s', '--sequence', 'cut,tiny'])),
    );
    const dc3 = services.find((service) => service.dc === 'dc3')!;
    // Each sequence is its own ID space: uniqueness is checked per sequence.
    const cut: string[] = [];
    const tiny: string[] = [];
    // Every service holds ranges of both sequences before the cut.
    for (const service of services) {
      expect(await call(service, 'GET', '/readyz'), service.stderr()).toMatchObject({
        status: 200,
      });
      cut.push(...idsOf(await draw(service, 'cut', 10)));
      tiny.push(...idsOf(await draw(service, 'tiny', 10)));
    }

    await faults.partition('dc3');
    try {
      // Every DC keeps answering; dc3 from the ranges it holds. At most 200 rounds (4,000 IDs
      // per DC): 15 s made 934 rounds here once (18,680 of dc3's 20,000 IDs), and a run that made
      // more spent them and answered 503.
      const started = Date.now();
      let rounds = 0;
      while (Date.now() - started < 15_000 && rounds < 200) {
        const answers = await Promise.all(services.map((service) => draw(service, 'cut', 20)));
        for (const answer of answers) cut.push(...idsOf(answer));
        rounds++;
      }
      console.info(`serve partition: ${rounds} rounds in ${Date.now() - started} ms`);
      expect(rounds).toBeGreaterThan(10);
      expect(await call(dc3, 'GET', '/readyz')).toMatchObject({
        status: 200,
        body: { status: 'ready', dc: 'dc3' },
      });

      // "tiny" in dc3: its ranges run out, and no new one can be granted. A request for more
      // than the IDs held is refused with those left for smaller ones, which then take them.
      let refused: Answer | undefined;
      for (const count of [100, 1]) {
        refused = undefined;
        for (let i = 0; i < 200 && refused === undefined; i++) {
          const answer = await draw(dc3, 'tiny', count);
          if (answer.status === 200) tiny.push(...idsOf(answer));
          else refused = answer;
        }
      }
      expect(refused).toMatchObject({ status: 503 });
      expect(Number(refused!.retryAfter)).toBeGreaterThan(0);
      // SERIAL's own failure, or the deadline when no SERIAL round had failed by then.
      expect(['IDGEN_SERIAL_UNAVAILABLE', 'IDGEN_DEADLINE_EXCEEDED']).toContain(
        String(refused!.body['code']),
      );
      console.info(`serve partition: dc3 refused "tiny" with ${String(refused!.body['code'])}`);
      // Still ready: it serves "cut" from its DC range. Asked about "tiny" alone, it is not.
      expect(await call(dc3, 'GET', '/readyz')).toMatchObject({
        status: 200,
        body: {
          status: 'degraded',
          sequences: expect.arrayContaining([
            expect.objectContaining({ sequence: 'tiny', ready: false }),
            expect.objectContaining({ sequence: 'cut', ready: true }),
          ]) as unknown,
        },
      });
      expect(await call(dc3, 'GET', '/readyz?sequence=cut')).toMatchObject({
        status: 200,
        body: { status: 'ready' },
      });
      expect(await call(dc3, 'GET', '/readyz?sequence=tiny')).toMatchObject({
        status: 503,
        body: { status: 'not_ready' },
      });
    } finally {
      await faults.heal();
    }

    // Healed: dc3 gets new ranges of "tiny" again.
    const healedBy = Date.now() + 90_000;
    let healed: Answer | undefined;
    while (healed?.status !== 200 && Date.now() < healedBy) {
      healed = await draw(dc3, 'tiny', 100);
      if (healed.status !== 200) await sleep(1_000);
    }
    expect(healed?.status, dc3.stderr()).toBe(200);
    tiny.push(...idsOf(healed!));
    for (const service of services) tiny.push(...idsOf(await draw(service, 'tiny', 50)));
    expect(duplicates(cut)).toEqual([]);
    expect(duplicates(tiny)).toEqual([]);
    for (const service of services) expect(await stop(service), service.stderr()).toBe(0);
  });
});

function withoutIdgenVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.startsWith('IDGEN_')));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
