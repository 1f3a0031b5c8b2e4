/**
 * The torture fleet (scripts/torture/fleet.ts) with real worker processes against the stand-in
 * library (test/unit/torture-worker/): how it kills them, and what that leaves recorded.
 */
import fs from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { Fleet, type Incarnation } from '../../scripts/torture/fleet.js';
import { parseProgress, secondOf } from '../../scripts/torture/progress.js';
import { REGISTER, WorkerFiles, type FakeLibrary } from './torture-worker/run-worker.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function readF64(file: string): number[] {
  const bytes = fs.readFileSync(file);
  return [
    ...new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)),
  ];
}

/** A fleet of one worker in `files`' directory, on the stand-in library. */
function fleetOf(
  files: WorkerFiles,
  fake: FakeLibrary,
  flushKillTimeoutMs?: number,
  stderrDir?: string,
) {
  return new Fleet({
    keyspace: 'k',
    sequence: 's',
    contactPoints: { dc1: [] },
    historyDir: files.dir,
    startedAt: files.startedAt,
    flushKillTimeoutMs,
    stderrDir,
    workerImports: [REGISTER],
    workerEnv: files.env(fake),
  });
}

async function drawing(incarnation: Incarnation, files: WorkerFiles): Promise<void> {
  await incarnation.ready;
  const deadline = Date.now() + 60_000;
  while (!(incarnation.drawing && files.handedOut().length >= 1_000) && Date.now() < deadline) {
    await sleep(20);
  }
  // Said so: the nemesis picks only such processes.
  expect(incarnation).toMatchObject({ connected: true, drawing: true });
}

describe('torture fleet: killing a process', () => {
  const extra = { rate: 1, maxTake: 1, maxRate: 200_000 };

  it('lets it write its history first: every ID handed out is recorded, the ending is a kill', async () => {
    const files = new WorkerFiles();
    try {
      const fleet = fleetOf(files, { mode: 'ledger' });
      const incarnation = fleet.start('dc1', 'tight', extra);
      await drawing(incarnation, files);
      fleet.kill(incarnation);
      await incarnation.exited;
      expect(incarnation).toMatchObject({
        ending: 'killed',
        killed: 'flushed',
        exit: { code: null, signal: 'SIGKILL' },
      });
      const history = readF64(incarnation.historyFile);
      expect(history.length).toBe(files.handedOut().length);
      expect(history).toEqual(files.handedOut());
      expect(files.closed()).toBe(false);
      // Its progress, by second since the fleet's start, counts them all.
      const progress = parseProgress(fs.readFileSync(incarnation.progressFile, 'utf8'));
      expect([...progress.values()].reduce((a, b) => a + b, 0)).toBe(history.length);
      const seconds = [...progress.keys()];
      expect(Math.min(...seconds)).toBeGreaterThanOrEqual(
        secondOf(incarnation.startedAt, files.startedAt),
      );
      expect(Math.max(...seconds)).toBeLessThanOrEqual(secondOf(Date.now(), files.startedAt));
    } finally {
      files.remove();
    }
  }, 90_000);

  it('gives a process of concurrent callers a calls file, written whole with its history', async () => {
    const files = new WorkerFiles();
    try {
      const fleet = fleetOf(files, { mode: 'ledger', jitter: true });
      const incarnation = fleet.start('dc1', 'callers', { ...extra, maxTake: 10, callers: 4 });
      await drawing(incarnation, files);
      fleet.kill(incarnation);
      await incarnation.exited;
      expect(incarnation.killed).toBe('flushed');
      const history = readF64(incarnation.historyFile);
      const calls = readF64(incarnation.callsFile!);
      expect(history.length).toBe(files.handedOut().length);
      // Three numbers a call; the last call ends where the history does.
      expect(calls.length % 3).toBe(0);
      expect(calls.at(-2)).toBe(history.length);
    } finally {
      files.remove();
    }
  }, 90_000);

  it('SIGKILLs it raw when it does not die within its bound of the SIGHUP', async () => {
    const files = new WorkerFiles();
    try {
      // Its loop never yields once it handed out 1,000 IDs: no signal handler can run.
      const fleet = fleetOf(files, { mode: 'busy', after: 1_000 }, 500);
      const incarnation = fleet.start('dc1', 'tight', extra);
      await drawing(incarnation, files);
      const killedAt = Date.now();
      fleet.kill(incarnation);
      await incarnation.exited;
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(450);
      expect(incarnation).toMatchObject({
        ending: 'killed',
        killed: 'flush-timed-out',
        exit: { code: null, signal: 'SIGKILL' },
      });
    } finally {
      files.remove();
    }
  }, 90_000);

  it('kills raw when told to', async () => {
    const files = new WorkerFiles();
    try {
      const fleet = fleetOf(files, { mode: 'ledger' });
      const incarnation = fleet.start('dc1', 'take', { ...extra, maxTake: 50 });
      await drawing(incarnation, files);
      fleet.kill(incarnation, 'raw');
      await incarnation.exited;
      expect(incarnation).toMatchObject({
        ending: 'killed',
        killed: 'raw',
        exit: { code: null, signal: 'SIGKILL' },
      });
      // What a raw kill may lose is the newest IDs only.
      const history = readF64(incarnation.historyFile);
      expect(history).toEqual(files.handedOut().slice(0, history.length));
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe('torture fleet: a campaign that fails midway', () => {
  it('kills every worker still running, and none that has ended', async () => {
    const files = new WorkerFiles();
    try {
      const fleet = fleetOf(files, { mode: 'ledger' });
      const extra = { rate: 1, maxTake: 1, maxRate: 200_000 };
      const ended = fleet.start('dc1', 'tight', { ...extra, count: 10 });
      await ended.exited;
      const drawer = fleet.start('dc1', 'tight', extra);
      await drawing(drawer, files);
      expect(fleet.abandon()).toBe(1);
      await drawer.exited;
      expect(drawer.exit).toEqual({ code: null, signal: 'SIGKILL' });
      expect(ended.exit).toEqual({ code: 0, signal: null });
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe('torture fleet: a worker whose DC has no node up', () => {
  it('stops it cleanly while it still connects, and keeps what it said in its stderr file', async () => {
    const files = new WorkerFiles();
    try {
      const stderrDir = path.join(files.dir, 'stderr');
      const fleet = fleetOf(files, { mode: 'ledger', unreachable: true }, undefined, stderrDir);
      const incarnation = fleet.start('dc1', 'tight', { rate: 1, maxTake: 1 });
      const deadline = Date.now() + 60_000;
      while (!incarnation.stderr.includes('connect attempt 2 failed') && Date.now() < deadline) {
        await sleep(50);
      }
      await fleet.stopAll();
      expect(incarnation).toMatchObject({
        ending: 'terminated',
        connected: false,
        hungOnStop: false,
        exit: { code: 0, signal: null },
        summary: { drawn: 0, connected: false },
      });
      // Under the name of its history, beside the other workers' files.
      const file = path.join(stderrDir, `${path.basename(incarnation.historyFile, '.f64')}.stderr`);
      expect(fs.readFileSync(file, 'utf8')).toContain(
        'torture worker: connect attempt 1 failed: no node of dc1 could be reached\n' +
          'torture worker: connect attempt 2 failed: no node of dc1 could be reached\n',
      );
    } finally {
      files.remove();
    }
  }, 90_000);
});

describe('torture fleet: a liveness worker started ahead', () => {
  it('starts its process at once, connects only once let go, then draws its count', async () => {
    const files = new WorkerFiles();
    try {
      const fleet = fleetOf(files, { mode: 'ledger' });
      const worker = fleet.start('dc1', 'tight', {
        rate: 1,
        maxTake: 1,
        count: 500,
        waitForGo: true,
      });
      const deadline = Date.now() + 60_000;
      while (worker.startupMs === undefined && Date.now() < deadline) await sleep(20);
      expect(worker.startupMs).toBeGreaterThan(0);
      // Held back: no connection, no ID, however long it waits.
      await sleep(1_000);
      expect(worker).toMatchObject({ connected: false, drawing: false, ending: 'running' });
      expect(files.handedOut()).toEqual([]);
      fleet.go(worker);
      await worker.exited;
      expect(worker).toMatchObject({
        connected: true,
        ending: 'terminated',
        exit: { code: 0, signal: null },
      });
      expect(readF64(worker.historyFile)).toHaveLength(500);
      expect(worker.readyTimes?.startupMs).toBe(worker.startupMs);
    } finally {
      files.remove();
    }
  }, 90_000);
});
