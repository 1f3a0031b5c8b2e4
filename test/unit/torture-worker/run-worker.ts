/**
 * The torture worker (scripts/torture/worker.ts) as a real process against the stand-in library
 * (fake-index.mjs, told how to behave by `fake`), in a temporary directory that holds its
 * history and progress, the library's ledger of what it handed out and the mark of its close().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { parseProgress } from '../../../scripts/torture/progress.js';
import type { WorkerSpec, WorkerSummary } from '../../../scripts/torture/worker.js';

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** Makes a worker's Node load the stand-in library (hooks.mjs). */
export const REGISTER = fileURLToPath(new URL('./register.mjs', import.meta.url));

/** How the stand-in library behaves (see fake-index.mjs). */
export interface FakeLibrary {
  readonly mode:
    | 'refill-wait'
    | 'ledger'
    | 'serve-after-close'
    | 'take-then-yield'
    | 'stale-block'
    | 'short-take'
    | 'throw'
    | 'busy';
  /** Calls take their IDs when made and hand them over a turn, 1 ms or 3 ms later (ledger modes). */
  readonly jitter?: boolean;
  readonly after?: number;
  readonly error?: { readonly name: string; readonly message: string; readonly code?: string };
  /** What close() throws once it has closed (ledger modes). */
  readonly closeError?: { readonly message: string; readonly code?: string };
  /** connect() fails as when the DC's nodes are all down, until {@link WorkerFiles.bringUp}. */
  readonly unreachable?: boolean;
}

/** A directory for one worker's files, with the spec and environment that point there. */
export class WorkerFiles {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-torture-worker-'));
  readonly historyFile = path.join(this.dir, 'history.f64');
  readonly callsFile = path.join(this.dir, 'history.calls');
  readonly progressFile = path.join(this.dir, 'history.progress');
  /** The campaign's start its worker counts seconds from. */
  readonly startedAt = Date.now();
  readonly ledger = path.join(this.dir, 'ledger.f64');
  readonly closedMarker = path.join(this.dir, 'closed');
  readonly reachableMarker = path.join(this.dir, 'reachable');

  spec(extra: Partial<WorkerSpec> = {}): WorkerSpec {
    return {
      ...{ dc: 'dc1', contactPoints: [], keyspace: 'k', sequence: 's' },
      ...{ mode: 'tight', rate: 1, maxTake: 1, historyFile: this.historyFile },
      ...{ callsFile: this.callsFile },
      ...{ progressFile: this.progressFile, startedAt: this.startedAt },
      ...extra,
    };
  }

  env(fake: FakeLibrary): Record<string, string> {
    const config = {
      ...fake,
      ...{ ledger: this.ledger, closedMarker: this.closedMarker },
      reachableMarker: this.reachableMarker,
    };
    return { FAKE_LIBRARY: JSON.stringify(config) };
  }

  /** The IDs the worker recorded, in order. */
  history(): number[] {
    return readF64(this.historyFile);
  }

  /** `callers` and `take` modes: each call's [IDs recorded when it was made, its end, the count asked]. */
  calls(): [number, number, number][] {
    const numbers = readF64(this.callsFile);
    return Array.from({ length: Math.floor(numbers.length / 3) }, (_, i) => [
      numbers[3 * i]!,
      numbers[3 * i + 1]!,
      numbers[3 * i + 2]!,
    ]);
  }

  /** The IDs the library handed out, in order. */
  handedOut(): number[] {
    return readF64(this.ledger);
  }

  /** The IDs the worker said it handed out in each second since `startedAt`. */
  progress(): Map<number, number> {
    return fs.existsSync(this.progressFile)
      ? parseProgress(fs.readFileSync(this.progressFile, 'utf8'))
      : new Map();
  }

  /** Lets an `unreachable` library's connect() succeed from now on. */
  bringUp(): void {
    fs.writeFileSync(this.reachableMarker, 'up');
  }

  closed(): boolean {
    return fs.existsSync(this.closedMarker);
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function readF64(file: string): number[] {
  if (!fs.existsSync(file)) return [];
  const bytes = fs.readFileSync(file);
  const whole = bytes.length - (bytes.length % 8);
  return [...new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + whole))];
}

export interface RunningWorker {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
  /** Waits until its stdout holds `marker`. */
  waitFor(marker: string, ms?: number): Promise<void>;
  /** Its summary line, once it exited; undefined if it printed none. */
  summary(): WorkerSummary | undefined;
}

export function runWorker(files: WorkerFiles, fake: FakeLibrary, extra: Partial<WorkerSpec> = {}) {
  const script = path.join(ROOT, 'scripts', 'torture', 'worker.ts');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', REGISTER, script, JSON.stringify(files.spec(extra))],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...files.env(fake) } },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const worker: RunningWorker = {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(marker, ms = 60_000) {
      const deadline = Date.now() + ms;
      while (!stdout.includes(marker) && Date.now() < deadline && !ended()) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (!stdout.includes(marker)) {
        throw new Error(`no ${marker} from the worker; stdout: ${stdout}; stderr: ${stderr}`);
      }
    },
    summary() {
      const line = stdout.split('\n').find((l) => l.startsWith('{"event":"done"'));
      return line === undefined ? undefined : (JSON.parse(line) as WorkerSummary);
    },
  };
  return worker;
}
