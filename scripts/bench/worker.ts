/** One allocator process, forked by fleet.ts: connects once, then obeys protocol.ts commands. */
import { parseArgs } from 'node:util';

import { connect, type IdGen } from '../../src/index.js';
import { drawLoop } from './draw-loop.js';
import type {
  BurstCommand,
  DrawCommand,
  WorkerCommand,
  WorkerDraw,
  WorkerMessage,
} from './protocol.js';
import { countsBetween } from './protocol.js';
import type { BurstRun } from './results.js';
import { ScaleInstances } from './scale-worker.js';
import { Histogram, latencySummary, hrNow } from './stats.js';

function send(message: WorkerMessage): void {
  process.send?.(message);
}

async function draw(ids: IdGen, command: DrawCommand): Promise<WorkerDraw> {
  const handle = ids.sequence(command.sequence);
  const { draw: drawn, histogram } = await drawLoop(handle, {
    ratePerSecond: command.mode === 'paced' ? command.ratePerSecond : 0,
    warmupMs: command.warmupMs,
    durationMs: command.durationMs,
    start: hrNow(),
  });
  const rssMiB = process.memoryUsage().rss / 2 ** 20;
  await handle.close();
  return { ...drawn, histogram: histogram.toJSON(), rssMiB };
}

/** Loads one block, then asks for `calls` IDs at once. */
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
  const scale = new ScaleInstances({ dc, contactPoints: contactPoints.split(','), keyspace });
  const closeAll = () => Promise.allSettled([ids.close(), scale.close()]);
  // Commands arrive one at a time: the benchmark waits for each answer before the next.
  let queue = Promise.resolve();
  process.on('message', (message: WorkerCommand) => {
    queue = queue.then(async () => {
      try {
        if (message.type === 'draw') send({ type: 'drawn', result: await draw(ids, message) });
        else if (message.type === 'burst') {
          send({ type: 'burst', result: await burst(ids, message) });
        } else if (message.type === 'scale') {
          send({ type: 'scaled', result: await scale.draw(message) });
        } else {
          await closeAll();
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
  process.on('disconnect', () => {
    void closeAll().finally(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
  process.disconnect?.();
});
