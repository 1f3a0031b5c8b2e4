/**
 * The library's connection options from the CLI's global flags, TLS files read. Passwords and
 * key material go to the driver only, never to a log or a message (paths only).
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import type { ConnectionOptions } from '../store/cassandra/driver-client.js';
import { IdGenError, InvalidOptionError } from '../errors.js';
import { parseList } from './parse.js';

/** The global flags that say how to reach Cassandra; `requestTimeout` in milliseconds. */
export interface ConnectionFlags {
  readonly contactPoints?: string | undefined;
  readonly dc?: string | undefined;
  readonly keyspace: string;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly ssl?: boolean | undefined;
  readonly sslCa?: string | undefined;
  readonly sslCert?: string | undefined;
  readonly sslKey?: string | undefined;
  readonly requestTimeout?: number | undefined;
}

/** The flags that name a PEM file: to Cassandra (`--ssl-…`) and of `serve` (`--tls-…`). */
export const TLS_FILE_FLAGS = Object.freeze({
  sslCa: '--ssl-ca (IDGEN_SSL_CA)',
  sslCert: '--ssl-cert (IDGEN_SSL_CERT)',
  sslKey: '--ssl-key (IDGEN_SSL_KEY)',
  tlsCert: '--tls-cert (IDGEN_SERVE_TLS_CERT)',
  tlsKey: '--tls-key (IDGEN_SERVE_TLS_KEY)',
});

export type TlsFileOption = keyof typeof TLS_FILE_FLAGS;

/** A TLS file given on the command line cannot be read, or holds no PEM. Exit code 1. */
export class OptionFileError extends IdGenError {
  constructor(
    readonly option: TlsFileOption,
    readonly file: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      'IDGEN_INVALID_OPTION',
      `Cannot use the file of ${TLS_FILE_FLAGS[option]}, "${file}": ${reason}. Give the path of a readable PEM file.`,
      options,
    );
  }
}

/** Options every command needs and has no default for. */
const REQUIRED = Object.freeze([
  {
    key: 'contactPoints',
    flag: '--contact-points',
    variable: 'IDGEN_CONTACT_POINTS',
    what: 'addresses of nodes in the local datacenter',
    example: '10.0.0.1,10.0.0.2:9042',
  },
  {
    key: 'dc',
    flag: '--dc',
    variable: 'IDGEN_DC',
    what: "the local datacenter's name as Cassandra knows it",
    example: 'dc1',
  },
] as const);

type RequiredFlag = (typeof REQUIRED)[number]['flag'];

/** Required options given neither as a flag nor in their variable, all in one message. */
export class MissingOptionsError extends IdGenError {
  constructor(readonly missing: readonly RequiredFlag[]) {
    const options = REQUIRED.filter((option) => missing.includes(option.flag));
    const example = options.map((option) => `${option.flag} ${option.example}`).join(' ');
    super(
      'IDGEN_INVALID_OPTION',
      `Missing required option${missing.length === 1 ? '' : 's'}: ${missing.join(', ')}. ` +
        `Give ${options.map((option) => option.what).join(' and ')}, ` +
        `e.g. "idgen-cass ${example} <command>", or set ${options.map((option) => option.variable).join(' and ')}.`,
    );
  }
}

export type ReadFile = (path: string) => Buffer;

/**
 * The connection options `flags` describe, TLS files read.
 * @throws {MissingOptionsError} naming every required option not given (or given blank).
 * @throws {InvalidOptionError} for contact points naming no address, a certificate without key.
 * @throws {OptionFileError} for a TLS file that cannot be read or holds no PEM.
 */
export function connectionOptions(
  flags: ConnectionFlags,
  readFile: ReadFile = readFileSync,
): ConnectionOptions {
  const { contactPoints, dc, keyspace, username, password, requestTimeout } = flags;
  const missing = REQUIRED.filter((option) => (flags[option.key] ?? '').trim() === '');
  if (missing.length > 0) throw new MissingOptionsError(missing.map((option) => option.flag));
  const points = parseList(contactPoints!);
  if (points.length === 0) {
    throw new InvalidOptionError(
      'contactPoints',
      contactPoints,
      'a comma-separated list of node addresses of the local datacenter, e.g. 10.0.0.1,10.0.0.2:9042',
    );
  }
  const sslOptions = tlsOptions(flags, readFile);
  return {
    contactPoints: points,
    localDataCenter: dc!.trim(),
    keyspace,
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...(sslOptions === undefined ? {} : { sslOptions }),
    ...(requestTimeout === undefined ? {} : { requestTimeoutMs: requestTimeout }),
  };
}

/** Undefined for plain TCP; certificates are always verified. */
function tlsOptions(flags: ConnectionFlags, readFile: ReadFile): TlsOptions | undefined {
  const { ssl, sslCa, sslCert, sslKey } = flags;
  if (ssl !== true && sslCa === undefined && sslCert === undefined && sslKey === undefined) {
    return undefined;
  }
  return {
    rejectUnauthorized: true,
    ...(sslCa === undefined ? {} : { ca: pemFile('sslCa', sslCa, readFile) }),
    ...keyPair(['sslCert', sslCert], ['sslKey', sslKey], readFile),
  };
}

/**
 * A certificate file and its private key file, read; both given or neither (then undefined).
 * @throws {InvalidOptionError} naming the file missing.
 * @throws {OptionFileError} for a file that cannot be read or holds no PEM.
 */
export function keyPair(
  [certOption, cert]: readonly [TlsFileOption, string | undefined],
  [keyOption, key]: readonly [TlsFileOption, string | undefined],
  readFile: ReadFile = readFileSync,
): { cert: Buffer; key: Buffer } | undefined {
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) {
    const [missing, given] = cert === undefined ? [certOption, keyOption] : [keyOption, certOption];
    throw new InvalidOptionError(
      missing,
      undefined,
      `a PEM file whenever ${TLS_FILE_FLAGS[given]} is given: a certificate goes with its private key`,
    );
  }
  return { cert: pemFile(certOption, cert, readFile), key: pemFile(keyOption, key, readFile) };
}

/** Errors name the path, never the contents. */
function pemFile(option: TlsFileOption, path: string, readFile: ReadFile): Buffer {
  let contents: Buffer;
  try {
    contents = readFile(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new OptionFileError(option, path, reason, { cause: error });
  }
  if (!contents.includes('-----BEGIN ')) {
    throw new OptionFileError(option, path, 'it holds no PEM block (no "-----BEGIN " line)');
  }
  return contents;
}
