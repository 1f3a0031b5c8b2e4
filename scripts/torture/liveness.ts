/**
 * The campaign's last check: after healing, one fresh worker per DC must draw a given number of
 * IDs. Starting and drawing have budgets of their own, and what counts is the recorded history.
 */
import type { Incarnation } from './fleet.js';

/**
 * A worker's budget to start and connect: Node and tsx took 39 to 52 s to reach a worker's first
 * line on two cores shared with nine nodes, and its DC's nodes may still be coming back.
 */
export const LIVENESS_START_MS = 180_000;
/**
 * Its budget, once connected, to draw its IDs: a DC whose nodes were all just restarted answers
 * slowly for minutes (hints, Paxos cleanup of every table), which is not a stall.
 */
export const LIVENESS_DRAW_MS = 240_000;

export interface LivenessResult {
  readonly dc: string;
  /** IDs in the worker's recorded history. */
  readonly drawn: number;
  /** From its start to its end. */
  readonly seconds: number;
  /** From its start to its first line after connecting (or its end, if it never connected). */
  readonly readySeconds: number;
  /** Whether it said it connected (its ready line) before its start budget ended. */
  readonly connected: boolean;
  /**
   * The last line it wrote to stderr, when it failed: what it said of why (a connection refused,
   * an error thrown), which its history alone cannot tell. Undefined when it wrote none.
   */
  readonly lastStderr?: string | undefined;
  /**
   * Of {@link readySeconds}, what the worker said went to starting its process (Node, tsx, the
   * imports) and to connecting; undefined if it never said.
   */
  readonly startupSeconds: number | undefined;
  readonly connectSeconds: number | undefined;
  readonly ok: boolean;
}

/** What the check needs of a worker. */
export type LivenessWorker = Pick<
  Incarnation,
  'historyFile' | 'ending' | 'ready' | 'exited' | 'readyTimes' | 'stderr' | 'connected'
>;

/** "connected after …" as reports print it, with where the time went when the worker said. */
export function connectedAfter(result: LivenessResult): string {
  const { readySeconds, startupSeconds, connectSeconds, connected, lastStderr } = result;
  if (!connected) {
    const said = lastStderr === undefined ? '' : `; its last stderr line: ${lastStderr}`;
    return `never connected (ended after ${readySeconds.toFixed(1)} s${said})`;
  }
  const parts =
    startupSeconds === undefined || connectSeconds === undefined
      ? ''
      : ` (${startupSeconds.toFixed(1)} s to start its process, ${connectSeconds.toFixed(1)} s to connect)`;
  return `connected after ${readySeconds.toFixed(1)} s${parts}`;
}

/** What the check needs of the fleet. */
export interface LivenessFleet<W extends LivenessWorker> {
  start(dc: string): W;
  kill(worker: W): void;
}

/**
 * Starts a worker in `dc` and waits for it to draw `wanted` IDs, killing it at the end of its
 * start budget (not connected) or of its draw budget (connected). The count is read from the
 * history, which a killed worker leaves behind without a summary.
 */
export async function checkLiveness<W extends LivenessWorker>(
  fleet: LivenessFleet<W>,
  dc: string,
  wanted: number,
  recorded: (historyFile: string) => number,
  now: () => number = Date.now,
): Promise<LivenessResult> {
  const t0 = now();
  const worker = fleet.start(dc);
  let timer = setTimeout(() => fleet.kill(worker), LIVENESS_START_MS);
  await worker.ready;
  const readyAt = now();
  clearTimeout(timer);
  // Not connected: killed at its start budget, or ended on its own, before its ready line.
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
    connected,
    ...(ok ? {} : { lastStderr: lastLine(worker.stderr) }),
    startupSeconds: seconds(worker.readyTimes?.startupMs),
    connectSeconds: seconds(worker.readyTimes?.connectMs),
    ok,
  };
}

/** The last non-empty line of `text`, cut to {@link MAX_STDERR_CHARS}; undefined if none. */
function lastLine(text: string): string | undefined {
  const line = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .at(-1);
  return line === undefined || line.length <= MAX_STDERR_CHARS
    ? line
    : `${line.slice(0, MAX_STDERR_CHARS)}…`;
}

/** A report line, not a log: the worker's stderr keeps the whole of it while it runs. */
const MAX_STDERR_CHARS = 300;

function seconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : ms / 1000;
}
