/**
 * What every command shares: the global options, the logger (stderr), stdout, and the Cassandra
 * connections a command opens, all closed by {@link CliContext.close} whatever happens.
 */

import type { Command } from 'commander';
import { pino, type Logger } from 'pino';

import type { Admin } from '../admin/admin.js';
import { openAdmin } from '../admin/open.js';
import type { IdGen } from '../allocator/id-gen.js';
import { connect, type ConnectOptions } from '../connect.js';
import type { ConnectionOptions } from '../driver-client.js';
import { connectionOptions, type ConnectionFlags } from './connection-options.js';
import { toJson } from './format.js';
import { parseSwitch } from './parse.js';

/** The global options, as commander hands them over. */
export interface GlobalOptions extends ConnectionFlags {
  readonly logLevel: string;
  readonly json?: boolean | undefined;
  readonly verbose?: boolean | undefined;
}

/** What a command may pass to `connect()` besides the connection options and the logger. */
export type AllocatorOptions = Omit<ConnectOptions, keyof ConnectionOptions | 'logger'>;

/** Where the CLI writes; tests may replace it. */
export interface Streams {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

export class CliContext {
  readonly #program: Command;
  readonly #streams: Streams;
  readonly #argv: readonly string[];
  readonly #closers: (() => Promise<void>)[] = [];
  #logger: Logger | undefined;

  /** @param argv the command line, as `process.argv`: read for --json before commander has. */
  constructor(program: Command, streams: Streams, argv: readonly string[] = []) {
    this.#program = program;
    this.#streams = streams;
    this.#argv = argv;
  }

  /** The global options (valid once commander has parsed them). */
  get options(): GlobalOptions {
    return this.#program.opts<GlobalOptions>();
  }

  /** Whether results go out as JSON. */
  get json(): boolean {
    return this.options.json === true;
  }

  /**
   * Whether errors go out as JSON: --json, also when commander fails before it has parsed it
   * (`idgen-cass --blok --json`).
   */
  get jsonErrors(): boolean {
    return this.json || this.#argv.slice(2).includes('--json');
  }

  /** Whether stdout is a terminal (a watch then redraws the screen). */
  get interactive(): boolean {
    return (this.#streams.stdout as { isTTY?: boolean }).isTTY === true;
  }

  /** Whether --log-level (or IDGEN_LOG_LEVEL) was given, rather than left at its default. */
  get logLevelGiven(): boolean {
    return this.#program.getOptionValueSource('logLevel') !== 'default';
  }

  /** pino on stderr at --log-level; the library logs through it as well. */
  get logger(): Logger {
    this.#logger ??= pino(
      { name: 'idgen-cass', level: this.options.logLevel },
      pino.destination({ dest: 2, sync: true }),
    );
    return this.#logger;
  }

  /**
   * Connection options from the global options, TLS files read.
   * @throws {InvalidOptionError} for a missing or bad option (`IDGEN_SSL=maybe` included).
   * @throws {OptionFileError} for a TLS file that cannot be read.
   */
  connection(): ConnectionOptions {
    const options = this.options;
    // Commander sets a boolean flag from its variable whatever the value: read it ourselves.
    const fromEnv = this.#program.getOptionValueSource('ssl') === 'env';
    const ssl = fromEnv ? parseSwitch(process.env['IDGEN_SSL'] ?? '', 'ssl') : options.ssl;
    return connectionOptions({ ...options, ssl });
  }

  /**
   * An allocator over Cassandra; closed (returning unused IDs) by {@link close}.
   * @param options what `connect()` takes besides the connection and the logger.
   */
  async idGen(options: AllocatorOptions = {}): Promise<IdGen> {
    const ids = await connect({ ...this.connection(), ...options, logger: this.logger });
    this.#closers.push(() => ids.close());
    this.logger.debug({ dc: ids.dc, keyspace: ids.keyspace }, 'connected');
    return ids;
  }

  /** Status and checks over Cassandra; closed by {@link close}. */
  async admin(): Promise<Admin> {
    const admin = await openAdmin(this.connection());
    this.#closers.push(() => admin.close());
    this.logger.debug({ dc: admin.dc, keyspace: admin.keyspace }, 'connected');
    return admin;
  }

  /** Writes result lines to stdout. */
  async print(lines: string | readonly string[]): Promise<void> {
    const text = typeof lines === 'string' ? lines : lines.join('\n');
    await write(this.#streams.stdout, `${text}\n`);
  }

  /** Writes `value` to stdout as JSON (bigints exact). */
  async printJson(value: unknown, indent = 2): Promise<void> {
    await write(this.#streams.stdout, `${toJson(value, indent)}\n`);
  }

  /** Writes to stderr (errors; results never go there). */
  writeErr(text: string): void {
    this.#streams.stderr.write(text);
  }

  /**
   * One warning line on stderr: `idgen-cass: warning: <text>`, or under --json the JSON line
   * `{"warning": "<text>"}`, so that a reader of JSON stderr (an error is one JSON line there)
   * can parse every line.
   */
  warn(text: string): void {
    this.writeErr(
      this.jsonErrors ? `${JSON.stringify({ warning: text })}\n` : `idgen-cass: warning: ${text}\n`,
    );
  }

  /** Closes everything opened, newest first; a failure to close is logged, not thrown. */
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

/** Writes and waits until the stream takes it (results can be millions of IDs). */
function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (error) => (error ? reject(error) : resolve()));
  });
}
