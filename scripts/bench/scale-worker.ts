/**
 * The scale phase in one allocator process: instances with their own IdGen, store and handle,
 * sharing the process's driver client; each instance's DC-state calls are timed at its store.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { IdGen } from '../../src/index.js';
import { openClient } from '../../src/store/cassandra/driver-client.js';
import { CassandraStore } from '../../src/store/cassandra/store.js';
import type { IdStore } from '../../src/store/port.js';
import { drawLoop, MAX_FAILURE_MESSAGES } from './draw-loop.js';
import {
  addCounts,
  LOOP_DELAY_RESOLUTION_MS,
  type LoopDelay,
  type ScaleCommand,
  type WorkerScaleDraw,
} from './protocol.js';
import { Histogram, sum, sums, hrNow } from './stats.js';
import { addTimings, TimedStore, timingsBetween } from './timings.js';

interface Instance {
  readonly ids: IdGen;
  readonly timed: TimedStore;
}

export interface ScaleTarget {
  readonly dc: string;
  readonly contactPoints: readonly string[];
  readonly keyspace: string;
}

/** One store per instance over a shared part, which `close` closes after every instance. */
export interface StoreSource {
  store(): IdStore;
  close(): Promise<void>;
}

export async function cassandraStores(target: ScaleTarget): Promise<StoreSource> {
  const { client } = await openClient({
    contactPoints: target.contactPoints,
    localDataCenter: target.dc,
  });
  return {
    store: () => new CassandraStore(client, target.keyspace, { ownsClient: false }),
    close: () => client.shutdown(),
  };
}

/** Instances opened as commands first need them, kept until {@link close}. */
export class ScaleInstances {
  private source: StoreSource | undefined;
  private readonly instances: Instance[] = [];

  constructor(
    private readonly target: ScaleTarget,
    private readonly openSource: (target: ScaleTarget) => Promise<StoreSource> = cassandraStores,
  ) {}

  async draw(command: ScaleCommand): Promise<WorkerScaleDraw> {
    const instances = await this.open(command.instances);
    const start = hrNow();
    let cpuAtOpen: NodeJS.CpuUsage | undefined;
    const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
    const runs = instances.map((i) => ({
      handle: i.ids.sequence(command.sequence),
      timed: i.timed,
    }));
    // Close only after every loop: a returned block leaves the next claim off the block grid,
    // and a loop still drawing would get a block cut short.
    const settled = await Promise.allSettled(
      runs.map(async ({ handle, timed }) => {
        let before = timed.snapshot();
        const loop = await drawLoop(
          handle,
          { ...command, ratePerSecond: command.ratePerInstance, start },
          () => {
            before = timed.snapshot();
            if (cpuAtOpen === undefined) {
              cpuAtOpen = process.cpuUsage();
              loopDelay.enable();
            }
          },
        );
        return { ...loop, dcState: timingsBetween(before, timed.snapshot()) };
      }),
    );
    loopDelay.disable();
    const closed = await Promise.allSettled(runs.map(({ handle }) => handle.close()));
    const failed = [...settled, ...closed].find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const loops = settled.flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
    const cpu = process.cpuUsage(cpuAtOpen);
    const draws = loops.map((l) => l.draw);
    const messages = [...new Set(draws.flatMap((d) => d.failureMessages))];
    return {
      instances: instances.length,
      ...sums(draws, ['ids', 'warmupWaits', 'failures', 'warmupFailures', 'notIncreasing']),
      idsPerSecond: sum(draws.map((d) => (d.seconds > 0 ? d.ids / d.seconds : 0))),
      instanceSeconds: sum(draws.map((d) => d.seconds)),
      claimedIds: sum(loops.map((l) => l.draw.ids + l.heldAfter - l.heldBefore)),
      lastBlockSizes: loops.flatMap((l) => l.lastBlockSize ?? []),
      histogram: Histogram.merged(loops.map((l) => l.histogram)).toJSON(),
      counts: addCounts(draws.map((d) => d.counts)),
      failureMessages: messages.slice(0, MAX_FAILURE_MESSAGES),
      dcState: addTimings(loops.map((l) => l.dcState)),
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      loopDelay: loopDelayMs(loopDelay, LOOP_DELAY_RESOLUTION_MS),
      ...firstIds(loops),
      serialReads: sum(loops.map((l) => l.serialReads)),
    };
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.instances.map((i) => i.ids.close()));
    this.instances.length = 0;
    await this.source?.close().catch(() => undefined);
    this.source = undefined;
  }

  private async open(count: number): Promise<Instance[]> {
    this.source ??= await this.openSource(this.target);
    const source = this.source;
    while (this.instances.length < count) {
      const timed = new TimedStore(source.store());
      const { dc, keyspace } = this.target;
      const ids = new IdGen({ store: timed.store, dc, keyspace });
      this.instances.push({ ids, timed });
    }
    return this.instances.slice(0, count);
  }
}

export function firstIds(
  loops: readonly { readonly firstIdNs: number | undefined; readonly issued: number }[],
): Pick<WorkerScaleDraw, 'slowestFirstIdMs' | 'withoutId'> {
  const timed = loops.flatMap((l) => (l.firstIdNs === undefined ? [] : [l.firstIdNs]));
  return {
    slowestFirstIdMs: timed.length === 0 ? null : Math.max(...timed) / 1e6,
    withoutId: loops.filter((l) => l.issued === 0).length,
  };
}

/** Ms late, less the sampling interval the histogram also records (an idle loop shows 0). */
export function loopDelayMs(
  histogram: Pick<IntervalHistogram, 'count' | 'percentile' | 'max'>,
  resolutionMs: number,
): LoopDelay | null {
  if (histogram.count === 0) return null;
  const late = (ns: number) => Math.max(0, ns / 1e6 - resolutionMs);
  return {
    p50Ms: late(histogram.percentile(50)),
    p99Ms: late(histogram.percentile(99)),
    maxMs: late(histogram.max),
  };
}
