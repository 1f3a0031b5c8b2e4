/**
 * The `idgen-cass` program: global options, one command per file, and the one place errors
 * become exit codes and the Cassandra connections are closed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { alterCommand } from './commands/alter.js';
import { checkCommand } from './commands/check.js';
import { initCommand } from './commands/init.js';
import { listCommand } from './commands/list.js';
import { nextCommand } from './commands/next.js';
import { preflightCommand } from './commands/preflight.js';
import { retireRangesCommand } from './commands/retire-ranges.js';
import { seedCommand } from './commands/seed.js';
import { serveCommand } from './commands/serve.js';
import { statusCommand } from './commands/status.js';
import { CliContext, type Streams } from './context.js';
import { commanderErrorLine, EXIT_CODES, exitCodeOf, handleError } from './exit-codes.js';
import { timerParser, typedDuration } from './parse.js';
import { validateName } from '../options.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../store/cassandra/request-options.js';

/** The global options read from a variable too: syntax, help, variable. */
const CONNECTION_OPTIONS: readonly (readonly [string, string, string])[] = [
  [
    '--contact-points <hosts>',
    'nodes of the local DC (host or host:port), comma-separated',
    'IDGEN_CONTACT_POINTS',
  ],
  ['--dc <name>', 'the local datacenter, as Cassandra names it', 'IDGEN_DC'],
  ['--username <name>', 'Cassandra user', 'IDGEN_USERNAME'],
  ['--password <password>', 'password of --username (prefer the variable)', 'IDGEN_PASSWORD'],
  [
    '--ssl',
    "TLS, verifying each node's certificate and host name against the system's CAs or --ssl-ca; IDGEN_SSL takes true or false",
    'IDGEN_SSL',
  ],
  [
    '--ssl-ca <file>',
    "PEM file of the CAs the nodes' certificates chain to (implies --ssl)",
    'IDGEN_SSL_CA',
  ],
  [
    '--ssl-cert <file>',
    'PEM file of a client certificate, for nodes that require one (with --ssl-key; implies --ssl)',
    'IDGEN_SSL_CERT',
  ],
  ['--ssl-key <file>', 'PEM file of the private key of --ssl-cert', 'IDGEN_SSL_KEY'],
];

/** The last line of every command's help. */
export const GLOBAL_OPTIONS_HINT =
  'Global options (connection, TLS, output, logs): see "idgen-cass --help".';

/** The program with every command registered on `ctx`; `argv` is read for --json early. */
export function createProgram(
  streams: Streams,
  argv: readonly string[] = [],
): { program: Command; ctx: CliContext } {
  const program = new Command('idgen-cass');
  const ctx = new CliContext(program, streams, argv);
  // Settings first: `.command()` copies them into every subcommand.
  program
    .description(
      'Unique integer IDs for services in several datacenters, coordinated only through Cassandra lightweight transactions.',
    )
    .version(packageVersion(), '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => ctx.writeOut(text),
      // With --json, stderr holds one JSON line: commander's help on an error (no command given)
      // is left out, and handleError writes its errors as JSON instead.
      writeErr: (text) => {
        if (!ctx.jsonErrors) streams.stderr.write(text);
      },
      outputError: (text, write) => {
        if (!ctx.jsonErrors) write(commanderErrorLine(text));
      },
    })
    .configureHelp({ sortSubcommands: false })
    .showSuggestionAfterError(true);
  for (const [flags, help, variable] of CONNECTION_OPTIONS) {
    program.addOption(new Option(flags, help).env(variable));
  }
  program
    .addOption(
      new Option('--keyspace <name>', 'keyspace holding the idgen tables')
        .env('IDGEN_KEYSPACE')
        .default('idgen'),
    )
    .addOption(
      new Option(
        '--request-timeout <duration>',
        `how long one request to Cassandra may take, e.g. 5s (default ${typedDuration(DEFAULT_REQUEST_TIMEOUT_MS)}); keep it above Cassandra's CAS timeout`,
      )
        .env('IDGEN_REQUEST_TIMEOUT')
        .argParser(timerParser('requestTimeoutMs')),
    )
    .addOption(
      new Option('--log-level <level>', 'pino log level of the logs on stderr')
        .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .env('IDGEN_LOG_LEVEL')
        .default('warn'),
    )
    .option('--json', 'results as JSON on stdout (64-bit integers as exact JSON numbers)')
    .option('--verbose', 'errors, and errors in the logs, with their stacks and causes')
    .addHelpText(
      'after',
      `
Exit codes: 0 ok, 1 usage or bad input, 2 sequence not found, 3 Cassandra unreachable,
4 invariant broken, 5 sequence already exists, 6 sequence exhausted, 7 contention, 8 rows went
back, 9 unsafe cluster settings, 10 unexpected, 11 check incomplete, 12 credentials refused,
13 status: SERIAL unreachable, 14 status: runway below --fail-if-runway-below, 15 rows of a
sequence deleted by hand and seeded again. With --json, errors are one JSON line on stderr:
{"code": "...", "message": "..."}.

Durations (--request-timeout, status --sample, seed --autonomy, …) are a number and its unit:
500ms, 10s, 2m, 1.5h, 24h, 1d. A bare number is refused, except 0 where an option gives it a
meaning (status --sample 0: no rates; --autonomy 0: fixed DC ranges).

Example:
  $ export IDGEN_CONTACT_POINTS=10.0.1.5 IDGEN_DC=dc1
  $ idgen-cass preflight
  $ idgen-cass init --replication dc1:3,dc2:3,dc3:3
  $ idgen-cass seed orders --domain int32
  $ idgen-cass next orders -n 3
  $ idgen-cass status orders`,
    );

  initCommand(program, ctx);
  seedCommand(program, ctx);
  listCommand(program, ctx);
  nextCommand(program, ctx);
  alterCommand(program, ctx);
  statusCommand(program, ctx);
  checkCommand(program, ctx);
  retireRangesCommand(program, ctx);
  preflightCommand(program, ctx);
  serveCommand(program, ctx);
  // A command's help lists its own options; the global ones are listed once, in the program's.
  for (const command of program.commands) command.addHelpText('after', `\n${GLOBAL_OPTIONS_HINT}`);
  // Checked before connecting, so a bad name is exit 1 even with Cassandra down.
  program.hook('preAction', (_program, command) => {
    const sequence: unknown = command.processedArgs[0];
    if (command.registeredArguments[0]?.name() === 'sequence' && sequence !== undefined) {
      validateName('sequence', sequence);
    }
  });
  return { program, ctx };
}

/**
 * Runs `idgen-cass` with `argv` (as `process.argv`: node and script first) and returns the exit
 * code. Every error is reported here, once; the Cassandra connections are always closed.
 */
export async function runCli(
  argv: readonly string[],
  streams: Streams = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const { program, ctx } = createProgram(streams, argv);
  let failure: { error: unknown } | undefined;
  await program.parseAsync([...argv]).catch((error: unknown) => (failure = { error }));
  // What commander wrote without waiting (--help, --version) has been taken or has failed by now.
  const outputFailure = await ctx.outputFailure();
  if (outputFailure !== undefined && (failure === undefined || exitCodeOf(failure.error) === 0)) {
    failure = { error: outputFailure };
  }
  // Closed first: a close failure logs a line, and the error line must be last on stderr.
  await ctx.close();
  if (failure === undefined) return EXIT_CODES.ok;
  return handleError(failure.error, (text) => ctx.writeErr(text), {
    verbose: ctx.verbose,
    json: ctx.jsonErrors,
  });
}

/** The version in package.json, found above this file in src/ and in dist/src/ alike. */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    if (dir === dirname(dir)) return 'unknown';
    dir = dirname(dir);
  }
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}
