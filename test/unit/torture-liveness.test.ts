/** The torture campaign's liveness check: its budgets, and the history as the count. */
import { describe, expect, vi } from 'vitest';

import {
  readyTimesIn,
  startupMsIn,
  type Ending,
  type ReadyTimes,
} from '../../scripts/torture/fleet.js';
import {
  checkLiveness,
  connectedAfter,
  LIVENESS_DRAW_MS,
  LIVENESS_START_MS,
  startLivenessWorker,
} from '../../scripts/torture/liveness.js';
import { onFakeClock } from '../support/fake-clock.js';

interface FakeWorker {
  readonly historyFile: string;
  ending: Ending;
  readyTimes: ReadyTimes | undefined;
  startupMs: number | undefined;
  connected: boolean;
  stderr: string;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  readonly stop: () => void;
}

/**
 * Workers whose process reaches its main() `startupMs` after its start, that connect `readyMs`
 * after they are let go, and then record one ID every `perIdMs` until killed or done.
 */
function fakeFleet(readyMs: number, perIdMs: number, wanted: number, startupMs = 40_000) {
  const recorded = new Map<string, number>();
  const connectors = new Map<FakeWorker, () => void>();
  let killedAt: number | undefined;
  const fleet = {
    start(dc: string): FakeWorker {
      const historyFile = `${dc}.f64`;
      recorded.set(historyFile, 0);
      let markReady: () => void = () => undefined;
      let markExited: () => void = () => undefined;
      let drawing: ReturnType<typeof setInterval> | undefined;
      let connecting: ReturnType<typeof setTimeout> | undefined;
      const worker: FakeWorker = {
        historyFile,
        ending: 'running',
        readyTimes: undefined,
        startupMs: undefined,
        connected: false,
        stderr: 'tsx: loading\nconnect(): every contact point of dc failed\n\n',
        ready: new Promise<void>((resolve) => (markReady = resolve)),
        exited: new Promise<void>((resolve) => (markExited = resolve)),
        stop: () => {
          clearInterval(drawing);
          clearTimeout(connecting);
          clearTimeout(starting);
          markReady();
          markExited();
        },
      };
      const starting = setTimeout(() => (worker.startupMs = startupMs), startupMs);
      connectors.set(worker, () => {
        connecting = setTimeout(() => {
          worker.readyTimes = { startupMs, connectMs: 1_500 };
          worker.connected = true;
          markReady();
          drawing = setInterval(() => {
            const n = recorded.get(historyFile)! + 1;
            recorded.set(historyFile, n);
            if (n >= wanted) {
              worker.ending = 'terminated';
              worker.stop();
            }
          }, perIdMs);
        }, readyMs);
      });
      return worker;
    },
    go(worker: FakeWorker) {
      connectors.get(worker)!();
    },
    kill(worker: FakeWorker) {
      killedAt = Date.now();
      worker.ending = 'killed';
      worker.stop();
    },
  };
  return { fleet, recorded: (file: string) => recorded.get(file) ?? 0, killedAt: () => killedAt };
}

/** `it` on a fake clock that starts at 0. */
const itFromZero = onFakeClock({ now: 0 });

describe('torture liveness check', () => {
  itFromZero('gives a worker that connects late its whole draw budget', async () => {
    // Its process started 60 s ahead (while the faults healed), connected 150 s after it was let
    // go (a DC's nodes coming back), then 1,000 IDs at 5 per second: 350 s in all, past the old
    // single budget of 180 s, within 180 s to connect plus 240 s to draw.
    const { fleet, recorded } = fakeFleet(150_000, 200, 1_000);
    const started = startLivenessWorker(fleet, 'dc2');
    await vi.advanceTimersByTimeAsync(60_000);
    const check = checkLiveness(fleet, started, 1_000, recorded);
    await vi.advanceTimersByTimeAsync(LIVENESS_START_MS + LIVENESS_DRAW_MS);
    const result = await check;
    expect(result).toMatchObject({
      dc: 'dc2',
      drawn: 1_000,
      ok: true,
      readySeconds: 150,
      headStartSeconds: 60,
    });
    expect(result.lastStderr).toBeUndefined(); // only a failed worker's is reported
    expect(result.seconds).toBeCloseTo(350, 0);
    expect(connectedAfter(result)).toBe(
      'connected after 150.0 s (40.0 s to start its process, begun 60.0 s before the check; 1.5 s to connect)',
    );
    // A report from before workers were started ahead: its start counted in readySeconds.
    const { headStartSeconds, ...older } = result;
    expect(headStartSeconds).toBe(60);
    expect(connectedAfter(older)).toBe(
      'connected after 150.0 s (40.0 s to start its process, 1.5 s to connect)',
    );
  });

  itFromZero("reads a worker's first line, which says when its process reached its main()", () => {
    const line = '{"event":"started","pid":7,"startupMs":41000}';
    expect(startupMsIn(line)).toBeUndefined(); // not whole yet
    expect(startupMsIn(`${line}\n`)).toBe(41_000);
    expect(startupMsIn('{"event":"started","pid":7}\n')).toBeUndefined();
    expect(startupMsIn('{"event":"ready","pid":7,"startupMs":41000}\n')).toBeUndefined();
  });

  itFromZero("reads a worker's ready line only once it is whole", () => {
    const line = '{"event":"ready","pid":7,"startupMs":41000,"connectMs":1200}';
    expect(readyTimesIn(line.slice(0, 30))).toBeUndefined();
    expect(readyTimesIn(line)).toBeUndefined();
    expect(readyTimesIn(`${line}\n{"event":"first`)).toEqual({
      startupMs: 41_000,
      connectMs: 1_200,
    });
    expect(readyTimesIn('{"event":"ready","pid":7}\n')).toBeUndefined();
  });

  itFromZero(
    'counts what the history recorded when the worker is killed at its budget',
    async () => {
      // 1 ID every 400 ms: 600 IDs in the 240 s draw budget, then killed without a summary.
      const { fleet, recorded, killedAt } = fakeFleet(10_000, 400, 1_000);
      const check = checkLiveness(fleet, startLivenessWorker(fleet, 'dc2'), 1_000, recorded);
      await vi.advanceTimersByTimeAsync(10_000 + LIVENESS_DRAW_MS + 1_000);
      const result = await check;
      expect(killedAt()).toBe(10_000 + LIVENESS_DRAW_MS);
      expect(result).toMatchObject({ drawn: 600, ok: false, connected: true });
      expect(result.lastStderr).toBe('connect(): every contact point of dc failed');
    },
  );

  itFromZero('kills a worker that never connects at the end of its start budget', async () => {
    const { fleet, recorded, killedAt } = fakeFleet(10 * LIVENESS_START_MS, 100, 1_000);
    const check = checkLiveness(fleet, startLivenessWorker(fleet, 'dc3'), 1_000, recorded);
    await vi.advanceTimersByTimeAsync(LIVENESS_START_MS + 1_000);
    const result = await check;
    expect(killedAt()).toBe(LIVENESS_START_MS);
    expect(result).toMatchObject({
      drawn: 0,
      ok: false,
      connected: false,
      readySeconds: LIVENESS_START_MS / 1000,
    });
    // Not "connected after 180.0 s", as reports said of workers that never connected.
    expect(connectedAfter(result)).toBe(
      `never connected (ended after ${LIVENESS_START_MS / 1000}.0 s; 40.0 s to start its process, ` +
        'begun 0.0 s before the check; its last stderr line: connect(): every contact point of dc failed)',
    );
  });

  itFromZero('says when a killed worker never reached its main()', async () => {
    const never = 10 * LIVENESS_START_MS;
    const { fleet, recorded } = fakeFleet(never, 100, 1_000, never);
    const started = startLivenessWorker(fleet, 'dc1');
    await vi.advanceTimersByTimeAsync(30_000);
    const check = checkLiveness(fleet, started, 1_000, recorded);
    await vi.advanceTimersByTimeAsync(LIVENESS_START_MS + 1_000);
    const result = await check;
    expect(result).toMatchObject({ connected: false, startupSeconds: undefined });
    expect(connectedAfter(result)).toBe(
      `never connected (ended after ${LIVENESS_START_MS / 1000}.0 s; its process never reached its main(), ` +
        'begun 30.0 s before the check; its last stderr line: connect(): every contact point of dc failed)',
    );
  });
});
