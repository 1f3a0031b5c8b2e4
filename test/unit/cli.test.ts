/**
 * The CLI without Cassandra: value parsers, output formatting, the error-to-exit-code mapping,
 * and usage errors that must be reported before anything is connected.
 */

import { afterEach, describe, expect, it, vi } from 'vitest';

import type { CheckResult } from '../../src/admin/admin.js';
import type { UnverifiedFact, Violation } from '../../src/admin/check.js';
import { preflightReport } from '../../src/admin/preflight.js';
import { sequenceStatus, type SequenceStatus, type StatusReport } from '../../src/admin/status.js';
import { IdGen } from '../../src/allocator/id-gen.js';
import { checkJson, renderCheck } from '../../src/cli/commands/check.js';
import { GLOBAL_OPTIONS_HINT } from '../../src/cli/program.js';
import { resolveSequenceSettings } from '../../src/settings/resolve.js';
import {
  AuthenticationError,
  ContentionError,
  DeadlineError,
  IdGenError,
  InvalidOptionError,
  InvariantError,
  SequenceExistsError,
  SequenceNotFoundError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
  UnsafeClusterError,
  type IdGenErrorCode,
} from '../../src/errors.js';
import {
  CommandOutcome,
  EXIT_CODES,
  errorCodeOf,
  errorMessage,
  exitCodeOf,
  handleError,
} from '../../src/cli/exit-codes.js';
import {
  incompleteWarning,
  preflightJson,
  renderPreflight,
} from '../../src/cli/commands/preflight.js';
import {
  nodeSafetyWarnings,
  renderStatus,
  runwaysBelow,
  statusJson,
  statusOutcome,
} from '../../src/cli/status-view.js';
import {
  zeroUsageCounts,
  type DcState,
  type NodeSettings,
  type SequenceSettings,
} from '../../src/store/port.js';
import { bar, table, toJson } from '../../src/cli/format.js';
import { count, duration, percent, rate } from '../../src/quantities.js';
import {
  parseAutonomy,
  parseBigInt,
  parseClaimInterval,
  parseDuration,
  parseInteger,
  parseReplication,
  parseSwitch,
  typedDuration,
  type DurationRule,
} from '../../src/cli/parse.js';
import { MemoryStore } from '../../src/store/memory.js';
import { cassandraLikeAlters, expectFirstRangesOfTwoDcs } from './fixtures.js';
import { cli } from './run-cli.js';

/** What connect() hands the CLI when set: an allocator over a MemoryStore; else Cassandra's. */
const allocator = vi.hoisted(() => ({ current: undefined as IdGen | undefined }));

vi.mock('../../src/connect.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/connect.js')>();
  return {
    ...actual,
    connect: (options: Parameters<typeof actual.connect>[0]) =>
      allocator.current === undefined
        ? actual.connect(options)
        : Promise.resolve(allocator.current),
  };
});

afterEach(() => {
  vi.unstubAllEnvs();
  allocator.current = undefined;
});

/** Errors as one text line, no stack. */
const TEXT = { verbose: false, json: false } as const;

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

  it('reads every duration as a number and its unit, in the unit its option asks for', () => {
    const ms: DurationRule = { option: 'sample', unit: 'ms', min: 1, max: 86_400_000 };
    const seconds: DurationRule = { option: 'failIfRunwayBelow', unit: 's', min: 1 };
    for (const [text, inMs, inSeconds] of [
      ['500ms', 500, 1], // rounded to a whole second
      ['10s', 10_000, 10],
      [' 2m ', 120_000, 120],
      ['1.5h', 5_400_000, 5_400],
      ['24h', 86_400_000, 86_400],
      ['1d', 86_400_000, 86_400],
      ['.5m', 30_000, 30],
      ['1.0005s', 1_001, 1], // whole milliseconds
    ] as const) {
      expect(parseDuration(text, ms), text).toBe(inMs);
      expect(parseDuration(text, seconds), text).toBe(inSeconds);
    }
    expect(parseDuration('1000d', seconds)).toBe(86_400_000);
  });

  it('refuses a bare number, naming the option, the value and the syntax', () => {
    const rule: DurationRule = { option: 'sample', unit: 'ms', min: 1, max: 86_400_000 };
    for (const bad of [
      '3',
      '0',
      '',
      ' ',
      '-5m',
      '5 m',
      '1w',
      'm',
      '1e3s',
      '30M',
      '0x10s',
      'soon',
    ]) {
      expect(() => parseDuration(bad, rule), bad).toThrow(InvalidOptionError);
    }
    const error = catchError(() => parseDuration('3', rule));
    expect(errorMessage(error)).toBe(
      'Invalid --sample: received "3"; allowed: a duration from 1ms to 1d with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m).',
    );
    expect(errorCodeOf(error)).toBe('IDGEN_INVALID_OPTION');
    expect(exitCodeOf(error)).toBe(EXIT_CODES.usage);
    // Out of bounds, or rounding to 0: refused as typed.
    expect(errorMessage(catchError(() => parseDuration('2d', rule)))).toContain(
      'Invalid --sample: received "2d"; allowed: a duration from 1ms',
    );
    expect(() => parseDuration('0.4ms', rule)).toThrow(InvalidOptionError);
    const unbounded: DurationRule = { option: 'failIfRunwayBelow', unit: 's', min: 1 };
    expect(errorMessage(catchError(() => parseDuration('30', unbounded)))).toBe(
      'Invalid --fail-if-runway-below: received "30"; allowed: a duration of at least 1s with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m).',
    );
  });

  it('takes 0 (or 0s, 0ms…) where the option gives 0 a meaning, and only there', () => {
    const sample: DurationRule = {
      option: 'sample',
      unit: 'ms',
      min: 1,
      max: 86_400_000,
      zero: 'no rates',
    };
    for (const zero of ['0', '0s', '0ms', '0.0h', ' 0 '])
      expect(parseDuration(zero, sample)).toBe(0);
    // A duration that only rounds to 0 is not the 0 the option means.
    expect(errorMessage(catchError(() => parseDuration('0.2ms', sample)))).toBe(
      'Invalid --sample: received "0.2ms"; allowed: a duration from 1ms to 1d with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m), or 0 for no rates.',
    );
    const timeout: DurationRule = { option: 'serialTimeout', unit: 'ms', min: 1, max: 60_000 };
    for (const zero of ['0', '0s']) {
      expect(() => parseDuration(zero, timeout)).toThrow(InvalidOptionError);
    }
  });

  it('writes a duration as it would be typed, in its largest whole unit', () => {
    expect(
      [500, 2_000, 90_000, 1_800_000, 5_400_000, 86_400_000, 1_500].map(typedDuration),
    ).toEqual(['500ms', '2s', '90s', '30m', '90m', '1d', '1500ms']);
  });

  it('refuses a --claim-interval or --autonomy that rounds outside its range, as typed', () => {
    expect(parseClaimInterval('0.5s')).toBe(500);
    expect(parseClaimInterval('0.01s')).toBe(10);
    expect(parseClaimInterval('500ms')).toBe(500);
    expect(parseAutonomy('24h')).toBe(86_400);
    expect(parseAutonomy('0')).toBe(0);
    expect(parseAutonomy('0s')).toBe(0);
    expect(parseAutonomy('1s')).toBe(1);
    // 0.4 s of autonomy rounds to 0 s, which a sequence stores as "no target" (fixed ranges).
    expect(errorMessage(catchError(() => parseAutonomy('0.4s')))).toBe(
      'Invalid --autonomy: received "0.4s"; allowed: a duration from 1s to 365d with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m), or 0 for fixed DC ranges.',
    );
    expect(() => parseAutonomy('366d')).toThrow(InvalidOptionError);
    expect(() => parseAutonomy('24')).toThrow(InvalidOptionError);
    expect(errorMessage(catchError(() => parseClaimInterval('0.001s')))).toBe(
      'Invalid --claim-interval: received "0.001s"; allowed: a duration from 10ms to 1h with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m).',
    );
    expect(() => parseClaimInterval('2h')).toThrow(InvalidOptionError);
    // No meaning of its own for 0, and no bare number.
    expect(() => parseClaimInterval('0')).toThrow(InvalidOptionError);
    expect(() => parseClaimInterval('2000')).toThrow(InvalidOptionError);
  });

  it('names an integer flag out of range as typed: no bigint "n", no word about the API types', () => {
    const error = catchError(() =>
      resolveSequenceSettings('s', { domain: 'int32', start: 3_000_000_000n }),
    );
    expect(errorMessage(error)).toBe(
      'Invalid --start: received 3000000000; allowed: an integer from 1 to 2147483647.',
    );
    expect(exitCodeOf(error)).toBe(EXIT_CODES.usage);
  });

  it('reads a yes/no variable, refusing anything else', () => {
    for (const yes of ['true', '1', 'YES', ' on ']) expect(parseSwitch(yes, 'ssl')).toBe(true);
    for (const no of ['false', '0', 'no', 'Off', '']) expect(parseSwitch(no, 'ssl')).toBe(false);
    expect(errorMessage(catchError(() => parseSwitch('maybe', 'ssl')))).toBe(
      'Invalid --ssl (IDGEN_SSL): received "maybe"; allowed: true or false (or 1/0, yes/no, on/off).',
    );
  });

  it('reads the DCs of --first-ranges; the library refuses an empty entry before connecting', async () => {
    for (const bad of ['', ' ', ',', 'dc1,,dc2', 'dc1,', ',dc1', 'dc1, ,dc2']) {
      // Nothing listens on 127.0.0.99: a command that connected first would exit 3.
      const run = await cli(
        ...['--contact-points', '127.0.0.99', '--dc', 'dc1'],
        ...['seed', 'orders', '--first-ranges', bad],
      );
      expect(run.code, bad).toBe(EXIT_CODES.usage);
      expect(run.stderr).toMatch(/^idgen-cass: Invalid --first-ranges: received [^\n]*\n$/);
    }
    const run = await cli(
      ...['--contact-points', '127.0.0.99', '--dc', 'dc1'],
      ...['seed', 'orders', '--first-ranges', 'dc1,,dc2'],
    );
    expect(run.stderr).toBe(
      'idgen-cass: Invalid --first-ranges: received dc1,,dc2; allowed: a list of distinct datacenter names (letters, digits, "_", "-", ".").\n',
    );
  });

  it('reads a replication map and refuses one that names no DC', () => {
    expect(parseReplication('dc1:3, dc2:1,')).toEqual({ dc1: 3, dc2: 1 });
    for (const bad of ['', ' , ', 'dc1=3', 'dc1:3,dc1:2', 'dc1:x', ':3', 'dc1:0', 'dc1:3,dc2:11']) {
      expect(() => parseReplication(bad)).toThrow(InvalidOptionError);
    }
    // A factor out of range is named as typed, in the flag's syntax (not as the library's map;
    // the CLI names the flag, --replication, when it prints the error).
    expect(() => parseReplication('dc1:0')).toThrow(
      'Invalid option "replication": received "dc1:0"; allowed: one or more DC:factor pairs separated by commas, each DC once, each factor from 1 to 10, e.g. dc1:3,dc2:3,dc3:3.',
    );
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
    expect(percent(0.9999996)).toBe('99%'); // 4 of 10,000,000 IDs left is not all used
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
      IDGEN_SEQUENCE_RECREATED: 15,
      IDGEN_DEADLINE_EXCEEDED: 3,
      IDGEN_ABORTED: 10,
      IDGEN_AUTH_FAILED: 12,
      IDGEN_CLOSED: 10,
    };
    // The exit codes of the table in docs/cli.md ("Exit codes"), none used twice.
    expect(EXIT_CODES).toEqual({
      ok: 0,
      usage: 1,
      notFound: 2,
      unavailable: 3,
      invariant: 4,
      exists: 5,
      exhausted: 6,
      contention: 7,
      rolledBack: 8,
      unsafe: 9,
      incomplete: 11,
      auth: 12,
      serialUnreachable: 13,
      runwayLow: 14,
      recreated: 15,
      internal: 10,
    });
    expect(new Set(Object.values(EXIT_CODES)).size).toBe(Object.keys(EXIT_CODES).length);
    for (const [code, exit] of Object.entries(expected)) {
      expect(exitCodeOf(new IdGenError(code as IdGenErrorCode, 'x'))).toBe(exit);
    }
    expect(exitCodeOf(new SequenceNotFoundError('orders', 'idgen'))).toBe(EXIT_CODES.notFound);
    expect(exitCodeOf(new SequenceExistsError('orders', 'idgen'))).toBe(EXIT_CODES.exists);
    expect(exitCodeOf(new ContentionError('orders', 'claim', 5))).toBe(EXIT_CODES.contention);
    expect(exitCodeOf(new Error('boom'))).toBe(EXIT_CODES.internal);
  });

  it('ends check incomplete with 11 and an unreachable preflight with 3, each one line', () => {
    const incomplete = new CommandOutcome(
      'IDGEN_CHECK_INCOMPLETE',
      'check could not read every fact',
    );
    expect(exitCodeOf(incomplete)).toBe(11);
    const lines: string[] = [];
    expect(handleError(incomplete, (t) => lines.push(t), TEXT)).toBe(11);
    expect(lines).toEqual(['idgen-cass: check could not read every fact\n']);
    expect(exitCodeOf(new CommandOutcome('IDGEN_PREFLIGHT_INCOMPLETE', 'x'))).toBe(3);
    expect(exitCodeOf(new CommandOutcome('IDGEN_STATUS_SERIAL_UNREACHABLE', 'x'))).toBe(13);
    expect(exitCodeOf(new CommandOutcome('IDGEN_STATUS_RUNWAY_LOW', 'x'))).toBe(14);
  });

  it('names the CLI flag, not the library option, when a cluster is refused as unsafe (exit 9)', () => {
    const error = new UnsafeClusterError(
      ['commitlog_sync periodic on a (dc1)'],
      '{ allowUnsafeCluster: true }',
    );
    expect(exitCodeOf(error)).toBe(9);
    expect(errorMessage(error)).toBe(
      'The cluster is not safe for allocating IDs: commitlog_sync periodic on a (dc1). Fix the nodes\' settings (docs/design.md, "What the cluster must guarantee"), or pass --allow-unsafe-cluster (init, seed, next, serve) if you accept that a crash can hand out IDs twice.',
    );
  });

  it("gives the CLI's commands and flags as advice, by code, in place of the library's calls", () => {
    const cases: [IdGenError, string, string][] = [
      [
        new SequenceNotFoundError('orders', 'idgen'),
        'Sequence "orders" not found in keyspace "idgen".',
        'Create it with: idgen-cass seed orders',
      ],
      [
        new SequenceExistsError('orders', 'idgen'),
        'Sequence "orders" already exists in keyspace "idgen"; nothing was changed.',
        'Use "idgen-cass alter orders" to change its sizes. To accept an existing sequence as it is, seed with --if-not-exists.',
      ],
      [
        new SerialUnavailableError('orders', 'dc3', 0n),
        'Sequence "orders": SERIAL consistency is unreachable from DC "dc3", so no new DC range can be granted, and the DC has 0 IDs left in its ranges.',
        'Restore connectivity between datacenters, or size --dc-range for longer partitions ("idgen-cass alter orders --dc-range N"; docs/sizing.md).',
      ],
      [
        new InvariantError('orders', 'grant #2 of dc1 has no bounds'),
        'Sequence "orders": stored state breaks an invariant (grant #2 of dc1 has no bounds); refusing to allocate.',
        'Run "idgen-cass check orders" and repair the rows before retrying.',
      ],
      [
        new StateRolledBackError('orders', 'dc1', 'version 3 after 4'),
        'Refusing to allocate, since IDs could be handed out twice.',
        'Stop this sequence\'s processes in the DC, run "idgen-cass preflight", then "idgen-cass retire-ranges orders" from the DC before allocating again (docs/operations.md, "When rows went back").',
      ],
      [
        new DeadlineError('orders', 500, { cause: new ContentionError('orders', 'claim', 5) }),
        'Sequence "orders": no ID within 500 ms; the refill is still in flight. It kept losing compare-and-set races to other processes (claim).',
        'Raise the block size, or let it adapt, with "idgen-cass alter orders --block N" or "--max-block-size N", so that processes claim less often. Check the cluster with "idgen-cass status".',
      ],
      [
        new AuthenticationError('10.0.0.1', 'Provided username bob and/or password are incorrect'),
        'Cassandra at 10.0.0.1 refused to authenticate: Provided username bob and/or password are incorrect.',
        'Check --username and --password (IDGEN_USERNAME, IDGEN_PASSWORD) and that the role may log in.',
      ],
    ];
    for (const [error, facts, advice] of cases) {
      const line = errorMessage(error);
      expect(line, error.code).toContain(facts);
      expect(line.endsWith(` ${advice}`), line).toBe(true);
      // The library's advice is replaced, not repeated: no call or option of the API is left.
      expect(line).not.toMatch(/[a-z]+Sequence\(|openAdmin|retireDcRanges|preflight\(\)|blockSize/);
    }
    // An error of an advised code built without its class keeps its message as it is.
    expect(errorMessage(new IdGenError('IDGEN_SEQUENCE_NOT_FOUND', 'gone'))).toBe('gone');
  });

  it('names options as the CLI spells them', () => {
    expect(errorMessage(new InvalidOptionError('blockSize', 0, 'an integer from 1 to 100'))).toBe(
      'Invalid --block: received 0; allowed: an integer from 1 to 100.',
    );
    expect(errorMessage(new InvalidOptionError('localDataCenter', undefined, 'a DC'))).toBe(
      'Invalid --dc (IDGEN_DC): received nothing; allowed: a DC.',
    );
  });

  it('names the settings and calls an allowed range mentions with what the CLI user types', () => {
    const error = new InvalidOptionError(
      'blockSize',
      5,
      'an integer from 1 to 3 (at most maxBlockSize (3), dcRangeSize and 10000000)',
    );
    expect(errorMessage(error)).toBe(
      'Invalid --block: received 5; allowed: an integer from 1 to 3 (at most maxBlockSize (3), dcRangeSize and 10000000). dcRangeSize is --dc-range, maxBlockSize is --max-block-size.',
    );
    const bare = new InvalidOptionError(
      'keyspace',
      'bare',
      'a keyspace that holds the idgen tables (create them with initSchema())',
    );
    expect(errorMessage(bare)).toBe(
      'Invalid --keyspace (IDGEN_KEYSPACE): received "bare"; allowed: a keyspace that holds the idgen tables (create them with initSchema()). initSchema() is "idgen-cass init".',
    );
    // The option's own name is not explained again; single words (max) are words.
    expect(
      errorMessage(new InvalidOptionError('dcRangeSize', 5n, 'at least max / 8 (dcRangeSize 9)')),
    ).toBe('Invalid --dc-range: received 5; allowed: at least max / 8 (dcRangeSize 9).');
  });

  it('prints one line, or the stack and causes with --verbose', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new StoreUnavailableError('local', 'connect', 'no host', { cause });
    const quiet: string[] = [];
    expect(handleError(error, (t) => quiet.push(t), TEXT)).toBe(3);
    expect(quiet).toEqual([`idgen-cass: ${error.message}\n`]);
    const loud: string[] = [];
    handleError(error, (t) => loud.push(t), { verbose: true, json: false });
    expect(loud.join('')).toContain('caused by: Error: ECONNREFUSED');
  });

  it("ends a driver's detail that ends with a period with one period, not two", () => {
    const error = new StoreUnavailableError('local', 'connect', "Received type string ('0').");
    expect(error.message).toContain("('0'). Check that the contact points");
  });
});

describe('usage errors, reported before connecting', () => {
  it.each([
    [['seed'], "missing required argument 'sequence'"],
    [['frobnicate'], 'unknown command (not repeated: it is close to no command name'],
    [['lsit'], "unknown command 'lsit' (Did you mean list?)"],
    [['seed', 'orders', '--blok', '5'], "unknown option '--blok' (Did you mean --block?)"],
    [['seed', 'orders', '--block', 'five'], 'Expected an integer'],
    [['seed', 'orders', '--domain', 'int16'], 'Allowed choices are int32, safe53, int63'],
    [['init'], "required option '--replication <map>' not specified"],
    [['init', '--replication', 'dc1=3'], 'Invalid --replication: received "dc1=3"'],
    [['next', 'orders', '-n', '0'], 'Invalid -n/--count: received 0'],
    // Refused before the preflight, which needs a connection.
    [['seed', 'orders', '--block', '0'], 'Invalid --block: received 0'],
    [['seed', 'orders', '--shards', '0'], 'Invalid --shards: received 0'],
    [['seed', 'orders', '--shards', '257'], 'Invalid --shards: received 257'],
    [['preflight', 'extra'], 'too many arguments'],
    [['alter', 'orders'], 'at least one of --dc-range, --block, --threshold'],
    [['list'], 'Invalid --contact-points (IDGEN_CONTACT_POINTS): received nothing; allowed:'],
    [['status', '--sample', '3'], 'Invalid --sample: received "3"; allowed: a duration from'],
    [['status', '--watch', '2'], 'Invalid --watch: received "2"'],
    [['status', '--serial-timeout', '3'], 'Invalid --serial-timeout: received "3"'],
    [['status', '--fail-if-runway-below', '1800'], 'Invalid --fail-if-runway-below: received'],
    [['seed', 'orders', '--claim-interval', '2'], 'Invalid --claim-interval: received "2"'],
    [['seed', 'orders', '--autonomy', '86400'], 'Invalid --autonomy: received "86400"'],
    [['--request-timeout', '5000', 'list'], 'Invalid --request-timeout (IDGEN_REQUEST_TIMEOUT)'],
  ])('idgen-cass %j: exit 1, one line', async (args, message) => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', undefined);
    vi.stubEnv('IDGEN_DC', undefined);
    const { code, stdout, stderr } = await cli(...args);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^idgen-cass: [^\n]+\n$/);
    expect(stderr).toContain(message);
  });

  it('names a missing required option, with what to give', async () => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', undefined);
    vi.stubEnv('IDGEN_DC', undefined);
    const both = await cli('status');
    expect(both).toEqual({
      code: EXIT_CODES.usage,
      stdout: '',
      stderr:
        'idgen-cass: Invalid --contact-points (IDGEN_CONTACT_POINTS): received nothing; allowed: a non-empty list of node addresses of the local datacenter, e.g. ["10.0.0.1", "10.0.0.2:9042"].\n',
    });
    const json = await cli('--json', 'next', 'orders');
    expect(json.code).toBe(EXIT_CODES.usage);
    expect(JSON.parse(json.stderr)).toEqual({
      code: 'IDGEN_INVALID_OPTION',
      message: expect.stringMatching(
        /^Invalid --contact-points \(IDGEN_CONTACT_POINTS\): /,
      ) as unknown,
    });

    const dc = await cli('--contact-points', '127.0.0.1', 'list');
    expect(dc.code).toBe(EXIT_CODES.usage);
    expect(dc.stderr).toBe(
      'idgen-cass: Invalid --dc (IDGEN_DC): received nothing; allowed: the name of the datacenter this process runs in, e.g. "dc1".\n',
    );
    // A blank variable is no value either; a list of no address is a bad one.
    vi.stubEnv('IDGEN_DC', ' ');
    vi.stubEnv('IDGEN_CONTACT_POINTS', '10.0.0.1');
    expect((await cli('list')).stderr).toMatch(
      /^idgen-cass: Invalid --dc \(IDGEN_DC\): received ""; /,
    );
    vi.stubEnv('IDGEN_DC', 'dc1');
    vi.stubEnv('IDGEN_CONTACT_POINTS', ',');
    expect((await cli('list')).stderr).toContain(
      'Invalid --contact-points (IDGEN_CONTACT_POINTS): received "[]"',
    );
  });

  it.each([
    [['--threshold', '2'], 'Invalid --threshold: received 2; allowed: a number strictly between'],
    [['--block', '-5'], 'Invalid --block: received -5; allowed: an integer from 1 to 10000000'],
    [['--block', '0'], 'Invalid --block: received 0'],
    [['--block', 'abc'], "option '--block <n>' argument 'abc' is invalid"],
    [['--max-block-size', '10000001'], 'Invalid --max-block-size: received 10000001'],
    [['--dc-range', '0'], 'Invalid --dc-range: received 0; allowed: an integer from 1 to'],
    [['--max-dc-range', '-1'], 'Invalid --max-dc-range: received -1'],
    [['--claim-interval', '2h'], 'Invalid --claim-interval: received "2h"'],
    [['--claim-interval', '2000'], 'Invalid --claim-interval: received "2000"'],
    [['--autonomy', '400d'], 'Invalid --autonomy: received "400d"'],
    [['--shards', '0'], 'Invalid --shards: received 0'],
    [['--shards', '257'], 'Invalid --shards: received 257'],
    [['--block', '10', '--threshold', '1'], 'Invalid --threshold: received 1'],
  ])(
    'refuses alter %j, a value no stored setting makes valid, with exit 1 before connecting',
    async (flags, message) => {
      // Nothing listens on 127.0.0.99: a command that connected first would exit 3.
      const run = await cli(
        ...['--contact-points', '127.0.0.99', '--dc', 'dc1'],
        'alter',
        'orders',
        ...flags,
      );
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^idgen-cass: [^\n]+\n$/);
      expect(run.stderr).toContain(message);
    },
  );

  it('judges an alter value against the stored settings once they are read', async () => {
    const store = new MemoryStore({ keyspace: 'idgen' });
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    await allocator.current.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    const run = await cli(
      ...['--contact-points', '127.0.0.99', '--dc', 'dc1', '--log-level', 'silent'],
      ...['alter', 'orders', '--block', '5000'],
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^idgen-cass: Invalid --block: received 5000; allowed: an integer from 1 to 1000 \(at most dcRangeSize\b[^\n]*\)\. dcRangeSize is --dc-range\.\n$/,
    );
    expect(store.calls.alterSequence).toBe(0);
  });

  it('shows an example in the help of every command, its own options only, exit 0', async () => {
    for (const command of [
      'init',
      'seed',
      'list',
      'next',
      'alter',
      'status',
      'check',
      'retire-ranges',
      'preflight',
    ]) {
      const { code, stdout } = await cli(command, '--help');
      expect(code).toBe(0);
      expect(stdout).toContain('Example');
      expect(stdout).toContain(`$ idgen-cass ${command}`);
      // The global options are listed once, in the program's help; a command's points there.
      expect(stdout).not.toContain('--contact-points');
      expect(stdout).not.toContain('--request-timeout');
      expect(stdout.trimEnd().split('\n').at(-1)).toBe(GLOBAL_OPTIONS_HINT);
    }
  });

  it('lists the global options once, in idgen-cass --help, with the duration syntax', async () => {
    const program = await cli('--help');
    expect(program.code).toBe(0);
    for (const option of ['--contact-points <hosts>', '--dc <name>', '--keyspace', '--json']) {
      expect(program.stdout).toContain(option);
    }
    expect(program.stdout).toContain('--request-timeout <duration>');
    expect(program.stdout).toContain('are a number and its unit:\n500ms, 10s, 2m, 1.5h, 24h, 1d');
    const status = await cli('status', '--help');
    expect(status.stdout).not.toContain('--contact-points');
    expect(status.stdout).not.toContain('Global Options');
    expect(status.stdout).toContain('Global options (connection, TLS, output, logs): see');
    // `help status` is the same help.
    expect((await cli('help', 'status')).stdout).toBe(status.stdout);
  });
});

describe('alter, over the in-memory store', () => {
  it("prints the settings its alter wrote, not a later alter's read with its op", async () => {
    const store = new MemoryStore({ keyspace: 'idgen' });
    const other = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    await other.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    let once = true;
    const between = async () => {
      if (!once) return;
      once = false;
      await other.alterSequence('orders', { blockSize: 300 });
    };
    allocator.current = new IdGen({
      store: cassandraLikeAlters(store, between),
      dc: 'dc1',
      keyspace: 'idgen',
    });
    // Its first attempt is committed by the second's round (see ambiguous-outcomes.test.ts).
    store.faults.push({ op: 'alterSequence', effect: 'in-flight', completesOn: 'write' });
    const run = await cli(
      ...['--contact-points', '127.0.0.99', '--dc', 'dc1', '--log-level', 'silent'],
      ...['alter', 'orders', '--block', '200'],
    );
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toContain('Altered sequence "orders".\n');
    expect(run.stdout).toMatch(/^block +200 IDs$/m);
  });
});

describe('seed --first-ranges, over the in-memory store', () => {
  // --allow-unsafe-cluster: the preflight would connect to Cassandra, which connect() replaces.
  const SEED = [
    ...['--contact-points', '127.0.0.99', '--dc', 'dc1', '--log-level', 'silent'],
    ...['seed', '--allow-unsafe-cluster'],
  ];

  /** The store `idgen-cass` works on from now on (through a dc1 process). */
  function cliStore(replicaDcs?: readonly string[]): MemoryStore {
    const store = new MemoryStore({ keyspace: 'idgen', replicaDcs });
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    return store;
  }

  it('says once that Cassandra is unavailable when the outcome of a create stays unknown', async () => {
    const store = cliStore();
    store.faults.push({ op: 'createSequence', effect: 'unknown-applied' });
    // The SERIAL read before the create works; the one after it, which would settle it, fails.
    const read = store.readSequence.bind(store);
    let serialReads = 0;
    store.readSequence = async (name, reading) => {
      if (reading === 'serial' && ++serialReads === 2) {
        throw new StoreUnavailableError('serial', 'read sequence', 'injected fault');
      }
      return read(name, reading);
    };
    const run = await cli(...SEED, 'orders', '--dc-range', '100');
    expect(run.code).toBe(3);
    expect(run.stderr).toBe(
      'idgen-cass: Cassandra is unavailable at SERIAL for create sequence: injected fault; the conditional write may or may not have been applied, and its outcome could not be read back; read the sequence to see which before trying again. Check that the contact points are reachable and the nodes of the DC are up.\n',
    );
  });

  it('grants each listed DC grant 1 of every shard, contiguous from start, with the sequence', async () => {
    const store = cliStore();
    const run = await cli(
      ...SEED,
      ...['orders', '--first-ranges', 'dc1, dc2', '--dc-range', '100', '--shards', '2'],
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Created sequence "orders".');
    expect(run.stdout).toContain(
      'First DC ranges granted to dc1, dc2: 4 of 100 IDs (one per shard), [1, 400].',
    );
    await expectFirstRangesOfTwoDcs(store);
    expect(store.calls.grantRange).toBe(0); // written with the sequence, not granted at SERIAL
  });

  it('grants every DC of the keyspace its first ranges by default when blocks adapt, and none with --no-first-ranges', async () => {
    const store = cliStore(['dc1', 'dc2', 'dc3']);
    const run = await cli(...SEED, 'orders');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/shards +16 per DC/);
    expect(run.stdout).toContain(
      'First DC ranges granted to dc1, dc2, dc3: 48 of 100,000 IDs (one per shard), [1, 4800000].',
    );
    expect((await store.readGrantsOverview('orders'))?.globalLast).toBe(4_800_000n);

    const none = cliStore(['dc1', 'dc2', 'dc3']);
    const without = await cli(...SEED, 'orders', '--no-first-ranges', '--json');
    expect(without.code).toBe(0);
    expect(JSON.parse(without.stdout)).toMatchObject({ settings: { shards: 16 }, firstRanges: [] });
    expect((await none.readGrantsOverview('orders'))?.globalLast).toBe(0n);
  });

  it('lists the ranges it granted under --json, and none for a sequence that existed', async () => {
    cliStore();
    const args = [...SEED, '--json', 'orders', '--first-ranges', 'dc2', '--start', '1001'];
    const first = await cli(...args, '--dc-range', '50');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      created: true,
      settings: { start: 1001, dcRangeSize: 50 },
      firstRanges: [{ grantee: 'dc2', min: 1001, max: 1050 }],
    });
    cliStore();
    await allocator.current!.createSequence('orders', { start: 1001 });
    const again = await cli(...args, '--if-not-exists');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ created: false, firstRanges: [] });
  });

  it('--if-not-exists refuses an existing sequence whose IDs differ from those asked (exit 5)', async () => {
    // A deploy script seeds above the legacy table's highest key; a sequence made earlier
    // without --start would hand out IDs the table already holds.
    const store = cliStore();
    await allocator.current!.createSequence('orders', { domain: 'int32' });
    const run = await cli(...SEED, 'orders', '--start', '48213578', '--if-not-exists');
    expect(run.code).toBe(EXIT_CODES.exists);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^idgen-cass: [^\n]+\n$/);
    expect(run.stderr).toContain('with other IDs than asked: start 1 (asked 48213578)');
    expect(run.stderr).not.toContain('seed with --if-not-exists');
    expect((await store.readSequence('orders'))?.settings.start).toBe(1n);
    // Another domain, given by name: its maximum differs.
    cliStore();
    await allocator.current!.createSequence('orders', { domain: 'int32' });
    const safe53 = await cli(...SEED, 'orders', '--domain', 'safe53', '--if-not-exists');
    expect(safe53.code).toBe(EXIT_CODES.exists);
    expect(safe53.stderr).toContain('max 2147483647 (asked 9007199254740991)');
  });

  it('--if-not-exists accepts other sizes than asked with a warning, and exits 0', async () => {
    const store = cliStore();
    await allocator.current!.createSequence('orders', { dcRangeSize: 1_000, blockSize: 100 });
    const run = await cli(...SEED, 'orders', '--block', '500', '--if-not-exists');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('left unchanged (--if-not-exists)');
    expect(run.stderr).toContain(
      'exists with other sizes than asked: blockSize 100 (asked 500); left unchanged. Change them with "idgen-cass alter orders".',
    );
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' }); // the last one closed
    const same = await cli(...SEED, 'orders', '--block', '100', '--if-not-exists');
    expect(same.code).toBe(0);
    expect(same.stderr).toBe('');
  });

  it('--if-not-exists does not say a sequence existed when its own create may have made it', async () => {
    // The create is applied and reported rejected; before that round read the row, another
    // process altered the new sequence: the op found is that alter's.
    const store = cliStore();
    const other = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    store.faults.push({
      op: 'createSequence',
      effect: 'applied-reported-rejected',
      onHit: async () => {
        await other.alterSequence('orders', { blockSize: 20 });
      },
    });
    const run = await cli(
      ...SEED,
      'orders',
      '--dc-range',
      '100',
      '--block',
      '10',
      '--if-not-exists',
    );
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe(
      'Sequence "orders" exists in keyspace "idgen", but whether this seed created it cannot be told: its settings were last written by an alter (or by an older release), and a create can be applied and still be reported rejected or timed out. Left as it is (--if-not-exists).',
    );
    expect(run.stdout).toMatch(/^block +20 IDs$/m);
    // A later seed finds the sequence before it writes anything: made by another, for certain,
    // though an alter's op is in the row.
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    const json = await cli(...SEED, '--json', 'orders', '--if-not-exists');
    expect(JSON.parse(json.stdout)).toMatchObject({ created: false, firstRanges: [] });
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    const again = await cli(...SEED, 'orders', '--if-not-exists');
    expect(again.code).toBe(0);
    expect(again.stdout.split('\n')[0]).toBe(
      'Sequence "orders" already exists in keyspace "idgen"; left unchanged (--if-not-exists).',
    );
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    const refused = await cli(...SEED, 'orders');
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(
      /^idgen-cass: Sequence "orders" already exists in keyspace "idgen"; nothing was changed\./,
    );
  });

  it.each([
    [['dc1/1'], 'received dc1/1; allowed: a list of distinct datacenter names'],
    [['dc1,dc1'], 'received dc1,dc1; allowed: a list of distinct datacenter names'],
    [['dc1,,dc2'], 'received dc1,,dc2; allowed: a list of distinct datacenter names'],
    [['dc1,'], 'received dc1,; allowed: a list of distinct datacenter names'],
    [
      ['dc1,dc2', '--max', '300', '--dc-range', '100', '--shards', '2'],
      'allowed: DCs whose first ranges fit the domain: 2 DC(s) × 2 shard(s) × dcRangeSize 100 = 400 IDs, but only 300 lie',
    ],
  ])('--first-ranges %j: exit 1, one line, no sequence', async ([value, ...more], message) => {
    const store = cliStore();
    const run = await cli(...SEED, 'orders', '--first-ranges', value!, ...more);
    expect(run.code).toBe(EXIT_CODES.usage);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^idgen-cass: Invalid --first-ranges: received [^\n]+\n$/);
    expect(run.stderr).toContain(message);
    expect(store.calls.createSequence).toBe(0);
    expect(await store.readSequence('orders')).toBeUndefined();
  });

  it('is offered by seed --help', async () => {
    const { code, stdout } = await cli('seed', '--help');
    expect(code).toBe(0);
    expect(stdout).toContain('--first-ranges <dcs>');
    expect(stdout).toContain('--no-first-ranges');
    expect(stdout).toContain('$ idgen-cass seed orders --shards 4 --first-ranges dc1,dc2');
  });
});

describe('retire-ranges, over the in-memory store', () => {
  const CONNECT = ['--contact-points', '127.0.0.99', '--dc', 'dc1', '--log-level', 'silent'];

  /** A dc1 process drew 25 IDs of fixed blocks of 10, then dc1's state lost its last 2 writes. */
  async function rolledBack(): Promise<{ store: MemoryStore; drawn: number[] }> {
    const store = new MemoryStore({ keyspace: 'idgen' });
    const ids = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    await ids.createSequence('orders', { dcRangeSize: 100, blockSize: 10 });
    const seq = ids.sequence('orders');
    const drawn: number[] = [];
    for (let i = 0; i < 25; i++) drawn.push(await seq.next());
    store.rollBackDcState('orders', 'dc1', 2);
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    return { store, drawn };
  }

  it('spends the DC ranges and says what became a gap; run again, it writes nothing', async () => {
    const { store, drawn } = await rolledBack();
    const lastInteger = (await store.readDcState('orders', 'dc1'))!.lastInteger;
    const run = await cli(...CONNECT, 'retire-ranges', 'orders');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      `Retired the ranges of "orders" in dc1: its next claim asks SERIAL for a new grant.\n` +
        `dc1  grant 1 [1, 100]  retired  ${100n - lastInteger} IDs left as a gap\n`,
    );
    const next = await new IdGen({ store, dc: 'dc1', keyspace: 'idgen' }).sequence('orders').next();
    expect(next).toBeGreaterThan(Math.max(...drawn, 100));

    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    store.resetCalls();
    const json = await cli(...CONNECT, '--json', 'retire-ranges', 'orders');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      sequence: 'orders',
      dc: 'dc1',
      states: [
        {
          grantee: 'dc1',
          grant: { number: 2, min: 101, max: 200 },
          outcome: 'retired',
          retired: true,
          gap: 90,
        },
      ],
    });
    allocator.current = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    store.resetCalls();
    const again = await cli(...CONNECT, 'retire-ranges', 'orders');
    expect(again.stdout).toBe(
      'Nothing to retire for "orders" in dc1: its ranges were spent already (written again as they were).\n' +
        'dc1  grant 2 [101, 200]  already spent\n',
    );
    expect(store.calls.writeDcState).toBe(1);
  });

  it('says it retired the ranges when its own write, left in flight, is committed by its retry', async () => {
    const { store } = await rolledBack();
    const lastInteger = (await store.readDcState('orders', 'dc1'))!.lastInteger;
    // The re-read misses the write; the retry's round commits it, and is rejected against it.
    store.faults.push({ op: 'writeDcState', effect: 'in-flight', completesOn: 'write' });
    const run = await cli(...CONNECT, 'retire-ranges', 'orders');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      `Retired the ranges of "orders" in dc1: its next claim asks SERIAL for a new grant.\n` +
        `dc1  grant 1 [1, 100]  retired  ${100n - lastInteger} IDs left as a gap\n`,
    );
  });

  it('says another writer spent the ranges while it ran, not that they were spent already', async () => {
    const { store } = await rolledBack();
    const other = new IdGen({ store, dc: 'dc1', keyspace: 'idgen' });
    store.faults.push({
      op: 'writeDcState',
      effect: 'rejected',
      onHit: async () => {
        await other.retireDcRanges('orders');
      },
    });
    const run = await cli(...CONNECT, 'retire-ranges', 'orders');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      'The ranges of "orders" in dc1 were spent by another writer while this ran: its next claim asks SERIAL for a new grant. This command retired nothing.\n' +
        'dc1  grant 1 [1, 100]  spent by another writer meanwhile\n',
    );
  });

  it('refuses a grant level that went back with exit 4 and one line, writing nothing', async () => {
    const { store } = await rolledBack();
    const state = (await store.readDcState('orders', 'dc1'))!;
    store.seedDcState('orders', 'dc1', { ...state, installedGrant: 2, version: state.version + 1 });
    store.resetCalls();
    const run = await cli(...CONNECT, 'retire-ranges', 'orders');
    expect(run.code).toBe(4);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^idgen-cass: Sequence "orders": stored state breaks an invariant \(dc1's state installed grant 2, but its latest grant at SERIAL is 1: the grant level/,
    );
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(store.calls.writeDcState).toBe(0);
  });

  it('says a DC with no grant yet has nothing to retire, and that nothing was written', async () => {
    const store = new MemoryStore({ keyspace: 'idgen' });
    await new IdGen({ store, dc: 'dc1', keyspace: 'idgen' }).createSequence('orders', {
      dcRangeSize: 100,
      blockSize: 10,
    });
    allocator.current = new IdGen({ store, dc: 'dc2', keyspace: 'idgen' });
    store.resetCalls();
    const run = await cli(
      ...CONNECT.map((arg) => (arg === 'dc1' ? 'dc2' : arg)),
      'retire-ranges',
      'orders',
    );
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      'Nothing to retire for "orders" in dc2: it has no grant yet, so it holds no IDs; nothing was written.\n' +
        'dc2  no grant yet  nothing to retire\n',
    );
    expect(store.calls.writeDcState).toBe(0);
  });

  it('an unknown sequence: exit 2', async () => {
    allocator.current = new IdGen({ store: new MemoryStore(), dc: 'dc1', keyspace: 'idgen' });
    const run = await cli(...CONNECT, 'retire-ranges', 'nosuch');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Sequence "nosuch" not found');
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
    expect(rows).toHaveLength(16); // 2 nodes × 8 checks
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

/** The error `run` throws. */
function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

describe('errors under --json: one JSON line on stderr, stdout clean', () => {
  const JSON_ERRORS = { verbose: false, json: true } as const;

  it('writes { code, message } for library errors, outcomes and anything unexpected', () => {
    const cases: [unknown, string, string, number][] = [
      [
        new SequenceNotFoundError('orders', 'idgen'),
        'IDGEN_SEQUENCE_NOT_FOUND',
        'Sequence "orders" not found in keyspace "idgen". Create it with: idgen-cass seed orders',
        2,
      ],
      [
        new InvalidOptionError('blockSize', 0, 'an integer from 1 to 100'),
        'IDGEN_INVALID_OPTION',
        'Invalid --block: received 0; allowed: an integer from 1 to 100.',
        1,
      ],
      [
        new CommandOutcome('IDGEN_STATUS_SERIAL_UNREACHABLE', 'SERIAL is unreachable from dc3'),
        'IDGEN_STATUS_SERIAL_UNREACHABLE',
        'SERIAL is unreachable from dc3',
        13,
      ],
      [
        new Error('boom'),
        'IDGEN_INTERNAL',
        'unexpected error: boom (run with --verbose for the stack)',
        10,
      ],
    ];
    for (const [error, code, message, exit] of cases) {
      const lines: string[] = [];
      expect(handleError(error, (t) => lines.push(t), JSON_ERRORS)).toBe(exit);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^\{[^\n]*\}\n$/);
      expect(JSON.parse(lines[0]!)).toEqual({ code, message });
      expect(errorCodeOf(error)).toBe(code);
    }
  });

  it('adds the stack and causes with --verbose, still one line', () => {
    const error = new StoreUnavailableError('local', 'connect', 'no host', {
      cause: new Error('ECONNREFUSED'),
    });
    const lines: string[] = [];
    expect(handleError(error, (t) => lines.push(t), { verbose: true, json: true })).toBe(3);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { code: string; message: string; stack: string };
    expect(line.code).toBe('IDGEN_STORE_UNAVAILABLE');
    expect(line.message).toBe(error.message);
    expect(line.stack).toContain('caused by: Error: ECONNREFUSED');
  });

  it.each([
    [['--json', 'seed'], 'IDGEN_USAGE', "missing required argument 'sequence'"],
    [['seed', 'orders', '--blok', '5', '--json'], 'IDGEN_USAGE', "unknown option '--blok'"],
    [
      ['seed', 'orders', '--first-ranges', 'dc1', '--no-first-ranges', '--json'],
      'IDGEN_USAGE',
      "option '--first-ranges <dcs>' cannot be used with option '--no-first-ranges'",
    ],
    [['next', 'orders', '-n', '0', '--json'], 'IDGEN_INVALID_OPTION', 'Invalid -n/--count'],
    [
      ['status', '--json', '--fail-if-runway-below', '30'],
      'IDGEN_INVALID_OPTION',
      'Invalid --fail-if-runway-below: received "30"',
    ],
    [
      ['--json', 'list'],
      'IDGEN_INVALID_OPTION',
      'Invalid --contact-points (IDGEN_CONTACT_POINTS): received nothing',
    ],
    [
      ['status', '--sample', '2', '--json'],
      'IDGEN_INVALID_OPTION',
      'Invalid --sample: received "2"; allowed: a duration from 1ms to 24d with its unit',
    ],
  ])('idgen-cass %j: exit 1, %s as JSON', async (args, code, message) => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', undefined);
    vi.stubEnv('IDGEN_DC', undefined);
    const run = await cli(...args);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^\{[^\n]*\}\n$/);
    const line = JSON.parse(run.stderr) as { code: string; message: string };
    expect(line.code).toBe(code);
    expect(line.message).toContain(message);
    expect(line.message).not.toMatch(/^error:/);
  });

  it('never repeats the value of a misspelt --name=value (a --pasword= holds a password)', async () => {
    for (const args of [
      ['--pasword=hunter2', 'list'],
      ['--json', '--verbose', '--pasword=hunter2', 'list'],
      ['seed', 'orders', '--pasword=hunter2'],
      ["--pasword=it's-hunter2", 'list'],
    ]) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toContain("unknown option '--pasword=…'");
      expect(run.stderr + run.stdout).not.toContain('hunter2');
    }
  });

  it.each([
    [['-pHunter2Secret', 'list'], "unknown option '-p…'"],
    [['--passwordHunter2Secret', 'list'], "unknown option '--password…'"],
    [['--password:Hunter2Secret', 'list'], "unknown option '--password…'"],
    [['--passwordhunterhunter', 'list'], "unknown option '--password…'"],
    [['--pasword=ab\nHunter2Secret', 'list'], "unknown option '--pasword=…'"],
    [['--username', 'bob', 'Hunter2Secret', 'list'], 'unknown command (not repeated'],
    [['-pHunter2Secret', '--json', '--verbose', 'list'], "unknown option '-p…'"],
  ])('never repeats a secret glued to an option or given as a command: %j', async (args, shown) => {
    const run = await cli('--contact-points', '127.0.0.99', '--dc', 'dc1', ...args);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(shown);
    expect(run.stderr + run.stdout).not.toMatch(/Hunter2Secret|hunterhunter/);
  });

  it.each([
    ['next', '1bad'],
    ['alter', '1bad', '--block', '10'],
    ['status', '1bad', '--sample', '0'],
    ['status', '1bad', '--sample', '0s', '--shards'],
    ['check', '1bad'],
    ['retire-ranges', '1bad'],
  ])('refuses a bad sequence name with exit 1 before connecting: %s', async (...args) => {
    // Nothing listens on 127.0.0.99: a command that connected first would exit 3.
    const run = await cli('--contact-points', '127.0.0.99', '--dc', 'dc1', ...args);
    expect(run.stderr).toContain('"1bad"');
    expect(run.code).toBe(1);
  });

  it('still repeats a misspelt option or command name', async () => {
    expect((await cli('--blok', 'list')).stderr).toContain("unknown option '--blok'");
    expect((await cli('stauts')).stderr).toBe(
      "idgen-cass: unknown command 'stauts' (Did you mean status?)\n",
    );
    expect((await cli('-x', 'list')).stderr).toContain("unknown option '-x'");
    // A prefix of a command, two letters swapped, one missing, a letter too many.
    for (const typo of ['stat', 'preflihgt', 'retire-range', 'seeds']) {
      const shown = `unknown command '${typo}'`;
      const run = await cli(typo);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(shown);
      expect(JSON.parse((await cli('--json', typo)).stderr)).toMatchObject({
        code: 'IDGEN_USAGE',
        message: expect.stringContaining(shown) as unknown,
      });
    }
  });

  it('never repeats an all-lowercase token typed as a command that is close to no command', async () => {
    for (const secret of [
      'hunter-secret',
      'correcthorsebattery',
      'statusquo-pass',
      'lists-and-more',
    ]) {
      for (const args of [[secret], ['--json', secret], ['--json', '--verbose', secret]]) {
        const run = await cli('--contact-points', '127.0.0.99', '--dc', 'dc1', ...args);
        expect(run.code, args.join(' ')).toBe(1);
        expect(run.stderr).toContain('unknown command (not repeated: it is close to no command');
        expect(run.stderr + run.stdout).not.toContain(secret);
      }
    }
  });

  it('writes only the JSON line when no command is given (no help), and --help stays help', async () => {
    const none = await cli('--json');
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^\{[^\n]*\}\n$/);
    expect(JSON.parse(none.stderr)).toEqual({
      code: 'IDGEN_USAGE',
      message: 'a command is required; "idgen-cass --help" lists them',
    });
    const help = await cli('--json', '--help');
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    expect(help.stdout).toContain('Exit codes');
  });
});

describe('status for scripts', () => {
  const settings: SequenceSettings = {
    name: 'orders',
    domain: 'int32',
    min: 1n,
    max: 2_147_483_647n,
    start: 1n,
    dcRangeSize: 100_000n,
    blockSize: 100,
    maxBlockSize: 100,
    claimIntervalMs: 2_000,
    maxDcRangeSize: 100_000n,
    autonomySeconds: 0,
    shards: 1,
    threshold: 0.5,
  };

  /** A DC holding grant #n, [n·100000 + 1, (n+1)·100000], with `lastInteger` in it. */
  function state(n: number, lastInteger: bigint): DcState {
    const min = BigInt(n) * 100_000n + 1n;
    return {
      version: 1,
      op: 'op',
      lastInteger,
      reservedMin: min,
      reservedMax: min + 99_999n,
      reservedGrant: 1,
      preloadedMin: min,
      preloadedMax: min + 99_999n,
      installedGrant: 1,
    };
  }

  /**
   * A status from dc3: dc1 has 10,000 IDs left and draws 100/s (runway 100 s), dc2 draws
   * nothing (runway ∞), dc3 holds no range yet (with `dc3First`, only its grant 1, a first
   * range granted at creation, not installed). Rates over 10 s unless `measured` is false.
   */
  function report(serialReachable: boolean, measured = true, dc3First = false): StatusReport {
    const grants = new Map([
      ['dc1', [{ number: 1, min: 1n, max: 100_000n }]],
      ['dc2', [{ number: 1, min: 100_001n, max: 200_000n }]],
      ...(dc3First ? [['dc3', [{ number: 1, min: 200_001n, max: 300_000n }]] as const] : []),
    ]);
    const at = (dc1Last: bigint, readAt: number) => ({
      settings,
      globalLast: dc3First ? 300_000n : 200_000n,
      grants,
      states: new Map([
        ['dc1', state(0, dc1Last)],
        ['dc2', state(1, 101_000n)],
      ]),
      readAt,
    });
    const sequence = sequenceStatus(at(90_000n, 10_000), measured ? at(89_000n, 0) : undefined, [
      'dc3',
    ]);
    return {
      keyspace: 'idgen',
      dc: 'dc3',
      at: new Date(10_000),
      serial: serialReachable
        ? { reachable: true, dc: 'dc3', tookMs: 12, error: undefined }
        : { reachable: false, dc: 'dc3', tookMs: 3_000, error: 'SERIAL read timed out' },
      hosts: [],
      nodeSafety: { dc: 'dc3', problems: [], error: undefined },
      sequences: [sequence],
    };
  }

  it('shows each DC runway against the autonomy target, in text and JSON', () => {
    const base = report(true);
    const withTarget: StatusReport = {
      ...base,
      sequences: base.sequences.map((s) => ({
        ...s,
        settings: { ...s.settings, autonomySeconds: 3_600, maxDcRangeSize: 10_000_000n },
      })),
    };
    const text = renderStatus(withTarget).join('\n');
    expect(text).toContain('to 10,000,000 IDs, sized for 1 h of autonomy');
    expect(text).toMatch(/dc1 .*runway below the autonomy target of 1h 00m/);
    expect(text).not.toMatch(/dc2 .*runway below/);
    const dcs = (statusJson(withTarget)['sequences'] as { dcs: Record<string, unknown>[] }[])[0]!
      .dcs;
    expect(dcs.map((dc) => [dc['dc'], dc['runwayBelowTarget']])).toEqual([
      ['dc1', true],
      ['dc2', false],
      ['dc3', null],
    ]);
    // No target: nothing said, null in JSON.
    expect(renderStatus(base).join('\n')).not.toContain('autonomy');
  });

  it('names the shards per DC in the header and in JSON, and says nothing of them when there is one', () => {
    const base = report(true);
    const sharded: StatusReport = {
      ...base,
      sequences: base.sequences.map((s) => ({
        ...s,
        settings: { ...s.settings, shards: 4 },
        // dc2's row as a shard of dc3, the DC it is seen from: marked local as dc3 is.
        dcs: s.dcs.map((dc) => (dc.dc === 'dc2' ? { ...dc, dc: 'dc3/2' } : dc)),
      })),
    };
    expect(renderStatus(sharded).join('\n')).toContain('· 4 shards per DC');
    expect(renderStatus(sharded, true).join('\n')).toMatch(/^ {2}dc3\/2\* /m);
    // Folded, dc3/2 is part of dc3's row.
    expect(renderStatus(sharded).join('\n')).toMatch(/^ {2}dc3\* +1\/4 /m);
    expect(renderStatus(sharded).join('\n')).not.toContain('dc3/2');
    expect(renderStatus(base).join('\n')).not.toContain('shards');
    const json = statusJson(sharded)['sequences'] as { settings: Record<string, unknown> }[];
    expect(json[0]!.settings['shards']).toBe(4);
  });

  /**
   * A status from dc1 of a sequence of 2 shards per DC, rates over 10 s: dc1's first shard holds
   * grant #1 and draws 100/s (runway 100 s), its second (dc1/1) holds its grant #2 and draws
   * nothing; dc2 has one shard holding grant #1, its other none; dc3 holds nothing.
   */
  function shardedReport(): StatusReport {
    const sharded = { ...settings, shards: 2 };
    const onGrant = (number: number, min: bigint, lastInteger: bigint): DcState => ({
      ...state(0, lastInteger),
      reservedMin: min,
      reservedMax: min + 99_999n,
      reservedGrant: number,
      preloadedMin: min,
      preloadedMax: min + 99_999n,
      installedGrant: number,
    });
    const usage = (issued: bigint, dropped: bigint) => ({ ...zeroUsageCounts(), issued, dropped });
    const at = (dc1Last: bigint, readAt: number) => ({
      settings: sharded,
      globalLast: 400_000n,
      grants: new Map([
        ['dc1', [{ number: 1, min: 1n, max: 100_000n }]],
        [
          'dc1/1',
          [
            { number: 1, min: 100_001n, max: 200_000n },
            { number: 2, min: 300_001n, max: 400_000n },
          ],
        ],
        ['dc2', [{ number: 1, min: 200_001n, max: 300_000n }]],
      ]),
      states: new Map([
        ['dc1', onGrant(1, 1n, dc1Last)],
        ['dc1/1', onGrant(2, 300_001n, 300_500n)],
        ['dc2', onGrant(1, 200_001n, 201_000n)],
      ]),
      usage: new Map([
        ['dc1', usage(89_000n, 10n)],
        ['dc1/1', usage(100_400n, 5n)],
      ]),
      readAt,
    });
    return {
      ...report(true),
      dc: 'dc1',
      sequences: [sequenceStatus(at(90_000n, 10_000), at(89_000n, 0), ['dc1', 'dc2', 'dc3'])],
    };
  }

  it("folds each DC's shards into one row by default, one row per shard with --shards", () => {
    const folded = renderStatus(shardedReport());
    const table = folded.slice(folded.findIndex((line) => line.includes('GLOBAL')) + 1);
    expect(table.slice(0, 5)).toEqual([
      '  DC    shards  reserved             preloaded  last_integer  reserved used         IDs left   rate  runway',
      '  dc1*     2/2  2 ranges (#1–#2)     –                300500  [#####.......]   45%   109,500  100/s  1m 40s',
      '  dc2      1/2  #1 [200001, 300000]  –                201000  [............]  1.0%    99,000    0/s       ∞',
      '  dc3      0/2  none yet             –                     –  –                            0      –       –',
      '  each row folds a DC\'s shards: "shards" those holding a grant, ranges counted with their grants, IDs left and rates summed, runway the shortest shard\'s (--shards: one row each)',
    ]);
    // Usage summed over the DC's shards.
    expect(folded).toContain(
      '  dc1 reported: 189,400 issued · 15 wasted (dropped 15) · 1,085 held by processes or lost in crashes',
    );

    const perShard = renderStatus(shardedReport(), true).join('\n');
    expect(perShard).toMatch(/^ {2}DC +reserved +preloaded /m); // no shards column
    expect(perShard).toMatch(/^ {2}dc1\* +#1 \[1, 100000\] .* 10,000 +100\/s +1m 40s$/m);
    expect(perShard).toMatch(/^ {2}dc1\/1\* +#2 \[300001, 400000\] .* 99,500 +0\/s +∞$/m);
    expect(perShard).toContain('  dc1/1 reported: 100,400 issued');
    expect(perShard).not.toContain('each row folds');
    // JSON is the same either way: every shard.
    const dcs = (statusJson(shardedReport())['sequences'] as { dcs: { dc: string }[] }[])[0]!.dcs;
    expect(dcs.map((dc) => dc.dc)).toEqual(['dc1', 'dc1/1', 'dc2', 'dc3']);
  });

  it('marks a folded DC by its shortest runway, and as unknown when a shard was not read current', () => {
    const base = shardedReport();
    const [sequence] = base.sequences;
    const withTarget: StatusReport = {
      ...base,
      sequences: [{ ...sequence!, settings: { ...sequence!.settings, autonomySeconds: 3_600 } }],
    };
    // dc1/1 lasts forever, dc1 100 s: the DC is below its target.
    expect(renderStatus(withTarget).join('\n')).toMatch(
      /^ {2}dc1\* .* 1m 40s +runway below the autonomy target of 1h 00m$/m,
    );
    const stale: StatusReport = {
      ...base,
      sequences: [
        {
          ...sequence!,
          dcs: sequence!.dcs.map((dc) =>
            dc.dc === 'dc1/1'
              ? { ...dc, rate: undefined, runway: undefined, rowsNotCurrent: 'not read current' }
              : dc,
          ),
        },
      ],
    };
    expect(renderStatus(stale).join('\n')).toMatch(
      /^ {2}dc1\* .* 109,500 +\? +unknown +rows not current$/m,
    );
  });

  it('counts a first range granted at creation as held by a DC with no state yet, in text and JSON', () => {
    const withFirst = report(true, true, true);
    expect(renderStatus(withFirst).join('\n')).toMatch(
      /^ {2}dc3\* +none yet .* 100,000 +0\/s +∞ +grant #1 \[200001, 300000\] not installed yet$/m,
    );
    const dcs = (statusJson(withFirst)['sequences'] as { dcs: Record<string, unknown>[] }[])[0]!
      .dcs;
    expect(dcs.find((dc) => dc['dc'] === 'dc3')).toMatchObject({ left: 100_000n, reserved: null });
    // With no grant, a DC holds nothing.
    expect(renderStatus(report(true)).join('\n')).toMatch(
      /^ {2}dc3\* +none yet +– +– +– +0 +– +– *$/m,
    );
  });

  it('says when the domain is spent at the current rate', () => {
    const status = report(true).sequences[0]!;
    // 2,147,283,647 never granted + 10,000 and 99,000 held, at 100/s in all.
    expect(status.exhaustsIn).toBe((2_147_283_647 + 10_000 + 99_000) / 100);
    expect(renderStatus(report(true)).join('\n')).toMatch(/domain lasts \S+.* at the current rate/);
    const json = statusJson(report(true))['sequences'] as Record<string, unknown>[];
    expect(json[0]!['exhaustsInSeconds']).toBe(status.exhaustsIn);
    expect(report(true, false).sequences[0]!.exhaustsIn).toBeUndefined();
  });

  it('exits 0 with SERIAL reachable and every runway at or above the threshold', () => {
    expect(report(true).sequences[0]!.dcs.map((dc) => [dc.dc, dc.runway])).toEqual([
      ['dc1', 100],
      ['dc2', Infinity],
      ['dc3', undefined],
    ]);
    expect(statusOutcome(report(true))).toBeUndefined();
    expect(statusOutcome(report(true), 100)).toBeUndefined(); // below, not at
    expect(runwaysBelow(report(true), 100)).toEqual([]);
  });

  it('exits 14 when a DC runs out of IDs sooner than the threshold', () => {
    expect(runwaysBelow(report(true), 101)).toEqual([
      { sequence: 'orders', dc: 'dc1', runway: 100, left: 10_000n, rate: 100 },
    ]);
    expect(statusOutcome(report(true), 101)?.message).toMatch(
      /^runway below 101s: "orders" in dc1/,
    );
    expect(statusOutcome(report(true), 5_400)?.message).toMatch(/^runway below 90m: /);
    const outcome = statusOutcome(report(true), 30 * 60);
    expect(outcome?.exitCode).toBe(14);
    expect(outcome?.code).toBe('IDGEN_STATUS_RUNWAY_LOW');
    expect(outcome?.message).toBe(
      'runway below 30m: "orders" in dc1 1m 40s (10,000 IDs left at 100/s). A DC lives on its runway while it cannot reach SERIAL; to ride out longer partitions, raise the DC range size ("idgen-cass alter orders --dc-range N").',
    );
  });

  it('advises the setting the grants are sized by, and no alter for a spent domain', () => {
    const base = report(true);
    const orders = base.sequences[0]!;
    const withSequences = (...sequences: SequenceStatus[]): StatusReport => ({
      ...base,
      sequences,
    });
    const autonomy = { ...orders, settings: { ...orders.settings, autonomySeconds: 3_600 } };
    expect(statusOutcome(withSequences(autonomy), 30 * 60)?.message).toBe(
      'runway below 30m: "orders" in dc1 1m 40s (10,000 IDs left at 100/s). A DC lives on its runway while it cannot reach SERIAL; to ride out longer partitions, raise the autonomy target of "orders" or its cap ("idgen-cass alter orders --autonomy D --max-dc-range N").',
    );
    const spent = { ...orders, domainLeft: 0n };
    expect(statusOutcome(withSequences(spent), 30 * 60)?.message).toBe(
      'runway below 30m: "orders" in dc1 1m 40s (10,000 IDs left at 100/s). "orders" has no IDs left to grant: its DCs serve only what they hold, and no alter adds any (a sequence with a larger domain does).',
    );
    // Each sequence gets its own advice; one not below the threshold gets none.
    const rename = (s: SequenceStatus, name: string): SequenceStatus => ({
      ...s,
      settings: { ...s.settings, name },
    });
    const message = statusOutcome(
      withSequences(rename(orders, 'a'), rename(autonomy, 'b'), rename(spent, 'c')),
      30 * 60,
    )?.message;
    expect(message).toContain(
      'to ride out longer partitions, raise the DC range size ("idgen-cass alter a --dc-range N"); raise the autonomy target of "b" or its cap ("idgen-cass alter b --autonomy D --max-dc-range N"). "c" has no IDs left',
    );
    expect(
      statusOutcome(withSequences(rename(orders, 'a'), rename(spent, 'c')), 101)?.message,
    ).toMatch(
      /^runway below 101s: "a" in dc1 1m 40s \(10,000 IDs left at 100\/s\), "c" in dc1 .*alter a --dc-range N"\)\. "c" has no IDs left to grant: its DCs/,
    );
  });

  it('exits 13 when SERIAL is unreachable from here', () => {
    for (const threshold of [undefined, 60]) {
      const outcome = statusOutcome(report(false), threshold);
      expect(outcome?.exitCode).toBe(13);
      expect(outcome?.code).toBe('IDGEN_STATUS_SERIAL_UNREACHABLE');
      expect(outcome?.message).toBe(
        'SERIAL is unreachable from dc3: dc3 gets no new DC range until the links between datacenters return, and each DC serves only the IDs it holds (runways on stdout).',
      );
    }
  });

  it('exits 14, naming SERIAL too, when both hold', () => {
    const outcome = statusOutcome(report(false), 3_600);
    expect(outcome?.exitCode).toBe(14);
    expect(outcome?.message).toBe(
      'runway below 1h: "orders" in dc1 1m 40s (10,000 IDs left at 100/s); and SERIAL is unreachable from dc3, so dc3 gets no new DC range until the links between datacenters return.',
    );
  });

  it('judges no runway that was not measured, nor a DC holding no range', () => {
    expect(runwaysBelow(report(true, false), 1e9)).toEqual([]);
    expect(statusOutcome(report(true, false), 1e9)).toBeUndefined();
    expect(statusOutcome(report(false, false), 1e9)?.exitCode).toBe(13);
  });

  it('refuses --fail-if-runway-below with --watch or --sample 0, before connecting', async () => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', '192.0.2.1'); // TEST-NET-1: never reached
    vi.stubEnv('IDGEN_DC', 'dc1');
    for (const [args, message] of [
      [
        ['--watch'],
        'Invalid --watch: received "2s"; allowed: no --watch with --fail-if-runway-below',
      ],
      [['--watch', '500ms'], 'Invalid --watch: received "500ms"'],
      [['--sample', '0'], 'Invalid --sample: received 0; allowed: a duration above 0'],
      [['--sample', '0s'], 'Invalid --sample: received 0; allowed: a duration above 0'],
    ] as const) {
      const run = await cli('status', '--fail-if-runway-below', '30m', ...args);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^idgen-cass: [^\n]+\n$/);
      expect(run.stderr).toContain(message);
    }
  });

  it('refuses --serial-timeout 0, which no probe meets, before connecting', async () => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', '192.0.2.1'); // TEST-NET-1: never reached
    vi.stubEnv('IDGEN_DC', 'dc1');
    const run = await cli('status', '--serial-timeout', '0s');
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'idgen-cass: Invalid --serial-timeout: received "0s"; allowed: a duration from 1ms to 24d with its unit (ms, s, m, h or d, e.g. 500ms, 10s, 2m).\n',
    );
  });

  it('documents the flag and its exit codes in --help', async () => {
    const { stdout } = await cli('status', '--help');
    expect(stdout).toContain('--fail-if-runway-below <duration>');
    expect(stdout).toContain('exits 13 when SERIAL is');
    expect(stdout).toContain('$ idgen-cass status --sample 60s --fail-if-runway-below 30m');
    expect(stdout).toContain('--sample <duration>');
    expect(stdout).toContain('(default: 2s)');
  });
});
