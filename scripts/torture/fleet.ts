/**
 * The campaign's allocator processes: every incarnation is a real child process with its own
 * history file; the fleet starts them, signals them and remembers how each one ended.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Mutation } from '../../src/mutations.js';
import { workerSeed } from './random.js';
import type { WorkerFirstId, WorkerMode, WorkerSpec, WorkerSummary } from './worker.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKER = path.join(ROOT, 'scripts', 'torture', 'worker.ts');

/** How an incarnation ended (`running` until it has). */
export type Ending =
  | 'running'
  /** SIGTERM: stopped drawing, then closed (gave its unused IDs back if it could). */
  | 'terminated'
  /** SIGUSR2: closed while still drawing. */
  | 'closed-while-drawing'
  /** SIGKILL, of its own after writing its history or ours (see {@link KillHow}): a crash. */
  | 'killed'
  /** Exited on its own with an error. */
  | 'failed';

/**
 * How a killed incarnation was killed. `flushed`: sent SIGHUP, on which it wrote every ID it had
 * handed out and SIGKILLed itself (its history is whole). `raw`: SIGKILLed by the fleet, as a
 * crash without warning (its last 20 ms or so of IDs may be unrecorded, but for a paced process,
 * which writes each ID before its next call): a seeded share of the nemesis's kills, all of
 * paced processes; one that had not said it was ready (not handling SIGHUP yet); and those of
 * `stopAll` and the liveness check. `flush-timed-out`: sent SIGHUP, still alive
 * {@link FleetOptions.flushKillTimeoutMs} later, then SIGKILLed raw.
 */
export type KillHow = 'flushed' | 'raw' | 'flush-timed-out';

/**
 * How long a worker sent SIGHUP has to write its history and kill itself before the fleet
 * SIGKILLs it: its event loop may wait behind tsx, GC and nine Cassandra JVMs on two cores.
 * Waiting longer costs nothing but a later kill: the handler records every ID handed out before
 * it runs. 10 s was too short in seed 1000349, while dc3's three nodes took 217 s to restart
 * together and a fresh Node process 66 to 71 s to start: the campaign lost its verdict to it.
 */
export const FLUSH_KILL_TIMEOUT_MS = 30_000;

/** How a process exited: its exit code, or (code null) the signal that ended it. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Incarnation {
  readonly id: number;
  readonly dc: string;
  readonly mode: WorkerMode;
  readonly historyFile: string;
  /** `callers` and `take` modes: each call's bounds in the history (worker.ts). */
  readonly callsFile: string | undefined;
  /** Its IDs handed out by second of the campaign (progress.ts). */
  readonly progressFile: string;
  readonly startedAt: number;
  /** Whether it is a liveness check's worker (draws a fixed count after healing). */
  readonly liveness: boolean;
  ending: Ending;
  endedAt: number | undefined;
  /**
   * How its process exited; undefined until it has. The ending says what was done to it, this
   * what became of it: one told to stop may still crash while it closes (see verdict.ts).
   */
  exit: ProcessExit | undefined;
  /** SIGSTOPped and not resumed yet. */
  stopped: boolean;
  /** How it was killed, if it was. */
  killed: KillHow | undefined;
  /** It printed its ready line: connected, its signal handlers installed. */
  connected: boolean;
  /**
   * It printed its first-ID line: it has handed out an ID. The nemesis's process faults pick
   * only such processes: one still starting, connecting or waiting for its first block holds
   * no ID, and a fault there tests nothing.
   */
  drawing: boolean;
  /** SIGKILLed by `stopAll` for not ending within its timeout of a SIGTERM: not the nemesis's doing. */
  hungOnStop: boolean;
  summary: WorkerSummary | undefined;
  /** What it printed when it drew its first ID; undefined if it drew none. */
  firstId: WorkerFirstId | undefined;
  stderr: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  /** Resolves when the worker is connected (or has exited). */
  readonly ready: Promise<void>;
  /** What its ready line said: ms from its process's start to its main(), then to connect. */
  readyTimes: ReadyTimes | undefined;
  /** Ms from its process's start to its main(), as its first line said; undefined before it. */
  startupMs: number | undefined;
}

/** Where a worker's time to connect went (its ready line). */
export interface ReadyTimes {
  /** From the process's start to its main(): Node, tsx and the imports. */
  readonly startupMs: number;
  /** From its main() to connected (connect() retried while its DC's nodes are down). */
  readonly connectMs: number;
}

export interface FleetOptions {
  readonly keyspace: string;
  readonly sequence: string;
  readonly contactPoints: Readonly<Record<string, readonly string[]>>;
  readonly historyDir: string;
  /**
   * The campaign's start, ms since the epoch: workers count their progress in seconds from it,
   * as the nemesis's timeline does.
   */
  readonly startedAt: number;
  /** A deliberately broken protocol variant every worker runs, for a negative control. */
  readonly mutation?: Mutation | undefined;
  /** See {@link FLUSH_KILL_TIMEOUT_MS}. */
  readonly flushKillTimeoutMs?: number | undefined;
  /**
   * Where each worker's stderr goes whole, in a file named as its history with `.stderr` (made
   * at its first line): what it said of failed connects, unexpected errors and crashes. The
   * incarnation keeps only the end of it.
   */
  readonly stderrDir?: string | undefined;
  /**
   * The campaign's seed: each worker's own is derived from it and the worker's number
   * (`workerSeed`). Default 1.
   */
  readonly seed?: number | undefined;
  /**
   * For tests: modules each worker's Node imports first (a stand-in library), and variables
   * added to its environment.
   */
  readonly workerImports?: readonly string[] | undefined;
  readonly workerEnv?: Readonly<Record<string, string>> | undefined;
}

export class Fleet {
  readonly incarnations: Incarnation[] = [];

  constructor(private readonly options: FleetOptions) {}

  start(
    dc: string,
    mode: WorkerMode,
    extra: {
      rate: number;
      maxTake: number;
      callers?: number | undefined;
      maxRate?: number | undefined;
      count?: number | undefined;
      /** It connects only once {@link Fleet.go} lets it (worker.ts, `waitForGo`). */
      waitForGo?: boolean | undefined;
    },
  ): Incarnation {
    const id = this.incarnations.length + 1;
    const name = path.join(this.options.historyDir, `${String(id).padStart(4, '0')}-${dc}-${mode}`);
    const historyFile = `${name}.f64`;
    const callsFile = mode === 'callers' || mode === 'take' ? `${name}.calls` : undefined;
    const progressFile = `${name}.progress`;
    const spec: WorkerSpec = {
      dc,
      contactPoints: this.options.contactPoints[dc] ?? [],
      keyspace: this.options.keyspace,
      sequence: this.options.sequence,
      mode,
      rate: extra.rate,
      maxTake: extra.maxTake,
      callers: extra.callers,
      maxRate: extra.maxRate,
      historyFile,
      callsFile,
      progressFile,
      startedAt: this.options.startedAt,
      count: extra.count,
      waitForGo: extra.waitForGo,
      mutation: this.options.mutation,
      seed: workerSeed(this.options.seed ?? 1, id),
    };
    const imports = ['tsx', ...(this.options.workerImports ?? [])].flatMap((m) => ['--import', m]);
    const child = spawn(process.execPath, [...imports, WORKER, JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: [extra.waitForGo === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.options.workerEnv },
    });
    let stdout = '';
    let readySeen = false;
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const incarnation: Incarnation = {
      id,
      dc,
      mode,
      historyFile,
      callsFile,
      progressFile,
      startedAt: Date.now(),
      liveness: extra.count !== undefined,
      ending: 'running',
      endedAt: undefined,
      exit: undefined,
      stopped: false,
      killed: undefined,
      connected: false,
      drawing: false,
      hungOnStop: false,
      summary: undefined,
      firstId: undefined,
      readyTimes: undefined,
      startupMs: undefined,
      stderr: '',
      child,
      ready,
      exited: new Promise<void>((resolve) => {
        child.on('close', (code, signal) => {
          incarnation.exit = { code, signal };
          if (incarnation.ending === 'running')
            incarnation.ending = code === 0 ? 'terminated' : 'failed';
          incarnation.endedAt ??= Date.now();
          const line = stdout.split('\n').find((l) => l.startsWith('{"event":"done"'));
          if (line !== undefined) incarnation.summary = JSON.parse(line) as WorkerSummary;
          incarnation.firstId = firstIdIn(stdout);
          markReady();
          resolve();
        });
      }),
    };
    // A write to a worker that has exited fails with EPIPE: the worker's end is recorded anyway.
    child.stdin?.on('error', () => undefined);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      incarnation.startupMs ??= startupMsIn(stdout);
      if (!readySeen && stdout.includes('"event":"ready"')) {
        readySeen = true;
        incarnation.connected = true;
        markReady();
      }
      // Read once the line is whole (a chunk may end inside it).
      if (readySeen && incarnation.readyTimes === undefined) {
        incarnation.readyTimes = readyTimesIn(stdout);
      }
      if (readySeen && !incarnation.drawing) incarnation.drawing = firstIdIn(stdout) !== undefined;
    });
    const stderrDir = this.options.stderrDir;
    const stderrFile =
      stderrDir === undefined ? undefined : path.join(stderrDir, `${path.basename(name)}.stderr`);
    child.stderr!.on('data', (chunk: Buffer) => {
      incarnation.stderr = (incarnation.stderr + chunk.toString()).slice(-20_000);
      if (stderrFile === undefined) return;
      fs.mkdirSync(stderrDir!, { recursive: true });
      fs.appendFileSync(stderrFile, chunk);
    });
    this.incarnations.push(incarnation);
    return incarnation;
  }

  running(dc?: string): Incarnation[] {
    return this.incarnations.filter(
      (i) => i.ending === 'running' && !i.liveness && (dc === undefined || i.dc === dc),
    );
  }

  /**
   * Kills a process as a crash would: it hands out no more IDs, and its library neither closes
   * nor gives anything back. `flush` (once it said it is ready) lets it write its history first
   * (see {@link KillHow}); `raw` does not. Whether the signal was sent: not to a process that
   * has exited.
   */
  kill(incarnation: Incarnation, how: 'flush' | 'raw' = 'flush'): boolean {
    incarnation.ending = 'killed';
    incarnation.endedAt = Date.now();
    if (how === 'raw' || !incarnation.connected || incarnation.stopped) {
      incarnation.killed = 'raw';
      return incarnation.child.kill('SIGKILL');
    }
    incarnation.killed = 'flushed';
    const sent = incarnation.child.kill('SIGHUP');
    const { child } = incarnation;
    setTimeout(() => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      incarnation.killed = 'flush-timed-out';
      child.kill('SIGKILL');
    }, this.options.flushKillTimeoutMs ?? FLUSH_KILL_TIMEOUT_MS).unref();
    return sent;
  }

  /** Lets a worker started with `waitForGo` connect and draw. */
  go(incarnation: Incarnation): void {
    incarnation.child.stdin?.end('go\n');
  }

  /** Whether the signal was sent: not to a process that has exited. */
  pause(incarnation: Incarnation): boolean {
    incarnation.stopped = true;
    return incarnation.child.kill('SIGSTOP');
  }

  resume(incarnation: Incarnation): void {
    if (!incarnation.stopped) return;
    incarnation.stopped = false;
    incarnation.child.kill('SIGCONT');
  }

  /** Whether the signal was sent: not to a process that has exited. */
  closeWhileDrawing(incarnation: Incarnation): boolean {
    incarnation.ending = 'closed-while-drawing';
    return incarnation.child.kill('SIGUSR2');
  }

  terminate(incarnation: Incarnation): void {
    this.resume(incarnation);
    if (incarnation.ending === 'running') incarnation.ending = 'terminated';
    incarnation.child.kill('SIGTERM');
  }

  /**
   * SIGKILLs every worker that has not ended, at once, and says how many: for a campaign that
   * failed midway. Its workers would outlive it (nothing ends a child with its parent) and go on
   * drawing, loading the cluster for whatever runs next.
   */
  abandon(): number {
    let killed = 0;
    for (const incarnation of this.incarnations) {
      if (incarnation.exit !== undefined) continue;
      incarnation.child.kill('SIGKILL');
      killed++;
    }
    return killed;
  }

  /**
   * Stops every worker (or those `which` picks) gracefully and waits for them, SIGKILLing any that
   * do not end within `timeoutMs`.
   */
  async stopAll(
    which: (incarnation: Incarnation) => boolean = () => true,
    timeoutMs = 60_000,
  ): Promise<void> {
    const stopping = this.incarnations.filter(which);
    for (const incarnation of stopping) {
      if (incarnation.endedAt === undefined) this.terminate(incarnation);
    }
    const deadline = setTimeout(() => {
      for (const incarnation of stopping) {
        if (incarnation.endedAt === undefined) {
          incarnation.hungOnStop = true;
          this.kill(incarnation, 'raw');
        }
      }
    }, timeoutMs);
    await Promise.all(stopping.map((i) => i.exited));
    clearTimeout(deadline);
  }
}

/** Ms from a worker's process start to its main(), from its whole first line, if it printed it. */
export function startupMsIn(stdout: string): number | undefined {
  const startupMs = wholeEventLine(stdout, 'started')?.['startupMs'];
  return typeof startupMs === 'number' ? startupMs : undefined;
}

/** The times of a worker's whole ready line, if it printed one. */
export function readyTimesIn(stdout: string): ReadyTimes | undefined {
  const line = wholeEventLine(stdout, 'ready');
  const startupMs = line?.['startupMs'];
  const connectMs = line?.['connectMs'];
  return typeof startupMs === 'number' && typeof connectMs === 'number'
    ? { startupMs, connectMs }
    : undefined;
}

/** The fields of a worker's first whole line of `event`, if it printed one that parses. */
function wholeEventLine(stdout: string, event: string): Record<string, unknown> | undefined {
  const lines = stdout.split('\n').slice(0, -1); // the last is not whole yet
  const line = lines.find((l) => l.startsWith(`{"event":"${event}"`));
  if (line === undefined) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * The first-ID line of a worker's output, if it printed a whole one (a worker killed while
 * printing it leaves part of a line).
 */
export function firstIdIn(stdout: string): WorkerFirstId | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{"event":"first-id"')) continue;
    try {
      return JSON.parse(line) as WorkerFirstId;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
