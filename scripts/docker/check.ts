/** The Docker paths a user runs, for real: docker-compose.yml's, and testcontainers'. */
import { CheckError, run, waitFor, type Log } from './steps.js';

const COMPOSE_PROJECT = 'idgen-cass-check';
const SERVICES = [
  { dc: 'dc1', service: 'serve-dc1', node: '172.28.0.11', port: 8081 },
  { dc: 'dc2', service: 'serve-dc2', node: '172.28.0.12', port: 8082 },
  { dc: 'dc3', service: 'serve-dc3', node: '172.28.0.13', port: 8083 },
] as const;
const SEQUENCE = 'docker_check';

export class ComposeCluster {
  constructor(private readonly compose: readonly string[]) {}

  private command(...args: string[]): Promise<string> {
    const [program, ...rest] = this.compose;
    return run(program!, [...rest, '-p', COMPOSE_PROJECT, '--profile', 'serve', ...args]);
  }

  async up(log: Log): Promise<void> {
    await this.command('up', '-d');
    for (const { service } of SERVICES) {
      const id = await this.containerId(service);
      const healthy = async () => (await inspect(id, '{{.State.Health.Status}}')) === 'healthy';
      await waitFor(healthy, 120_000, `${service}'s HEALTHCHECK reporting healthy`, 2_000);
      log(`${service}: healthy`);
    }
  }

  async cli(log: Log): Promise<bigint[]> {
    const idgen = (node: string, dc: string, ...args: string[]) => {
      const env = ['-e', `IDGEN_CONTACT_POINTS=${node}`, '-e', `IDGEN_DC=${dc}`];
      const image = ['--entrypoint', 'idgen-cass', 'idgen-init'];
      return this.command('run', '--rm', '--no-deps', ...env, ...image, ...args);
    };
    const [first] = SERVICES;
    await idgen(first.node, first.dc, 'init', '--replication', 'dc1:1,dc2:1,dc3:1');
    await idgen(first.node, first.dc, 'seed', SEQUENCE, '--if-not-exists');
    const drawn: bigint[] = [];
    for (const { node, dc } of SERVICES) {
      const ids = parseIds(await idgen(node, dc, '--json', 'next', SEQUENCE, '-n', '3'));
      log(`next in ${dc}: ${ids.join(', ')}`);
      drawn.push(...ids);
    }
    return drawn;
  }

  async endpoints(log: Log): Promise<bigint[]> {
    const drawn: bigint[] = [];
    for (const { dc, port } of SERVICES) {
      const base = `http://127.0.0.1:${port}`;
      const ids = await request(`${base}/v1/sequences/${SEQUENCE}/ids?count=3`, 'POST');
      const range = await request(`${base}/v1/sequences/${SEQUENCE}/ranges?count=5`, 'POST');
      for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json']) {
        await request(`${base}${path}`, 'GET');
      }
      const fromIds = parseIds(JSON.stringify((JSON.parse(ids) as { ids: unknown[] }).ids));
      const { first, last } = JSON.parse(range) as Record<'first' | 'last', number | string>;
      log(`${dc} service: ids ${fromIds.join(', ')}; range ${first}..${last}`);
      drawn.push(...fromIds);
      for (let id = BigInt(first); id <= BigInt(last); id++) drawn.push(id);
    }
    return drawn;
  }

  /** SIGTERM to one service: it exits 0 after giving its unused IDs back. */
  async sigterm(log: Log): Promise<void> {
    const { service } = SERVICES[0];
    const id = await this.containerId(service);
    await run('docker', ['kill', '--signal', 'SIGTERM', id]);
    const exited = async () => (await inspect(id, '{{.State.Running}}')) === 'false';
    await waitFor(exited, 40_000, `${service} exiting after SIGTERM`);
    const code = await inspect(id, '{{.State.ExitCode}}');
    const logs = await run('docker', ['logs', '--tail', '20', id], { withStderr: true });
    if (code !== '0')
      throw new CheckError(`${service} exited with ${code} after SIGTERM:\n${logs}`);
    if (!logs.includes('the unused IDs went back'))
      throw new CheckError(`${service} exited 0 but did not log giving its IDs back:\n${logs}`);
    log(`${service}: exit 0 after SIGTERM, unused IDs given back`);
  }

  async printLogs(): Promise<void> {
    await this.command('logs', '--no-color', '--tail', '25').then(
      (out) => console.log(out),
      (error: unknown) => console.error(`could not read the containers' logs: ${String(error)}`),
    );
  }

  async down(): Promise<void> {
    await this.command('down', '-v', '--remove-orphans');
  }

  private async containerId(service: string): Promise<string> {
    const id = (await this.command('ps', '-q', service)).trim();
    if (!id) throw new CheckError(`compose has no container for ${service}`);
    return id;
  }
}

/** The integration tests on testcontainers; without Ryuk, what they leave is removed by label. */
export async function testcontainersTests(files: readonly string[]): Promise<void> {
  const containersBefore = new Set(await labelled('ps', '-a'));
  const networksBefore = new Set(await labelled('network', 'ls'));
  try {
    await run('npm', ['run', 'build']);
    // No fault tests on containers; the host override spares a probe that pulls alpine.
    const output = await run('npx', ['vitest', 'run', '--project', 'integration', ...files], {
      env: {
        IDGEN_TEST_CLUSTER: 'containers',
        IDGEN_CASSANDRA: '',
        IDGEN_REQUIRE_FAULTS: '',
        IDGEN_REQUIRE_ALL_TESTS: '',
        TESTCONTAINERS_RYUK_DISABLED: 'true',
        TESTCONTAINERS_HOST_OVERRIDE: 'localhost',
      },
      stream: true,
      withStderr: true,
    });
    if (!output.includes('[cluster] testcontainers cluster'))
      throw new CheckError('the integration tests did not run on a testcontainers cluster');
  } finally {
    const containers = (await labelled('ps', '-a')).filter((id) => !containersBefore.has(id));
    if (containers.length > 0) await run('docker', ['rm', '-f', '-v', ...containers]);
    const networks = (await labelled('network', 'ls')).filter((id) => !networksBefore.has(id));
    if (networks.length > 0) await run('docker', ['network', 'rm', ...networks]);
  }
}

async function labelled(...list: string[]): Promise<string[]> {
  const out = await run('docker', [...list, '-q', '--filter', 'label=org.testcontainers=true']);
  return out.split('\n').filter(Boolean);
}

async function inspect(id: string, format: string): Promise<string> {
  return (await run('docker', ['inspect', '--format', format, id])).trim();
}

async function request(url: string, method: 'GET' | 'POST'): Promise<string> {
  console.log(`$ curl -X ${method} ${url}`);
  const response = await fetch(url, { method, signal: AbortSignal.timeout(10_000) });
  const body = await response.text();
  if (!response.ok) throw new CheckError(`${method} ${url} answered ${response.status}: ${body}`);
  return body;
}

function parseIds(json: string): bigint[] {
  const ids = json.match(/-?\d+/g) ?? [];
  if (ids.length === 0) throw new CheckError(`no IDs in ${json}`);
  return ids.map(BigInt);
}

export function requireUnique(ids: readonly bigint[]): void {
  const seen = new Set<bigint>();
  const twice = ids.filter((id) => seen.size === seen.add(id).size);
  if (twice.length > 0) throw new CheckError(`IDs handed out twice: ${twice.join(', ')}`);
}
