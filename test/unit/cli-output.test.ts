/**
 * The CLI's output when things go wrong around it: a stdout whose reader has gone, a stdout that
 * cannot be written, and what reaches stderr (logs without stacks, the error line last). Over the
 * in-memory store.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { Writable } from 'node:stream';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { runCli } from '../../src/cli/program.js';
import { MemoryStore, type MemoryStoreOptions } from '../../src/store/memory.js';
import { capture, ordersStore } from './run-cli.js';

const current = vi.hoisted(() => ({
  store: undefined as MemoryStore | undefined,
  /** Called on each allocator the CLI connects, e.g. to make its close() fail. */
  onConnect: undefined as ((ids: IdGen) => void) | undefined,
}));

vi.mock('../../src/admin/open.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/admin/open.js')>();
  return {
    ...actual,
    openAdmin: (options: { localDataCenter: string; keyspace: string }) =>
      Promise.resolve(
        new Admin({
          store: current.store!,
          dc: options.localDataCenter,
          keyspace: options.keyspace,
        }),
      ),
  };
});

// An allocator as connect() builds one, the CLI's logger included, over the test's store.
vi.mock('../../src/connect.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/connect.js')>();
  return {
    ...actual,
    connect: (options: Parameters<typeof actual.connect>[0]) => {
      // connect()'s IdGen: the allocator with the durability watch.
      const ids = new actual.IdGen({
        store: current.store!,
        dc: options.localDataCenter!,
        keyspace: options.keyspace ?? 'idgen',
        logger: options.logger,
        allowUnsafeCluster: options.allowUnsafeCluster,
      });
      current.onConnect?.(ids);
      return Promise.resolve(ids);
    },
  };
});

afterEach(() => {
  current.store = undefined;
  current.onConnect = undefined;
});

const CONNECT = ['--contact-points', '127.0.0.99', '--dc', 'dc1', '--keyspace', 'k'];

/** A stdout that fails every write with `code` (EPIPE: its reader has gone). */
function failing(code: string): Writable {
  // main.ts listens to process.stdout's 'error' events: so does this stand-in.
  return new Writable({
    write(_chunk, _encoding, done) {
      done(Object.assign(new Error(`write ${code}`), { code }));
    },
  }).on('error', () => undefined);
}

async function run(
  stdout: Writable,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stderr = '';
  const code = await runCli(['node', 'idgen-cass', ...CONNECT, ...args], {
    stdout,
    stderr: capture((t) => (stderr += t)),
  });
  return { code, stdout: '', stderr };
}

async function collected(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  const result = await run(
    capture((t) => (stdout += t)),
    ...args,
  );
  return { ...result, stdout };
}

/** "orders" in keyspace k (ordersStore); the store is the CLI's. */
async function orders(nodeSettings?: MemoryStoreOptions['nodeSettings']): Promise<MemoryStore> {
  current.store = await ordersStore(nodeSettings);
  return current.store;
}

describe("a stdout whose reader has gone (EPIPE) changes no command's exit code", () => {
  it('status still exits 13 when SERIAL is unreachable, its line on stderr', async () => {
    const store = await orders();
    store.faults.push({ op: 'probeSerial', effect: 'unavailable', times: Infinity });
    const result = await run(failing('EPIPE'), 'status', 'orders', '--sample', '0');
    expect(result.code).toBe(13);
    expect(result.stderr).toMatch(/^idgen-cass: SERIAL is unreachable from dc1: [^\n]+\n$/);
  });

  it('check still exits 4 on a violation', async () => {
    const store = await orders();
    const ids = new IdGen({ store, dc: 'dc1', keyspace: 'k' });
    await ids.sequence('orders').next();
    await ids.close();
    const dc1 = (await store.readDcState('orders', 'dc1'))!;
    store.seedDcState('orders', 'dc1', { ...dc1, lastInteger: 5_000n, version: dc1.version + 1 });
    const result = await run(failing('EPIPE'), 'check', 'orders');
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^idgen-cass: check found 1 violation in "orders"/);
  }, 15_000);

  it('preflight still exits 9 on an unsafe node', async () => {
    await orders([{ host: '10.0.0.1:9042', dc: 'dc1', commitlogSync: 'periodic' }]);
    const result = await run(failing('EPIPE'), 'preflight');
    expect(result.code).toBe(9);
    expect(result.stderr).toMatch(
      /^idgen-cass: The cluster is not safe for allocating IDs: .* pass --allow-unsafe-cluster \(init, seed, next, serve\) if you accept/,
    );
  });

  it('next claims no block while a node of the DC is unsafe (exit 9), unless told to', async () => {
    await orders([{ host: '10.0.0.1:9042', dc: 'dc1', commitlogSync: 'periodic' }]);
    const refused = await collected('next', 'orders');
    expect(refused.code).toBe(9);
    expect(refused.stderr).toMatch(/^idgen-cass: The cluster is not safe for allocating IDs: /m);
    const allowed = await collected('next', 'orders', '-n', '2', '--allow-unsafe-cluster');
    expect(allowed).toMatchObject({ code: 0, stdout: '1\n2\n' });
  });

  it('next exits 0: its IDs were drawn before printing, and are not given back', async () => {
    const store = await orders();
    const result = await run(failing('EPIPE'), 'next', 'orders', '-n', '3');
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
    // Block [1, 100] claimed; on close the 97 unused IDs went back, never the 3 drawn.
    expect((await store.readDcState('orders', 'dc1'))?.lastInteger).toBe(3n);
  });

  it('status --watch ends with 0, as on Ctrl-C', async () => {
    await orders();
    const result = await run(failing('EPIPE'), 'status', '--watch', '1s', '--sample', '0');
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});

describe('a stdout that cannot be written: exit 10 and one line, not exit 1 and a stack', () => {
  const LINE =
    /^idgen-cass: could not write the output to stdout \(write ENOSPC\); what the command did before its output stands\n$/;

  it('after a command has drawn or written', async () => {
    await orders();
    const result = await run(failing('ENOSPC'), 'next', 'orders');
    expect(result.code).toBe(10);
    expect(result.stderr).toMatch(LINE);
    const json = await run(failing('ENOSPC'), '--json', 'next', 'orders');
    expect(json.code).toBe(10);
    expect(JSON.parse(json.stderr)).toEqual({
      code: 'IDGEN_INTERNAL',
      message:
        'could not write the output to stdout (write ENOSPC); what the command did before its output stands',
    });
  });

  it('for what commander writes (--version, --help)', async () => {
    for (const args of [['--version'], ['next', '--help']]) {
      const result = await run(failing('ENOSPC'), ...args);
      expect({ args, code: result.code }).toEqual({ args, code: 10 });
      expect(result.stderr).toMatch(LINE);
    }
    // A reader that has gone is no failure there either.
    expect(await run(failing('EPIPE'), '--version')).toMatchObject({ code: 0, stderr: '' });
  });

  it('from the real entry point: `idgen-cass --version > /dev/full`', () => {
    const full = openSync('/dev/full', 'w');
    try {
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', '--version'],
        { stdio: ['ignore', full, 'pipe'], encoding: 'utf8', timeout: 30_000 },
      );
      expect(child.stderr).toBe(
        'idgen-cass: could not write the output to stdout (ENOSPC: no space left on device, write); what the command did before its output stands\n',
      );
      expect(child.status).toBe(10);
    } finally {
      closeSync(full);
    }
  }, 40_000);
});

describe('stderr: logs without stacks unless --verbose, the error line last', () => {
  /** The JSON log lines on `stderr`. */
  function logs(stderr: string): Record<string, unknown>[] {
    return stderr
      .split('\n')
      .filter((line) => line.startsWith('{"level"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  it("a library warning's err has no stack, but with --verbose", async () => {
    for (const verbose of [false, true]) {
      const store = await orders();
      store.faults.push({ op: 'readDcState', effect: 'unavailable', times: 1 });
      const result = await collected(...(verbose ? ['--verbose'] : []), 'next', 'orders');
      expect(result.code).toBe(0);
      const warned = logs(result.stderr).filter((line) => line['err'] !== undefined);
      expect(warned.length).toBeGreaterThan(0);
      for (const line of warned) {
        const err = line['err'] as Record<string, unknown>;
        expect(err['message']).toEqual(expect.any(String));
        expect({ verbose, stack: 'stack' in err }).toEqual({ verbose, stack: verbose });
      }
    }
  });

  it('the error line comes after a warning from closing the connections, text and --json', async () => {
    for (const json of [false, true]) {
      await orders();
      current.onConnect = (ids) => {
        const close = ids.close.bind(ids);
        ids.close = async () => {
          await close();
          throw Object.assign(new Error('socket hang up'), { nested: new Error('inner') });
        };
      };
      const result = await collected(...(json ? ['--json'] : []), 'next', 'nosuch');
      expect(result.code).toBe(2);
      const lines = result.stderr.trimEnd().split('\n');
      const warned = logs(result.stderr);
      expect(warned.map((line) => line['msg'])).toEqual([
        'closing the Cassandra connection failed',
      ]);
      expect(JSON.stringify(warned)).not.toContain('"stack"');
      const last = lines.at(-1)!;
      if (json) expect(JSON.parse(last)).toMatchObject({ code: 'IDGEN_SEQUENCE_NOT_FOUND' });
      else expect(last).toMatch(/^idgen-cass: Sequence "nosuch" not found/);
    }
  });
});

describe('the bounds DC ranges and blocks may grow to', () => {
  it("list shows an adaptive sequence's block bounds, an autonomy target's DC range bounds and the shards", async () => {
    const store = await orders();
    const ids = new IdGen({ store, dc: 'dc1', keyspace: 'k' });
    await ids.createSequence('users'); // adaptive blocks, 16 shards
    await ids.createSequence('events', { domain: 'safe53', autonomySeconds: 3_600 });
    await ids.close();
    const result = await collected('list');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const rows = result.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^sequence +domain +IDs +start +DC range +block +threshold +shards$/);
    expect(rows.slice(1).map((row) => row.split(/ {2,}/))).toEqual([
      [
        'events',
        'safe53',
        '[1, 9007199254740991]',
        '1',
        '10,000,000–10,000,000,000',
        '1,000–10,000,000',
        '0.5',
        '16',
      ],
      ['orders', 'int32', '[1, 2147483647]', '1', '1,000', '100', '0.5', '1'],
      ['users', 'int32', '[1, 2147483647]', '1', '100,000–800,000', '1,000–100,000', '0.5', '16'],
    ]);
  });

  it('seed and status give the bounds of grants that hold 8 adaptive blocks, with no autonomy target', async () => {
    await orders();
    const seed = await collected('seed', 'users');
    expect(seed.code).toBe(0);
    expect(seed.stdout).toMatch(
      /^DC range {3}100,000 to 800,000 IDs, sized for 8 of the blocks asked for$/m,
    );
    expect(seed.stdout).toMatch(/^block {6}1,000 to 100,000 IDs, sized for a claim every 2 s$/m);
    const status = await collected('status', 'users', '--sample', '0');
    expect(status.stdout).toContain(
      '· DC range 100,000 to 800,000 IDs, sized for 8 of the blocks asked for · block 1,000 to 100,000 IDs',
    );
    // Fixed sizes stay one number.
    const fixed = await collected('status', 'orders', '--sample', '0');
    expect(fixed.stdout).toContain('· DC range 1,000 IDs · block 100 IDs · threshold 0.5');
  });
});

describe('status: one row per DC, or one per shard with --shards', () => {
  it("folds an adaptive sequence's 16 shards into one row per DC; --json keeps every shard", async () => {
    await orders();
    // Adaptive blocks, 16 shards, each granted its first range with the sequence.
    expect((await collected('seed', 'users', '--first-ranges', 'dc1')).code).toBe(0);
    expect((await collected('next', 'users', '-n', '5')).code).toBe(0);

    const folded = await collected('status', 'users', '--sample', '0');
    expect(folded).toMatchObject({ code: 0, stderr: '' });
    expect(folded.stdout).toMatch(/^ {2}DC +shards +reserved +preloaded /m);
    // One shard installed its range and claimed a block; the 15 others hold theirs uninstalled.
    expect(folded.stdout).toMatch(
      /^ {2}dc1\* +16\/16 +1 range \(#1\) +– +\d+ +\[\.{12}\] <0\.01% +1,599,995 +– +– +15 grants not installed yet$/m,
    );
    expect(folded.stdout).toContain("  each row folds a DC's shards:");
    expect(folded.stdout).not.toMatch(/dc1\/\d/);

    const perShard = await collected('status', 'users', '--sample', '0', '--shards');
    expect(perShard.code).toBe(0);
    expect(perShard.stdout.match(/^ {2}dc1(\/\d+)?\* /gm)).toHaveLength(16);
    expect(perShard.stdout).not.toContain('each row folds');

    for (const view of [[], ['--shards']]) {
      const json = await collected('--json', 'status', 'users', '--sample', '0', ...view);
      const report = JSON.parse(json.stdout) as { sequences: { dcs: { dc: string }[] }[] };
      expect(report.sequences[0]!.dcs.map((dc) => dc.dc)).toEqual([
        'dc1',
        ...Array.from({ length: 15 }, (_, i) => `dc1/${i + 1}`),
      ]);
    }
  });
});
