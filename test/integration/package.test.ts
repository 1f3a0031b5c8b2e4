/**
 * The package as a user installs it: `npm pack` of this checkout, installed into a scratch
 * project outside the repository, type-checked against the shipped `.d.ts`, imported, its CLI
 * run from `node_modules/.bin`, and IDs drawn from the test cluster.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { withKeyspace } from '../support/cluster.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

let scratch: string;
let tarball: string;
const ks = withKeyspace('pkg', { create: 'empty' });

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-package-'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(scratch, info!.filename);
  fs.writeFileSync(
    path.join(scratch, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module' }),
  );
  // The peer dependency (cassandra-driver) comes from the registry, as for a user.
  await run('npm', ['install', '--no-audit', '--no-fund', tarball], {
    cwd: scratch,
    maxBuffer: 64 * 1024 * 1024,
  });
}, 600_000);

afterAll(async () => {
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('ships the library, its types, the CLI, the schema and the license, and nothing else', async () => {
    const listing = await run('tar', ['-tzf', tarball]);
    const files = listing.stdout
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'schema.cql',
        'dist/src/index.js',
        'dist/src/index.d.ts',
        'dist/src/testing.js',
        'dist/src/cli/main.js',
      ]),
    );
    const unexpected = files.filter(
      (f) =>
        !/^(package\.json|README\.md|LICENSE|schema\.cql)$/.test(f) &&
        !/^dist\/src\/.+\.(js|d\.ts)$/.test(f),
    );
    expect(unexpected).toEqual([]);
    expect(files.some((f) => /(^|\/)test\/|^scripts\/|\.map$/.test(f))).toBe(false);
  });

  it('type-checks a user program against the shipped declarations', async () => {
    fs.writeFileSync(
      path.join(scratch, 'example.ts'),
      `import { connect, IdGen, IdGenError, type CallOptions, type IdRange, type SequenceSettings } from 'idgen-cass';
import { MemoryStore } from 'idgen-cass/testing';

export async function main(): Promise<number> {
  const ids: IdGen = await connect({ contactPoints: ['127.0.0.1'], localDataCenter: 'dc1', keyspace: 'idgen' });
  const options: CallOptions = { timeoutMs: 500 };
  const id: number = await ids.sequence('orders').next(options);
  const run: IdRange<number> = await ids.sequence('orders').take(10, options);
  const big: bigint = await ids.sequence('events', { bigint: true }).next();
  const settings: SequenceSettings = await ids.readSequence('orders');
  const local = new IdGen({ store: new MemoryStore(), dc: 'dc1', keyspace: 'test' });
  await local.close();
  // @ts-expect-error the HTTP service's own, kept out of the declarations (stripInternal)
  await ids.sequence('orders').nextIds(3);
  try { await ids.close(); } catch (error) { if (error instanceof IdGenError && !error.retryable) return error.code.length; }
  return id + run.first + Number(big) + settings.blockSize;
}
`,
    );
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--types',
        'node',
        '--typeRoots',
        path.join(ROOT, 'node_modules', '@types'),
        'example.ts',
      ],
      { cwd: scratch },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }));
    expect(result.stdout).toBe('');
  });

  it('runs the CLI from node_modules/.bin', async () => {
    const bin = path.join(scratch, 'node_modules', '.bin', 'idgen-cass');
    const { stdout } = await run(bin, ['--help'], { cwd: scratch });
    expect(stdout).toMatch(/Usage: idgen-cass/);
    expect(stdout).toMatch(/seed/);
  });

  it('draws IDs from the test cluster through the installed package', async () => {
    const dc = ks.dcs[0]!;
    fs.writeFileSync(
      path.join(scratch, 'draw.mjs'),
      `import { connect, initSchema } from 'idgen-cass';
const [keyspace, dc, points] = process.argv.slice(2);
const contactPoints = points.split(',');
await initSchema({ contactPoints, localDataCenter: dc, keyspace, replication: JSON.parse(process.env.REPLICATION), allowUnsafeCluster: true });
const ids = await connect({ contactPoints, localDataCenter: dc, keyspace });
await ids.createSequence('packaged', { dcRangeSize: 1000, blockSize: 10 });
const seq = ids.sequence('packaged');
const drawn = [];
for (let i = 0; i < 25; i++) drawn.push(await seq.next());
await ids.close();
console.log(JSON.stringify(drawn));
`,
    );
    const { stdout } = await run(
      process.execPath,
      ['draw.mjs', ks.name, dc, ks.contactPoints(dc).join(',')],
      { cwd: scratch, env: { ...process.env, REPLICATION: JSON.stringify(ks.replication) } },
    );
    const drawn = JSON.parse(stdout.trim()) as number[];
    expect(drawn).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });
});
