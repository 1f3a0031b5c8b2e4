/**
 * What every command shares: global options, logger (stderr), stdout, and the connections.
 * Passwords and key material go to the driver only, never to a message (TLS file paths only).
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import type { Command } from 'commander';
import { pino, type Logger } from 'pino';
import type { Admin } from '../admin/admin.js';
import { openAdmin } from '../admin/open.js';
import type { IdGen } from '../allocator/id-gen.js';
import { connect, type ConnectOptions } from '../connect.js';
import { InvalidOptionError } from '../errors.js';
import type { ConnectionOptions } from '../store/cassandra/driver-client.js';
import { OutputError } from './exit-codes.js';
import { toJson } from './format.js';
import { parseList, parseSwitch } from './parse.js';

/** `requestTimeout` in milliseconds. */
interface GlobalOptions {
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
  readonly logLevel: string;
  readonly json?: boolean | undefined;
  readonly verbose?: boolean | undefined;
}

export type AllocatorOptions = Omit<ConnectOptions, keyof ConnectionOptions | 'logger'>;

export interface Streams {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

export class CliContext {
  readonly #program: Command;
  readonly #streams: Streams;
  readonly #argv: readonly string[];
  readonly #closers: (() => Promise<void>)[] = [];
  readonly #pending: Promise<void>[] = [];
  #stdoutClosed = false;
  #outputFailure: OutputError | undefined;
  #logger: Logger | undefined;

  /** @param argv the command line, read for --json and --verbose before commander has. */
  constructor(program: Command, streams: Streams, argv: readonly string[] = []) {
    [this.#program, this.#streams, this.#argv] = [program, streams, argv];
  }

  get options(): GlobalOptions {
    return this.#program.opts<GlobalOptions>();
  }

  get json(): boolean {
    return this.options.json === true;
  }

  /** --json for errors, also when commander fails before parsing it. */
  get jsonErrors(): boolean {
    return this.json || this.#argv.slice(2).includes('--json');
  }

  /** stdout is a terminal (a watch then redraws the screen). */
  get interactive(): boolean {
    return (this.#streams.stdout as { isTTY?: boolean }).isTTY === true;
  }

  get logLevelGiven(): boolean {
    return this.#program.getOptionValueSource('logLevel') !== 'default';
  }

  /** --verbose, also when commander fails before parsing it. */
  get verbose(): boolean {
    return this.options.verbose === true || this.#argv.includes('--verbose');
  }

  /** pino at --log-level on stderr; stacks with --verbose only. */
  get logger(): Logger {
    this.#logger ??= pino(
      {
        name: 'idgen-cass',
        level: this.options.logLevel,
        serializers: { err: this.verbose ? pino.stdSerializers.err : errNoStack },
      },
      this.#streams.stderr,
    );
    return this.#logger;
  }

  /**
   * The library's connection options, TLS files read; the library validates the rest.
   * @throws {InvalidOptionError} for `IDGEN_SSL=maybe`, a certificate without its key, or a TLS
   * file that cannot be read or holds no PEM.
   */
  connection(): ConnectionOptions {
    const { contactPoints, dc, keyspace, username, password, requestTimeout } = this.options;
    const { sslCa, sslCert, sslKey } = this.options;
    // Commander sets a boolean flag from its variable whatever the value: read it ourselves.
    const fromEnv = this.#program.getOptionValueSource('ssl') === 'env';
    const ssl = fromEnv ? parseSwitch(process.env['IDGEN_SSL'] ?? '', 'ssl') : this.options.ssl;
    const tls =
      ssl === true || sslCa !== undefined || sslCert !== undefined || sslKey !== undefined;
    const sslOptions: TlsOptions = {
      rejectUnauthorized: true,
      ...(sslCa === undefined ? {} : { ca: pemFile('sslCa', sslCa) }),
      ...keyPair(['sslCert', sslCert], ['sslKey', sslKey]),
    };
    return {
      ...(contactPoints === undefined ? {} : { contactPoints: parseList(contactPoints) }),
      ...(dc === undefined ? {} : { localDataCenter: dc.trim() }),
      keyspace,
      ...(username === undefined ? {} : { username }),
      ...(password === undefined ? {} : { password }),
      ...(tls ? { sslOptions } : {}),
      ...(requestTimeout === undefined ? {} : { requestTimeoutMs: requestTimeout }),
    };
  }

  /** An allocator, closed (returning unused IDs) by {@link close}. */
  async idGen(options: AllocatorOptions = {}): Promise<IdGen> {
    return this.#opened(await connect({ ...this.connection(), ...options, logger: this.logger }));
  }

  async admin(): Promise<Admin> {
    return this.#opened(await openAdmin(this.connection()));
  }

  /** `opened`, to be closed by {@link close}. */
  #opened<T extends IdGen | Admin>(opened: T): T {
    this.#closers.push(() => opened.close());
    this.logger.debug({ dc: opened.dc, keyspace: opened.keyspace }, 'connected');
    return opened;
  }

  async print(lines: string | readonly string[]): Promise<void> {
    await this.#out(`${typeof lines === 'string' ? lines : lines.join('\n')}\n`);
  }

  async printJson(value: unknown, indent = 2): Promise<void> {
    await this.#out(`${toJson(value, indent)}\n`);
  }

  /** `json` under --json, else the lines `text` returns. */
  async result(json: unknown, text: () => string | readonly string[]): Promise<void> {
    await (this.json ? this.printJson(json) : this.print(text()));
  }

  /** Commander's output; {@link outputFailure} waits for it. */
  writeOut(text: string): void {
    this.#pending.push(this.#out(text).catch(() => undefined)); // kept in #outputFailure
  }

  /** stdout's reader has gone (`| head`): later output is dropped, a watch ends. */
  get stdoutClosed(): boolean {
    return this.#stdoutClosed;
  }

  /** Once every write has been taken or has failed: the first failure. */
  async outputFailure(): Promise<OutputError | undefined> {
    await Promise.all(this.#pending);
    return this.#outputFailure;
  }

  /** Waits until stdout takes `text`; a gone reader ends the output, not the command. */
  async #out(text: string): Promise<void> {
    if (this.#outputFailure !== undefined) throw this.#outputFailure;
    if (this.#stdoutClosed) return;
    try {
      await write(this.#streams.stdout, text);
    } catch (error) {
      if ((error as NodeJS.ErrnoException | undefined)?.code === 'EPIPE') {
        this.#stdoutClosed = true;
        return;
      }
      // Later writes fail with ERR_STREAM_DESTROYED: the first failure is the one reported.
      this.#outputFailure ??= new OutputError(error);
      throw this.#outputFailure;
    }
  }

  writeErr(text: string): void {
    this.#streams.stderr.write(text);
  }

  /** One warning line on stderr; a JSON line under --json. */
  warn(text: string): void {
    this.writeErr(
      this.jsonErrors ? `${JSON.stringify({ warning: text })}\n` : `idgen-cass: warning: ${text}\n`,
    );
  }

  /** Closes everything opened, newest first; a failure is logged, not thrown. */
  async close(): Promise<void> {
    while (this.#closers.length > 0) {
      const closer = this.#closers.pop()!;
      try {
        await closer();
      } catch (error) {
        this.logger.warn({ err: error }, 'closing the Cassandra connection failed');
      }
    }
  }
}

/** The prototype of what pino's err serializer returns, to find nested errors. */
const SERIALIZED_ERROR: unknown = Object.getPrototypeOf(pino.stdSerializers.err(new Error('')));

/** pino's err serializer without the stacks, also of nested and aggregated errors. */
function errNoStack(error: Error): unknown {
  return withoutStacks(pino.stdSerializers.err(error));
}

function withoutStacks(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutStacks);
  if (value === null || typeof value !== 'object') return value;
  if (Object.getPrototypeOf(value) !== SERIALIZED_ERROR) return value;
  const entries = Object.entries(value).filter(([key]) => key !== 'stack');
  return Object.fromEntries(entries.map(([key, v]) => [key, withoutStacks(v)]));
}

function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (error) => (error ? reject(error) : resolve()));
  });
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
