/**
 * `idgen-cass serve` without Cassandra: its help, and bad options refused (exit code 1) before
 * anything is connected; the token never reaches the output.
 */

import { afterEach, describe, expect, it, vi } from 'vitest';

import { EventEmitter } from 'node:events';

import { stopSignal, tokenOptions } from '../../src/cli/commands/serve.js';
import { EXIT_CODES } from '../../src/cli/exit-codes.js';
import { cli } from './run-cli.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

/** Options that would connect to a loopback address where nothing listens. */
const NOWHERE = ['--contact-points', '127.0.0.99', '--dc', 'dc1'];

describe('idgen-cass serve', () => {
  it('explains its options, endpoints, signals and exit codes in --help', async () => {
    const { code, stdout } = await cli('serve', '--help');
    expect(code).toBe(EXIT_CODES.ok);
    for (const text of [
      '--port <port>',
      '--host <address>',
      '--sequence <names...>',
      '--token-file <file>',
      '--timeout <duration>',
      'IDGEN_SERVE_PORT',
      'IDGEN_SERVE_TOKEN',
      'POST /v1/sequences/{name}/ids?count=N',
      'SIGTERM',
      'Global options (connection, TLS, output, logs): see "idgen-cass --help".',
    ]) {
      expect(stdout).toContain(text);
    }
    expect(stdout.replace(/\s+/g, ' ')).toContain('(default: 5s, env: IDGEN_SERVE_TIMEOUT)');
    // The global options are in the program's help; serve's example still names two.
    expect(stdout).not.toMatch(/^ +--contact-points </m);
  });

  it.each([
    [['serve', '--port', '70000'], /--port.*Expected a port from 0 to 65535/],
    [['serve', '--port', 'http'], /--port.*Expected an integer/],
    [['serve', '--timeout', '0'], /Invalid --timeout \(IDGEN_SERVE_TIMEOUT\): received "0"/],
    [
      ['serve', '--timeout', '5000'],
      /Invalid --timeout \(IDGEN_SERVE_TIMEOUT\): received "5000"; allowed: a duration from 1ms to 24d with its unit/,
    ],
    [['serve', '--sequence', 'orders', '9lives'], /Invalid sequence name "9lives"/],
    [['serve', '--sequence', ''], /Invalid --sequence \(IDGEN_SERVE_SEQUENCES\)/],
    [
      ['serve', '--token-file', '/nonexistent/token'],
      /--token-file.*"\/nonexistent\/token".*ENOENT/,
    ],
    [
      ['serve', '--tls-cert', '/nonexistent/cert.pem'],
      /Invalid --tls-key \(IDGEN_SERVE_TLS_KEY\): received nothing; allowed: a PEM file whenever tlsCert is given: .* tlsCert is --tls-cert\./,
    ],
    [
      ['serve', '--tls-cert', '/nonexistent/cert.pem', '--tls-key', '/nonexistent/key.pem'],
      /Invalid --tls-cert \(IDGEN_SERVE_TLS_CERT\): received "\/nonexistent\/cert.pem"; allowed: the path of a readable PEM file \(ENOENT/,
    ],
    [
      ['serve', '--metrics-auth'],
      /Invalid --metrics-auth \(IDGEN_SERVE_METRICS_AUTH\): received true/,
    ],
    [['serve', '--max-pending-requests', '0'], /Invalid --max-pending-requests.*an integer from 1/],
    [
      ['serve', '--receive-timeout', '0'],
      /Invalid --receive-timeout \(IDGEN_SERVE_RECEIVE_TIMEOUT\)/,
    ],
  ])('refuses %j with exit code 1 before connecting', async (args, message) => {
    const { code, stdout, stderr } = await cli(...NOWHERE, ...args);
    expect({ code, stdout }).toEqual({ code: EXIT_CODES.usage, stdout: '' });
    expect(stderr).toMatch(message);
    expect(stderr).toMatch(/^idgen-cass: [^\n]+\n$/);
  });

  it('refuses a token that is no bearer token, or two token sources, without showing it', async () => {
    vi.stubEnv('IDGEN_SERVE_TOKEN', 'two words');
    const bad = await cli(...NOWHERE, 'serve');
    expect(bad.code).toBe(EXIT_CODES.usage);
    expect(bad.stderr).toContain('Invalid token (--token-file or IDGEN_SERVE_TOKEN)');
    expect(bad.stderr).not.toContain('two words');
    vi.stubEnv('IDGEN_SERVE_TOKEN', 'abc');
    const both = await cli(...NOWHERE, '--json', 'serve', '--token-file', '/etc/hostname');
    expect(both.code).toBe(EXIT_CODES.usage);
    expect(JSON.parse(both.stderr)).toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      message: expect.stringContaining('both --token-file and IDGEN_SERVE_TOKEN') as unknown,
    });
  });

  it('reads the sequences from IDGEN_SERVE_SEQUENCES, comma-separated', async () => {
    vi.stubEnv('IDGEN_SERVE_SEQUENCES', 'orders, 9lives');
    const { code, stderr } = await cli(...NOWHERE, 'serve');
    expect(code).toBe(EXIT_CODES.usage);
    expect(stderr).toContain('Invalid sequence name "9lives"');
  });

  it('reads IDGEN_SERVE_TIMEOUT with the same syntax as --timeout', async () => {
    vi.stubEnv('IDGEN_SERVE_TIMEOUT', '8000');
    const { code, stderr } = await cli(...NOWHERE, 'serve');
    expect(code).toBe(EXIT_CODES.usage);
    expect(stderr).toContain('Invalid --timeout (IDGEN_SERVE_TIMEOUT): received "8000"');
  });

  it('needs the contact points like every command that connects', async () => {
    vi.stubEnv('IDGEN_CONTACT_POINTS', undefined);
    const { code, stderr } = await cli('--dc', 'dc1', 'serve');
    expect(code).toBe(EXIT_CODES.usage);
    expect(stderr).toContain('Invalid --contact-points (IDGEN_CONTACT_POINTS): received nothing');
  });
});

describe('tokenOptions', () => {
  it('takes the file (re-read by the service) or the variable, its whitespace removed', () => {
    expect(tokenOptions('/run/secrets/tokens', undefined)).toEqual({
      tokenFile: '/run/secrets/tokens',
    });
    expect(tokenOptions(undefined, ' from-env\n')).toEqual({ token: 'from-env' });
    expect(tokenOptions(undefined, undefined)).toEqual({ tokenFile: undefined });
  });
});

describe('stop signals', () => {
  it('resolves with the first SIGTERM or SIGINT, and a second one exits at once (143, 130)', async () => {
    for (const [second, code] of [
      ['SIGTERM', 143],
      ['SIGINT', 130],
    ] as const) {
      const emitter = new EventEmitter();
      const exits: number[] = [];
      const target = {
        on: (name: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void) =>
          emitter.on(name, listener),
        off: (name: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void) =>
          emitter.off(name, listener),
        exit: (exitCode: number) => void exits.push(exitCode),
      };
      const stop = stopSignal(target);
      expect(stop.signal).toBeUndefined();
      emitter.emit('SIGTERM', 'SIGTERM');
      expect(await stop.received).toBe('SIGTERM');
      expect(stop.signal).toBe('SIGTERM');
      expect(exits).toEqual([]);
      // As PID 1 (node in a container without an init) a signal with no listener does nothing.
      emitter.emit(second, second);
      expect(exits).toEqual([code]);
      // Once released, nothing is left listening.
      stop.release();
      expect(emitter.listenerCount('SIGTERM') + emitter.listenerCount('SIGINT')).toBe(0);
    }
    // Released before any signal came (a start that failed), nothing is left listening either.
    const emitter = new EventEmitter();
    stopSignal({
      on: (name, listener) => emitter.on(name, listener),
      off: (name, listener) => emitter.off(name, listener),
      exit: () => {},
    }).release();
    expect(emitter.listenerCount('SIGTERM') + emitter.listenerCount('SIGINT')).toBe(0);
  });
});
