/**
 * One allocator process of a torture campaign, as a service would run one: it draws IDs in its
 * mode and records every ID it hands out in a binary history file (8 bytes each, little-endian
 * float64: IDs of the campaign's domain are exact there). IDs are buffered and written every
 * 20 ms (by a timer too, so that none waits in the buffer while a call waits for a refill), at
 * 4096, and before every wait of its own: a raw SIGKILL loses at most the IDs of the last 20 ms
 * or so, as a service killed before its callers stored them would, and the checker cannot see a
 * duplicate of a lost ID. So the nemesis's process kill is a SIGHUP, on which the worker writes
 * what it buffered and then SIGKILLs itself: the library is killed as by a crash (no close, no
 * give-back) and the history is whole. A `paced` worker writes each ID before its next call, and
 * only those are SIGKILLed raw: their histories are whole too. The campaign fails when a history
 * holds other than what its worker said it drew.
 *
 * It also counts the IDs it hands out by second of the campaign and writes the counts with its
 * history (progress.ts): what each DC drew while each fault was in force.
 *
 * Modes: `tight` awaits next() back to back; `paced` takes tryNext() ?? next() at a rate, with an
 * I/O turn between calls; `take` asks for runs of 1..maxTake IDs; `callers` runs several loops at
 * once on the one handle, as a service's concurrent requests do, each call a next(), a take() or
 * a nextIds() (the HTTP service's draw) of 1..maxTake IDs (one nextIds() in 10 of up to three
 * blocks, at most 10,000), one call in 8 with a deadline of its own.
 *
 * Concurrent calls resolve in any order, so a `callers` history alone cannot show monotonicity:
 * the worker also writes, for each call as it resolves, how many IDs were recorded when it was
 * made, where its IDs end in the history, and how many it asked for (its calls file, three
 * float64 each). A `take` worker writes one too, so that a take() handing out fewer or more IDs
 * than it asked for is seen (its history alone would just increase). A call must hand out as many
 * IDs as it asked for, above every ID recorded before it was made, strictly increasing; calls
 * that overlapped owe each other nothing. A call's IDs are recorded in one synchronous step, so
 * they are contiguous in the history, and its entry follows them in the same flush.
 *
 * Signals: SIGTERM stops drawing, then closes (unused IDs go back); SIGUSR2 closes while the
 * loop keeps calling (the close-while-drawing race), then exits; SIGHUP writes the history and
 * SIGKILLs the process. SIGHUP and SIGTERM are handled from before it connects (one told to stop
 * while it still connects exits 0, with a summary), SIGUSR2 from before its ready line.
 *
 * From the moment close() is called no ID may be handed out, so the worker counts the
 * IDs that came back after it: a call made after close() began must get none, and the one call
 * in flight then only those the library had taken before it (its `issued` then, which a call
 * that waited for a refill has not reached: next() yields to I/O after it took an ID once in
 * 512 calls, and a close() in that turn is legitimately followed by that ID).
 *
 *   node --import tsx scripts/torture/worker.ts '<json WorkerSpec>'
 */
import fs from 'node:fs';
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
  /** IDs per second for `paced`. */
  readonly rate: number;
  /** Largest run for `take` and `callers`. */
  readonly maxTake: number;
  /** How many loops call at once in `callers` mode. */
  readonly callers?: number | undefined;
  /**
   * Most IDs per second `tight` and `take` draw (they wait when ahead): the checker holds every
   * recorded ID in memory, so the campaign bounds its history. Unlimited when absent.
   */
  readonly maxRate?: number | undefined;
  readonly historyFile: string;
  /** `callers` and `take` modes: where it writes each call's bounds in the history (see the top). */
  readonly callsFile?: string | undefined;
  /** Where it writes its IDs handed out by second (progress.ts). */
  readonly progressFile: string;
  /**
   * The campaign's start, ms since the epoch: the progress file's seconds count from it, as the
   * nemesis's timeline does.
   */
  readonly startedAt: number;
  /** Stop after this many IDs (liveness checks); unlimited when absent. */
  readonly count?: number | undefined;
  /**
   * Connect only once the fleet writes a line to stdin (a liveness worker: its process starts
   * while the faults heal, so that the start of Node and tsx on the crowded machine does not
   * count against the DC).
   */
  readonly waitForGo?: boolean | undefined;
  /** A deliberately broken protocol variant, for a negative control run. */
  readonly mutation?: Mutation | undefined;
  /**
   * The seed of its own choices (counts, call kinds, deadlines): the fleet derives it from the
   * campaign's seed and the process's number ({@link workerSeed}). Default 1.
   */
  readonly seed?: number | undefined;
}

/** The line a worker prints once it drew its first ID. */
export interface WorkerFirstId {
  readonly event: 'first-id';
  /** The grantee its blocks come from: its DC, or a shard of it (`dc1/3`). */
  readonly shard: string;
  /** Moves to another shard of its DC before its first block. */
  readonly shardMoves: number;
}

/** The last line a worker prints. */
export interface WorkerSummary {
  readonly event: 'done';
  readonly drawn: number;
  readonly errors: Readonly<Record<string, number>>;
  readonly firstErrors: Readonly<Record<string, string>>;
  readonly stats: Readonly<Record<string, unknown>>;
  readonly closedEarly: boolean;
  /** IDs handed to it after close() began (see the top of this file). */
  readonly servedAfterClose: number;
  /** Of those, the IDs the library had not taken before close() began: any is a failure. */
  readonly closeViolations: number;
  /**
   * The error, outside those the library may throw under faults (errors.ts), that stopped it;
   * it then exits 1.
   */
  readonly unexpectedError?: { readonly code: string; readonly message: string } | undefined;
  /** `callers` mode: calls whose deadline of their own passed (see `call` in main). */
  readonly ownDeadlinesMissed?: number | undefined;
  /** False for one told to stop before it could connect: it drew nothing. */
  readonly connected: boolean;
  /** connect() calls that failed before the one that connected (or before it was told to stop). */
  readonly connectFailures: number;
}

const FLUSH_EVERY = 4096;
/** How far ahead of `maxRate` a loop may draw before it waits: one timer per 10 ms at most. */
const MAX_RATE_SLACK_MS = 10;
const FLUSH_MS = 20;
/** The most IDs a `callers` worker's wide nextIds() asks for: an HTTP request's most. */
const WIDE_NEXT_IDS = SERVE_DEFAULTS.maxIdsPerRequest;

/** Whether it drew until told to stop, without an error it must not retry past. */
async function main(spec: WorkerSpec): Promise<boolean> {
  // From the process's start to here: Node, tsx compiling the sources, and the imports. On two
  // cores shared with nine nodes this took up to minutes, which is why a liveness worker's
  // process is started ahead of its check (`waitForGo`).
  const startupMs = Math.round(process.uptime() * 1000);
  // Said at once: a worker that never connects still tells how long its process took to start.
  process.stdout.write(JSON.stringify({ event: 'started', pid: process.pid, startupMs }) + '\n');
  if (spec.mutation !== undefined) setMutationsForTests([spec.mutation]);
  const concurrent = spec.mode === 'callers';
  const writesCalls = concurrent || spec.mode === 'take';
  if (writesCalls && spec.callsFile === undefined) {
    throw new Error(`${spec.mode} mode needs a callsFile`);
  }
  const fd = fs.openSync(spec.historyFile, 'a');
  const callsFd = writesCalls ? fs.openSync(spec.callsFile!, 'a') : undefined;
  const progressFd = fs.openSync(spec.progressFile, 'a');
  const progress = new ProgressCounter(spec.startedAt, (text) =>
    writeAll(progressFd, Buffer.from(text)),
  );
  const buffer = new Float64Array(FLUSH_EVERY);
  let buffered = 0;
  /**
   * `callers` and `take` modes: each call's [IDs recorded when it was made, its end in the
   * history, the count it asked for].
   */
  const calls = new Float64Array(3 * FLUSH_EVERY);
  let callsBuffered = 0;
  let lastFlush = Date.now();
  /**
   * Writes the IDs buffered, then the calls they end (never a call whose IDs are not written
   * yet), then the progress of the seconds over (`last`: of all).
   */
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
  // A call that waits for a refill (a partition, a node down) would otherwise keep the IDs before
  // it in the buffer for as long as it waits, to be lost with a SIGKILL then; and the count of a
  // second over, unwritten.
  const flushing = setInterval(() => flush(), FLUSH_MS);
  flushing.unref();
  const record = (id: number) => {
    buffer[buffered++] = id;
    if (buffered === FLUSH_EVERY) flush();
  };
  // The nemesis's kill. A handler runs between turns of the event loop, after the microtasks
  // that record what a resolved call handed out: the buffer then holds every ID handed out and
  // not yet written, and no other code runs before the SIGKILL. A failed write throws out of
  // the handler and the process exits 1, which the verdict counts against a kill.
  process.on('SIGHUP', () => {
    flush(Date.now(), true);
    process.kill(process.pid, 'SIGKILL');
  });

  // From here, not from the ready line: a process told to stop while it still connects stops
  // as any other does, with its summary and exit code 0.
  let stopping = false;
  process.on('SIGTERM', () => (stopping = true));
  if (spec.waitForGo === true) await goLine();
  const connecting = Date.now();
  const connection = await connectUntilStopped(spec, () => stopping);
  const connectMs = Date.now() - connecting;
  if (connection.ids === undefined) {
    // Told to stop while every connect failed (its DC's nodes all down, say): it drew nothing.
    clearInterval(flushing);
    flush(Date.now(), true);
    for (const open of [fd, callsFd, progressFd]) if (open !== undefined) fs.closeSync(open);
    const summary: WorkerSummary = {
      ...{ event: 'done', drawn: 0, errors: {}, firstErrors: {}, stats: {} },
      ...{ closedEarly: false, servedAfterClose: 0, closeViolations: 0 },
      connected: false,
      connectFailures: connection.failures,
    };
    process.stdout.write(JSON.stringify(summary) + '\n');
    return true;
  }
  const ids = connection.ids;
  const seq = ids.sequence(spec.sequence);
  let closedEarly = false;
  let drawn = 0;
  // Set in the same synchronous step as close() is called: every call that resolves after it
  // was in flight then, or made after it.
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
  /**
   * Counts `count` IDs a call handed out (recorded just before); `calledAfterClose` if it was made
   * after close(), `floor` the IDs recorded when it was made, `asked` how many it asked for. The
   * clock is read here, once a call, not for every ID of a `take`.
   */
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
    // Close while the loop below keeps calling: no ID may come back after this point.
    void close().finally(() => (stopping = true));
  });
  process.stdout.write(
    JSON.stringify({ event: 'ready', pid: process.pid, startupMs, connectMs }) + '\n',
  );

  const errors: Record<string, number> = {};
  const firstErrors: Record<string, string> = {};
  /** Counts an error a call or close() threw, by code, keeping each code's first message. */
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
  /** One call of the worker's mode, its IDs recorded and counted. */
  const call = async (): Promise<void> => {
    const calledAfterClose = closeBegun;
    const floor = drawn;
    // The same six draws every call, whatever it uses, so that one worker's calls ask the same of
    // the library for the same seed (with concurrent callers, which loop gets which is timing).
    const [u0, u1, u2, u3, u4, u5] = Array.from({ length: 6 }, () => random.next());
    const count = 1 + Math.floor(u0! * spec.maxTake);
    const kind = concurrent
      ? (['next', 'take', 'nextIds'] as const)[Math.floor(u1! * 3)]
      : undefined;
    // One concurrent call in 8 has a deadline of its own, up to 100 ms, as a request with a short
    // budget would: it gives up while the claim it waits for is in flight (whose block then serves
    // the calls after it), and a nextIds() may fail once it took IDs (they go to nobody). Its
    // miss is the caller's doing, not a fault's: counted apart, and followed by no pause.
    const own =
      concurrent && u2! < 1 / 8 ? { timeoutMs: Math.floor(u3! * OWN_DEADLINE_MS) } : undefined;
    try {
      if (spec.mode === 'take' || kind === 'take') {
        const { first, last } = await seq.take(count, own);
        for (let id = first; id <= last; id++) record(id);
        received(last - first + 1, calledAfterClose, floor, count);
      } else if (kind === 'nextIds') {
        // One in 10 asks for up to three blocks (at most as many as an HTTP request may): more
        // than the blocks held, so that it waits for refills once it took IDs, and may fail then
        // (its own deadline). More would only wait out the default deadline on small blocks.
        // stats() only for the wide ones: it builds every counter of the handle.
        const wide = () => Math.min(WIDE_NEXT_IDS, 3 * Math.max(1, seq.stats().blockSize));
        const asked = u4! < 0.1 ? 1 + Math.floor(u5! * wide()) : count;
        const ids = await seq.nextIds(asked, own);
        for (const id of ids) record(id);
        received(ids.length, calledAfterClose, floor, asked);
      } else if (spec.mode === 'paced') {
        record(seq.tryNext() ?? (await seq.next()));
        received(1, calledAfterClose, floor);
        // Written before the next call: the nemesis's raw SIGKILLs go to paced processes, whose
        // histories then hold every ID they handed out.
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
      if (own === undefined || (error as Partial<IdGenError>).code !== 'IDGEN_DEADLINE_EXCEEDED') {
        throw error;
      }
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
  /** Calls until told to stop, the handle closed under it after close(), or an unexpected error. */
  const loop = async (): Promise<void> => {
    while (!stopping && unexpectedError === undefined && drawn < limit) {
      if (!firstReported && drawn > 0) {
        // Where the first block came from, said at once: a killed worker prints no summary.
        firstReported = true;
        const first: WorkerFirstId = {
          event: 'first-id',
          shard: seq.grantee,
          shardMoves: seq.stats().shardMoves,
        };
        process.stdout.write(JSON.stringify(first) + '\n');
      }
      try {
        await call();
      } catch (error) {
        const { code, message } = tally(error);
        flush();
        // The handle closed under a call after this worker's own close(): the end of a close
        // while drawing. Closed with no close() called, it is the library's doing: a worker that
        // ended quietly on it would pass for stopped, and its DC would draw less unseen.
        if (code === 'IDGEN_CLOSED' && closeBegun) return;
        if (
          code === 'IDGEN_CLOSED' ||
          (!EXPECTED_ERROR_CODES.includes(code) && !ALARM_CODES.includes(code))
        ) {
          // Retried, a defect would pass as a fault: stop (every loop), say what it was, and fail.
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
  clearInterval(flushing);
  flush(Date.now(), true);
  fs.closeSync(fd);
  if (callsFd !== undefined) fs.closeSync(callsFd);
  fs.closeSync(progressFd);
  const stats = seq.stats();
  // A close() that throws must still leave a summary: without one, the error's code (an alarm
  // among them) would go unseen, and a liveness worker would pass on its history alone.
  try {
    await close();
  } catch (error) {
    const { code, message } = tally(error);
    if (!ALARM_CODES.includes(code)) unexpectedError ??= { code, message: `close(): ${message}` };
  }
  const summary: WorkerSummary = {
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
  };
  process.stdout.write(JSON.stringify(summary) + '\n');
  return unexpectedError === undefined;
}

/** Writes all of `bytes`: a write may take fewer than it was given. */
function writeAll(fd: number, bytes: Uint8Array): void {
  for (let written = 0; written < bytes.length;) {
    written += fs.writeSync(fd, bytes, written);
  }
}

/**
 * Connects, trying again every second until it is told to stop (then `ids` is undefined), as a
 * service whose orchestrator restarts it would: its DC's nodes may all be down for longer than
 * any bound one could pick (a DC killed whole took 631 s to restart on the two-core CI machine,
 * and a worker that gave up after 120 s failed its campaign). A defect that keeps every connect
 * failing still shows: its DC then draws nothing, which the verdict and the liveness check judge.
 */
async function connectUntilStopped(
  spec: WorkerSpec,
  stopped: () => boolean,
): Promise<{ readonly ids: IdGen | undefined; readonly failures: number }> {
  for (let failures = 0; ;) {
    try {
      // Told to stop meanwhile, it still returns the handle: the caller's loop then ends at once
      // and its close() is judged as any other.
      const ids = await connect({
        contactPoints: [...spec.contactPoints],
        localDataCenter: spec.dc,
        keyspace: spec.keyspace,
      });
      return { ids, failures };
    } catch (error) {
      failures++;
      // What a worker that never connects leaves for its report (its last stderr line).
      const why = error instanceof Error ? error.message : String(error);
      process.stderr.write(`torture worker: connect attempt ${failures} failed: ${why}\n`);
      const until = Date.now() + 1_000;
      while (!stopped() && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (stopped()) return { ids: undefined, failures };
    }
  }
}

/** Resolves at the first whole line on stdin; rejects if stdin ends before one. */
function goLine(): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = () => {
      process.stdin.off('data', onData);
      process.stdin.off('end', onEnd);
      process.stdin.pause();
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (!text.includes('\n')) return;
      done();
      resolve();
    };
    const onEnd = () => {
      done();
      reject(new Error('stdin ended before the line that lets a liveness worker connect'));
    };
    process.stdin.on('data', onData);
    process.stdin.on('end', onEnd);
  });
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
