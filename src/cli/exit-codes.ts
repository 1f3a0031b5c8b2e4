/**
 * The CLI's exit codes and its one error handler: every failure becomes one line on stderr
 * (`idgen-cass: <message>`, the stack too with --verbose; with --json, one JSON object
 * `{ "code", "message" }`) and a documented exit code.
 */

import { CommanderError } from 'commander';

import {
  AuthenticationError,
  ContentionError,
  DeadlineError,
  factsOf,
  IdGenError,
  InvalidOptionError,
  InvariantError,
  SequenceExistsError,
  SequenceNotFoundError,
  SerialUnavailableError,
  StateRolledBackError,
  UnsafeClusterError,
  type IdGenErrorCode,
} from '../errors.js';
import { INTEGER_TYPES } from '../settings/rules.js';
import { TLS_FILE_FLAGS } from './connection-options.js';

/** Exit codes of `idgen-cass`; documented in docs/cli.md ("Exit codes"). */
export const EXIT_CODES = Object.freeze({
  ok: 0,
  /** Usage error or bad input: unknown option, bad value, bad name. Nothing was written. */
  usage: 1,
  /** The sequence does not exist. */
  notFound: 2,
  /** Cassandra cannot be reached at the consistency the command needs (LOCAL_QUORUM, SERIAL…). */
  unavailable: 3,
  /** Stored rows break an invariant (`check` found violations, or the allocator refused them). */
  invariant: 4,
  /** The sequence exists (`seed` without --if-not-exists, or with other IDs than asked). */
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
  /** `status`: SERIAL is unreachable from here, so no DC range can be granted (status printed). */
  serialUnreachable: 13,
  /**
   * `status --fail-if-runway-below`: a DC's runway is below the threshold (status printed). Wins
   * over {@link EXIT_CODES.serialUnreachable} when both hold.
   */
  runwayLow: 14,
  /** Rows of an earlier sequence of the name are in the way; nothing written, or stopped. */
  recreated: 15,
  /**
   * An unexpected error: a bug, a Cassandra error idgen-cass does not know, or a stdout that
   * cannot be written (OutputError; a closed pipe is no error).
   */
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
  IDGEN_SEQUENCE_RECREATED: EXIT_CODES.recreated,
  IDGEN_UNSAFE_CLUSTER: EXIT_CODES.unsafe,
  IDGEN_DEADLINE_EXCEEDED: EXIT_CODES.unavailable,
  IDGEN_ABORTED: EXIT_CODES.internal,
  IDGEN_AUTH_FAILED: EXIT_CODES.auth,
  IDGEN_CLOSED: EXIT_CODES.internal,
});

/** Stable codes of the outcomes a command ends with that are no library error. */
export type OutcomeCode =
  | 'IDGEN_CHECK_INCOMPLETE'
  | 'IDGEN_PREFLIGHT_INCOMPLETE'
  | 'IDGEN_STATUS_SERIAL_UNREACHABLE'
  | 'IDGEN_STATUS_RUNWAY_LOW';

const OUTCOME_EXIT_CODES: Readonly<Record<OutcomeCode, number>> = Object.freeze({
  IDGEN_CHECK_INCOMPLETE: EXIT_CODES.incomplete,
  IDGEN_PREFLIGHT_INCOMPLETE: EXIT_CODES.unavailable,
  IDGEN_STATUS_SERIAL_UNREACHABLE: EXIT_CODES.serialUnreachable,
  IDGEN_STATUS_RUNWAY_LOW: EXIT_CODES.runwayLow,
});

/** A command's outcome that is no library error yet has its own exit code; message on stderr. */
export class CommandOutcome extends Error {
  readonly exitCode: number;
  constructor(
    readonly code: OutcomeCode,
    message: string,
  ) {
    super(message);
    this.name = 'CommandOutcome';
    this.exitCode = OUTCOME_EXIT_CODES[code];
  }
}

/**
 * stdout could not be written (a gone reader is no error: CliContext). Exit 10; the command may
 * have done its work before its output, and the message says so.
 */
export class OutputError extends Error {
  constructor(cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      `could not write the output to stdout (${detail}); what the command did before its output stands`,
      { cause },
    );
    this.name = 'OutputError';
  }
}

/**
 * The `code` of an error as `--json` writes it: the library's code, an outcome's, `IDGEN_USAGE`
 * for commander's usage errors, `IDGEN_INTERNAL` for anything unexpected.
 */
export type CliErrorCode = IdGenErrorCode | OutcomeCode | 'IDGEN_USAGE' | 'IDGEN_INTERNAL';

/** The CLI flag that lets `init` and `seed` go ahead on an unsafe cluster. */
export const ALLOW_UNSAFE_FLAG = '--allow-unsafe-cluster';

/** Library option names and the CLI flags (and environment variables) that set them. */
const FLAGS: Readonly<Record<string, string>> = Object.freeze({
  contactPoints: '--contact-points (IDGEN_CONTACT_POINTS)',
  localDataCenter: '--dc (IDGEN_DC)',
  keyspace: '--keyspace (IDGEN_KEYSPACE)',
  username: '--username (IDGEN_USERNAME)',
  password: '--password (IDGEN_PASSWORD)',
  ssl: '--ssl (IDGEN_SSL)',
  ...TLS_FILE_FLAGS,
  requestTimeoutMs: '--request-timeout (IDGEN_REQUEST_TIMEOUT)',
  replication: '--replication',
  domain: '--domain',
  min: '--min',
  max: '--max',
  start: '--start',
  dcRangeSize: '--dc-range',
  blockSize: '--block',
  threshold: '--threshold',
  maxBlockSize: '--max-block-size',
  claimIntervalMs: '--claim-interval',
  maxDcRangeSize: '--max-dc-range',
  autonomySeconds: '--autonomy',
  shards: '--shards',
  firstRanges: '--first-ranges',
  count: '-n/--count',
  sample: '--sample',
  serialTimeout: '--serial-timeout',
  watch: '--watch',
  failIfRunwayBelow: '--fail-if-runway-below',
  port: '--port (IDGEN_SERVE_PORT)',
  host: '--host (IDGEN_SERVE_HOST)',
  sequences: '--sequence (IDGEN_SERVE_SEQUENCES)',
  token: 'token (--token-file or IDGEN_SERVE_TOKEN)',
  tokenFile: '--token-file (IDGEN_SERVE_TOKEN_FILE)',
  timeoutMs: '--timeout (IDGEN_SERVE_TIMEOUT)',
});

/**
 * Library names an option's allowed values may mention, each with what a CLI user types: options
 * of more than one word (`min`, `max` are words in a sentence too) and the call making the tables.
 */
const TYPED_NAMES = Object.entries({ ...FLAGS, 'initSchema()': '"idgen-cass init"' })
  .filter(([name]) => name !== name.toLowerCase())
  .map(([name, typed]) => [name, typed.split(' (')[0]!] as const);

/** `advise` for errors of class `type` only: a bare IdGenError of the code keeps its message. */
function ofClass<E extends IdGenError>(
  type: abstract new (...args: never[]) => E,
  advise: (error: E) => string | undefined,
): (error: IdGenError) => string | undefined {
  return (error) => (error instanceof type ? advise(error) : undefined);
}

/**
 * What the CLI tells a user to do, by error code, in its commands and flags, after what the
 * message says happened ({@link factsOf}). A code without an entry keeps the library's message.
 */
const ADVICE: { readonly [code in IdGenErrorCode]?: (error: IdGenError) => string | undefined } = {
  IDGEN_INVALID_OPTION: ofClass(InvalidOptionError, (e) => {
    const named = TYPED_NAMES.filter(([name]) => name !== e.option && e.allowed.includes(name));
    return named.length > 0
      ? `${named.map(([name, typed]) => `${name} is ${typed}`).join(', ')}.`
      : undefined;
  }),
  IDGEN_SEQUENCE_NOT_FOUND: ofClass(
    SequenceNotFoundError,
    (e) => `Create it with: idgen-cass seed ${e.sequence}`,
  ),
  IDGEN_SEQUENCE_EXISTS: ofClass(SequenceExistsError, (e) =>
    e.differences.length > 0
      ? "A sequence's min, max and start never change (alter changes sizes only): to hand out the IDs asked, create a sequence under another name."
      : `Use "idgen-cass alter ${e.sequence}" to change its sizes. To accept an existing sequence as it is, seed with --if-not-exists.`,
  ),
  IDGEN_SERIAL_UNAVAILABLE: ofClass(SerialUnavailableError, (e) =>
    e.timedOut
      ? `Check the nodes' load and "idgen-cass status"; larger DC ranges ("idgen-cass alter ${e.sequence} --dc-range N" or "--autonomy D") make grants rarer.`
      : `Restore connectivity between datacenters, or size --dc-range for longer partitions ("idgen-cass alter ${e.sequence} --dc-range N"; docs/sizing.md).`,
  ),
  IDGEN_AUTH_FAILED: ofClass(
    AuthenticationError,
    () =>
      'Check --username and --password (IDGEN_USERNAME, IDGEN_PASSWORD) and that the role may log in.',
  ),
  IDGEN_INVARIANT_BROKEN: ofClass(
    InvariantError,
    (e) => `Run "idgen-cass check ${e.sequence}" and repair the rows before retrying.`,
  ),
  IDGEN_STATE_ROLLED_BACK: ofClass(
    StateRolledBackError,
    (e) =>
      `Stop this sequence's processes in the DC, run "idgen-cass preflight", then "idgen-cass retire-ranges ${e.sequence}" from the DC before allocating again (docs/operations.md, "When rows went back").`,
  ),
  IDGEN_UNSAFE_CLUSTER: ofClass(
    UnsafeClusterError,
    () =>
      `Fix the nodes' settings (docs/design.md, "What the cluster must guarantee"), or pass ${ALLOW_UNSAFE_FLAG} to init or seed if you accept that a crash can hand out IDs twice.`,
  ),
  IDGEN_DEADLINE_EXCEEDED: ofClass(
    DeadlineError,
    (e) =>
      `${e.cause instanceof ContentionError ? `Raise the block size, or let it adapt, with "idgen-cass alter ${e.sequence} --block N" or "--max-block-size N", so that processes claim less often. ` : ''}Check the cluster with "idgen-cass status".`,
  ),
};

/** An invalid option set by a flag, named by its flag, with its value as typed. */
function asTyped({ option, received: r, allowed, message }: InvalidOptionError): string {
  const flag = FLAGS[option];
  const value = r === undefined ? 'nothing' : typeof r === 'string' ? JSON.stringify(r) : String(r);
  return flag === undefined
    ? message
    : `Invalid ${flag}: received ${value}; allowed: ${allowed.replace(INTEGER_TYPES, '')}.`;
}

/**
 * The one line a user sees for `error`: an option named by its flag, advice in the CLI's commands
 * and flags.
 * @param commands the program's command names: an unknown command close to one is repeated.
 */
export function errorMessage(error: unknown, commands: readonly string[] = []): string {
  if (error instanceof CommanderError) {
    // help({ error: true }) (no command given) has printed the help; its message is a placeholder.
    if (error.code === 'commander.help') {
      return 'a command is required; "idgen-cass --help" lists them';
    }
    return oneLine(withoutOptionValues(error.message.replace(/^error:\s*/, ''), commands));
  }
  if (error instanceof IdGenError) {
    const advice = ADVICE[error.code]?.(error);
    const facts =
      error instanceof InvalidOptionError
        ? asTyped(error)
        : advice === undefined
          ? error.message
          : factsOf(error);
    return advice === undefined ? facts : `${facts} ${advice}`;
  }
  if (error instanceof CommandOutcome || error instanceof OutputError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `unexpected error: ${message} (run with --verbose for the stack)`;
}

/** The code `--json` writes for `error`. */
export function errorCodeOf(error: unknown): CliErrorCode {
  if (error instanceof CommanderError) return 'IDGEN_USAGE';
  if (error instanceof IdGenError || error instanceof CommandOutcome) return error.code;
  return 'IDGEN_INTERNAL';
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

/** How {@link handleError} reports. */
export interface ErrorReporting {
  /** The stack and causes too. */
  readonly verbose: boolean;
  /**
   * One JSON object per line, `{ "code", "message" }` (and `"stack"` with `verbose`), for every
   * error, commander's included: commander prints nothing of its own then (see createProgram).
   */
  readonly json: boolean;
  /**
   * The program's command names: an unknown command is repeated only if close to one of them.
   * @default none: no unknown command is repeated
   */
  readonly commands?: readonly string[] | undefined;
}

/**
 * Reports `error` on `writeErr` and returns its exit code; without `json`, commander has printed
 * its own errors already.
 */
export function handleError(
  error: unknown,
  writeErr: (text: string) => void,
  { verbose, json, commands = [] }: ErrorReporting,
): number {
  const exitCode = exitCodeOf(error);
  if (error instanceof CommanderError && exitCode === EXIT_CODES.ok) return exitCode; // --help
  if (json) {
    const line = {
      code: errorCodeOf(error),
      message: oneLine(errorMessage(error, commands)),
      ...(verbose ? { stack: withoutOptionValues(stackOf(error), commands) } : {}),
    };
    writeErr(`${JSON.stringify(line)}\n`);
  } else if (!(error instanceof CommanderError)) {
    writeErr(`idgen-cass: ${oneLine(errorMessage(error, commands))}\n`);
    if (verbose) writeErr(stackOf(error));
  }
  return exitCode;
}

/** `error`'s stack, then each cause's, one after the other. */
function stackOf(error: unknown): string {
  let text = '';
  for (let e: unknown = error; e !== undefined; e = e instanceof Error ? e.cause : undefined) {
    text += `${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`;
    if (e instanceof Error && e.cause !== undefined) text += 'caused by: ';
  }
  return text;
}

/**
 * Commander's error text (`error: unknown option '--blok'\n(Did you mean --block?)`) as one line.
 * @param commands the program's command names: an unknown command close to one is repeated.
 */
export function commanderErrorLine(text: string, commands: readonly string[] = []): string {
  return `idgen-cass: ${oneLine(withoutOptionValues(text.replace(/^error:\s*/, ''), commands))}\n`;
}

/**
 * `text` without any secret an unknown option or command may hold (`--pasword=…`, `-pHunter2`,
 * a password typed where a command was expected): a command is repeated only if it is a typo of
 * one of `commands`.
 */
function withoutOptionValues(text: string, commands: readonly string[]): string {
  return (
    text
      // To the last quote, across line breaks: the value may hold quotes and newlines of its own.
      .replace(/'(--?[^'=\s]+)=[\s\S]*'/g, "'$1=…'")
      .replace(/unknown option '([^']*)'/g, (_, token: string) => {
        return `unknown option '${shownOption(token)}'`;
      })
      .replace(/unknown command '([^']*)'/g, (_, token: string) =>
        isTypoOfCommand(token, commands)
          ? `unknown command '${token}'`
          : 'unknown command (not repeated: it is close to no command name, and may be a secret)',
      )
  );
}

/** What a typo of a command name looks like; anything else is not repeated. */
const COMMAND_LIKE = /^[a-z][a-z-]{0,30}$/;

/** The most edits a typo of a command name is repeated with (`stauts`: one swap). */
const TYPO_EDITS = 2;

/**
 * Whether `token`, typed where a command was expected, reads as a typo of one of `commands`: a
 * command's shape, and a prefix of one (`stat`) or within {@link TYPO_EDITS} edits of one. An
 * all-lowercase password (`hunter-secret`) has the shape, hence the distance.
 */
function isTypoOfCommand(token: string, commands: readonly string[]): boolean {
  return (
    COMMAND_LIKE.test(token) &&
    commands.some((name) => name.startsWith(token) || editDistance(token, name) <= TYPO_EDITS)
  );
}

/**
 * The fewest edits (a letter inserted, removed or replaced, two neighbours swapped) that turn `a`
 * into `b`: the optimal string alignment distance.
 */
function editDistance(a: string, b: string): number {
  // rows[i][j]: the distance between the first i letters of a and the first j of b.
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * An unknown option as far as it is an option's name: lowercase words joined by hyphens after
 * `--`, or one letter after `-`; what follows is cut (`-p…`, `--password…`), and so is anything
 * after `--password`.
 */
function shownOption(token: string): string {
  if (token.endsWith('=…')) return token;
  const name = /^--[a-z]+(?:-[a-z]+)*/.exec(token)?.[0] ?? /^-[A-Za-z]/.exec(token)?.[0];
  if (name === undefined) return '…';
  if (name.startsWith('--password') && token !== '--password') return '--password…';
  return name === token ? token : `${name}…`;
}

/** Whether `error` is a write to a pipe whose reader has gone (`idgen-cass … | head`). */
export function isClosedPipe(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'EPIPE';
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
