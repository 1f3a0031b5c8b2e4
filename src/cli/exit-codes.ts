/**
 * The CLI's exit codes and its one error handler: every failure becomes one line on stderr
 * (`idgen-cass: <message>`; the stack too with --verbose) and a documented exit code.
 */

import { CommanderError } from 'commander';

import {
  IdGenError,
  InvalidOptionError,
  UnsafeClusterError,
  type IdGenErrorCode,
} from '../errors.js';

/** Exit codes of `idgen-cass`; documented in README.md ("Command line"). */
export const EXIT_CODES = Object.freeze({
  /** Done. */
  ok: 0,
  /** Usage error or bad input: unknown option, bad value, bad name. Nothing was written. */
  usage: 1,
  /** The sequence does not exist. */
  notFound: 2,
  /** Cassandra cannot be reached at the consistency the command needs (LOCAL_QUORUM, SERIAL…). */
  unavailable: 3,
  /** Stored rows break an invariant (`check` found violations, or the allocator refused them). */
  invariant: 4,
  /** The sequence already exists (`seed` without --if-not-exists). Nothing was changed. */
  exists: 5,
  /** Every ID of the sequence's domain has been granted. */
  exhausted: 6,
  /** Too many processes raced for the same row; retrying later may succeed. */
  contention: 7,
  /** The rows a DC allocates from went back (acknowledged writes were lost); allocation stopped. */
  rolledBack: 8,
  /** A node runs settings under which IDs can be handed out twice (preflight; init/seed refuse). */
  unsafe: 9,
  /** `check` found no violation, but some facts could not be read consistently (e.g. a DC cut off). */
  incomplete: 11,
  /** Cassandra refused the credentials. */
  auth: 12,
  /** An unexpected error: a bug, or a Cassandra error idgen-cass does not know. */
  internal: 10,
});

/** The exit code of each library error code; a new code must be added here to compile. */
const BY_ERROR_CODE: Readonly<Record<IdGenErrorCode, number>> = Object.freeze({
  IDGEN_INVALID_OPTION: EXIT_CODES.usage,
  IDGEN_INVALID_NAME: EXIT_CODES.usage,
  IDGEN_INVALID_COUNT: EXIT_CODES.usage,
  IDGEN_DOMAIN_NEEDS_BIGINT: EXIT_CODES.usage,
  IDGEN_SEQUENCE_NOT_FOUND: EXIT_CODES.notFound,
  IDGEN_SEQUENCE_EXISTS: EXIT_CODES.exists,
  IDGEN_SEQUENCE_EXHAUSTED: EXIT_CODES.exhausted,
  IDGEN_STORE_UNAVAILABLE: EXIT_CODES.unavailable,
  IDGEN_SERIAL_UNAVAILABLE: EXIT_CODES.unavailable,
  IDGEN_INVARIANT_BROKEN: EXIT_CODES.invariant,
  IDGEN_CONTENTION: EXIT_CODES.contention,
  IDGEN_STATE_ROLLED_BACK: EXIT_CODES.rolledBack,
  IDGEN_UNSAFE_CLUSTER: EXIT_CODES.unsafe,
  IDGEN_DEADLINE_EXCEEDED: EXIT_CODES.unavailable,
  IDGEN_ABORTED: EXIT_CODES.internal,
  IDGEN_AUTH_FAILED: EXIT_CODES.auth,
  IDGEN_CLOSED: EXIT_CODES.internal,
});

/**
 * A command's outcome that is no library error yet ends the command with its own exit code
 * (`check` incomplete: 11; `preflight` unable to read every node: 3). Its message is the line
 * on stderr.
 */
export class CommandOutcome extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CommandOutcome';
  }
}

/** The CLI flag that lets `init` and `seed` go ahead on an unsafe cluster. */
export const ALLOW_UNSAFE_FLAG = '--allow-unsafe-cluster';

/** Library option names and the CLI flags (and environment variables) that set them. */
const FLAGS: Readonly<Record<string, string>> = Object.freeze({
  contactPoints: '--contact-points (IDGEN_CONTACT_POINTS)',
  localDataCenter: '--dc (IDGEN_DC)',
  keyspace: '--keyspace (IDGEN_KEYSPACE)',
  username: '--username (IDGEN_USERNAME)',
  password: '--password (IDGEN_PASSWORD)',
  replication: '--replication',
  domain: '--domain',
  min: '--min',
  max: '--max',
  start: '--start',
  dcRangeSize: '--dc-range',
  blockSize: '--block',
  threshold: '--threshold',
  count: '-n/--count',
  sample: '--sample',
  watch: '--watch',
});

/** The one line a user sees for `error`, flags named as the CLI spells them. */
export function errorMessage(error: unknown): string {
  if (error instanceof InvalidOptionError) {
    const flag = FLAGS[error.option];
    const prefix = `Invalid option "${error.option}"`;
    if (flag !== undefined && error.message.startsWith(prefix)) {
      return `Invalid ${flag}${error.message.slice(prefix.length)}`;
    }
  }
  if (error instanceof UnsafeClusterError && error.override.includes('allowUnsafeCluster')) {
    // initSchema names its option; a CLI user sets it with the flag.
    return new UnsafeClusterError(error.problems, ALLOW_UNSAFE_FLAG).message;
  }
  if (error instanceof IdGenError || error instanceof CommandOutcome) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `unexpected error: ${message} (run with --verbose for the stack)`;
}

/** The exit code for `error`. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) {
    // --help and --version end with code 0; every other commander error is a usage error.
    return error.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
  }
  if (error instanceof IdGenError) return BY_ERROR_CODE[error.code];
  if (error instanceof CommandOutcome) return error.exitCode;
  return EXIT_CODES.internal;
}

/**
 * Reports `error` on `writeErr` and returns its exit code. Commander has already printed its own
 * errors (through {@link commanderErrorLine}); everything else gets one line, plus its stack and
 * causes with `verbose`.
 */
export function handleError(
  error: unknown,
  writeErr: (text: string) => void,
  verbose: boolean,
): number {
  if (isClosedPipe(error)) return EXIT_CODES.ok; // the reader of stdout has had enough
  if (!(error instanceof CommanderError)) {
    writeErr(`idgen-cass: ${oneLine(errorMessage(error))}\n`);
    if (verbose) {
      for (let e: unknown = error; e !== undefined; e = e instanceof Error ? e.cause : undefined) {
        writeErr(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
        if (e instanceof Error && e.cause !== undefined) writeErr('caused by: ');
      }
    }
  }
  return exitCodeOf(error);
}

/** Commander's error text (`error: unknown option '--blok'\n(Did you mean --block?)`) as one line. */
export function commanderErrorLine(text: string): string {
  return `idgen-cass: ${oneLine(text.replace(/^error:\s*/, ''))}\n`;
}

function isClosedPipe(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'EPIPE';
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
