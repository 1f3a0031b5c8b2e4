/**
 * The torture worker's history (scripts/torture/worker.ts) against a stand-in library
 * (test/unit/torture-worker/): what a kill leaves recorded.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { checkHistory } from '../../scripts/torture/checker.js';
import { secondOf } from '../../scripts/torture/progress.js';
import { workerSeed } from '../../scripts/torture/random.js';
import { closeViolations } from '../../scripts/torture/verdict.js';
import { killMidRefill } from './torture-worker/kill-mid-refill.js';
import { runWorker, WorkerFiles } from './torture-worker/run-worker.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const sum = (counts: Map<number, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

/** Waits until the worker has handed out `n` IDs: a kill then comes mid-stream, however busy the machine. */
async function untilHandedOut(files: WorkerFiles, n: number): Promise<void> {
  for (const end = Date.now() + 60_000; files.handedOut().length < n; await sleep(20)) {
    if (Date.now() > end) throw new Error(`the worker handed out fewer than ${n} IDs in 60 s`);
  }
}

/** Where two lists of IDs first differ, or -1: a diff of a million IDs would say less. */
function firstDifference(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return -1;
}

it('has written the IDs it handed out when killed while a call waits for a refill', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-worker-'));
  const historyFile = path.join(dir, 'history.f64');
  const progressFile = path.join(dir, 'history.progress');
  const spec = {
    ...{ dc: 'dc1', contactPoints: [], keyspace: 'k', sequence: 's' },
    ...{ mode: 'tight', rate: 1, maxTake: 1, historyFile, progressFile, startedAt: Date.now() },
  };
  try {
    await killMidRefill('scripts/torture/worker.ts', [JSON.stringify(spec)], '"first-id"');
    const bytes = fs.readFileSync(historyFile);
    const recorded = new Float64Array(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    );
    expect(recorded.length).toBe(300);
    expect(recorded.at(-1)).toBe(300);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);

describe("the nemesis's process kill (SIGHUP: write the history, then SIGKILL oneself)", () => {
  // The campaign's rate bound (tight, take and callers loops wait when ahead of it): without it a
  // loop on a library that answers at once would never let a signal handler run.
  const maxRate = 200_000;

  it.each(['tight', 'take', 'paced', 'callers'] as const)(
    'leaves a %s history that holds every ID handed out, and no close',
    async (mode) => {
      const files = new WorkerFiles();
      // A campaign started 100 s before: the worker counts its seconds from there.
      const startedAt = Date.now() - 100_000;
      try {
        const spawned = Date.now();
        const worker = runWorker(
          files,
          { mode: 'ledger', jitter: mode === 'callers' },
          { mode, maxTake: 50, maxRate, rate: 20_000, startedAt, callers: 8 },
        );
        await worker.waitFor('"first-id"');
        // Past the worker's 20 ms flushes, at a moment of its loop the test does not choose.
        await untilHandedOut(files, 1_000);
        await sleep(Math.random() * 300);
        worker.child.kill('SIGHUP');
        const exit = await worker.exited;
        const killed = Date.now();
        // Concurrent calls are recorded as they resolve, which is not the ledger's order.
        const inOrder = (list: number[]) =>
          mode === 'callers' ? list.sort((a, b) => a - b) : list;
        const handedOut = inOrder(files.handedOut());
        const history = inOrder(files.history());
        expect(handedOut.length).toBeGreaterThanOrEqual(1_000);
        expect({
          recorded: history.length,
          firstDifference: firstDifference(history, handedOut),
        }).toEqual({ recorded: handedOut.length, firstDifference: -1 });
        // Its progress counts them all, the second under way too, in the campaign's seconds.
        const progress = files.progress();
        expect(sum(progress)).toBe(handedOut.length);
        for (const second of progress.keys()) {
          expect(second).toBeGreaterThanOrEqual(secondOf(spawned, startedAt));
          expect(second).toBeLessThanOrEqual(secondOf(killed, startedAt));
        }
        expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
        // Killed as a crash is: the library was not closed, so it gave nothing back.
        expect(files.closed()).toBe(false);
        expect(worker.summary()).toBeUndefined();
      } finally {
        files.remove();
      }
    },
    90_000,
  );
});

it('leaves a paced history whole through a raw SIGKILL: each ID is written before the next call', async () => {
  const files = new WorkerFiles();
  try {
    // A rate it never keeps up with: it never waits, and writes on its 20 ms timer no more.
    const worker = runWorker(files, { mode: 'ledger' }, { mode: 'paced', rate: 1e9 });
    await worker.waitFor('"first-id"');
    await untilHandedOut(files, 1_000);
    await sleep(Math.random() * 300);
    worker.child.kill('SIGKILL');
    expect(await worker.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const handedOut = files.handedOut();
    const history = files.history();
    expect(handedOut.length).toBeGreaterThanOrEqual(1_000);
    // At most the one ID whose call resolved as the kill came, before the worker could see it.
    expect(handedOut.length - history.length).toBeLessThanOrEqual(1);
    expect(firstDifference(history, handedOut.slice(0, history.length))).toBe(-1);
  } finally {
    files.remove();
  }
}, 90_000);

/** The checker's verdict on order for what the worker left: its history and its calls. */
const judge = (files: WorkerFiles) =>
  checkHistory(
    [
      {
        ...{ id: 1, dc: 'dc1', ending: 'terminated' },
        ids: Float64Array.from(files.history()),
        calls: Float64Array.from(files.calls().flat()),
      },
    ],
    {
      globalLast: 10n ** 9n,
      grants: new Map([['dc1', [{ number: 1, min: 1n, max: 10n ** 9n }]]]),
      states: new Map(),
    },
  );

describe('take mode: each take() checked for the count it asked for', () => {
  it('writes a calls file that tiles its history', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(
        files,
        { mode: 'ledger' },
        { mode: 'take', maxTake: 10, maxRate: 100_000 },
      );
      await worker.waitFor('"first-id"');
      await sleep(500);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      const calls = files.calls();
      expect(calls.length).toBeGreaterThan(10);
      expect(calls.at(-1)![1]).toBe(files.history().length);
      const verdict = judge(files);
      expect(verdict.nonMonotonic).toEqual([]);
      expect(verdict.uncoveredCalls).toEqual([]);
    } finally {
      files.remove();
    }
  }, 90_000);

  it('lets the checker catch a take() that handed out fewer IDs than it asked for', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(
        files,
        { mode: 'short-take' },
        { mode: 'take', maxTake: 10, maxRate: 100_000 },
      );
      await worker.waitFor('"first-id"');
      await sleep(500);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      // Its IDs increase, none repeats: only the count it asked for shows the defect.
      const history = files.history();
      expect(history.every((id, i) => i === 0 || id > history[i - 1]!)).toBe(true);
      const verdict = judge(files);
      expect(verdict.duplicateCount).toBe(0);
      expect(verdict.nonMonotonic).toHaveLength(1);
      expect(verdict.valid).toBe(false);
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe("its choices come from its seed, the campaign's seed and its number (review B2)", () => {
  /** The counts a take worker of `seed` asked for in its first 200 calls. */
  const asked = async (seed: number) => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(
        files,
        { mode: 'ledger' },
        { mode: 'take', maxTake: 50, maxRate: 100_000, seed },
      );
      await worker.waitFor('"first-id"');
      while (files.calls().length < 200) await sleep(50);
      worker.child.kill('SIGTERM');
      await worker.exited;
      return files
        .calls()
        .slice(0, 200)
        .map(([, , count]) => count);
    } finally {
      files.remove();
    }
  };

  it('asks for the same counts for the same seed', async () => {
    const [first, again] = await Promise.all([
      asked(workerSeed(1000330, 7)),
      asked(workerSeed(1000330, 7)),
    ]);
    expect(again).toEqual(first);
    // Each process of a campaign draws its own.
    expect(workerSeed(1000330, 8)).not.toBe(workerSeed(1000330, 7));
  }, 120_000);
});

describe('concurrent callers on one handle (callers mode)', () => {
  it('records what calls that resolve out of order handed out, and each call, for the checker', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(
        files,
        { mode: 'ledger', jitter: true },
        // A rate the stand-in's turns of up to 3 ms bound first: thousands of calls a second, of
        // which one in 8 has a deadline of its own and about 1 in 70 of those misses it.
        { mode: 'callers', callers: 8, maxTake: 50, maxRate: 1_000_000 },
      );
      await worker.waitFor('"first-id"');
      await sleep(1_500);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      const history = files.history();
      const calls = files.calls();
      expect(worker.summary()!.drawn).toBe(history.length);
      expect(history.length).toBeGreaterThan(1_000);
      const sorted = (list: number[]) => [...list].sort((a, b) => a - b);
      expect(firstDifference(sorted(history), sorted(files.handedOut()))).toBe(-1);
      // The calls tile the history, each with the count it asked for.
      expect(calls.at(-1)![1]).toBe(history.length);
      expect(calls.reduce((sum, [, , asked]) => sum + asked, 0)).toBe(history.length);
      // They overlapped: some resolved before a call that took lower IDs, which one caller's
      // order would refuse and the calls explain.
      expect(history.some((id, i) => i > 0 && id < history[i - 1]!)).toBe(true);
      expect(judge(files).nonMonotonic).toEqual([]);
      // Calls with a deadline of their own shorter than their turn missed it: counted apart, not
      // as errors a fault caused.
      expect(worker.summary()!.ownDeadlinesMissed).toBeGreaterThan(0);
      expect(worker.summary()!.errors).toEqual({});
    } finally {
      files.remove();
    }
  }, 90_000);

  it('lets the checker catch a call handed IDs below those of calls resolved before it was made', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(
        files,
        { mode: 'stale-block' },
        { mode: 'callers', callers: 4, maxTake: 10, maxRate: 100_000 },
      );
      await worker.waitFor('"first-id"');
      // Past the 3,000 IDs after which it serves the held-back block, and on for some calls: a
      // wide nextIds() can take it past at once, then wait for its rate.
      while (files.history().length < 4_000) await sleep(100);
      await sleep(500);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      const verdict = judge(files);
      expect(verdict.duplicateCount).toBe(0);
      expect(verdict.nonMonotonic).toHaveLength(1);
      expect(verdict.valid).toBe(false);
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe('its progress: IDs handed out by second of the campaign', () => {
  it('writes every second on a normal exit, counted by the second they were handed out in', async () => {
    const files = new WorkerFiles();
    try {
      // 5,000 IDs a second for 2.5 s: three seconds or four, none with more than its share.
      const worker = runWorker(
        files,
        { mode: 'ledger' },
        { mode: 'take', maxTake: 50, maxRate: 5_000 },
      );
      await worker.waitFor('"first-id"');
      await sleep(2_500);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      const progress = files.progress();
      expect(sum(progress)).toBe(worker.summary()!.drawn);
      expect(sum(progress)).toBe(files.history().length);
      expect(progress.size).toBeGreaterThanOrEqual(3);
      // The loop runs at most 10 ms and a run of 50 ahead of its rate, and catches up after a
      // stall (up to a second of it here, on a loaded machine): twice the rate in one second
      // would be IDs of other seconds.
      for (const count of progress.values()) expect(count).toBeLessThanOrEqual(10_000);
    } finally {
      files.remove();
    }
  }, 90_000);

  it('has written the seconds over when killed raw while a call waits for a refill', async () => {
    const files = new WorkerFiles();
    try {
      // 300 IDs at once, then a call that waits for good.
      const worker = runWorker(files, { mode: 'refill-wait' });
      await worker.waitFor('"first-id"');
      await sleep(300);
      // Into the next second, and past the worker's 20 ms flushes: no call resolves meanwhile.
      const next = files.startedAt + (secondOf(Date.now(), files.startedAt) + 1) * 1000;
      await sleep(next - Date.now() + 150);
      worker.child.kill('SIGKILL');
      await worker.exited;
      expect(files.history().length).toBe(300);
      expect(sum(files.progress())).toBe(300);
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe('close(): from the moment it is called no ID is handed out', () => {
  it('catches a library that keeps handing out IDs after close() began', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(files, { mode: 'serve-after-close' }, { maxRate: 200_000 });
      await worker.waitFor('"first-id"');
      await sleep(200);
      worker.child.kill('SIGUSR2');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      const summary = worker.summary()!;
      expect(summary.closedEarly).toBe(true);
      // The loop kept calling for the 100 ms its close() took, and was served.
      expect(summary.closeViolations).toBeGreaterThan(0);
      expect(summary.servedAfterClose).toBeGreaterThanOrEqual(summary.closeViolations);
      // The campaign fails on it.
      expect(closeViolations([{ id: 7, dc: 'dc1', ...summary }])).toEqual([
        `process 7 (dc1) was handed ${summary.closeViolations.toLocaleString('en-US')} IDs after its close() began`,
      ]);
      expect(files.history()).toEqual(files.handedOut());
    } finally {
      files.remove();
    }
  }, 90_000);

  it.each([
    ['a library that refuses every call after close()', 'ledger', 'take', 0, 200_000],
    // Its every next() is in flight across a turn of the event loop, holding an ID it took: the
    // close() comes in that turn, and the call then resolves with that ID, as the library's next()
    // does once in 512 calls.
    [
      'the ID taken before close() began, handed over after it',
      'take-then-yield',
      'tight',
      1,
      undefined,
    ],
  ] as const)(
    'passes %s',
    async (_, fake, mode, servedAfterClose, maxRate) => {
      const files = new WorkerFiles();
      try {
        const worker = runWorker(files, { mode: fake }, { mode, maxTake: 50, maxRate });
        await worker.waitFor('"first-id"');
        await sleep(200);
        worker.child.kill('SIGUSR2');
        expect(await worker.exited).toEqual({ code: 0, signal: null });
        expect(worker.summary()).toMatchObject({
          closedEarly: true,
          servedAfterClose,
          closeViolations: 0,
          errors: { IDGEN_CLOSED: 1 },
        });
        expect(files.history()).toEqual(files.handedOut());
      } finally {
        files.remove();
      }
    },
    90_000,
  );
});

describe('errors: the worker retries only those that faults cause', () => {
  /** Its exit, or a SIGTERM's after `ms` if it has not exited by then. */
  async function exitWithin(worker: ReturnType<typeof runWorker>, ms: number) {
    const timer = setTimeout(() => worker.child.kill('SIGTERM'), ms);
    try {
      return await worker.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  it.each([
    ['an error that is no IdGenError', 'UNKNOWN', { name: 'TypeError', message: 'x is undefined' }],
    [
      'a code of the library that faults do not cause',
      'IDGEN_INVALID_COUNT',
      { name: 'Error', message: 'count 0 refused', code: 'IDGEN_INVALID_COUNT' },
    ],
    // Closed under it with no close() called: the library's doing, not the end of a close.
    [
      'a handle closed with no close() called',
      'IDGEN_CLOSED',
      { name: 'Error', message: 'closed', code: 'IDGEN_CLOSED' },
    ],
  ])(
    'stops on %s and exits 1, saying what it was',
    async (_, code, error) => {
      const files = new WorkerFiles();
      try {
        const worker = runWorker(files, { mode: 'throw', after: 500, error }, { maxRate: 200_000 });
        expect(await exitWithin(worker, 30_000)).toEqual({ code: 1, signal: null });
        expect(worker.summary()).toMatchObject({
          drawn: 500,
          errors: { [code]: 1 },
          unexpectedError: { code, message: error.message },
        });
        expect(worker.stderr().trim().split('\n').at(-1)).toBe(
          `torture worker: unexpected error ${code}: ${error.message}`,
        );
        expect(files.history()).toEqual(files.handedOut());
      } finally {
        files.remove();
      }
    },
    90_000,
  );

  it.each([
    ['an alarm, counted for the campaign to judge', 'IDGEN_INVARIANT_BROKEN', 0],
    ['any other error, as unexpected', 'UNKNOWN', 1],
  ])(
    'reports an error its close() throws: %s',
    async (_, code, exitCode) => {
      const files = new WorkerFiles();
      const closeError = { message: 'rows broken', ...(code === 'UNKNOWN' ? {} : { code }) };
      try {
        // A liveness worker: draws its count, then closes.
        const worker = runWorker(files, { mode: 'ledger', closeError }, { count: 1_000 });
        expect(await exitWithin(worker, 30_000)).toEqual({ code: exitCode, signal: null });
        expect(worker.summary()).toMatchObject({ drawn: 1_000, errors: { [code]: 1 } });
        expect(worker.summary()!.unexpectedError?.code).toBe(exitCode === 1 ? code : undefined);
        expect(files.history()).toEqual(files.handedOut());
      } finally {
        files.remove();
      }
    },
    90_000,
  );

  it('retries an error that faults cause, and reports it', async () => {
    const files = new WorkerFiles();
    const error = { name: 'Error', message: 'unavailable', code: 'IDGEN_STORE_UNAVAILABLE' };
    try {
      const worker = runWorker(files, { mode: 'throw', after: 500, error }, { maxRate: 200_000 });
      await worker.waitFor('"first-id"');
      expect(await exitWithin(worker, 1_500)).toEqual({ code: 0, signal: null });
      const summary = worker.summary()!;
      expect(summary.errors['IDGEN_STORE_UNAVAILABLE']).toBeGreaterThan(1);
      expect(summary.unexpectedError).toBeUndefined();
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe('a worker whose DC has no node up when it starts', () => {
  /** Waits until its stderr says `attempts` connects failed. */
  async function failedConnects(worker: ReturnType<typeof runWorker>, attempts: number) {
    const deadline = Date.now() + 60_000;
    while (!worker.stderr().includes(`connect attempt ${attempts} failed`)) {
      if (Date.now() > deadline || worker.child.exitCode !== null) {
        throw new Error(`not ${attempts} failed connects; stderr: ${worker.stderr()}`);
      }
      await sleep(50);
    }
  }

  it('keeps connecting, then draws once the nodes are back', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(files, { mode: 'ledger', unreachable: true }, { maxRate: 200_000 });
      await failedConnects(worker, 3);
      files.bringUp();
      await worker.waitFor('"first-id"');
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      const summary = worker.summary()!;
      expect(summary).toMatchObject({ connected: true, closeViolations: 0 });
      expect(summary.unexpectedError).toBeUndefined();
      expect(summary.connectFailures).toBeGreaterThanOrEqual(3);
      expect(files.history().length).toBeGreaterThan(0);
      expect(files.history()).toEqual(files.handedOut());
    } finally {
      files.remove();
    }
  }, 90_000);

  // The fleet stops it at the campaign's end like any other (fleet.ts, `stopAll`): a process
  // ended by the SIGTERM itself, or by an error, would fail the campaign for its DC's outage.
  it('exits 0 with a summary of nothing drawn when told to stop while it still connects', async () => {
    const files = new WorkerFiles();
    try {
      const worker = runWorker(files, { mode: 'ledger', unreachable: true });
      await failedConnects(worker, 2);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      expect(worker.summary()).toMatchObject({ drawn: 0, connected: false, closeViolations: 0 });
      expect(worker.summary()!.connectFailures).toBeGreaterThanOrEqual(2);
      expect(files.history()).toEqual([]);
      expect(files.handedOut()).toEqual([]);
    } finally {
      files.remove();
    }
  }, 90_000);
});
