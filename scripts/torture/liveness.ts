/** After healing, a fresh worker per DC must draw; started early, so the check times the DC. */
import type { Incarnation } from './fleet.js';

/** From the end of the healing to connect, then to draw (a restarted DC is slow). */
export const LIVENESS_START_MS = 180_000;
export const LIVENESS_DRAW_MS = 240_000;

export interface LivenessResult {
  readonly dc: string;
  readonly drawn: number;
  /** From the check's start (the end of the healing) to the worker's end. */
  readonly seconds: number;
  /** From the check's start to the worker's ready line (or its end, if it never connected). */
  readonly readySeconds: number;
  /** How long before the check's start its process was started; absent in older reports. */
  readonly headStartSeconds?: number | undefined;
  readonly connected: boolean;
  readonly lastStderr?: string | undefined;
  /** What the worker said went to starting its process and to connecting. */
  readonly startupSeconds: number | undefined;
  readonly connectSeconds: number | undefined;
  readonly ok: boolean;
}

type LivenessWorker = Pick<
  Incarnation,
  | 'historyFile'
  | 'ending'
  | 'ready'
  | 'exited'
  | 'readyTimes'
  | 'stderr'
  | 'connected'
  | 'startupMs'
>;

/** "connected after …" as reports print it, with where the time went when the worker said. */
export function connectedAfter(result: LivenessResult): string {
  const { readySeconds, startupSeconds, connectSeconds, connected, lastStderr } = result;
  const s = (seconds: number) => `${seconds.toFixed(1)} s`;
  const head = result.headStartSeconds;
  const begun = head === undefined ? '' : `, begun ${s(head)} before the check`;
  if (!connected) {
    const started =
      head === undefined
        ? ''
        : startupSeconds === undefined
          ? `; its process never reached its main()${begun}`
          : `; ${s(startupSeconds)} to start its process${begun}`;
    const said = lastStderr === undefined ? '' : `; its last stderr line: ${lastStderr}`;
    return `never connected (ended after ${s(readySeconds)}${started}${said})`;
  }
  const parts =
    startupSeconds === undefined || connectSeconds === undefined
      ? ''
      : head === undefined
        ? ` (${s(startupSeconds)} to start its process, ${s(connectSeconds)} to connect)`
        : ` (${s(startupSeconds)} to start its process${begun}; ${s(connectSeconds)} to connect)`;
  return `connected after ${s(readySeconds)}${parts}`;
}

export interface LivenessFleet<W extends LivenessWorker> {
  /** Starts a worker that connects only once let `go`. */
  start(dc: string): W;
  go(worker: W): void;
  kill(worker: W): void;
}

export interface StartedWorker<W> {
  readonly dc: string;
  readonly worker: W;
  readonly at: number;
}

export function startLivenessWorker<W extends LivenessWorker>(
  fleet: LivenessFleet<W>,
  dc: string,
  now: () => number = Date.now,
): StartedWorker<W> {
  return { dc, worker: fleet.start(dc), at: now() };
}

/** Lets the worker connect and waits for it to record `wanted` IDs, within its budgets. */
export async function checkLiveness<W extends LivenessWorker>(
  fleet: LivenessFleet<W>,
  started: StartedWorker<W>,
  wanted: number,
  recorded: (historyFile: string) => number,
  now: () => number = Date.now,
): Promise<LivenessResult> {
  const { dc, worker } = started;
  const t0 = now();
  fleet.go(worker);
  let timer = setTimeout(() => fleet.kill(worker), LIVENESS_START_MS);
  await worker.ready;
  const readyAt = now();
  clearTimeout(timer);
  const connected = worker.connected;
  if (worker.ending === 'running') timer = setTimeout(() => fleet.kill(worker), LIVENESS_DRAW_MS);
  await worker.exited;
  clearTimeout(timer);
  const drawn = recorded(worker.historyFile);
  const ok = drawn >= wanted;
  return {
    dc,
    drawn,
    seconds: (now() - t0) / 1000,
    readySeconds: (readyAt - t0) / 1000,
    headStartSeconds: (t0 - started.at) / 1000,
    connected,
    ...(ok ? {} : { lastStderr: lastLine(worker.stderr) }),
    startupSeconds: seconds(worker.startupMs ?? worker.readyTimes?.startupMs),
    connectSeconds: seconds(worker.readyTimes?.connectMs),
    ok,
  };
}

function lastLine(text: string): string | undefined {
  const line = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .at(-1);
  return line === undefined || line.length <= 300 ? line : `${line.slice(0, 300)}…`;
}

const seconds = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);
