/**
 * One allocator process of a campaign: `node --import tsx scripts/torture/worker.ts '<WorkerSpec>'`.
 * Writes every ID it hands out to a float64 history file (every 20 ms, at 4096 IDs, before each
 * wait of its own) and counts them by second (progress.ts). Modes: `tight` next() back to back;
 * `paced` one ID at a rate, written before the next call (so only these are SIGKILLed raw);
 * `take` runs of 1..maxTake; `callers` several loops on one handle, one call in 8 with a deadline
 * of its own. `callers` and `take` also write per call [IDs recorded when made, its end, asked].
 * SIGTERM stops, then closes; SIGUSR2 closes while drawing; SIGHUP writes the history and
 * SIGKILLs itself. After close() begins a call gets only IDs the library had already taken.
 */
import fs from 'node:fs';
import { createInterface } from 'node:readline';
import { setImmediate as turn } from 'node:timers/promises';

import { setMutationsForTests, type Mutation } from '../../src/mutations.js';
import { connect } from '../../src/index.js';
import { SERVE_DEFAULTS } from '../../src/serve/options.js';
import type { IdGen, IdGenError } from '../../src/index.js';
import { ALARM_CODES, EXPECTED_ERROR_CODES, OWN_DEADLINE_MS } from './errors.js';
import { ProgressCounter } from './progress.js';
import { Random } from './random.js';

export type WorkerMode = 'tight' | 'paced' | 'take' | 'callers';

export interface WorkerSpec {
  readonly dc: string;
  readonly contactPoints: readonly string[];
  readonly keyspace: string;
  readonly sequence: string;
  readonly mode: WorkerMode;
  readonly rate: number;
  readonly maxTake: number;
  /** Loops calling at once in `callers` mode. @default 4 */
  readonly callers?: number | undefined;
  /** Most IDs per second of other modes: the checker holds every ID in memory. */
  readonly maxRate?: number | undefined;
  readonly historyFile: string;
  /** Required in `callers` and `take` modes. */
  readonly callsFile?: string | undefined;
  readonly progressFile: string;
  /** The campaign's start (ms since the epoch), from which progress seconds count. */
  readonly startedAt: number;
  readonly count?: number | undefined;
  /** Connect only once a line arrives on stdin. */
  readonly waitForGo?: boolean | undefined;
  readonly mutation?: Mutation | undefined;
  /** connect()'s `allowUnsafeCluster`: the periodic-commitlog control must claim on. */
  readonly allowUnsafeCluster?: boolean | undefined;
  /** The seed of its own choices. @default 1 */
  readonly seed?: number | undefined;
}

/** The line a worker prints once it drew its first ID: its grantee, and shard moves before. */
export interface WorkerFirstId {
  readonly event: 'first-id';
  readonly shard: string;
  readonly shardMoves: number;
}

export interface WorkerSummary {
  readonly event: 'done';
  readonly drawn: number;
  readonly errors: Readonly<Record<string, number>>;
  readonly firstErrors: Readonly<Record<string, string>>;
  readonly stats: Readonly<Record<string, unknown>>;
  readonly closedEarly: boolean;
  readonly servedAfterClose: number;
  /** Of those, the IDs the library had not taken before close() began: any is a failure. */
  readonly closeViolations: number;
  /** The error outside those expected under faults (errors.ts) that stopped it; exit 1. */
  readonly unexpectedError?: { readonly code: string; readonly message: string } | undefined;
  readonly ownDeadlinesMissed?: number | undefined;
  readonly connected: boolean;
  readonly connectFailures: number;
}

const FLUSH_EVERY = 4096;
const FLUSH_MS = 20;
const MAX_RATE_SLACK_MS = 10;

/** Whether it drew until told to stop, without an error it must not retry past. */
async function main(spec: WorkerSpec): Promise<boolean> {
  // Said at once: a worker that never connects still tells how long its process took to start.
  const startupMs = Math.round(process.uptime() * 1000);
  say({ event: 'started', pid: process.pid, startupMs });
  if (spec.mutation !== undefined) setMutationsForTests([spec.mutation]);
  const concurrent = spec.mode === 'callers';
  const writesCalls = concurrent || spec.mode === 'take';
  if (writesCalls && spec.callsFile === undefined)
    throw new Error(`${spec.mode} mode needs a callsFile`);
  const fd = fs.openSync(spec.historyFile, 'a');
  const callsFd = writesCalls ? fs.openSync(spec.callsFile!, 'a') : undefined;
  const progressFd = fs.openSync(spec.progressFile, 'a');
  const progress = new ProgressCounter(spec.startedAt, (text) =>
    writeAll(progressFd, Buffer.from(text)),
  );
  const buffer = new Float64Array(FLUSH_EVERY);
  let buffered = 0;
  const calls = new Float64Array(3 * FLUSH_EVERY);
  let callsBuffered = 0;
  let lastFlush = Date.now();
  // The IDs before the calls they end, and before the progress that counts them.
  const flush = (now = Date.now(), last = false) => {
    if (buffered > 0) {
      writeAll(fd, new Uint8Array(buffer.buffer, 0, buffered * 8));
      buffered = 0;
      lastFlush = now;
    }
    if (callsBuffered > 0) {
      writeAll(callsFd!, new Uint8Array(calls.buffer, 0, callsBuffered * 8));
      callsBuffered = 0;
    }
    progress.flush(now, last);
  };
  // By a timer too: a call waiting for a refill would otherwise keep the IDs before it buffered.
  const flushing = setInterval(() => flush(), FLUSH_MS);
  flushing.unref();
  const record = (id: number) => {
    buffer[buffered++] = id;
    if (buffered === FLUSH_EVERY) flush();
  };
  // The nemesis's kill. It runs after the microtasks that record a resolved call's IDs.
  process.on('SIGHUP', () => {
    flush(Date.now(), true);
    process.kill(process.pid, 'SIGKILL');
  });

  // Handled from before it connects: one told to stop while connecting exits 0, with a summary.
  let stopping = false;
  process.on('SIGTERM', () => (stopping = true));
  if (spec.waitForGo === true) await goLine();
  const connecting = Date.now();
  const connection = await connectUntilStopped(spec, () => stopping);
  const connectMs = Date.now() - connecting;
  const closeFiles = () => {
    clearInterval(flushing);
    flush(Date.now(), true);
    for (const open of [fd, callsFd, progressFd]) if (open !== undefined) fs.closeSync(open);
  };
  if (connection.ids === undefined) {
    closeFiles();
    say<WorkerSummary>({
      ...{ event: 'done', drawn: 0, errors: {}, firstErrors: {}, stats: {} },
      ...{ closedEarly: false, servedAfterClose: 0, closeViolations: 0 },
      connected: false,
      connectFailures: connection.failures,
    });
    return true;
  }
  const ids = connection.ids;
  const seq = ids.sequence(spec.sequence);
  let closedEarly = false;
  let drawn = 0;
  // Set in the same synchronous step as close() is called.
  let closeBegun = false;
  let takenAtClose = 0;
  let servedAfterClose = 0;
  let closeViolations = 0;
  const close = (): Promise<void> => {
    if (!closeBegun) {
      closeBegun = true;
      // IDs the library took and had not handed over yet: the call in flight may bring them.
      takenAtClose = Math.max(0, Number(seq.stats().issued) - drawn);
    }
    return ids.close();
  };
  // `floor`: the IDs recorded when the call was made.
  const received = (count: number, calledAfterClose: boolean, floor: number, asked = 1) => {
    drawn += count;
    if (writesCalls) {
      calls[callsBuffered++] = floor;
      calls[callsBuffered++] = drawn;
      calls[callsBuffered++] = asked;
      if (callsBuffered === calls.length) flush();
    }
    const now = Date.now();
    progress.add(now, count);
    if (now - lastFlush >= FLUSH_MS) flush(now);
    if (!closeBegun) return;
    servedAfterClose += count;
    const allowed = calledAfterClose ? 0 : takenAtClose;
    closeViolations += Math.max(0, count - allowed);
    if (!calledAfterClose) takenAtClose = Math.max(0, takenAtClose - count);
  };
  process.on('SIGUSR2', () => {
    closedEarly = true;
    void close().finally(() => (stopping = true));
  });
  say({ event: 'ready', pid: process.pid, startupMs, connectMs });

  const errors: Record<string, number> = {};
  const firstErrors: Record<string, string> = {};
  const tally = (error: unknown): { code: string; message: string } => {
    const code = (error as Partial<IdGenError>).code ?? 'UNKNOWN';
    errors[code] = (errors[code] ?? 0) + 1;
    const message = error instanceof Error ? error.message : String(error);
    firstErrors[code] ??= message;
    return { code, message };
  };
  let unexpectedError: WorkerSummary['unexpectedError'];
  let ownDeadlinesMissed = 0;
  let firstReported = false;
  const started = Date.now();
  const limit = spec.count ?? Infinity;
  const random = new Random(spec.seed ?? 1);
  const call = async (): Promise<void> => {
    const calledAfterClose = closeBegun;
    const floor = drawn;
    // Six draws every call, whatever it uses: the same seed asks the library the same things.
    const [u0, u1, u2, u3, u4, u5] = Array.from({ length: 6 }, () => random.next());
    const count = 1 + Math.floor(u0! * spec.maxTake);
    const kind = concurrent
      ? (['next', 'take', 'nextIds'] as const)[Math.floor(u1! * 3)]
      : undefined;
    // One concurrent call in 8 has a deadline of its own; a miss is the caller's, counted apart.
    const own =
      concurrent && u2! < 1 / 8 ? { timeoutMs: Math.floor(u3! * OWN_DEADLINE_MS) } : undefined;
    try {
      if (spec.mode === 'take' || kind === 'take') {
        const { first, last } = await seq.take(count, own);
        for (let id = first; id <= last; id++) record(id);
        received(last - first + 1, calledAfterClose, floor, count);
      } else if (kind === 'nextIds') {
        // One in 10 asks for up to three blocks, so that it waits for refills once it took IDs.
        const wide = () =>
          Math.min(SERVE_DEFAULTS.maxIdsPerRequest, 3 * Math.max(1, seq.stats().blockSize));
        const asked = u4! < 0.1 ? 1 + Math.floor(u5! * wide()) : count;
        const ids = await seq.nextIds(asked, own);
        for (const id of ids) record(id);
        received(ids.length, calledAfterClose, floor, asked);
      } else if (spec.mode === 'paced') {
        record(seq.tryNext() ?? (await seq.next()));
        received(1, calledAfterClose, floor);
        // Written before the next call: raw SIGKILLs go to paced processes only.
        flush();
        const due = started + (drawn / spec.rate) * 1000;
        if (due > Date.now()) {
          await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
        } else {
          await turn();
        }
      } else {
        record(await seq.next(own));
        received(1, calledAfterClose, floor);
      }
    } catch (error) {
      if (own === undefined || (error as Partial<IdGenError>).code !== 'IDGEN_DEADLINE_EXCEEDED')
        throw error;
      ownDeadlinesMissed++;
      return;
    }
    if (spec.maxRate !== undefined && spec.mode !== 'paced') {
      const due = started + (drawn / spec.maxRate) * 1000;
      if (due > Date.now() + MAX_RATE_SLACK_MS) {
        flush();
        await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      }
    }
  };
  const loop = async (): Promise<void> => {
    while (!stopping && unexpectedError === undefined && drawn < limit) {
      if (!firstReported && drawn > 0) {
        // Said at once: a killed worker prints no summary.
        firstReported = true;
        say<WorkerFirstId>({
          event: 'first-id',
          shard: seq.grantee,
          shardMoves: seq.stats().shardMoves,
        });
      }
      try {
        await call();
      } catch (error) {
        const { code, message } = tally(error);
        flush();
        // Closed with no close() of ours called, it is the library's doing, and unexpected.
        if (code === 'IDGEN_CLOSED' && closeBegun) return;
        if (
          code === 'IDGEN_CLOSED' ||
          (!EXPECTED_ERROR_CODES.includes(code) && !ALARM_CODES.includes(code))
        ) {
          // Retried, a defect would pass as a fault: stop every loop and fail.
          unexpectedError ??= { code, message };
          process.stderr.write(`torture worker: unexpected error ${code}: ${message}\n`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50 + random.next() * 150));
      }
    }
  };
  const loops = concurrent ? (spec.callers ?? 4) : 1;
  await Promise.all(Array.from({ length: loops }, loop));
  closeFiles();
  const stats = seq.stats();
  // A close() that throws must still leave a summary, or its code (an alarm) would go unseen.
  try {
    await close();
  } catch (error) {
    const { code, message } = tally(error);
    if (!ALARM_CODES.includes(code)) unexpectedError ??= { code, message: `close(): ${message}` };
  }
  say<WorkerSummary>({
    event: 'done',
    drawn,
    errors,
    firstErrors,
    stats: { ...stats, lastError: stats.lastError?.message },
    closedEarly,
    servedAfterClose,
    closeViolations,
    unexpectedError,
    ownDeadlinesMissed,
    connected: true,
    connectFailures: connection.failures,
  });
  return unexpectedError === undefined;
}

/** A line of the worker's stdout, which the fleet reads. */
function say<T extends { readonly event: string }>(line: T): void {
  process.stdout.write(JSON.stringify(line) + '\n');
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let written = 0; written < bytes.length;) written += fs.writeSync(fd, bytes, written);
}

/**
 * Connects, trying again every second until told to stop: a DC's nodes may be down longer than any
 * bound; a defect that keeps connects failing shows as a DC drawing nothing.
 */
async function connectUntilStopped(
  spec: WorkerSpec,
  stopped: () => boolean,
): Promise<{ readonly ids: IdGen | undefined; readonly failures: number }> {
  for (let failures = 0; ;) {
    try {
      const ids = await connect({
        contactPoints: [...spec.contactPoints],
        localDataCenter: spec.dc,
        keyspace: spec.keyspace,
        allowUnsafeCluster: spec.allowUnsafeCluster,
      });
      return { ids, failures };
    } catch (error) {
      failures++;
      const why = error instanceof Error ? error.message : String(error);
      process.stderr.write(`torture worker: connect attempt ${failures} failed: ${why}\n`);
      const until = Date.now() + 1_000;
      while (!stopped() && Date.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 50));
      if (stopped()) return { ids: undefined, failures };
    }
  }
}

/** Resolves at the first whole line on stdin; rejects if stdin ends before one. */
async function goLine(): Promise<void> {
  const lines = createInterface({ input: process.stdin });
  const first = await lines[Symbol.asyncIterator]().next();
  lines.close();
  if (first.done === true)
    throw new Error('stdin ended before the line that lets a liveness worker connect');
}

main(JSON.parse(process.argv[2] ?? '{}') as WorkerSpec).then(
  (ok) => process.exit(ok ? 0 : 1),
  (error: unknown) => {
    process.stderr.write(
      `torture worker: ${error instanceof Error ? error.stack : String(error)}\n`,
    );
    process.exit(1);
  },
);
