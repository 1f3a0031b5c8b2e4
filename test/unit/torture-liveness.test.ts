/** The torture campaign's liveness check: its budgets, and the history as the count. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { readyTimesIn, type Ending, type ReadyTimes } from '../../scripts/torture/fleet.js';
import {
  checkLiveness,
  connectedAfter,
  LIVENESS_DRAW_MS,
  LIVENESS_START_MS,
} from '../../scripts/torture/liveness.js';

interface FakeWorker {
  readonly historyFile: string;
  ending: Ending;
  readyTimes: ReadyTimes | undefined;
  connected: boolean;
  stderr: string;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  readonly stop: () => void;
}

/** A worker that connects after `readyMs` and then records one ID every `perIdMs` until killed or done. */
function fakeFleet(readyMs: number, perIdMs: number, wanted: number) {
  const recorded = new Map<string, number>();
  let killedAt: number | undefined;
  const fleet = {
    start(dc: string): FakeWorker {
      const historyFile = `${dc}.f64`;
      recorded.set(historyFile, 0);
      let markReady: () => void = () => undefined;
      let markExited: () => void = () => undefined;
      const worker: FakeWorker = {
        historyFile,
        ending: 'running',
        readyTimes: undefined,
        connected: false,
        stderr: 'tsx: loading\nconnect(): every contact point of dc failed\n\n',
        ready: new Promise<void>((resolve) => (markReady = resolve)),
        exited: new Promise<void>((resolve) => (markExited = resolve)),
        stop: () => {
          clearInterval(drawing);
          clearTimeout(connecting);
          markReady();
          markExited();
        },
      };
      let drawing: ReturnType<typeof setInterval> | undefined;
      const connecting = setTimeout(() => {
        worker.readyTimes = { startupMs: readyMs - 1_500, connectMs: 1_500 };
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
      return worker;
    },
    kill(worker: FakeWorker) {
      killedAt = Date.now();
      worker.ending = 'killed';
      worker.stop();
    },
  };
  return { fleet, recorded: (file: string) => recorded.get(file) ?? 0, killedAt: () => killedAt };
}

describe('torture liveness check', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it('gives a worker that connects late its whole draw budget', async () => {
    // Connected after 150 s (a DC's nodes coming back), then 1,000 IDs at 5 per second: 350 s in
    // all, past the old single budget of 180 s, within 180 s to connect plus 240 s to draw.
    const { fleet, recorded } = fakeFleet(150_000, 200, 1_000);
    const check = checkLiveness(fleet, 'dc2', 1_000, recorded);
    await vi.advanceTimersByTimeAsync(LIVENESS_START_MS + LIVENESS_DRAW_MS);
    const result = await check;
    expect(result).toMatchObject({ dc: 'dc2', drawn: 1_000, ok: true, readySeconds: 150 });
    expect(result.lastStderr).toBeUndefined(); // only a failed worker's is reported
    expect(result.seconds).toBeCloseTo(350, 0);
    expect(connectedAfter(result)).toBe(
      'connected after 150.0 s (148.5 s to start its process, 1.5 s to connect)',
    );
  });

  it("reads a worker's ready line only once it is whole", () => {
    const line = '{"event":"ready","pid":7,"startupMs":41000,"connectMs":1200}';
    expect(readyTimesIn(line.slice(0, 30))).toBeUndefined();
    expect(readyTimesIn(line)).toBeUndefined();
    expect(readyTimesIn(`${line}\n{"event":"first`)).toEqual({
      startupMs: 41_000,
      connectMs: 1_200,
    });
    expect(readyTimesIn('{"event":"ready","pid":7}\n')).toBeUndefined();
  });

  it('counts what the history recorded when the worker is killed at its budget', async () => {
    // 1 ID every 400 ms: 600 IDs in the 240 s draw budget, then killed without a summary.
    const { fleet, recorded, killedAt } = fakeFleet(10_000, 400, 1_000);
    const check = checkLiveness(fleet, 'dc2', 1_000, recorded);
    await vi.advanceTimersByTimeAsync(10_000 + LIVENESS_DRAW_MS + 1_000);
    const result = await check;
    expect(killedAt()).toBe(10_000 + LIVENESS_DRAW_MS);
    expect(result).toMatchObject({ drawn: 600, ok: false, connected: true });
    expect(result.lastStderr).toBe('connect(): every contact point of dc failed');
  });

  it('kills a worker that never connects at the end of its start budget', async () => {
    const { fleet, recorded, killedAt } = fakeFleet(10 * LIVENESS_START_MS, 100, 1_000);
    const check = checkLiveness(fleet, 'dc3', 1_000, recorded);
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
      `never connected (ended after ${LIVENESS_START_MS / 1000}.0 s; its last stderr line: ` +
        'connect(): every contact point of dc failed)',
    );
  });
});
