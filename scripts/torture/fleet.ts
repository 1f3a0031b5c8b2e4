/** The campaign's allocator processes (worker.ts): starts them, signals them, records their end. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Mutation } from '../../src/mutations.js';
import { workerSeed } from './random.js';
import type { WorkerFirstId, WorkerMode, WorkerSpec, WorkerSummary } from './worker.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKER = path.join(ROOT, 'scripts', 'torture', 'worker.ts');

/**
 * What was done to an incarnation: `terminated` (SIGTERM), `closed-while-drawing` (SIGUSR2),
 * `killed` (a crash, {@link KillHow}), or `failed` (exited on its own with an error).
 */
export type Ending = 'running' | 'terminated' | 'closed-while-drawing' | 'killed' | 'failed';

/**
 * `flushed`: sent SIGHUP, it wrote its history and SIGKILLed itself. `raw`: SIGKILLed by the
 * fleet, its last IDs possibly unrecorded. `flush-timed-out`: alive too long after its SIGHUP.
 */
export type KillHow = 'flushed' | 'raw' | 'flush-timed-out';

/** How long after SIGHUP a worker is SIGKILLed raw; a late kill loses nothing. */
export const FLUSH_KILL_TIMEOUT_MS = 30_000;

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Incarnation {
  readonly id: number;
  readonly dc: string;
  readonly mode: WorkerMode;
  readonly historyFile: string;
  readonly callsFile: string | undefined;
  readonly progressFile: string;
  readonly startedAt: number;
  /** A liveness check's worker (draws a fixed count after healing). */
  readonly liveness: boolean;
  ending: Ending;
  endedAt?: number | undefined;
  exit?: ProcessExit | undefined;
  stopped: boolean;
  killed?: KillHow | undefined;
  /** It printed its ready line: connected, its signal handlers installed. */
  connected: boolean;
  /** It printed its first-ID line: only such processes get the nemesis's process faults. */
  drawing: boolean;
  /** SIGKILLed by `stopAll` for not ending after its SIGTERM. */
  hungOnStop: boolean;
  summary?: WorkerSummary | undefined;
  firstId?: WorkerFirstId | undefined;
  stderr: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  /** Resolves when the worker is connected (or has exited). */
  readonly ready: Promise<void>;
  readyTimes?: ReadyTimes | undefined;
  startupMs?: number | undefined;
}

export interface ReadyTimes {
  readonly startupMs: number;
  readonly connectMs: number;
}

export interface FleetOptions {
  readonly keyspace: string;
  readonly sequence: string;
  readonly contactPoints: Readonly<Record<string, readonly string[]>>;
  readonly historyDir: string;
  readonly startedAt: number;
  readonly mutation?: Mutation | undefined;
  readonly allowUnsafeCluster?: boolean | undefined;
  /** @default FLUSH_KILL_TIMEOUT_MS */
  readonly flushKillTimeoutMs?: number | undefined;
  /** Where each worker's stderr goes whole; the incarnation keeps its end. */
  readonly stderrDir?: string | undefined;
  /** The campaign's seed, from which each worker's own is derived. @default 1 */
  readonly seed?: number | undefined;
  /** For tests: modules each worker imports first, and variables added to its environment. */
  readonly workerImports?: readonly string[] | undefined;
  readonly workerEnv?: Readonly<Record<string, string>> | undefined;
}

export class Fleet {
  readonly incarnations: Incarnation[] = [];

  constructor(private readonly options: FleetOptions) {}

  start(
    dc: string,
    mode: WorkerMode,
    extra: Pick<WorkerSpec, 'rate' | 'maxTake' | 'callers' | 'maxRate' | 'count' | 'waitForGo'>,
  ): Incarnation {
    const id = this.incarnations.length + 1;
    const name = path.join(this.options.historyDir, `${String(id).padStart(4, '0')}-${dc}-${mode}`);
    const files = {
      historyFile: `${name}.f64`,
      callsFile: mode === 'callers' || mode === 'take' ? `${name}.calls` : undefined,
      progressFile: `${name}.progress`,
    };
    const spec: WorkerSpec = {
      dc,
      contactPoints: this.options.contactPoints[dc] ?? [],
      keyspace: this.options.keyspace,
      sequence: this.options.sequence,
      mode,
      ...extra,
      ...files,
      startedAt: this.options.startedAt,
      mutation: this.options.mutation,
      allowUnsafeCluster: this.options.allowUnsafeCluster,
      seed: workerSeed(this.options.seed ?? 1, id),
    };
    const imports = ['tsx', ...(this.options.workerImports ?? [])].flatMap((m) => ['--import', m]);
    const child = spawn(process.execPath, [...imports, WORKER, JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: [extra.waitForGo === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.options.workerEnv },
    });
    let stdout = '';
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const incarnation: Incarnation = {
      id,
      dc,
      mode,
      ...files,
      startedAt: Date.now(),
      liveness: extra.count !== undefined,
      ending: 'running',
      stopped: false,
      connected: false,
      drawing: false,
      hungOnStop: false,
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
      if (!incarnation.connected && stdout.includes('"event":"ready"')) {
        incarnation.connected = true;
        markReady();
      }
      if (!incarnation.connected) return;
      incarnation.readyTimes ??= readyTimesIn(stdout);
      incarnation.drawing ||= firstIdIn(stdout) !== undefined;
    });
    const { stderrDir } = this.options;
    child.stderr!.on('data', (chunk: Buffer) => {
      incarnation.stderr = (incarnation.stderr + chunk.toString()).slice(-20_000);
      if (stderrDir === undefined) return;
      fs.mkdirSync(stderrDir, { recursive: true });
      fs.appendFileSync(path.join(stderrDir, `${path.basename(name)}.stderr`), chunk);
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
   * Kills a process as a crash would; `flush` (once it is ready) lets it write its history first.
   * Returns whether the signal was sent: not to a process that has exited.
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

  go(incarnation: Incarnation): void {
    incarnation.child.stdin?.end('go\n');
  }

  pause(incarnation: Incarnation): boolean {
    incarnation.stopped = true;
    return incarnation.child.kill('SIGSTOP');
  }

  resume(incarnation: Incarnation): void {
    if (!incarnation.stopped) return;
    incarnation.stopped = false;
    incarnation.child.kill('SIGCONT');
  }

  closeWhileDrawing(incarnation: Incarnation): boolean {
    incarnation.ending = 'closed-while-drawing';
    return incarnation.child.kill('SIGUSR2');
  }

  terminate(incarnation: Incarnation): void {
    this.resume(incarnation);
    if (incarnation.ending === 'running') incarnation.ending = 'terminated';
    incarnation.child.kill('SIGTERM');
  }

  abandon(): number {
    let killed = 0;
    for (const incarnation of this.incarnations) {
      if (incarnation.exit !== undefined) continue;
      incarnation.child.kill('SIGKILL');
      killed++;
    }
    return killed;
  }

  async stopAll(
    which: (incarnation: Incarnation) => boolean = () => true,
    timeoutMs = 60_000,
  ): Promise<void> {
    const stopping = this.incarnations.filter(which);
    for (const incarnation of stopping)
      if (incarnation.endedAt === undefined) this.terminate(incarnation);
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

/** Ms from a worker's process start to its main(), from its first line. */
export function startupMsIn(stdout: string): number | undefined {
  const startupMs = wholeEventLine(stdout, 'started')?.['startupMs'];
  return typeof startupMs === 'number' ? startupMs : undefined;
}

export function readyTimesIn(stdout: string): ReadyTimes | undefined {
  const line = wholeEventLine(stdout, 'ready');
  const startupMs = line?.['startupMs'];
  const connectMs = line?.['connectMs'];
  return typeof startupMs === 'number' && typeof connectMs === 'number'
    ? { startupMs, connectMs }
    : undefined;
}

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

export function firstIdIn(stdout: string): WorkerFirstId | undefined {
  return wholeEventLine(stdout, 'first-id') as WorkerFirstId | undefined;
}
