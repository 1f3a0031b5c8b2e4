/** How `npm run docker-check` runs things: steps timed, each command's output in a log file. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export { waitFor, type Log } from '../cluster/nodes.js';

export class CheckError extends Error {
  override name = 'CheckError';
}

type StepTime = { readonly name: string; readonly seconds: number; readonly ok: boolean };
const times: StepTime[] = [];
export const stepTimes = (): readonly StepTime[] => times;
let logs: string | undefined;
/** The folder of the command logs, made at its first use (not on import, nor for `--help`). */
export function logDir(): string {
  logs ??= fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-docker-check-'));
  return logs;
}

export async function step<T>(name: string, body: () => Promise<T>): Promise<T> {
  const started = Date.now();
  console.log(`\n==> ${name}`);
  let ok = false;
  try {
    const result = await body();
    ok = true;
    return result;
  } finally {
    const seconds = (Date.now() - started) / 1000;
    times.push({ name, seconds, ok });
    console.log(`<== ${name}: ${ok ? 'ok' : 'FAILED'} in ${seconds.toFixed(1)} s`);
  }
}

export interface RunOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly stream?: boolean;
  /** @default [0] */
  readonly okCodes?: readonly number[];
  /** Resolve with standard error after standard output (`docker logs` writes both). */
  readonly withStderr?: boolean;
}

let runs = 0;

export async function run(
  command: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<string> {
  const shown = [command, ...args].map(quote).join(' ');
  const extra = Object.entries(options.env ?? {});
  console.log(`$ ${extra.map(([name, value]) => `${name}=${quote(value)} `).join('')}${shown}`);
  const name = `${String(++runs).padStart(3, '0')}-${path.basename(command)}.log`;
  const logFile = path.join(logDir(), name);
  const log = fs.createWriteStream(logFile);
  // stdin is /dev/null: a pipe we end could fail with EPIPE once a quick command has exited.
  const child = spawn(command, args, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  for (const stream of ['stdout', 'stderr'] as const) {
    child[stream].on('data', (chunk: Buffer) => {
      if (stream === 'stdout' || options.withStderr) output[stream] += chunk.toString();
      log.write(chunk);
      if (options.stream) process[stream].write(chunk);
    });
  }
  const code = await new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1)));
  });
  await new Promise<void>((resolve) => log.end(resolve));
  if (!(options.okCodes ?? [0]).includes(code)) {
    const tail = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-30).join('\n');
    throw new CheckError(`"${shown}" exited with ${code}; the last lines of ${logFile}:\n${tail}`);
  }
  return output.stdout + output.stderr;
}

function quote(word: string): string {
  return /^[\w./:=,@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
