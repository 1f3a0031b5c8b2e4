/**
 * `npm run docker-check [-- [--smoke] [--wait-for <file>]]`: the stand-in images, the Dockerfile,
 * docker-compose.yml and the testcontainers tests on this machine's engine (started as root if
 * none answers). Exits 1 on any failure, after removing the containers it started.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { Command } from 'commander';
import { ClusterError } from './cluster/topology.js';
import { ComposeCluster, requireUnique, testcontainersTests } from './docker/check.js';
import { buildStandIns } from './docker/images.js';
import { CheckError, logDir, run, step, stepTimes, waitFor } from './docker/steps.js';

const PROJECT_IMAGE = 'idgen-cass:local';
/** What `--smoke` runs: the files whose tests reach the nodes through the containers' network. */
const SMOKE_TEST_FILES = [
  'test/integration/cluster-smoke.test.ts',
  'test/integration/cassandra-store.test.ts',
  'test/integration/preflight.test.ts',
  'test/integration/serve.test.ts',
];
const log = (line: string) => console.log(`    ${line}`);

const DOCKERD_LOG = '/var/log/dockerd.log';

function answers(command: string, args: readonly string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

const isRoot = () => process.getuid?.() === 0;

/** Installs Debian's `pkg` unless `command` is on PATH; only as root, else says what to run. */
async function needPackage(command: string, pkg: string): Promise<void> {
  if (answers('sh', ['-c', `command -v ${command}`])) return;
  if (!isRoot())
    throw new CheckError(`"${command}" was not found; install it: sudo apt-get install ${pkg}`);
  // A fresh machine may have no package lists yet.
  await (aptUpdated ??= run('apt-get', ['update', '-qq']));
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['install', '-y', '-qq', pkg], { env });
}

let aptUpdated: Promise<unknown> | undefined;

async function ensureEngine(): Promise<void> {
  if (answers('docker', ['info'])) return log('the Docker engine answers');
  if (!isRoot())
    throw new CheckError('no Docker engine answers "docker info"; start dockerd (as root) first');
  await needPackage('dockerd', 'docker.io');
  console.log(`$ dockerd > ${DOCKERD_LOG} 2>&1 &`);
  const out = fs.openSync(DOCKERD_LOG, 'a');
  spawn('dockerd', [], { detached: true, stdio: ['ignore', out, out] }).unref();
  fs.closeSync(out);
  await waitFor(() => answers('docker', ['info']), 60_000, 'dockerd answering "docker info"');
  log(`started dockerd (its log: ${DOCKERD_LOG})`);
}

async function composeCommand(): Promise<readonly string[]> {
  if (answers('docker', ['compose', 'version'])) return ['docker', 'compose'];
  await needPackage('docker-compose', 'docker-compose');
  return ['docker-compose'];
}

type Options = { waitFor?: string; smoke?: boolean };

async function main(options: Options): Promise<void> {
  const started = Date.now();
  console.log(`docker-check: command logs in ${logDir()}`);
  await step('Docker engine', async () => {
    await ensureEngine();
    await needPackage('mmdebstrap', 'mmdebstrap');
  });
  const compose = await composeCommand();
  log(`compose: ${compose.join(' ')}`);
  await step('stand-in images', () => buildStandIns(log));
  await step(`the project's Dockerfile (${PROJECT_IMAGE})`, () =>
    run('docker', ['build', '-t', PROJECT_IMAGE, '.']),
  );
  const gate = options.waitFor;
  if (gate) {
    await step(`waiting for ${gate}`, () =>
      waitFor(() => fs.existsSync(gate), 24 * 3600_000, `${gate} to exist`, 30_000),
    );
  }

  const cluster = (composeUp = new ComposeCluster(compose));
  try {
    await step('compose up: 3 DCs, init, a service per DC, healthy', () => cluster.up(log));
    const drawn = await step('CLI: init, seed, next in each DC', () => cluster.cli(log));
    drawn.push(...(await step('service endpoints in each DC', () => cluster.endpoints(log))));
    requireUnique(drawn);
    log(`${drawn.length} IDs drawn, all distinct`);
    await step('SIGTERM to a service', () => cluster.sigterm(log));
  } catch (error) {
    await cluster.printLogs();
    throw error;
  } finally {
    await step('compose down -v', () => cluster.down());
    composeUp = undefined;
  }
  const files = options.smoke ? SMOKE_TEST_FILES : [];
  const which = options.smoke ? `${files.length} files` : 'all';
  await step(`integration tests on testcontainers (${which})`, () => testcontainersTests(files));
  console.log(`\ndocker-check passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** The compose project to remove however the check ends. */
let composeUp: ComposeCluster | undefined;

function summary(): void {
  console.log('\nstep times:');
  for (const { name, seconds, ok } of stepTimes()) {
    console.log(`  ${ok ? 'ok    ' : 'FAILED'} ${seconds.toFixed(1).padStart(7)} s  ${name}`);
  }
}

async function cleanUp(): Promise<void> {
  const cluster = composeUp;
  composeUp = undefined;
  await cluster
    ?.down()
    .catch((error: unknown) => console.error(`cleanup failed: ${String(error)}`));
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: removing the containers this check started`);
    void cleanUp().finally(() => process.exit(128 + os.constants.signals[signal]));
  });
}

const program = new Command('docker-check')
  .description('run the Dockerfile, docker-compose.yml and the testcontainers tests on this engine')
  .option('--wait-for <file>', 'start no Cassandra until this file exists (polled every 30 s)')
  .option('--smoke', 'run 4 of the integration test files on the containers, not all')
  .action(async (options: Options) => {
    try {
      await main(options);
      summary();
    } catch (error) {
      await cleanUp();
      summary();
      console.error(
        `\ndocker-check failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      const known = error instanceof CheckError || error instanceof ClusterError;
      if (!known && error instanceof Error) console.error(error.stack);
      process.exitCode = 1;
    }
  });
await program.parseAsync();
