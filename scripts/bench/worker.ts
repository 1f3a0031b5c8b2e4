/** One allocator process, forked by fleet.ts: connects once, then obeys protocol.ts commands. */
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
import { ScaleInstances, type ScaleTarget } from './scale-worker.js';
import { Histogram, latencySummary, hrNow } from './stats.js';

const send = (message: WorkerMessage) => process.send?.(message);

async function draw(ids: IdGen, command: DrawCommand): Promise<WorkerDraw> {
  const handle = ids.sequence(command.sequence);
  const ratePerSecond = command.mode === 'paced' ? command.ratePerSecond : 0;
  const loop = await drawLoop(handle, { ...command, ratePerSecond, start: hrNow() });
  const rssMiB = process.memoryUsage().rss / 2 ** 20;
  await handle.close();
  return { ...loop.draw, histogram: loop.histogram.toJSON(), rssMiB };
}

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

/** The one argument: the {@link ScaleTarget} as JSON. */
async function main(): Promise<void> {
  const target = JSON.parse(process.argv[2] ?? '') as ScaleTarget;
  const { dc, contactPoints, keyspace } = target;
  const started = hrNow();
  const ids = await connect({ contactPoints: [...contactPoints], localDataCenter: dc, keyspace });
  send({
    type: 'ready',
    pid: process.pid,
    connectMs: (hrNow() - started) / 1e6,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
  });
  const scale = new ScaleInstances(target);
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
