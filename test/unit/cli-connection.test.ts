/**
 * The CLI's connection flags (TLS, request timeout) wired down to the driver: what commander
 * parses from flags and IDGEN_… variables, through CliContext.connection() and the library's
 * buildClientOptions(), into the options of a `cassandra.Client` that is built but never
 * connected.
 *
 * There is no TLS-enabled node on the test cluster (the local manager and the containers run
 * plain CQL on port 9042), so no handshake is tested here; these tests stop at the options the
 * driver would hand to `tls.connect()`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConnectionOptions as TlsOptions } from 'node:tls';

import cassandra from 'cassandra-driver';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';

import { InvalidOptionError } from '../../src/errors.js';
import { errorMessage, exitCodeOf } from '../../src/cli/exit-codes.js';
import { createProgram } from '../../src/cli/program.js';
import {
  buildClientOptions,
  type ConnectionOptions,
} from '../../src/store/cassandra/driver-client.js';
import { capture, cli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'idgen-cli-tls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

/** Not real certificates: the driver reads them only when it connects. */
const CA = '-----BEGIN CERTIFICATE-----\nTESTCA\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nTESTCLIENT\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n';
const caFile = file('ca.pem', CA);
const certFile = file('client.pem', CERT);
const keyFile = file('client.key', KEY);

function file(name: string, contents: string): string {
  const path = join(dir, name);
  writeFileSync(path, contents);
  return path;
}

const sink = () => capture(() => undefined);

/** Every IDGEN_ variable of the connection unset, so the developer's shell does not leak in. */
function clearVariables(): void {
  for (const name of [
    'IDGEN_CONTACT_POINTS',
    'IDGEN_DC',
    'IDGEN_USERNAME',
    'IDGEN_PASSWORD',
    'IDGEN_SSL',
    'IDGEN_SSL_CA',
    'IDGEN_SSL_CERT',
    'IDGEN_SSL_KEY',
    'IDGEN_REQUEST_TIMEOUT',
  ]) {
    vi.stubEnv(name, undefined);
  }
}

/**
 * The connection options the CLI builds for `args` (global flags), through commander and
 * CliContext exactly as a command gets them, with a command that only captures them.
 */
async function cliConnection(...args: string[]): Promise<ConnectionOptions> {
  const { program, ctx } = createProgram({ stdout: sink(), stderr: sink() });
  let captured: ConnectionOptions | undefined;
  program.command('capture').action(() => {
    captured = ctx.connection();
  });
  await program.parseAsync(['node', 'idgen-cass', ...args, 'capture']);
  if (captured === undefined) throw new Error('the capture command did not run');
  return captured;
}

/** The options a driver Client built from `options` holds (the client is never connected). */
async function driverOptionsOf(options: ConnectionOptions): Promise<cassandra.ClientOptions> {
  const client = new cassandra.Client(buildClientOptions(options).clientOptions);
  try {
    return (client as unknown as { options: cassandra.ClientOptions }).options;
  } finally {
    await client.shutdown();
  }
}

const LOCAL = ['--contact-points', '192.0.2.1', '--dc', 'dc1']; // TEST-NET-1: never reached

describe('TLS and the request timeout, from the command line to the driver', () => {
  it('passes --ssl-ca, --ssl-cert, --ssl-key and --request-timeout to the driver client', async () => {
    clearVariables();
    const options = await cliConnection(
      ...LOCAL,
      '--ssl-ca',
      caFile,
      '--ssl-cert',
      certFile,
      '--ssl-key',
      keyFile,
      '--request-timeout',
      '4s',
    );
    expect(options.requestTimeoutMs).toBe(4_000);
    const driver = await driverOptionsOf(options);
    const ssl = driver.sslOptions as TlsOptions;
    expect(String(ssl.ca)).toBe(CA);
    expect(String(ssl.cert)).toBe(CERT);
    expect(String(ssl.key)).toBe(KEY);
    // The driver would not verify the nodes' certificates otherwise.
    expect(ssl.rejectUnauthorized).toBe(true);
    expect(driver.socketOptions?.readTimeout).toBe(4_000);
    expect(driver.contactPoints).toEqual(['192.0.2.1']);
  });

  it('reads the same from IDGEN_SSL_CA, IDGEN_SSL_CERT, IDGEN_SSL_KEY and IDGEN_REQUEST_TIMEOUT', async () => {
    clearVariables();
    vi.stubEnv('IDGEN_CONTACT_POINTS', '192.0.2.1');
    vi.stubEnv('IDGEN_DC', 'dc1');
    vi.stubEnv('IDGEN_SSL_CA', caFile);
    vi.stubEnv('IDGEN_SSL_CERT', certFile);
    vi.stubEnv('IDGEN_SSL_KEY', keyFile);
    vi.stubEnv('IDGEN_REQUEST_TIMEOUT', '2500ms');
    const driver = await driverOptionsOf(await cliConnection());
    const ssl = driver.sslOptions as TlsOptions;
    expect([String(ssl.ca), String(ssl.cert), String(ssl.key)]).toEqual([CA, CERT, KEY]);
    expect(driver.socketOptions?.readTimeout).toBe(2_500);
  });

  it('turns TLS on with --ssl or IDGEN_SSL=true, off with IDGEN_SSL=false, plain TCP by default', async () => {
    clearVariables();
    const plain = await driverOptionsOf(await cliConnection(...LOCAL));
    expect(plain.sslOptions).toBeUndefined();
    expect(plain.socketOptions?.readTimeout).toBe(5_000); // the library's default

    const flag = await cliConnection(...LOCAL, '--ssl');
    expect(flag.sslOptions).toEqual({ rejectUnauthorized: true });
    vi.stubEnv('IDGEN_SSL', 'true');
    expect((await driverOptionsOf(await cliConnection(...LOCAL))).sslOptions).toEqual({
      rejectUnauthorized: true,
    });
    // Commander alone would turn TLS on whatever the value.
    vi.stubEnv('IDGEN_SSL', 'false');
    expect((await cliConnection(...LOCAL)).sslOptions).toBeUndefined();
    vi.stubEnv('IDGEN_SSL', 'maybe');
    await expect(cliConnection(...LOCAL)).rejects.toThrow(
      'Invalid option "ssl": received "maybe"; allowed: true or false',
    );
  });

  it('refuses a client certificate without its key', async () => {
    clearVariables();
    const noKey = await rejection(cliConnection(...LOCAL, '--ssl-cert', certFile));
    expect(errorMessage(noKey)).toBe(
      'Invalid --ssl-key (IDGEN_SSL_KEY): received nothing; allowed: a PEM file whenever sslCert is given: a certificate goes with its private key. sslCert is --ssl-cert.',
    );
    const noCert = await rejection(cliConnection(...LOCAL, '--ssl-key', keyFile));
    expect(errorMessage(noCert)).toContain('Invalid --ssl-cert (IDGEN_SSL_CERT)');
  });

  it('takes the request timeout as a duration with its unit, from the flag or the variable', async () => {
    clearVariables();
    const syntax = 'allowed: a duration from 1ms to 24d with its unit (ms, s, m, h or d';
    for (const value of ['5000', '0', '0s', '25d']) {
      const run = await cli(...LOCAL, '--request-timeout', value, 'list');
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
      expect(run.stderr).toContain(
        `idgen-cass: Invalid --request-timeout (IDGEN_REQUEST_TIMEOUT): received "${value}"; ${syntax}`,
      );
    }
    vi.stubEnv('IDGEN_REQUEST_TIMEOUT', '5000');
    const fromVariable = await cli(...LOCAL, 'list');
    expect(fromVariable.code).toBe(1);
    expect(fromVariable.stderr).toContain('received "5000"');
    vi.stubEnv('IDGEN_REQUEST_TIMEOUT', '1.5s');
    expect((await cliConnection(...LOCAL)).requestTimeoutMs).toBe(1_500);
  });

  it('leaves the required options to the library, which names the first one missing', async () => {
    clearVariables();
    expect(await cliConnection()).toEqual({ keyspace: 'idgen' });
    const run = await cli('list');
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(
      /^idgen-cass: Invalid --contact-points \(IDGEN_CONTACT_POINTS\): received nothing; /,
    );
    const blank = await cli('--contact-points', '192.0.2.1', '--dc', '  ', 'list');
    expect(blank.code).toBe(1);
    expect(blank.stderr).toMatch(/^idgen-cass: Invalid --dc \(IDGEN_DC\): received ""; /);
  });

  it('names the option and the file it cannot read, never the contents of a key', async () => {
    clearVariables();
    const missing = join(dir, 'missing.pem');
    const unreadable = await rejection(cliConnection(...LOCAL, '--ssl-ca', missing));
    expect(unreadable).toBeInstanceOf(InvalidOptionError);
    expect(unreadable).toMatchObject({
      code: 'IDGEN_INVALID_OPTION',
      option: 'sslCa',
      received: missing,
    });
    expect(errorMessage(unreadable)).toBe(
      `Invalid --ssl-ca (IDGEN_SSL_CA): received "${missing}"; allowed: the path of a readable PEM file (ENOENT: no such file or directory, open '${missing}').`,
    );
    expect(exitCodeOf(unreadable)).toBe(1);

    const notPem = file('not-pem.key', 'SECRETKEYMATERIAL');
    const error = await rejection(
      cliConnection(...LOCAL, '--ssl-cert', certFile, '--ssl-key', notPem),
    );
    expect(errorMessage(error)).toBe(
      `Invalid --ssl-key (IDGEN_SSL_KEY): received "${notPem}"; allowed: a PEM file (it has no "-----BEGIN " line).`,
    );
    expect(JSON.stringify(error)).not.toContain('SECRETKEYMATERIAL');
  });

  it('reports an unreadable file as one line, exit 1, before connecting', async () => {
    clearVariables();
    const missing = join(dir, 'nowhere', 'ca.pem');
    const { code, stdout, stderr } = await cli(...LOCAL, '--ssl-ca', missing, 'list');
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toBe(
      `idgen-cass: Invalid --ssl-ca (IDGEN_SSL_CA): received "${missing}"; allowed: the path of a readable PEM file (ENOENT: no such file or directory, open '${missing}').\n`,
    );
  });

  it('lists the options and their variables in --help', async () => {
    const { code, stdout: help } = await cli('--help');
    expect(code).toBe(0);
    for (const [flag, variable] of [
      ['--ssl ', 'IDGEN_SSL'],
      ['--ssl-ca <file>', 'IDGEN_SSL_CA'],
      ['--ssl-cert <file>', 'IDGEN_SSL_CERT'],
      ['--ssl-key <file>', 'IDGEN_SSL_KEY'],
      ['--request-timeout <duration>', 'IDGEN_REQUEST_TIMEOUT'],
    ] as const) {
      expect(help).toContain(flag);
      expect(help.replace(/\s+/g, ' ')).toContain(`env: ${variable})`);
    }
  });
});

/** The error `promise` rejects with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected an error');
    },
    (error: unknown) => error,
  );
}
