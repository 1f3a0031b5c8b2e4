/**
 * One allocator process of the benchmark, as a service in one DC would run it: connects once,
 * then obeys the benchmark's commands (scripts/bench/protocol.ts) over IPC until told to exit.
 * Started by scripts/bench/fleet.ts with `fork`; not meant to be run by hand.
 *
 *   --dc dc1 --contact-points 127.0.0.1 --keyspace bench_1a2b3c4d
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

import { connect, type IdGen } from '../../src/index.js';
import type {
  BurstCommand,
  DrawCommand,
  WorkerCommand,
  WorkerDraw,
  WorkerMessage,
} from './protocol.js';
import { countsBetween } from './protocol.js';
import type { BurstRun } from './results.js';
import { Histogram, latencySummary } from './stats.js';

const hrNow = (): number => Number(process.hrtime.bigint());

function send(message: WorkerMessage): void {
  process.send?.(message);
}

/** After a failed `next()` the loop pauses this long, as a caller backing off would. */
const FAILURE_PAUSE_MS = 100;
/** Paced mode: a process that fell further behind than this gives up the missed IDs. */
const MAX_LAG_NS = 100e6;
/** Distinct failure messages a process reports. */
const MAX_FAILURE_MESSAGES = 3;

/**
 * Draws as fast as it can (`tight`: `await next()` in a loop, which never yields to I/O while
 * the block lasts) or at `ratePerSecond` (`paced`: sleeps whenever it is 1 ms ahead), timing
 * every call of the measured window.
 */
async function draw(ids: IdGen, command: DrawCommand): Promise<WorkerDraw> {
  const handle = ids.sequence(command.sequence);
  const histogram = new Histogram();
  const initial = handle.stats();
  const start = hrNow();
  const warmupEnd = start + command.warmupMs * 1e6;
  const end = warmupEnd + command.durationMs * 1e6;
  const paced = command.mode === 'paced';
  const interval = paced ? 1e9 / command.ratePerSecond : 0;
  let due = start;
  let measuring = false;
  let before = initial;
  let measureStart = start;
  let measureEnd = start;
  let drawn = 0;
  let failures = 0;
  let warmupFailures = 0;
  const failureMessages = new Set<string>();
  let notIncreasing = 0;
  let last = -1;

  for (;;) {
    const t0 = hrNow();
    let id: number;
    try {
      id = await handle.next();
    } catch (error) {
      if (measuring) failures++;
      else warmupFailures++;
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      if (failureMessages.size < MAX_FAILURE_MESSAGES) failureMessages.add(message);
      await sleep(FAILURE_PAUSE_MS);
      if (hrNow() < end) continue;
      measureEnd = hrNow();
      break;
    }
    const t1 = hrNow();
    if (id <= last) notIncreasing++;
    last = id;
    if (measuring) {
      histogram.record(t1 - t0);
      drawn++;
      if (t1 >= end) {
        measureEnd = t1;
        break;
      }
    } else if (t1 >= warmupEnd) {
      measuring = true;
      before = handle.stats();
      measureStart = t1;
    }
    if (paced) {
      due += interval;
      if (t1 - due > MAX_LAG_NS) due = t1;
      else if (due - t1 > 1e6) await sleep((due - t1) / 1e6);
    }
  }
  const after = handle.stats();
  const rssMiB = process.memoryUsage().rss / 2 ** 20;
  await handle.close();
  return {
    ids: drawn,
    seconds: (measureEnd - measureStart) / 1e9,
    histogram: histogram.toJSON(),
    counts: countsBetween(before, after),
    warmupWaits: before.waits - initial.waits,
    rssMiB,
    failures,
    warmupFailures,
    notIncreasing,
    failureMessages: [...failureMessages],
  };
}

/** Loads one block, then asks for `calls` IDs in one synchronous loop (a `Promise.all`). */
async function burst(ids: IdGen, command: BurstCommand): Promise<BurstRun> {
  const handle = ids.sequence(command.sequence);
  await handle.ready();
  const before = handle.stats();
  const histogram = new Histogram();
  const start = hrNow();
  await Promise.all(
    Array.from({ length: command.calls }, () =>
      handle.next().then(() => histogram.record(hrNow() - start)),
    ),
  );
  const totalMs = (hrNow() - start) / 1e6;
  const after = handle.stats();
  await handle.close();
  return {
    calls: command.calls,
    heldBefore: before.remaining,
    totalMs,
    latency: latencySummary(histogram),
    counts: countsBetween(before, after),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dc: { type: 'string' },
      'contact-points': { type: 'string' },
      keyspace: { type: 'string' },
    },
  });
  const { dc, keyspace } = values;
  const contactPoints = values['contact-points'];
  if (dc === undefined || keyspace === undefined || contactPoints === undefined) {
    throw new Error('bench worker: --dc, --contact-points and --keyspace are required');
  }
  const started = hrNow();
  const ids = await connect({
    contactPoints: contactPoints.split(','),
    localDataCenter: dc,
    keyspace,
  });
  send({
    type: 'ready',
    pid: process.pid,
    connectMs: (hrNow() - started) / 1e6,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
  });

  // Commands arrive one at a time: the benchmark waits for each answer before the next.
  let queue = Promise.resolve();
  process.on('message', (message: WorkerCommand) => {
    queue = queue.then(async () => {
      try {
        if (message.type === 'draw') send({ type: 'drawn', result: await draw(ids, message) });
        else if (message.type === 'burst') {
          send({ type: 'burst', result: await burst(ids, message) });
        } else {
          await ids.close();
          process.disconnect();
        }
      } catch (error) {
        send({
          type: 'failed',
          message: error instanceof Error ? (error.stack ?? error.message) : String(error),
        });
      }
    });
  });
  // The benchmark went away: nothing more to do.
  process.on('disconnect', () => {
    void ids.close().finally(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
  process.disconnect?.();
});
