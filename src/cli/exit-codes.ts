/** The one error handler: a failure becomes one line on stderr (JSON with --json) and an exit code. */
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

/** Exit codes of `idgen-cass`, each explained in docs/cli.md ("Exit codes"). */
export const EXIT_CODES = Object.freeze({
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
  internal: 10,
  incomplete: 11,
  auth: 12,
  serialUnreachable: 13,
  runwayLow: 14,
  recreated: 15,
});

export const ALLOW_UNSAFE_FLAG = '--allow-unsafe-cluster';

/** The help of --allow-unsafe-cluster, one text for init, seed, next and serve. */
export const ALLOW_UNSAFE_HELP =
  'go on even while a node runs settings under which IDs could be handed out twice (test clusters only)';

/** Per library error code, the exit code. */
const EXIT_BY_CODE: Readonly<Record<IdGenErrorCode, number>> = {
  IDGEN_INVALID_OPTION: EXIT_CODES.usage,
  IDGEN_INVALID_NAME: EXIT_CODES.usage,
  IDGEN_INVALID_COUNT: EXIT_CODES.usage,
  IDGEN_DOMAIN_NEEDS_BIGINT: EXIT_CODES.usage,
  IDGEN_SEQUENCE_NOT_FOUND: EXIT_CODES.notFound,
  IDGEN_SEQUENCE_EXISTS: EXIT_CODES.exists,
  IDGEN_SEQUENCE_EXHAUSTED: EXIT_CODES.exhausted,
  IDGEN_STORE_UNAVAILABLE: EXIT_CODES.unavailable,
  IDGEN_SERIAL_UNAVAILABLE: EXIT_CODES.unavailable,
  IDGEN_AUTH_FAILED: EXIT_CODES.auth,
  IDGEN_INVARIANT_BROKEN: EXIT_CODES.invariant,
  IDGEN_CONTENTION: EXIT_CODES.contention,
  IDGEN_STATE_ROLLED_BACK: EXIT_CODES.rolledBack,
  IDGEN_SEQUENCE_RECREATED: EXIT_CODES.recreated,
  IDGEN_UNSAFE_CLUSTER: EXIT_CODES.unsafe,
  IDGEN_DEADLINE_EXCEEDED: EXIT_CODES.unavailable,
  IDGEN_ABORTED: EXIT_CODES.internal,
  IDGEN_CLOSED: EXIT_CODES.internal,
};

/**
 * The CLI's advice in place of the library's, by error class: a bare IdGenError of the same code
 * keeps its message.
 */
function adviceFor(e: IdGenError): string | undefined {
  if (e instanceof InvalidOptionError) return typedNames(e);
  if (e instanceof SequenceNotFoundError) return `Create it with: idgen-cass seed ${e.sequence}`;
  if (e instanceof SequenceExistsError) {
    return e.differences.length > 0
      ? "A sequence's min, max and start never change (alter changes sizes only): to hand out the IDs asked, create a sequence under another name."
      : `Use "idgen-cass alter ${e.sequence}" to change its sizes. To accept an existing sequence as it is, seed with --if-not-exists.`;
  }
  if (e instanceof SerialUnavailableError) {
    return e.timedOut
      ? `Check the nodes' load and "idgen-cass status"; larger DC ranges ("idgen-cass alter ${e.sequence} --dc-range N" or "--autonomy D") make grants rarer.`
      : `Restore connectivity between datacenters, or size --dc-range for longer partitions ("idgen-cass alter ${e.sequence} --dc-range N"; docs/sizing.md).`;
  }
  if (e instanceof AuthenticationError) {
    return 'Check --username and --password (IDGEN_USERNAME, IDGEN_PASSWORD) and that the role may log in.';
  }
  if (e instanceof InvariantError) {
    return `Run "idgen-cass check ${e.sequence}" and repair the rows before retrying.`;
  }
  if (e instanceof StateRolledBackError) {
    return `Stop this sequence's processes in the DC, run "idgen-cass preflight", then "idgen-cass retire-ranges ${e.sequence}" from the DC before allocating again (docs/operations.md, "When rows went back").`;
  }
  if (e instanceof UnsafeClusterError) {
    return `Fix the nodes' settings (docs/design.md, "What the cluster must guarantee"), or pass ${ALLOW_UNSAFE_FLAG} (init, seed, next, serve) if you accept that a crash can hand out IDs twice.`;
  }
  if (e instanceof DeadlineError) {
    const contention =
      e.cause instanceof ContentionError
        ? `Raise the block size, or let it adapt, with "idgen-cass alter ${e.sequence} --block N" or "--max-block-size N", so that processes claim less often. `
        : '';
    return `${contention}Check the cluster with "idgen-cass status".`;
  }
  return undefined;
}

/** Outcomes that are no library error, yet have their own code and exit code. */
const OUTCOME_EXIT_CODES = Object.freeze({
  IDGEN_CHECK_INCOMPLETE: EXIT_CODES.incomplete,
  IDGEN_PREFLIGHT_INCOMPLETE: EXIT_CODES.unavailable,
  IDGEN_STATUS_SERIAL_UNREACHABLE: EXIT_CODES.serialUnreachable,
  IDGEN_STATUS_RUNWAY_LOW: EXIT_CODES.runwayLow,
});

export type OutcomeCode = keyof typeof OUTCOME_EXIT_CODES;

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

/** stdout could not be written (a gone reader is no error: see CliContext). Exit 10. */
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

/** The `code` `--json` writes: `IDGEN_USAGE` for commander's errors, `IDGEN_INTERNAL` if unknown. */
export type CliErrorCode = IdGenErrorCode | OutcomeCode | 'IDGEN_USAGE' | 'IDGEN_INTERNAL';

/** Library option names and the CLI flags (and environment variables) that set them. */
const FLAGS: Readonly<Record<string, string>> = Object.freeze({
  contactPoints: '--contact-points (IDGEN_CONTACT_POINTS)',
  localDataCenter: '--dc (IDGEN_DC)',
  keyspace: '--keyspace (IDGEN_KEYSPACE)',
  username: '--username (IDGEN_USERNAME)',
  password: '--password (IDGEN_PASSWORD)',
  ssl: '--ssl (IDGEN_SSL)',
  sslCa: '--ssl-ca (IDGEN_SSL_CA)',
  sslCert: '--ssl-cert (IDGEN_SSL_CERT)',
  sslKey: '--ssl-key (IDGEN_SSL_KEY)',
  tlsCert: '--tls-cert (IDGEN_SERVE_TLS_CERT)',
  tlsKey: '--tls-key (IDGEN_SERVE_TLS_KEY)',
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
  metricsAuth: '--metrics-auth (IDGEN_SERVE_METRICS_AUTH)',
  maxPendingRequests: '--max-pending-requests (IDGEN_SERVE_MAX_PENDING_REQUESTS)',
  receiveTimeoutMs: '--receive-timeout (IDGEN_SERVE_RECEIVE_TIMEOUT)',
});

/** The camelCase names `allowed` may mention (one-word names are words too), as typed. */
const TYPED_NAMES = Object.entries({ ...FLAGS, 'initSchema()': '"idgen-cass init"' })
  .filter(([name]) => name !== name.toLowerCase())
  .map(([name, typed]) => [name, typed.split(' (')[0]!] as const);

/** The other options and calls `error.allowed` names, each as the CLI user types it. */
function typedNames({ option, allowed }: InvalidOptionError): string | undefined {
  const named = TYPED_NAMES.filter(([name]) => name !== option && allowed.includes(name));
  return named.length === 0 ? undefined : `${named.map(([n, t]) => `${n} is ${t}`).join(', ')}.`;
}

/** An invalid option set by a flag, named by its flag, with its value as typed. */
function asTyped({ option, received: r, allowed, message }: InvalidOptionError): string {
  const flag = FLAGS[option];
  const value = r === undefined ? 'nothing' : typeof r === 'string' ? JSON.stringify(r) : String(r);
  return flag === undefined ? message : `Invalid ${flag}: received ${value}; allowed: ${allowed}.`;
}

/** The one line a user sees for `error`. */
export function errorMessage(error: unknown): string {
  if (error instanceof CommanderError) {
    // No command given: the help is printed, and the message is a placeholder.
    if (error.code === 'commander.help')
      return 'a command is required; "idgen-cass --help" lists them';
    return commanderText(error.message);
  }
  if (error instanceof IdGenError) {
    const advice = adviceFor(error);
    if (error instanceof InvalidOptionError) return [asTyped(error), advice].join(' ').trim();
    return advice === undefined ? error.message : `${factsOf(error)} ${advice}`;
  }
  if (error instanceof CommandOutcome || error instanceof OutputError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `unexpected error: ${message} (run with --verbose for the stack)`;
}

/** The `code` of `error` under `--json`. */
export function errorCodeOf(error: unknown): CliErrorCode {
  if (error instanceof CommanderError) return 'IDGEN_USAGE';
  if (error instanceof IdGenError || error instanceof CommandOutcome) return error.code;
  return 'IDGEN_INTERNAL';
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError)
    return error.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
  if (error instanceof IdGenError) return EXIT_BY_CODE[error.code];
  if (error instanceof CommandOutcome) return error.exitCode;
  return EXIT_CODES.internal;
}

/**
 * Reports `error` on `writeErr` (with `json`, commander's too, as one JSON line) and returns its
 * exit code; `verbose` adds the stacks.
 */
export function handleError(
  error: unknown,
  writeErr: (text: string) => void,
  { verbose, json }: { readonly verbose: boolean; readonly json: boolean },
): number {
  const exitCode = exitCodeOf(error);
  if (error instanceof CommanderError && exitCode === EXIT_CODES.ok) return exitCode; // --help
  if (json) {
    const line = {
      code: errorCodeOf(error),
      message: oneLine(errorMessage(error)),
      ...(verbose ? { stack: withoutSecrets(stackOf(error)) } : {}),
    };
    writeErr(`${JSON.stringify(line)}\n`);
  } else if (!(error instanceof CommanderError)) {
    writeErr(`idgen-cass: ${oneLine(errorMessage(error))}\n`);
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

export function commanderErrorLine(text: string): string {
  return `idgen-cass: ${commanderText(text)}\n`;
}

function commanderText(text: string): string {
  return oneLine(withoutSecrets(text.replace(/^error:\s*/, '')));
}

/**
 * Commander's `text` without any secret an unknown option or command may hold (`--pasword=…`,
 * `-pHunter2`); a command is repeated only when commander took it for a typo of one.
 */
function withoutSecrets(text: string): string {
  return (
    text
      // To the last quote, across line breaks: the value may hold quotes and newlines of its own.
      .replace(/'(--?[^'=\s]+)=[\s\S]*'/g, "'$1=…'")
      .replace(
        /unknown option '([^']*)'/g,
        (_, token: string) => `unknown option '${shownOption(token)}'`,
      )
      .replace(
        /unknown command '[\s\S]*'(?![\s\S]*\(Did you mean )/,
        'unknown command (not repeated: it is close to no command name, and may be a secret)',
      )
  );
}

/** An unknown option as far as it is an option's name (`-p…`, `--password…`). */
function shownOption(token: string): string {
  if (token.endsWith('=…')) return token;
  const name = /^--[a-z]+(?:-[a-z]+)*/.exec(token)?.[0] ?? /^-[A-Za-z]/.exec(token)?.[0];
  if (name === undefined) return '…';
  if (name.startsWith('--password') && token !== '--password') return '--password…';
  return name === token ? token : `${name}…`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
