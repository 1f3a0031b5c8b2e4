/**
 * What every command shares: the global options, the logger (stderr), stdout, and the Cassandra
 * connections a command opens, all closed by {@link CliContext.close} whatever happens.
 */

import type { Command } from 'commander';
import { pino, type Logger } from 'pino';

import type { Admin } from '../admin/admin.js';
import { openAdmin } from '../admin/open.js';
import type { IdGen } from '../allocator/id-gen.js';
import { connect } from '../client.js';
import type { ConnectionOptions } from '../connection.js';
import { InvalidOptionError } from '../errors.js';
import { parseList } from './parse.js';
import { toJson } from './format.js';

/** The global options, as commander hands them over. */
export interface GlobalOptions {
  readonly contactPoints?: string | undefined;
  readonly dc?: string | undefined;
  readonly keyspace: string;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly logLevel: string;
  readonly json?: boolean | undefined;
  readonly verbose?: boolean | undefined;
}

/** Where the CLI writes; tests may replace it. */
export interface Streams {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

export class CliContext {
  readonly #program: Command;
  readonly #streams: Streams;
  readonly #closers: (() => Promise<void>)[] = [];
  #logger: Logger | undefined;

  constructor(program: Command, streams: Streams) {
    this.#program = program;
    this.#streams = streams;
  }

  /** The global options (valid once commander has parsed them). */
  get options(): GlobalOptions {
    return this.#program.opts<GlobalOptions>();
  }

  /** Whether results go out as JSON. */
  get json(): boolean {
    return this.options.json === true;
  }

  /** Whether stdout is a terminal (a watch then redraws the screen). */
  get interactive(): boolean {
    return (this.#streams.stdout as { isTTY?: boolean }).isTTY === true;
  }

  /** pino on stderr at --log-level; the library logs through it as well. */
  get logger(): Logger {
    this.#logger ??= pino(
      { name: 'idgen-cass', level: this.options.logLevel },
      pino.destination({ dest: 2, sync: true }),
    );
    return this.#logger;
  }

  /** Connection options from the global options. */
  connection(): ConnectionOptions {
    const { contactPoints, dc, keyspace, username, password } = this.options;
    const points = contactPoints === undefined ? [] : parseList(contactPoints);
    if (points.length === 0) {
      throw new InvalidOptionError(
        'contactPoints',
        contactPoints,
        'a comma-separated list of node addresses of the local datacenter, e.g. 10.0.0.1,10.0.0.2:9042',
      );
    }
    if (dc === undefined || dc.trim() === '') {
      throw new InvalidOptionError(
        'localDataCenter',
        dc,
        'the name of the datacenter this process runs in, as Cassandra names it, e.g. dc1',
      );
    }
    return {
      contactPoints: points,
      localDataCenter: dc.trim(),
      keyspace,
      ...(username === undefined ? {} : { username }),
      ...(password === undefined ? {} : { password }),
    };
  }

  /** An allocator over Cassandra; closed (returning unused IDs) by {@link close}. */
  async idGen(): Promise<IdGen> {
    const ids = await connect({ ...this.connection(), logger: this.logger });
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

  /** One warning line on stderr: `idgen-cass: warning: <text>`. */
  warn(text: string): void {
    this.writeErr(`idgen-cass: warning: ${text}\n`);
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
