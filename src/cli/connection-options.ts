/**
 * The library's connection options from the CLI's global flags, TLS files read; the library
 * validates them. Passwords and key material go to the driver only, never to a message (paths only).
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import type { ConnectionOptions } from '../store/cassandra/driver-client.js';
import { InvalidOptionError } from '../errors.js';
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

/**
 * The connection options `flags` describe, TLS files read.
 * @throws {InvalidOptionError} for a certificate without its key, or a TLS file that cannot be
 * read or holds no PEM.
 */
export function connectionOptions(flags: ConnectionFlags): ConnectionOptions {
  const { contactPoints, dc, keyspace, username, password, requestTimeout } = flags;
  const { ssl, sslCa, sslCert, sslKey } = flags;
  const tls = ssl === true || sslCa !== undefined || sslCert !== undefined || sslKey !== undefined;
  return {
    ...(contactPoints === undefined ? {} : { contactPoints: parseList(contactPoints) }),
    ...(dc === undefined ? {} : { localDataCenter: dc.trim() }),
    keyspace,
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...(tls ? { sslOptions: tlsOptions(sslCa, sslCert, sslKey) } : {}),
    ...(requestTimeout === undefined ? {} : { requestTimeoutMs: requestTimeout }),
  };
}

/** Certificates are always verified. */
function tlsOptions(ca?: string, cert?: string, key?: string): TlsOptions {
  return {
    rejectUnauthorized: true,
    ...(ca === undefined ? {} : { ca: pemFile('sslCa', ca) }),
    ...keyPair(['sslCert', cert], ['sslKey', key]),
  };
}

/**
 * A certificate file and its private key file, read; both given or neither (then undefined).
 * @throws {InvalidOptionError} naming the file missing, or one that cannot be read or holds no PEM.
 */
export function keyPair(
  [certOption, cert]: readonly [string, string | undefined],
  [keyOption, key]: readonly [string, string | undefined],
): { cert: Buffer; key: Buffer } | undefined {
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) {
    const [missing, given] = cert === undefined ? [certOption, keyOption] : [keyOption, certOption];
    const allowed = `a PEM file whenever ${given} is given: a certificate goes with its private key`;
    throw new InvalidOptionError(missing, undefined, allowed);
  }
  return { cert: pemFile(certOption, cert), key: pemFile(keyOption, key) };
}

/** Errors name the path, never the contents. */
function pemFile(option: string, path: string): Buffer {
  let contents: Buffer;
  try {
    contents = readFileSync(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidOptionError(option, path, `the path of a readable PEM file (${reason})`);
  }
  if (!contents.includes('-----BEGIN ')) {
    throw new InvalidOptionError(option, path, 'a PEM file (it has no "-----BEGIN " line)');
  }
  return contents;
}
