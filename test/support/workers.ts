/**
 * Allocator child processes (scripts/draw-worker.ts) for integration tests: real processes,
 * each with its own client, drawing IDs and appending them to a file.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface WorkerSpec {
  readonly dc: string;
  readonly contactPoints: readonly string[];
  readonly keyspace: string;
  readonly sequence: string;
  readonly count?: number;
  readonly durationMs?: number;
  /** IDs per second. */
  readonly rate?: number;
  /** The deadline of each call (connect()'s `callTimeoutMs`). */
  readonly callTimeoutMs?: number;
}

export interface WorkerSummary {
  readonly pid: number;
  readonly dc: string;
  /** The DC, or the shard of it (`dc1/3`), that its IDs came from. */
  readonly grantee: string;
  readonly drawn: number;
  readonly errors: Readonly<Record<string, number>>;
  /** When each error happened, ms since the epoch (the first 1,000 of each code). */
  readonly errorsAt: Readonly<Record<string, readonly number[]>>;
  readonly lastError?: string;
  readonly stats: Readonly<Record<string, unknown>>;
}

export interface Worker {
  readonly spec: WorkerSpec;
  readonly child: ChildProcess;
  readonly idFile: string;
  /** Resolves once the worker has connected and opened its sequence. */
  readonly ready: Promise<void>;
  /** Resolves with the summary, or undefined if the process was killed or failed. */
  readonly done: Promise<WorkerSummary | undefined>;
  /** stderr, for failure messages. */
  stderr(): string;
}

// Made on the first start, so that a test importing only readIdFile leaves no directory behind.
let tempDir: string | undefined;
let counter = 0;

export function startWorker(spec: WorkerSpec): Worker {
  tempDir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-workers-'));
  const idFile = path.join(tempDir, `${spec.dc}-${++counter}.ids`);
  const args = [
    '--import',
    'tsx',
    path.join(ROOT, 'scripts', 'draw-worker.ts'),
    '--dc',
    spec.dc,
    '--contact-points',
    spec.contactPoints.join(','),
    '--keyspace',
    spec.keyspace,
    '--sequence',
    spec.sequence,
    '--out',
    idFile,
    ...(spec.count !== undefined ? ['--count', String(spec.count)] : []),
    ...(spec.durationMs !== undefined ? ['--duration-ms', String(spec.durationMs)] : []),
    ...(spec.rate !== undefined ? ['--rate', String(spec.rate)] : []),
    ...(spec.callTimeoutMs !== undefined ? ['--call-timeout-ms', String(spec.callTimeoutMs)] : []),
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('"event":"ready"')) markReady();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<WorkerSummary | undefined>((resolve) => {
    child.on('close', () => {
      markReady();
      const line = stdout.split('\n').find((l) => l.includes('"event":"done"'));
      resolve(line ? (JSON.parse(line) as WorkerSummary) : undefined);
    });
  });
  return { spec, child, idFile, ready, done, stderr: () => stderr };
}

/** Every ID a worker wrote, in order. */
export function readIds(worker: Worker): bigint[] {
  return readIdFile(worker.idFile);
}

/**
 * The IDs of a file of IDs, one a line, in order. Only whole lines count: a worker SIGKILLed
 * mid-write leaves its last line cut short, a prefix of its ID's digits, which read as an ID
 * would be another ID (a false duplicate, or one outside every grant).
 */
export function readIdFile(file: string): bigint[] {
  if (!fs.existsSync(file)) return [];
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines.pop(); // after the last newline: empty, or a line cut short
  return lines.filter((l) => l !== '').map((l) => BigInt(l));
}

/** The IDs that occur more than once across all workers' files. */
export function duplicatesAcross(workers: readonly Worker[]): bigint[] {
  const seen = new Set<bigint>();
  const dups: bigint[] = [];
  for (const w of workers) {
    for (const id of readIds(w)) {
      if (seen.has(id)) dups.push(id);
      seen.add(id);
    }
  }
  return dups;
}

/** Whether each worker's IDs strictly increase (monotonic per process). */
export function monotonic(worker: Worker): boolean {
  const ids = readIds(worker);
  return ids.every((id, i) => i === 0 || id > ids[i - 1]!);
}

/**
 * Waits for every worker to end; each that ended with a summary must have written every ID it
 * reports drawing (a file short of them would hide their duplicates from the checks).
 */
export async function finishAll(
  workers: readonly Worker[],
): Promise<(WorkerSummary | undefined)[]> {
  const summaries = await Promise.all(workers.map((w) => w.done));
  summaries.forEach((summary, i) => {
    const written = readIds(workers[i]!).length;
    if (summary !== undefined && summary.drawn !== written) {
      throw new Error(
        `worker ${workers[i]!.idFile} reports ${summary.drawn} IDs drawn, its file holds ${written}`,
      );
    }
  });
  return summaries;
}
