/**
 * The service's deployment files, read without Docker: docker-compose.yml puts one service next
 * to each DC's Cassandra, talking to that DC; the Dockerfile builds and runs what the package
 * ships; the lockfile lets `npm ci --omit=dev` keep the Cassandra driver.
 */

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface ComposeService {
  readonly image?: string;
  readonly build?: string;
  readonly profiles?: readonly string[];
  readonly command?: readonly string[];
  readonly entrypoint?: readonly string[];
  readonly environment?: Readonly<Record<string, string>>;
  readonly ports?: readonly string[];
  readonly depends_on?: Readonly<Record<string, { readonly condition: string }>>;
  readonly networks?: readonly string[] | Readonly<Record<string, { ipv4_address?: string }>>;
  readonly healthcheck?: { readonly test: readonly string[] };
}

const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};

/** The Cassandra services: their DC and address. */
function cassandraServices(): { name: string; dc: string; address: string }[] {
  return Object.entries(compose.services)
    .filter(([, service]) => service.environment?.['CASSANDRA_DC'] !== undefined)
    .map(([name, service]) => ({
      name,
      dc: service.environment!['CASSANDRA_DC']!,
      address: (service.networks as Record<string, { ipv4_address: string }>)['idgen']!
        .ipv4_address,
    }));
}

/** `--flag value` of a command line. */
function flag(command: readonly string[], name: string): string | undefined {
  const at = command.indexOf(name);
  return at < 0 ? undefined : command[at + 1];
}

describe('docker-compose.yml', () => {
  it('runs one service per DC, each on its own DC and node, once that node is healthy', () => {
    const cassandra = cassandraServices();
    expect(cassandra.map((c) => c.dc).sort()).toEqual(['dc1', 'dc2', 'dc3']);
    const serving = Object.entries(compose.services).filter(([, s]) =>
      s.command?.includes('serve'),
    );
    expect(serving.map(([name]) => name).sort()).toEqual(['serve-dc1', 'serve-dc2', 'serve-dc3']);
    const hostPorts: string[] = [];
    for (const [name, service] of serving) {
      const command = service.command!;
      const dc = flag(command, '--dc');
      const node = cassandra.find((c) => c.dc === dc);
      expect(node, `${name}: --dc ${dc}`).toBeDefined();
      expect(flag(command, '--contact-points'), name).toBe(node!.address);
      // Global options come before the command.
      expect(command.indexOf('serve'), name).toBe(command.length - 1);
      expect(service.depends_on, name).toEqual({
        [node!.name]: { condition: 'service_healthy' },
        'idgen-init': { condition: 'service_completed_successfully' },
      });
      expect(service.networks, name).toEqual(['idgen']);
      expect(service.profiles, name).toEqual(['serve']);
      // Liveness: a service of a cut-off DC that cannot get IDs right now must not be replaced.
      expect(service.healthcheck?.test.join(' '), name).toContain('/healthz');
      expect(service.ports, name).toHaveLength(1);
      const [host, container] = service.ports![0]!.split(':');
      expect(container, name).toBe('8080');
      hostPorts.push(`${dc}=${host}`);
    }
    expect(hostPorts.sort()).toEqual(['dc1=8081', 'dc2=8082', 'dc3=8083']);
  });

  it('creates the keyspace over every DC and the sequence before any service starts', () => {
    const init = compose.services['idgen-init']!;
    const script = init.command!.join(' ');
    const replication = /--replication (\S+)/.exec(script)?.[1];
    expect(
      replication
        ?.split(',')
        .map((pair) => pair.split(':')[0])
        .sort(),
    ).toEqual(
      cassandraServices()
        .map((c) => c.dc)
        .sort(),
    );
    expect(script).toContain('seed orders --if-not-exists');
    expect(Object.values(init.depends_on!)).toEqual(
      cassandraServices().map(() => ({ condition: 'service_healthy' })),
    );
    const keyspaces = new Set(
      ['idgen-init', 'serve-dc1', 'serve-dc2', 'serve-dc3'].map(
        (name) => compose.services[name]!.environment?.['IDGEN_KEYSPACE'],
      ),
    );
    expect([...keyspaces]).toEqual(['idgen']);
  });

  it('starts init only once the node it connects through lists every other DC as a peer', () => {
    // init refuses a replication naming a DC its contact point has not heard of yet, and a node
    // answers CQL a moment before the others learn by gossip that it joined.
    const contact = compose.services['idgen-init']!.environment?.['IDGEN_CONTACT_POINTS'];
    const others = cassandraServices().filter((c) => c.address !== contact);
    expect(others).toHaveLength(2);
    for (const { name } of others) {
      const test = compose.services[name]!.healthcheck?.test.join(' ') ?? '';
      expect(test, name).toContain(`cqlsh ${contact} -e "SELECT data_center FROM system.peers"`);
      expect(test, name).toContain('grep -qw "$$CASSANDRA_DC"');
    }
  });

  it('leaves `docker compose up` (no profile) to Cassandra alone, as the tests use it', () => {
    for (const { name } of cassandraServices()) {
      expect(compose.services[name]!.profiles, name).toBeUndefined();
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  it('builds in a stage of its own, and runs on node:20-slim with production dependencies only', () => {
    const stages = instructions.filter((line) => line.startsWith('FROM '));
    expect(stages).toEqual(['FROM node:20-slim AS build', 'FROM node:20-slim']);
    const runtime = instructions.slice(instructions.indexOf('FROM node:20-slim'));
    expect(runtime).toContainEqual(expect.stringMatching(/^RUN npm ci --omit=dev /));
    expect(runtime).toContain('COPY --from=build /app/dist/src ./dist/src');
    expect(runtime).toContain('ENTRYPOINT ["idgen-cass"]');
    expect(runtime).toContain('CMD ["serve"]');
    expect(runtime).toContain('EXPOSE 8080');
  });

  it('probes liveness (/healthz), not readiness: a partitioned DC keeps its containers', () => {
    const healthcheck = instructions.find((line) => line.startsWith('HEALTHCHECK '));
    expect(healthcheck).toContain("'/healthz'");
    expect(healthcheck).not.toContain('/readyz');
  });

  it('copies only files that exist, and the bin it links is the package bin', () => {
    for (const line of instructions.filter((l) => /^COPY (?!--from)/.test(l))) {
      for (const source of line.split(/\s+/).slice(1, -1)) {
        expect(existsSync(join(ROOT, source)), line).toBe(true);
      }
    }
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(dockerfile).toContain(`ln -s /app/${pkg.bin['idgen-cass']} /usr/local/bin/idgen-cass`);
  });

  it('gets the Cassandra driver from `npm ci --omit=dev`: the lockfile does not mark it dev', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; peer?: boolean }>;
    };
    for (const name of ['cassandra-driver', 'fastify', 'prom-client', 'pino', 'commander']) {
      expect(lock.packages[`node_modules/${name}`]?.dev, name).toBeUndefined();
    }
  });
});
