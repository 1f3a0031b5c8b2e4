/**
 * The CLI without Cassandra: value parsers, output formatting, the error-to-exit-code mapping,
 * and usage errors that must be reported before anything is connected.
 */
import { Writable } from 'node:stream';

import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  ContentionError,
  IdGenError,
  InvalidOptionError,
  SequenceExistsError,
  SequenceNotFoundError,
  StoreUnavailableError,
  type IdGenErrorCode,
} from '../../src/errors.js';
import { EXIT_CODES, errorMessage, exitCodeOf, handleError } from '../../src/cli/exit-codes.js';
import { bar, count, duration, percent, rate, table, toJson } from '../../src/cli/format.js';
import { parseBigInt, parseInteger, parseReplication, parseSeconds } from '../../src/cli/parse.js';
import { runCli } from '../../src/cli/program.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('parsers', () => {
  it('reads integers of any size, with _ between digit groups', () => {
    expect(parseBigInt('9223372036854775807')).toBe(2n ** 63n - 1n);
    expect(parseBigInt(' 1_000_000 ')).toBe(1_000_000n);
    expect(parseInteger('-5')).toBe(-5);
    for (const bad of ['', '1.5', '1e6', '_1', '12_', 'ten']) {
      expect(() => parseBigInt(bad)).toThrow('Expected an integer');
    }
    expect(() => parseInteger('9007199254740993')).toThrow('at most 9007199254740991');
  });

  it('reads seconds', () => {
    expect(parseSeconds('0.5')).toBe(0.5);
    expect(() => parseSeconds('-1')).toThrow('at least 0');
    expect(() => parseSeconds('soon')).toThrow('Expected a number');
  });

  it('reads a replication map and refuses one that names no DC', () => {
    expect(parseReplication('dc1:3, dc2:1,')).toEqual({ dc1: 3, dc2: 1 });
    for (const bad of ['', ' , ', 'dc1=3', 'dc1:3,dc1:2', 'dc1:x', ':3']) {
      expect(() => parseReplication(bad)).toThrow(InvalidOptionError);
    }
  });
});

describe('formatting', () => {
  it('aligns columns', () => {
    expect(
      table(
        [
          ['DC', 'left'],
          ['dc10', '5'],
        ],
        ['left', 'right'],
      ),
    ).toEqual(['DC    left', 'dc10     5']);
  });

  it('draws usage bars and percentages', () => {
    expect(bar(0.58)).toBe('[#######.....]   58%');
    expect(bar(0)).toBe('[............]    0%');
    expect(bar(1)).toBe('[############]  100%');
    expect(percent(0.023)).toBe('2.3%');
    expect(percent(0.00005)).toBe('<0.01%');
  });

  it('formats counts, rates and runways', () => {
    expect(count(2_147_483_647n)).toBe('2,147,483,647');
    expect(rate(undefined)).toBe('–');
    expect(rate(2.25)).toBe('2.3/s'); // toFixed(1)
    expect(rate(1234.4)).toBe('1,234/s');
    expect(duration(undefined)).toBe('–');
    expect(duration(Infinity)).toBe('∞');
    expect(duration(45.9)).toBe('45s');
    expect(duration(250)).toBe('4m 10s');
    expect(duration(7_500)).toBe('2h 05m');
    expect(duration(3 * 86_400 + 4 * 3_600)).toBe('3d 4h');
  });

  it('writes JSON with exact 64-bit integers', () => {
    const value = {
      id: 2n ** 63n - 1n,
      rate: Infinity,
      gone: undefined,
      at: new Date(0),
      list: [],
    };
    expect(toJson(value, 0)).toBe(
      '{"id":9223372036854775807,"rate":null,"at":"1970-01-01T00:00:00.000Z","list":[]}',
    );
    expect(JSON.parse(toJson({ a: [1n, 'x', true, null] }))).toEqual({ a: [1, 'x', true, null] });
  });
});

describe('exit codes', () => {
  it('maps every library error code', () => {
    const expected: Record<IdGenErrorCode, number> = {
      IDGEN_INVALID_OPTION: 1,
      IDGEN_INVALID_NAME: 1,
      IDGEN_INVALID_COUNT: 1,
      IDGEN_DOMAIN_NEEDS_BIGINT: 1,
      IDGEN_SEQUENCE_NOT_FOUND: 2,
      IDGEN_STORE_UNAVAILABLE: 3,
      IDGEN_SERIAL_UNAVAILABLE: 3,
      IDGEN_INVARIANT_BROKEN: 4,
      IDGEN_SEQUENCE_EXISTS: 5,
      IDGEN_SEQUENCE_EXHAUSTED: 6,
      IDGEN_CONTENTION: 7,
      IDGEN_STATE_ROLLED_BACK: 8,
      IDGEN_UNSAFE_CLUSTER: 9,
      IDGEN_DEADLINE_EXCEEDED: 3,
      IDGEN_ABORTED: 10,
      IDGEN_AUTH_FAILED: 12,
      IDGEN_CLOSED: 10,
    };
    for (const [code, exit] of Object.entries(expected)) {
      expect(exitCodeOf(new IdGenError(code as IdGenErrorCode, 'x'))).toBe(exit);
    }
    expect(exitCodeOf(new SequenceNotFoundError('orders', 'idgen'))).toBe(EXIT_CODES.notFound);
    expect(exitCodeOf(new SequenceExistsError('orders', 'idgen'))).toBe(EXIT_CODES.exists);
    expect(exitCodeOf(new ContentionError('orders', 'claim', 5))).toBe(EXIT_CODES.contention);
    expect(exitCodeOf(new Error('boom'))).toBe(EXIT_CODES.internal);
  });

  it('names options as the CLI spells them', () => {
    expect(errorMessage(new InvalidOptionError('blockSize', 0, 'an integer from 1 to 100'))).toBe(
      'Invalid --block: received 0; allowed: an integer from 1 to 100.',
    );
    expect(errorMessage(new InvalidOptionError('localDataCenter', undefined, 'a DC'))).toBe(
      'Invalid --dc (IDGEN_DC): received undefined; allowed: a DC.',
    );
  });

  it('prints one line, or the stack and causes with --verbose', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new StoreUnavailableError('local', 'connect', 'no host', { cause });
    const quiet: string[] = [];
    expect(handleError(error, (t) => quiet.push(t), false)).toBe(3);
    expect(quiet).toEqual([`idgen-cass: ${error.message}\n`]);
    const loud: string[] = [];
    handleError(error, (t) => loud.push(t), true);
    expect(loud.join('')).toContain('caused by: Error: ECONNREFUSED');
  });
});

/** Runs the CLI in-process with captured output. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (text: string) => void) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        append(chunk.toString());
        done();
      },
    });
  const code = await runCli(['node', 'idgen-cass', ...args], {
    stdout: sink((t) => (stdout += t)),
    stderr: sink((t) => (stderr += t)),
  });
  return { code, stdout, stderr };
}

describe('usage errors, reported before connecting', () => {
  it.each([
    [['seed'], "missing required argument 'sequence'"],
    [['frobnicate'], "unknown command 'frobnicate'"],
    [['seed', 'orders', '--blok', '5'], "unknown option '--blok' (Did you mean --block?)"],
    [['seed', 'orders', '--block', 'five'], 'Expected an integer'],
    [['seed', 'orders', '--domain', 'int16'], 'Allowed choices are int32, safe53, int63'],
    [['init'], "required option '--replication <map>' not specified"],
    [['init', '--replication', 'dc1=3'], 'Invalid --replication: received "dc1=3"'],
    [['next', 'orders', '-n', '0'], 'Invalid -n/--count: received 0'],
    [['alter', 'orders'], 'at least one of --dc-range, --block, --threshold'],
    [['list'], 'Invalid --contact-points (IDGEN_CONTACT_POINTS): received undefined'],
  ])('idgen-cass %j: exit 1, one line', async (args, message) => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', undefined);
    vi.stubEnv('IDGEN_DC', undefined);
    const { code, stdout, stderr } = await cli(...args);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^idgen-cass: [^\n]+\n$/);
    expect(stderr).toContain(message);
  });

  it('asks for --dc when contact points are given', async () => {
    vi.stubEnv('IDGEN_DC', undefined);
    const { code, stderr } = await cli('--contact-points', '127.0.0.1', 'list');
    expect(code).toBe(1);
    expect(stderr).toContain('Invalid --dc (IDGEN_DC): received undefined');
  });

  it('shows an example in the help of every command, exit 0', async () => {
    for (const command of ['init', 'seed', 'list', 'next', 'alter', 'status', 'check']) {
      const { code, stdout } = await cli(command, '--help');
      expect(code).toBe(0);
      expect(stdout).toContain('Example');
      expect(stdout).toContain(`$ idgen-cass ${command}`);
      expect(stdout).toContain('IDGEN_CONTACT_POINTS'); // global options shown too
    }
  });
});
