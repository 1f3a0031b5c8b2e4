/** The Docker engine (started when none answers) and the tools the check needs. */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { CheckError, run, waitFor } from './steps.js';

const DOCKERD_LOG = '/var/log/dockerd.log';

function answers(command: string, args: readonly string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

const isRoot = () => process.getuid?.() === 0;

/** Installs Debian's `pkg` unless `command` is on PATH; only as root, else says what to run. */
export async function needPackage(command: string, pkg: string): Promise<void> {
  if (answers('sh', ['-c', `command -v ${command}`])) return;
  if (!isRoot()) {
    throw new CheckError(`"${command}" was not found; install it: sudo apt-get install ${pkg}`);
  }
  // A fresh machine may have no package lists yet.
  await (aptUpdated ??= run('apt-get', ['update', '-qq']));
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['install', '-y', '-qq', pkg], { env });
}

let aptUpdated: Promise<unknown> | undefined;

/** Resolves once `docker info` answers, starting `dockerd` first when it does not. */
export async function ensureEngine(log: (line: string) => void): Promise<void> {
  if (answers('docker', ['info'])) {
    log('the Docker engine answers');
    return;
  }
  if (!isRoot()) {
    throw new CheckError('no Docker engine answers "docker info"; start dockerd (as root) first');
  }
  await needPackage('dockerd', 'docker.io');
  console.log(`$ dockerd > ${DOCKERD_LOG} 2>&1 &`);
  const out = fs.openSync(DOCKERD_LOG, 'a');
  spawn('dockerd', [], { detached: true, stdio: ['ignore', out, out] }).unref();
  fs.closeSync(out);
  await waitFor('dockerd answering "docker info"', async () => answers('docker', ['info']), {
    timeoutMs: 60_000,
    everyMs: 1_000,
  });
  log(`started dockerd (its log: ${DOCKERD_LOG})`);
}

/** `docker compose` where the plugin is installed, else `docker-compose` (installed if missing). */
export async function composeCommand(): Promise<readonly string[]> {
  if (answers('docker', ['compose', 'version'])) return ['docker', 'compose'];
  await needPackage('docker-compose', 'docker-compose');
  return ['docker-compose'];
}
