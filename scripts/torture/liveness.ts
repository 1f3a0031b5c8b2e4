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
  'historyFile' | 'ending' | 'ready' | 'exited' | 'readyTimes'
>;

/** "connected after …" as reports print it, with where the time went when the worker said. */
export function connectedAfter(result: LivenessResult): string {
  const { readySeconds, startupSeconds, connectSeconds } = result;
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
  if (worker.ending === 'running') timer = setTimeout(() => fleet.kill(worker), LIVENESS_DRAW_MS);
  await worker.exited;
  clearTimeout(timer);
  const drawn = recorded(worker.historyFile);
  return {
    dc,
    drawn,
    seconds: (now() - t0) / 1000,
    readySeconds: (readyAt - t0) / 1000,
    startupSeconds: seconds(worker.readyTimes?.startupMs),
    connectSeconds: seconds(worker.readyTimes?.connectMs),
    ok: drawn >= wanted,
  };
}

function seconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : ms / 1000;
}
