/** `idgen-cass serve`: the HTTP service of the local DC's allocator (src/serve/). */
import { constants as osConstants } from 'node:os';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Admin } from '../../admin/admin.js';
import type { IdGen } from '../../allocator/id-gen.js';
import { InvalidOptionError } from '../../errors.js';
import { checkServeOptions, SERVE_DEFAULTS, type ServeOptions } from '../../serve/options.js';
import { createServer } from '../../serve/server.js';
import type { StatusSource } from '../../serve/status-page.js';
import { keyPair, type CliContext } from '../context.js';
import { ALLOW_UNSAFE_HELP, ALLOW_UNSAFE_FLAG } from '../exit-codes.js';
import { parseInteger, parseList, timerParser, typedDuration } from '../parse.js';

interface ServeFlags {
  readonly port: number;
  readonly host: string;
  readonly sequence?: readonly string[] | undefined;
  readonly tokenFile?: string | undefined;
  readonly metricsAuth?: boolean | undefined;
  readonly tlsCert?: string | undefined;
  readonly tlsKey?: string | undefined;
  readonly timeout: number;
  readonly maxPendingRequests: number;
  readonly receiveTimeout: number;
  readonly allowUnsafeCluster?: boolean | undefined;
}

/** The token itself (a file is safer: variables show up in more places). */
const TOKEN_VARIABLE = 'IDGEN_SERVE_TOKEN';

export function serveCommand(program: Command, ctx: CliContext): void {
  program
    .command('serve')
    .description(
      "HTTP service handing out the local DC's IDs (POST /v1/sequences/{name}/ids and /ranges), with health, readiness, Prometheus metrics and an OpenAPI document",
    )
    .addOption(
      new Option('--port <port>', 'TCP port to listen on (0: any free port)')
        .env('IDGEN_SERVE_PORT')
        .argParser(parsePort)
        .default(8080),
    )
    .addOption(
      new Option('--host <address>', 'address to listen on')
        .env('IDGEN_SERVE_HOST')
        .default('0.0.0.0'),
    )
    .addOption(
      new Option(
        '--sequence <names...>',
        'serve only these sequences (several, or comma-separated); default: every sequence of the keyspace',
      )
        .env('IDGEN_SERVE_SEQUENCES')
        .argParser(collectNames),
    )
    .addOption(
      new Option(
        '--token-file <file>',
        `file of the bearer tokens the ID endpoints then accept, one per line, re-read when it changes (or one token itself in ${TOKEN_VARIABLE})`,
      ).env('IDGEN_SERVE_TOKEN_FILE'),
    )
    .addOption(
      new Option('--metrics-auth', 'GET /metrics needs a token as well').env(
        'IDGEN_SERVE_METRICS_AUTH',
      ),
    )
    .option(ALLOW_UNSAFE_FLAG, ALLOW_UNSAFE_HELP)
    .addOption(
      new Option('--tls-cert <file>', 'PEM certificate chain: serve HTTPS (with --tls-key)').env(
        'IDGEN_SERVE_TLS_CERT',
      ),
    )
    .addOption(
      new Option('--tls-key <file>', 'PEM private key of --tls-cert').env('IDGEN_SERVE_TLS_KEY'),
    )
    .addOption(
      new Option(
        '--timeout <duration>',
        'how long one ID request may wait for IDs before it gets a 503, e.g. 5s or 2500ms',
      )
        .env('IDGEN_SERVE_TIMEOUT')
        .argParser(timerParser('timeoutMs'))
        .default(SERVE_DEFAULTS.timeoutMs, typedDuration(SERVE_DEFAULTS.timeoutMs)),
    )
    .addOption(
      new Option(
        '--max-pending-requests <n>',
        'the most ID requests under way at once; one more gets 503 IDGEN_OVERLOADED at once',
      )
        .env('IDGEN_SERVE_MAX_PENDING_REQUESTS')
        .argParser(parseInteger)
        .default(SERVE_DEFAULTS.maxPendingRequests),
    )
    .addOption(
      new Option(
        '--receive-timeout <duration>',
        'how long a client may take to send a request in full; a slower one is disconnected',
      )
        .env('IDGEN_SERVE_RECEIVE_TIMEOUT')
        .argParser(timerParser('receiveTimeoutMs'))
        .default(SERVE_DEFAULTS.receiveTimeoutMs, typedDuration(SERVE_DEFAULTS.receiveTimeoutMs)),
    )
    .addHelpText(
      'after',
      `
Endpoints: POST /v1/sequences/{name}/ids?count=N, POST /v1/sequences/{name}/ranges?count=N,
GET /healthz, /readyz, /metrics, /status, /openapi.json. Logs (info by default) go to stderr. SIGTERM or
SIGINT: stops accepting connections, lets the requests in flight finish, gives the unused IDs
back, exits 0 (during the start: once the step under way is done); a second one exits at once
(143, 130). Exit codes: 0 stopped by a signal, 1 bad option (a port in use, a keyspace without
the idgen tables, a token or TLS file that cannot be used), 3 Cassandra unreachable at start, 12
credentials refused. A token file that turns bad later keeps the previous tokens (logged once).

Example:
  $ idgen-cass --contact-points 10.0.1.5 --dc dc1 serve --port 8080 --sequence orders
  $ curl -s -X POST 'http://localhost:8080/v1/sequences/orders/ids?count=3'
  {"sequence":"orders","ids":[1001,1002,1003]}`,
    )
    .action(async (flags: ServeFlags) => {
      const options: ServeOptions = {
        sequences: flags.sequence,
        ...tokenOptions(flags.tokenFile, process.env[TOKEN_VARIABLE]),
        metricsAuth: flags.metricsAuth,
        tls: keyPair(['tlsCert', flags.tlsCert], ['tlsKey', flags.tlsKey]),
        timeoutMs: flags.timeout,
        maxPendingRequests: flags.maxPendingRequests,
        receiveTimeoutMs: flags.receiveTimeout,
      };
      checkServeOptions(options); // before anything is connected
      if (!ctx.logLevelGiven) ctx.logger.level = 'info';
      // Heard from here on: as PID 1 an unheard signal is ignored.
      const stop = stopSignal();
      try {
        const started = await start(ctx, flags, options, () => stop.signal !== undefined);
        const signal = await stop.received;
        if (started === undefined) {
          ctx.logger.info({ signal }, 'stopped while starting; nothing was served');
          return;
        }
        const { server, ids } = started;
        ctx.logger.info(
          { signal },
          'stopping: no new connections; waiting for the requests in flight',
        );
        await server.close();
        await ids.close();
        ctx.logger.info({ signal }, 'stopped; the unused IDs went back to the DC where they could');
      } finally {
        stop.release();
      }
    });
}

/** Connects, checks the keyspace and listens; undefined if `stopping()` after a step. */
async function start(
  ctx: CliContext,
  flags: ServeFlags,
  options: ServeOptions,
  stopping: () => boolean,
): Promise<{ readonly server: FastifyInstance; readonly ids: IdGen } | undefined> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const ids = await ctx.idGen({
    callTimeoutMs: flags.timeout,
    metrics: { registry },
    allowUnsafeCluster: flags.allowUnsafeCluster === true,
  });
  if (stopping()) return undefined;
  // A keyspace without the idgen tables would answer every request 500: refused at start.
  await ids.listSequences();
  if (stopping()) return undefined;
  // GET /status reads through an Admin (its clients reach other DCs' nodes when EACH_QUORUM
  // fails), opened at the first request: serving IDs needs no second connection.
  let admin: Promise<Admin> | undefined;
  const status: StatusSource = {
    status: async (request) => {
      admin ??= ctx.admin().catch((error: unknown) => {
        admin = undefined; // the next request tries again
        throw error;
      });
      return (await admin).status(request);
    },
  };
  // One "listening" line of ours instead of fastify's per-address ones.
  const serverLogger =
    ctx.logger.level === 'info' ? ctx.logger.child({}, { level: 'warn' }) : ctx.logger;
  const server = createServer(ids, { ...options, registry, status, logger: serverLogger });
  const address = await listen(server, flags);
  if (stopping()) {
    await server.close();
    return undefined;
  }
  ctx.logger.info(
    {
      address,
      dc: ids.dc,
      keyspace: ids.keyspace,
      sequences: flags.sequence ?? 'all',
      token: options.token !== undefined || options.tokenFile !== undefined,
      tls: options.tls !== undefined,
    },
    'listening',
  );
  return { server, ids };
}

/** Listens; a port or address that cannot be used is a bad option (exit code 1). */
async function listen(server: ReturnType<typeof createServer>, flags: ServeFlags): Promise<string> {
  try {
    return await server.listen({ host: flags.host, port: flags.port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw new InvalidOptionError(
        'port',
        flags.port,
        `a port this process may listen on (${code}: ${(error as Error).message})`,
      );
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
      throw new InvalidOptionError(
        'host',
        flags.host,
        `an address of this machine, or 0.0.0.0 for all (${code})`,
      );
    }
    throw error;
  }
}

/** The process, or a stand-in in tests. */
export interface SignalTarget {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

/**
 * Listens for SIGTERM and SIGINT: `received` resolves with the first; until `release()`, a second
 * one exits at once (143, 130), explicitly, since Node's default action does nothing for PID 1.
 */
export function stopSignal(target: SignalTarget = process) {
  const STOP: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  let first: NodeJS.Signals | undefined;
  let resolve: (signal: NodeJS.Signals) => void = () => {};
  const received = new Promise<NodeJS.Signals>((settle) => (resolve = settle));
  const now = (signal: NodeJS.Signals) => target.exit(128 + (osConstants.signals[signal] ?? 0));
  const stop = (signal: NodeJS.Signals) => {
    for (const name of STOP) target.off(name, stop);
    for (const name of STOP) target.on(name, now);
    first = signal;
    resolve(signal);
  };
  for (const name of STOP) target.on(name, stop);
  return {
    received,
    get signal() {
      return first;
    },
    release: () => {
      for (const name of STOP) {
        target.off(name, stop);
        target.off(name, now);
      }
    },
  };
}

/**
 * The token options: `--token-file` (re-read when it changes) or {@link TOKEN_VARIABLE}, trimmed.
 * @throws {InvalidOptionError} when both are given.
 */
export function tokenOptions(
  tokenFile: string | undefined,
  fromVariable: string | undefined,
): Pick<ServeOptions, 'token' | 'tokenFile'> {
  if (tokenFile !== undefined && fromVariable !== undefined) {
    throw new InvalidOptionError(
      'token',
      `both --token-file and ${TOKEN_VARIABLE}`,
      'one of them: the tokens in a file, or one token in the variable',
    );
  }
  return fromVariable !== undefined ? { token: fromVariable.trim() } : { tokenFile };
}

function parsePort(value: string): number {
  const port = parseInteger(value);
  if (port < 0 || port > 65_535) throw new InvalidArgumentError('Expected a port from 0 to 65535.');
  return port;
}

/** `--sequence a b`, `--sequence a,b` and `IDGEN_SERVE_SEQUENCES=a,b` alike. */
function collectNames(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), ...parseList(value)];
}
