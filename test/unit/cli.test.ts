/**
 * The CLI without Cassandra: value parsers, output formatting, the error-to-exit-code mapping,
 * and usage errors that must be reported before anything is connected.
 */
import { Writable } from 'node:stream';

import { afterEach, describe, expect, it, vi } from 'vitest';

import type { CheckResult } from '../../src/admin/admin.js';
import type { UnverifiedFact, Violation } from '../../src/admin/check.js';
import { preflightReport } from '../../src/admin/preflight.js';
import type { StatusReport } from '../../src/admin/status.js';
import { checkJson, renderCheck } from '../../src/cli/check-view.js';
import {
  ContentionError,
  IdGenError,
  InvalidOptionError,
  SequenceExistsError,
  SequenceNotFoundError,
  StoreUnavailableError,
  UnsafeClusterError,
  type IdGenErrorCode,
} from '../../src/errors.js';
import {
  CommandOutcome,
  EXIT_CODES,
  errorMessage,
  exitCodeOf,
  handleError,
} from '../../src/cli/exit-codes.js';
import { incompleteWarning, preflightJson, renderPreflight } from '../../src/cli/preflight-view.js';
import { nodeSafetyWarnings, statusJson } from '../../src/cli/status-view.js';
import type { NodeSettings } from '../../src/store/port.js';
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

  it('ends check incomplete with 11 and an unreachable preflight with 3, each one line', () => {
    const incomplete = new CommandOutcome('check could not read every fact', EXIT_CODES.incomplete);
    expect(exitCodeOf(incomplete)).toBe(11);
    const lines: string[] = [];
    expect(handleError(incomplete, (t) => lines.push(t), false)).toBe(11);
    expect(lines).toEqual(['idgen-cass: check could not read every fact\n']);
    expect(exitCodeOf(new CommandOutcome('x', EXIT_CODES.unavailable))).toBe(3);
  });

  it('names the CLI flag, not the library option, when a cluster is refused as unsafe (exit 9)', () => {
    const error = new UnsafeClusterError(
      ['commitlog_sync periodic on a (dc1)'],
      '{ allowUnsafeCluster: true }',
    );
    expect(exitCodeOf(error)).toBe(9);
    expect(errorMessage(error)).toBe(
      'The cluster is not safe for idgen-cass: commitlog_sync periodic on a (dc1). Fix the nodes\' settings (docs/design.md, "What the cluster must guarantee"), or pass --allow-unsafe-cluster if you accept that a crash can hand out IDs twice.',
    );
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
    // Refused before the preflight, which needs a connection.
    [['seed', 'orders', '--block', '0'], 'Invalid --block: received 0'],
    [['preflight', 'extra'], 'too many arguments'],
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
    for (const command of [
      'init',
      'seed',
      'list',
      'next',
      'alter',
      'status',
      'check',
      'preflight',
    ]) {
      const { code, stdout } = await cli(command, '--help');
      expect(code).toBe(0);
      expect(stdout).toContain('Example');
      expect(stdout).toContain(`$ idgen-cass ${command}`);
      expect(stdout).toContain('IDGEN_CONTACT_POINTS'); // global options shown too
    }
  });
});

describe('--allow-unsafe-cluster', () => {
  it('is offered by init and seed, and explained', async () => {
    for (const command of ['init', 'seed']) {
      const { code, stdout } = await cli(command, '--help');
      expect(code).toBe(0);
      expect(stdout).toContain('--allow-unsafe-cluster');
      expect(stdout).toContain('refuses (exit 9)');
    }
    const { stdout } = await cli('--help');
    expect(stdout).toContain('9 unsafe cluster settings');
    expect(stdout).toContain('11 check incomplete');
  });
});

/** A node's settings as read, safe unless overridden. */
function node(overrides: Partial<NodeSettings> = {}): NodeSettings {
  return {
    host: '10.0.0.1:9042',
    dc: 'dc1',
    version: '5.0.8',
    commitlogSync: 'batch',
    paxosVariant: 'v2',
    settings: new Map(),
    properties: new Map(),
    tables: new Map(),
    ...overrides,
  };
}

describe('preflight output', () => {
  const at = new Date(0);
  const hosts = [
    { address: '10.0.0.1:9042', dc: 'dc1' },
    { address: '10.0.1.1:9042', dc: 'dc2' },
  ];

  it('prints one line per node and check, then the verdict', () => {
    const report = preflightReport({
      keyspace: 'idgen',
      dc: 'dc1',
      at,
      hosts,
      reads: [
        { dc: 'dc1', nodes: [node()] },
        {
          dc: 'dc2',
          nodes: [node({ host: '10.0.1.1:9042', dc: 'dc2', commitlogSync: 'periodic' })],
        },
      ],
    });
    const lines = renderPreflight(report);
    expect(lines[0]).toBe('keyspace idgen · checked from dc1 · 1970-01-01T00:00:00.000Z');
    const rows = lines.filter((line) => /^dc\d /.test(line));
    expect(rows).toHaveLength(14); // 2 nodes × 7 checks
    expect(rows.find((l) => l.includes('10.0.1.1:9042') && l.includes('commitlog-sync'))).toMatch(
      /^dc2 +10\.0\.1\.1:9042 +5\.0\.8 +commitlog-sync +UNSAFE +periodic \(every 10000ms\): /,
    );
    expect(lines.at(-2)).toBe('UNSAFE: 1 problem (2 nodes in dc1, dc2):');
    expect(lines.at(-1)).toMatch(/^ {2}commitlog_sync periodic on 10\.0\.1\.1:9042 \(dc2\): /);
    const json = preflightJson(report) as {
      verdict: string;
      nodes: { host: string; checked: boolean; error: null; checks: unknown[] }[];
    };
    expect(json.verdict).toBe('unsafe');
    expect(json.nodes.map((n) => [n.host, n.checked, n.error])).toEqual([
      ['10.0.0.1:9042', true, null],
      ['10.0.1.1:9042', true, null],
    ]);
    expect(json.nodes[1]?.checks[0]).toMatchObject({
      check: 'commitlog-sync',
      status: 'unsafe',
      value: 'periodic',
    });
  });

  it('says which nodes it could not read, never calling them safe', () => {
    const report = preflightReport({
      keyspace: 'idgen',
      dc: 'dc1',
      at,
      hosts,
      reads: [
        { dc: 'dc1', nodes: [node()] },
        { dc: 'dc2', error: 'connect ECONNREFUSED' },
      ],
    });
    const lines = renderPreflight(report);
    expect(lines).toContain(
      'INCOMPLETE: nothing unsafe on the nodes read, but not every node could be read:',
    );
    expect(lines.at(-1)).toBe('  dc2 could not be reached: connect ECONNREFUSED');
    expect(lines.find((line) => line.startsWith('dc2'))).toMatch(
      /^dc2 +10\.0\.1\.1:9042 +– +\(not checked\) +UNKNOWN +connect ECONNREFUSED$/,
    );
    expect(incompleteWarning(report)).toBe(
      'preflight could not read every node (dc2 could not be reached: connect ECONNREFUSED); nothing unsafe was seen on the others. Run "idgen-cass preflight" once every DC is reachable.',
    );
  });

  it('ends a safe report with one line', () => {
    const report = preflightReport({
      keyspace: 'idgen',
      dc: 'dc1',
      at,
      hosts: hosts.slice(0, 1),
      reads: [{ dc: 'dc1', nodes: [node()] }],
    });
    expect(renderPreflight(report).at(-1)).toBe(
      'safe: 1 node in dc1; no setting under which an ID could be handed out twice',
    );
  });
});

describe('check output', () => {
  const unverified: UnverifiedFact[] = [
    { fact: 'dc-state', dc: 'dc3', read: 'first', reason: 'EACH_QUORUM read failed: cut off' },
    { fact: 'dc-state', dc: 'dc3', read: 'second', reason: 'EACH_QUORUM read failed: cut off' },
  ];
  const violation = (confirmed: boolean): Violation => ({
    kind: 'last-integer-outside-reserved',
    sequence: 'part',
    dc: confirmed ? 'dc1' : 'dc3',
    message: `part: ${confirmed ? 'dc1' : 'dc3'}'s last_integer 500 is outside [0, 100]`,
    confirmed,
    unverified: confirmed ? [] : unverified.slice(0, 1),
  });
  const result = (
    verdict: CheckResult['verdict'],
    violations: Violation[],
    facts: UnverifiedFact[],
  ) => ({
    name: 'part',
    grantsLine: 'dc1 #1, dc3 #1',
    verdict,
    violations,
    unverified: facts,
    snapshot: {} as CheckResult['snapshot'],
  });

  it('names the unverified facts and the unconfirmed violations of an incomplete check', () => {
    const lines = renderCheck([result('incomplete', [violation(false)], unverified)], 'idgen');
    expect(lines).toEqual([
      'part  INCOMPLETE  (grants: dc1 #1, dc3 #1)',
      "  unconfirmed last-integer-outside-reserved: dc3's last_integer 500 is outside [0, 100] (rests on dc3's state (read before the grants), read locally)",
      "  unverified: dc3's state (read before and after the grants): EACH_QUORUM read failed: cut off",
      'no violation confirmed; 1 of 1 sequence could not be read consistently',
    ]);
    expect(checkJson([result('incomplete', [violation(false)], unverified)])).toMatchObject({
      ok: false,
      verdict: 'incomplete',
      sequences: [
        {
          verdict: 'incomplete',
          violations: [{ confirmed: false, dc: 'dc3' }],
          unverified: [{ fact: 'dc-state', dc: 'dc3', read: 'first' }, { read: 'second' }],
        },
      ],
    });
  });

  it('counts only confirmed violations as VIOLATED', () => {
    const lines = renderCheck(
      [result('violated', [violation(true), violation(false)], unverified)],
      'idgen',
    );
    expect(lines[0]).toBe('part  1 VIOLATED');
    expect(lines[1]).toBe(
      "  last-integer-outside-reserved: dc1's last_integer 500 is outside [0, 100]",
    );
    expect(lines.at(-1)).toBe('1 violation in 1 of 1 sequence');
  });
});

describe('status and unsafe nodes', () => {
  it('warns on stderr and reports nodeSafety in --json', () => {
    const report = {
      keyspace: 'idgen',
      dc: 'dc1',
      at: new Date(0),
      serial: { reachable: true, dc: 'dc1', tookMs: 1, error: undefined },
      hosts: [],
      nodeSafety: {
        dc: 'dc1',
        problems: ['commitlog_sync periodic on a (dc1): …'],
        error: undefined,
      },
      sequences: [],
    } satisfies StatusReport;
    expect(nodeSafetyWarnings(report)).toEqual([
      'commitlog_sync periodic on a (dc1): …. Run "idgen-cass preflight" to check every DC (status asks dc1\'s nodes only).',
    ]);
    expect(statusJson(report)['nodeSafety']).toEqual({
      dc: 'dc1',
      safe: false,
      problems: ['commitlog_sync periodic on a (dc1): …'],
      error: null,
    });
    expect(
      nodeSafetyWarnings({ ...report, nodeSafety: { dc: 'dc1', problems: [], error: undefined } }),
    ).toEqual([]);
  });
});
