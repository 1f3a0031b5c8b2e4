/** The allocator processes: `processesPerDc` children per DC, started once for every phase. */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type {
  BurstCommand,
  DrawCommand,
  ScaleCommand,
  WorkerCommand,
  WorkerDraw,
  WorkerMessage,
  WorkerScaleDraw,
} from './protocol.js';
import type { BenchCluster } from './cluster.js';
import type { ScaleTarget } from './scale-worker.js';
import type { BurstRun, Log } from './results.js';

const START_TIMEOUT_MS = 120_000;
const EXIT_TIMEOUT_MS = 20_000;
/** Beyond a phase's own seconds, for an answer to arrive. */
const ANSWER_TIMEOUT_MS = 120_000;

/**
 * worker.ts under tsx, at a lower priority: here dozens of tight loops share the cores with the
 * Cassandra nodes, and at equal priority they starve them until every LWT takes seconds.
 */
const WORKER_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker.ts');
const WORKER_NICE = 10;
export const WORKER_RUNTIME =
  'node with tsx, from source (tsx adds about 30 MiB of RSS), at nice 10 so that the Cassandra nodes get the CPU first, as on machines of their own';

type Answer<T extends WorkerMessage['type']> = Extract<WorkerMessage, { type: T }>;

interface Worker {
  readonly dc: string;
  readonly index: number;
  readonly child: ChildProcess;
  pending: ((message: WorkerMessage) => void) | undefined;
  exited: boolean;
}

/** The instances of process `index` of `processes` in its DC: shares differ by one at most. */
export function instanceShare(index: number, processes: number, perDc: number): number {
  return Math.floor(perDc / processes) + (index < perDc % processes ? 1 : 0);
}

export class Fleet {
  private constructor(private readonly workers: readonly Worker[]) {}

  readonly rssAfterConnectMiB: number[] = [];

  static async start(cluster: BenchCluster, processesPerDc: number, log: Log): Promise<Fleet> {
    const { contactPoints, keyspace } = cluster;
    const workers: Worker[] = [];
    for (const dc of cluster.dcs) {
      for (let index = 0; index < processesPerDc; index++) {
        const target: ScaleTarget = { dc, contactPoints: contactPoints[dc]!, keyspace };
        const child = fork(WORKER_SCRIPT, [JSON.stringify(target)], {
          execArgv: ['--import', 'tsx'],
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
        });
        if (child.pid !== undefined) os.setPriority(child.pid, WORKER_NICE);
        const worker: Worker = { dc, index, child, pending: undefined, exited: false };
        const answer = (message: WorkerMessage): void => {
          const pending = worker.pending;
          worker.pending = undefined;
          pending?.(message);
        };
        child.on('message', answer);
        child.on('exit', (code, signal) => {
          worker.exited = true;
          const message = `exited (${signal ?? `code ${code}`}) with a command outstanding`;
          answer({ type: 'failed', message });
        });
        workers.push(worker);
      }
    }
    const fleet = new Fleet(workers);
    try {
      const ready = await Promise.all(
        workers.map((w) => fleet.command(w, undefined, 'ready', START_TIMEOUT_MS)),
      );
      const slowest = Math.max(0, ...ready.map((message) => message.connectMs));
      fleet.rssAfterConnectMiB.push(...ready.map((m) => Math.round(m.rssMiB * 10) / 10));
      log(
        `${workers.length} allocator processes connected (${WORKER_RUNTIME}; slowest connect ${slowest.toFixed(0)} ms)`,
      );
      return fleet;
    } catch (error) {
      await fleet.stop();
      throw error;
    }
  }

  async drawAll(command: DrawCommand): Promise<WorkerDraw[]> {
    const timeout = command.warmupMs + command.durationMs + ANSWER_TIMEOUT_MS;
    const answers = await Promise.all(
      this.workers.map((w) => this.command(w, command, 'drawn', timeout)),
    );
    return answers.map((message) => message.result);
  }

  /** Spreads `instancesPerDc` instances over each DC's processes; returns each process's sum. */
  async scaleAll(
    instancesPerDc: number,
    command: Omit<ScaleCommand, 'instances'>,
  ): Promise<{ dc: string; result: WorkerScaleDraw }[]> {
    const timeout = command.warmupMs + command.durationMs + ANSWER_TIMEOUT_MS;
    const perDc = (dc: string) => this.workers.filter((w) => w.dc === dc).length;
    const answers = this.workers.map(async (worker) => {
      const instances = instanceShare(worker.index, perDc(worker.dc), instancesPerDc);
      if (instances === 0) return [];
      const answer = await this.command(worker, { ...command, instances }, 'scaled', timeout);
      return [{ dc: worker.dc, result: answer.result }];
    });
    return (await Promise.all(answers)).flat();
  }

  async burst(dc: string, command: BurstCommand): Promise<BurstRun> {
    const worker = this.workers.find((w) => w.dc === dc);
    if (worker === undefined) throw new Error(`no allocator process in DC "${dc}"`);
    return (await this.command(worker, command, 'burst', ANSWER_TIMEOUT_MS)).result;
  }

  /** Asks every process to exit; kills those that do not. Never throws. */
  async stop(): Promise<void> {
    await Promise.all(
      this.workers.map(async (worker) => {
        if (worker.exited) return;
        const exited = new Promise<void>((resolve) => worker.child.once('exit', () => resolve()));
        try {
          if (worker.child.connected) worker.child.send({ type: 'exit' } satisfies WorkerCommand);
        } catch {
          // already gone
        }
        const timer = setTimeout(() => worker.child.kill('SIGKILL'), EXIT_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /** Sends `command` (none: only waits) and resolves with the answer of type `type`. */
  private command<T extends WorkerMessage['type']>(
    worker: Worker,
    command: WorkerCommand | undefined,
    type: T,
    timeoutMs: number,
  ): Promise<Answer<T>> {
    const name = `allocator process ${worker.dc}#${worker.index} (pid ${worker.child.pid})`;
    if (worker.exited) return Promise.reject(new Error(`${name} has exited`));
    if (worker.pending !== undefined) {
      return Promise.reject(new Error(`${name} already has a command outstanding`));
    }
    const answer = new Promise<Answer<T>>((resolve, reject) => {
      const timer = setTimeout(() => {
        worker.pending = undefined;
        reject(new Error(`${name} did not answer "${type}" within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      worker.pending = (message) => {
        clearTimeout(timer);
        if (message.type === 'failed') reject(new Error(`${name}: ${message.message}`));
        else if (message.type !== type)
          reject(new Error(`${name}: expected "${type}", got "${message.type}"`));
        else resolve(message as Answer<T>);
      };
    });
    if (command !== undefined) worker.child.send(command);
    return answer;
  }
}
