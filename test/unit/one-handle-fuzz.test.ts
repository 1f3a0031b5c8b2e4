/**
 * Concurrent next(), tryNext(), take() and nextIds() on ONE sequence handle, fuzzed from a seeded
 * PRNG over the MemoryStore: deadlines and abort signals of every length, calls that fail as
 * unavailable, DC-state and grant writes with every outcome a cluster can give (but 'in-flight'),
 * gates that hold store calls or their replies, a second process of the DC drawing alongside,
 * alters, shards, domains small enough to run out, and close() at a random step. Rows that go
 * back are left to the simulation. It began as a review's probe, which read the handle's private
 * fields; this version checks only what a user can see:
 * - what the calls returned (and with what error);
 * - `stats()`, through the run and after close;
 * - the handle's 'closed' debug record, which names the IDs close() gave back;
 * - the rows: the store the handle's process uses is wrapped, as any IdStore may be, to journal
 *   every DC-state write. Each write is conditional on the version and op of the row before it
 *   and ops are unique, so the writes applied form one chain per grantee, read back from the
 *   final rows: it says which blocks this handle's claims really took, and what it gave back.
 *
 * Checks per seed (see `verify`): every ID handed out once (against the other process and fresh
 * processes after close too); each call's IDs increasing (take(): n contiguous ones); IDs of
 * calls that do not overlap in time increasing from one call to the next; every ID handed out in
 * a block this handle's writes claimed in the rows; every call begun after close() rejected with
 * ClosedError; none of the IDs held when close() began taken afterwards; and every ID of the
 * blocks the handle claimed accounted for by stats() and the give-back.
 *
 * FUZZ_RUNS sets the number of seeds (default 400, a few seconds), FUZZ_SEED the first one
 * (default 1). A failure lists the seeds and what each broke; replay one with
 *   FUZZ_SEED=<seed> FUZZ_RUNS=1 npx vitest run --project unit test/unit/one-handle-fuzz.test.ts
 */
import { afterEach, describe, expect, vi } from 'vitest';

import { IdGen } from '../../src/allocator/id-gen.js';
import type { Sequence } from '../../src/allocator/sequence.js';
import type { SequenceStats } from '../../src/allocator/sequence-stats.js';
import { setMutationsForTests, type Mutation } from '../../src/mutations.js';
import { ClosedError } from '../../src/errors.js';
import type { Fault } from '../../src/store/memory-faults.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { Logger } from '../../src/logger.js';
import type { DcStamp, DcState, IdStore } from '../../src/store/port.js';
import { Random } from '../../scripts/torture/random.js';
import { KEYSPACE, capturingLogger } from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

/** Seeds to run; each is 40 to 100 steps of calls, faults and time, a few ms. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
/** The first seed: a failing one is replayed with FUZZ_SEED=<seed> FUZZ_RUNS=1. */
const FIRST_SEED = Number(process.env.FUZZ_SEED ?? 1);

afterEach(() => {
  vi.restoreAllMocks();
});

/** A seeded source, so that a seed replays the same run (the campaign's, mulberry32). */
function prng(seed: number): () => number {
  const random = new Random(seed);
  return () => random.next();
}

/** One call on the handle, on a logical clock that ticks at every start and end. */
interface CallRecord {
  readonly kind: string;
  readonly start: number;
  end?: number;
  /** The IDs it resolved with; undefined if it rejected (or threw). */
  ids?: number[];
  error?: unknown;
  /** Begun once close() had been called. */
  readonly afterClose: boolean;
}

/** A DC-state write as sent, whichever process sent it and whatever became of it. */
interface StateWrite {
  /** 'handle' for the process of the handle under test. */
  readonly writer: string;
  readonly dc: string;
  readonly expected: DcStamp | undefined;
  readonly next: DcState;
}

/** Writes by grantee, version and op: one write per key, since every write has an op of its own. */
type Journal = Map<string, StateWrite>;

function stampKey(dc: string, stamp: DcStamp): string {
  return `${dc}|${stamp.version}|${stamp.op}`;
}

/** `store` with its DC-state writes journaled under `writer`; its other calls as they are. */
function journaled(store: MemoryStore, writer: string, journal: Journal): IdStore {
  const writeDcState: IdStore['writeDcState'] = (sequence, dc, expected, next) => {
    journal.set(stampKey(dc, next), { writer, dc, expected, next });
    return store.writeDcState(sequence, dc, expected, next);
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'writeDcState') return writeDcState;
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

/** What the rows say this handle's writes did. */
interface HandleRows {
  /** Blocks its applied claim writes took, `[first, last]`. */
  readonly blocks: readonly (readonly [number, number])[];
  /** IDs its applied give-backs returned. */
  readonly givenBack: number;
  /** Rows the chain could not be followed through (a write missing from the journal). */
  readonly broken: readonly string[];
}

/**
 * Follows each grantee's chain of applied writes back from its final row: a row's predecessor is
 * the row its write was conditional on. A write of the handle that raised `last_integer` (or
 * moved to the next range) claimed a block, one that lowered it gave IDs back; one that did
 * neither installed a range.
 */
function handleRows(journal: Journal, finals: ReadonlyMap<string, DcState>): HandleRows {
  const blocks: [number, number][] = [];
  let givenBack = 0;
  const broken: string[] = [];
  for (const [dc, final] of finals) {
    let write = journal.get(stampKey(dc, final));
    if (write === undefined) broken.push(`${dc}: final row v${final.version} was never sent`);
    while (write !== undefined) {
      const expected = write.expected;
      const before = expected && journal.get(stampKey(dc, expected));
      if (expected !== undefined && before === undefined) {
        broken.push(`${dc}: row v${expected.version} before v${write.next.version} never sent`);
      }
      const prev = before?.next;
      const next = write.next;
      if (write.writer === 'handle') {
        const rangeMoved = prev === undefined || next.reservedGrant !== prev.reservedGrant;
        const first = rangeMoved ? next.reservedMin : prev.lastInteger + 1n;
        if (next.lastInteger >= first) blocks.push([Number(first), Number(next.lastInteger)]);
        else if (prev !== undefined && next.lastInteger < prev.lastInteger) {
          givenBack += Number(prev.lastInteger - next.lastInteger);
        }
      }
      write = before;
    }
  }
  return { blocks, givenBack, broken };
}

/** Everything a seed's run leaves to be checked. */
interface Run {
  readonly calls: readonly CallRecord[];
  readonly otherIds: readonly number[];
  readonly freshIds: readonly number[];
  /** stats() right after close() was called (close() sets the blocks held aside at once). */
  readonly atClose: SequenceStats;
  /** stats() once everything settled. */
  readonly final: SequenceStats;
  /** IDs close() gave back, as its 'closed' debug record says. */
  readonly returned: number;
  readonly rows: HandleRows;
  /** Problems seen while the run went on (stats() going backwards, a short answer). */
  readonly during: readonly string[];
}

async function runSeed(seed: number): Promise<string[]> {
  const rnd = prng(seed);
  // Shard choice and jitter: the handle's own Math.random, so that a seed replays.
  vi.spyOn(Math, 'random').mockImplementation(prng(seed * 7919 + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const during: string[] = [];
  const store = new MemoryStore({ keyspace: KEYSPACE });
  const journal: Journal = new Map();
  const processOf = (writer: string, callTimeoutMs?: number, logger?: Logger) =>
    new IdGen({
      store: journaled(store, writer, journal),
      dc: writer === 'admin' ? 'dc2' : 'dc1',
      keyspace: KEYSPACE,
      ...(callTimeoutMs === undefined ? {} : { callTimeoutMs }),
      ...(logger === undefined ? {} : { logger }),
    });
  const admin = processOf('admin');
  const shards = pick([1, 1, 2, 3]);
  const fixed = rnd() < 0.3;
  await admin.createSequence('s', {
    max: pick([120, 200, 400, 100_000]),
    dcRangeSize: 40,
    blockSize: 4,
    maxBlockSize: fixed ? 4 : 20,
    shards: fixed ? 1 : shards,
    threshold: pick([0.5, 0.8, 0.2]),
    firstRanges: rnd() < 0.5 ? ['dc1'] : [],
  });
  const { logger, records } = capturingLogger();
  const ids = processOf('handle', 300, logger);
  const seq: Sequence<number> = ids.sequence('s');
  // Another process of the DC draws too, so that give-backs meet claims after them.
  const other = processOf('other', 300);
  const otherSeq = other.sequence('s');
  const otherIds: number[] = [];
  const calls: CallRecord[] = [];
  const gates: (() => void)[] = [];
  let tick = 0;
  let closed = false;
  let atClose: SequenceStats | undefined;
  let closing: Promise<void> | undefined;
  const pending: Promise<unknown>[] = [];
  let last = seq.stats();

  const close = () => {
    closed = true;
    closing = seq.close();
    // close() sets the blocks held aside before its first await: what they hold now is what
    // must go back or be counted as not returned.
    atClose = seq.stats();
  };

  function record(kind: string, run: () => Promise<number[]>): void {
    const rec: CallRecord = { kind, start: ++tick, afterClose: closed };
    calls.push(rec);
    let p: Promise<number[]>;
    try {
      p = run();
    } catch (error) {
      rec.error = error;
      rec.end = ++tick;
      return;
    }
    pending.push(
      p.then(
        (got) => {
          rec.ids = got;
          rec.end = ++tick;
        },
        (error: unknown) => {
          rec.error = error;
          rec.end = ++tick;
        },
      ),
    );
  }

  const steps = 40 + Math.floor(rnd() * 60);
  const closeStep = rnd() < 0.8 ? Math.floor(rnd() * steps) : steps;
  for (let step = 0; step < steps; step++) {
    if (step === closeStep) close();
    const r = rnd();
    const timeoutMs = pick([0, 5, 50, 200, 1_000, Infinity]);
    const controller = rnd() < 0.2 ? new AbortController() : undefined;
    const opts = { timeoutMs, ...(controller ? { signal: controller.signal } : {}) };
    if (controller !== undefined) {
      const at = Math.floor(rnd() * 300);
      setTimeout(() => controller.abort(), at);
    }
    if (r < 0.25) {
      record('next', async () => [await seq.next(opts)]);
    } else if (r < 0.35) {
      record('tryNext', () => {
        const id = seq.tryNext();
        return Promise.resolve(id === undefined ? [] : [id]);
      });
    } else if (r < 0.5) {
      const n = 1 + Math.floor(rnd() * 25);
      record(`take(${n})`, async () => {
        const { first, last } = await seq.take(n, opts);
        if (last - first + 1 !== n) during.push(`take(${n}) gave [${first}, ${last}]`);
        return Array.from({ length: last - first + 1 }, (_, i) => first + i);
      });
    } else if (r < 0.65) {
      const n = 1 + Math.floor(rnd() * 30);
      record(`nextIds(${n})`, async () => {
        // All n or an error: an HTTP request for n IDs never gets fewer.
        const got = await seq.nextIds(n, opts);
        if (got.length !== n) during.push(`nextIds(${n}) gave ${got.length} IDs`);
        return got;
      });
    } else if (r < 0.72) {
      pending.push(
        otherSeq.next({ timeoutMs: 100 }).then(
          (id) => otherIds.push(id),
          () => undefined,
        ),
      );
    } else if (r < 0.85) {
      store.faults.push(randomFault(rnd, pick, gates));
    } else if (r < 0.9 && gates.length > 0) {
      gates.splice(Math.floor(rnd() * gates.length), 1)[0]!();
    } else if (r < 0.93) {
      pending.push(
        admin
          .alterSequence('s', {
            blockSize: pick([2, 4, 8]),
            ...(fixed ? {} : { maxBlockSize: pick([8, 20, 30]) }),
          })
          .catch(() => undefined),
      );
    } else {
      await vi.advanceTimersByTimeAsync(Math.floor(rnd() * 400));
    }
    await vi.advanceTimersByTimeAsync(pick([0, 0, 1, 3, 20]));
    // The counters only grow, and issued is never below what calls got so far (it counts a
    // nextIds() call's IDs once the call ends, a next()'s as soon as it takes one).
    const now = seq.stats();
    const got = delivered(calls);
    // The first step that breaks it is reported; it would show at most steps after.
    const broken = now.issued < last.issued || now.wasted < last.wasted || now.issued < got;
    if (broken && !during.some((p) => p.startsWith('step '))) {
      during.push(
        `step ${step}: issued ${last.issued} -> ${now.issued}, wasted ${last.wasted} -> ` +
          `${now.wasted}, IDs calls got ${got}`,
      );
    }
    last = now;
  }
  if (!closed) close();

  // Let everything finish: gates open, faults gone, time passes.
  for (let i = 0; i < 200 && (gates.length > 0 || store.faults.length > 0); i++) {
    for (const open of gates.splice(0)) open();
    store.faults.splice(0);
    await vi.advanceTimersByTimeAsync(1_000);
  }
  let done = false;
  void Promise.allSettled([...pending, closing]).then(() => (done = true));
  for (let i = 0; i < 500 && !done; i++) await vi.advanceTimersByTimeAsync(1_000);
  if (!done) during.push('calls or close() did not settle');
  await other.close();

  // Fresh processes of the DC draw (each from the shard it picks): none of their IDs may be one
  // handed out before, nor one the handle took after close() began.
  const freshIds: number[] = [];
  for (let i = 0; i < 6; i++) {
    const fresh = processOf('fresh', 300);
    const handle = fresh.sequence('s');
    for (let k = 0; k < 30; k++) {
      const p = handle.next().then(
        (id) => freshIds.push(id),
        () => 'failed' as const,
      );
      let settled = false;
      void p.then(() => (settled = true));
      for (let j = 0; j < 50 && !settled; j++) await vi.advanceTimersByTimeAsync(100);
      if ((await p) === 'failed') break;
    }
    await fresh.close();
  }

  const returned = records
    .filter((r) => r.msg === 'closed' && r.sequence === 's')
    .reduce((n, r) => n + Number(r['returned'] as string), 0);
  const rows = handleRows(journal, await store.readDcStatesOverview('s'));
  const run: Run = {
    calls,
    otherIds,
    freshIds,
    atClose: atClose!,
    final: seq.stats(),
    returned,
    rows,
    during,
  };
  const problems = verify(run);
  await ids.close();
  await admin.close();
  return problems.map((p) => `seed ${seed}: ${p}`);
}

/** A store fault: every effect, on the calls a claim, a range request and a give-back make. */
function randomFault(
  rnd: () => number,
  pick: <T>(xs: readonly T[]) => T,
  gates: (() => void)[],
): Fault {
  const op = pick([
    'writeDcState',
    'writeDcState',
    'readDcState',
    'grantRange',
    'readGrants',
    'readSequence',
    'readDcStateLocal',
  ] as const);
  const effect = pick(['unavailable', 'delay', 'delay', 'conditional', 'conditional'] as const);
  if (effect === 'delay') {
    // Held until a later step (or the end) opens the gate: the call, or only its reply.
    let release!: () => void;
    const until = new Promise<void>((resolve) => (release = resolve));
    gates.push(release);
    return { op, effect: rnd() < 0.5 ? 'delay' : 'slow-reply', until };
  }
  if (effect === 'conditional' && (op === 'writeDcState' || op === 'grantRange')) {
    return {
      op,
      effect: pick([
        'rejected',
        'unknown-applied',
        'unknown-not-applied',
        'applied-reported-rejected',
        'applied-then-unavailable',
      ] as const),
    };
  }
  return { op, effect: 'unavailable', times: pick([1, 1, 3, 8]) };
}

/** IDs the calls resolved with so far. */
function delivered(calls: readonly CallRecord[]): number {
  return calls.reduce((n, c) => n + (c.ids?.length ?? 0), 0);
}

function verify(run: Run): string[] {
  const problems = [...run.during, ...run.rows.broken];
  const { calls, atClose, final, rows } = run;

  // Uniqueness: the handle's calls, the other process, the fresh processes.
  const owner = new Map<number, string>();
  const note = (id: number, who: string) => {
    const before = owner.get(id);
    if (before !== undefined) problems.push(`ID ${id} twice: ${before} and ${who}`);
    owner.set(id, who);
  };
  const got = calls.filter((c) => c.ids !== undefined && c.ids.length > 0);
  for (const [i, c] of calls.entries()) {
    const callIds = c.ids ?? [];
    for (let k = 1; k < callIds.length; k++) {
      if (!(callIds[k]! > callIds[k - 1]!)) {
        problems.push(`${c.kind} not increasing: ${callIds.join(',')}`);
      }
    }
    for (const id of callIds) note(id, `call#${i} ${c.kind}`);
    // From close() on, no ID leaves the handle: every later call fails, and as ClosedError.
    if (c.afterClose && !(c.error instanceof ClosedError)) {
      const what = c.ids === undefined ? String(c.error) : `IDs [${c.ids.join(',')}]`;
      problems.push(`${c.kind} begun after close() ended with ${what}, not ClosedError`);
    }
  }
  for (const id of run.otherIds) note(id, 'other process');
  for (const id of run.freshIds) note(id, 'fresh process');

  // Increasing from one call to the next when they do not overlap in time.
  for (const x of got) {
    for (const y of got) {
      if (x.end! < y.start && !(Math.max(...x.ids!) < Math.min(...y.ids!))) {
        problems.push(
          `order: ${x.kind} [${x.start}, ${x.end}] got ${x.ids!.join(',')} before ` +
            `${y.kind} [${y.start}, ${y.end}] got ${y.ids!.join(',')}`,
        );
      }
    }
  }

  // Every ID handed out comes from a block the rows show this handle's writes claimed.
  for (const c of got) {
    for (const id of c.ids!) {
      if (!rows.blocks.some(([first, last]) => first <= id && id <= last)) {
        problems.push(`${c.kind} got ${id}, in no block the handle's writes claimed`);
      }
    }
  }

  const waste = final.waste;
  // No rows went back in these runs: nothing is dropped.
  if (waste.dropped !== 0) problems.push(`dropped ${waste.dropped} with no rows gone back`);
  if (final.remaining !== 0) problems.push(`remaining ${final.remaining} once closed`);

  // issued counts exactly the IDs calls got: the IDs of a nextIds() that failed, or a remainder
  // take() skipped, are not issued; nor those of a nextIds() still running, and none is once
  // everything settled (IDs of a call left counted as running would show here as missing).
  const issued = delivered(calls);
  if (final.issued !== issued) problems.push(`issued ${final.issued} but calls got ${issued}`);

  // Nothing taken after close() began. The IDs held then (atClose.remaining), and those of the
  // block the claim in flight then brought later, all went back or were counted as not returned.
  // After close() at most one block arrives (the claim in flight; none starts): counted by
  // blocksClaimed when confirmed, sized by blockSize (the last block taken), and counted in
  // `refused` instead if refused. A claim is confirmed and its block taken in one chain of
  // microtasks, and close() is called between steps, once advanceTimersByTimeAsync let every
  // queued microtask run: no block is ever confirmed before close() and taken after it.
  const claimedSince = final.blocksClaimed - atClose.blocksClaimed;
  const refusedSince = waste.refused - atClose.waste.refused;
  const arrived = (claimedSince === 1 ? final.blockSize : 0) - refusedSince;
  if (claimedSince > 1) problems.push(`${claimedSince} blocks claimed after close()`);
  if (waste.notReturned + run.returned !== atClose.remaining + arrived) {
    problems.push(
      `after close(): held ${atClose.remaining} + arrived ${arrived}, but not returned ` +
        `${waste.notReturned} + returned ${run.returned} (IDs taken after close() began?)`,
    );
  }
  // Nor skipped: take() skips a remainder only while it takes a run.
  if (atClose.waste.takeSkipped !== waste.takeSkipped) {
    problems.push(
      `take() skipped IDs after close(): ${atClose.waste.takeSkipped} -> ${waste.takeSkipped}`,
    );
  }

  // The give-back the handle counted is in the rows (the rows may show more: a give-back
  // applied whose outcome the handle could not tell is counted as not returned).
  if (run.returned > rows.givenBack) {
    problems.push(`close() counted ${run.returned} returned, the rows show ${rows.givenBack}`);
  }

  // Accounting: every ID of the blocks the handle's claims took in the rows is issued, wasted
  // for a cause, or given back. A claim applied whose outcome the handle could not tell is not
  // its block (counted as unknownOutcome, which also counts such claims that were not applied):
  // the IDs of those, `unseen`, lie between one per such block and unknownOutcome; none when the
  // rows hold exactly the blocks the handle counted as claimed (blocksClaimed).
  const claimedIds = rows.blocks.reduce((n, [first, last]) => n + last - first + 1, 0);
  const accounted =
    final.issued +
    waste.takeSkipped +
    waste.undelivered +
    waste.notReturned +
    waste.dropped +
    waste.refused +
    run.returned;
  const unseen = claimedIds - accounted;
  const unseenBlocks = rows.blocks.length - final.blocksClaimed;
  const fits =
    unseenBlocks === 0
      ? unseen === 0
      : unseenBlocks > 0 && unseen >= unseenBlocks && unseen <= waste.unknownOutcome;
  if (!fits) {
    problems.push(
      `accounting: the rows show ${rows.blocks.length} blocks of ${claimedIds} IDs claimed by ` +
        `the handle, it counts ${final.blocksClaimed}; issued ${final.issued} + skipped ` +
        `${waste.takeSkipped} + undelivered ${waste.undelivered} + not returned ` +
        `${waste.notReturned} + dropped ${waste.dropped} + refused ${waste.refused} + returned ` +
        `${run.returned} = ${accounted}; unknownOutcome ${waste.unknownOutcome}`,
    );
  }
  return problems;
}

describe('one handle, concurrent calls, fuzzed', () => {
  itOnFakeClock(
    `hands out unique, ordered IDs, none after close(), and accounts for every ID claimed ` +
      `(${RUNS} seeds from ${FIRST_SEED})`,
    async () => {
      const problems: string[] = [];
      for (let seed = FIRST_SEED; seed < FIRST_SEED + RUNS; seed++) {
        // A few per seed, so that a failure shows several seeds.
        problems.push(...(await runSeed(seed)).slice(0, 5));
        vi.restoreAllMocks();
      }
      expect(problems.slice(0, 40), `${problems.length} problems (at most 5 a seed)`).toEqual([]);
    },
    Math.max(60_000, RUNS * 200),
  );
});

/**
 * Fixed defects brought back (mutations.ts), each with what its failure must show. When these
 * were written the first seed to fail was 10 for 'serve-while-closing' (77 of seeds 1 to 400
 * fail), 6 for 'unknown-as-ours' (99), 2 for 'unknown-as-not-written' (3: 2, 60, 114) and 4 for
 * 'partial-next-ids' (66). 'move-after-first-block' passes 400 seeds: one other process seldom
 * makes the handle lose races before its first block, and the handle refuses a block below its
 * IDs by itself; the simulation is its control.
 */
const CONTROLS: readonly { readonly mutation: Mutation; readonly shows: string }[] = [
  // close() serving from the blocks it gives back: IDs leave the handle after close() began.
  { mutation: 'serve-while-closing', shows: '(IDs taken after close() began?)' },
  // A claim whose outcome stayed unknown used as applied: another process has its block too.
  { mutation: 'unknown-as-ours', shows: "in no block the handle's writes claimed" },
  // An outcome not shown to be ours taken as "not written": an applied claim the handle gives up
  // is a gap no counter shows.
  { mutation: 'unknown-as-not-written', shows: 'accounting:' },
  // A nextIds() that fails once it took IDs resolves with them.
  { mutation: 'partial-next-ids', shows: 'nextIds(' },
];
/** Most seeds a control may take: the first seeds above fail far sooner. */
const CONTROL_SEEDS = 200;

describe('negative controls: with a fixed defect brought back, the checks fail', () => {
  afterEach(() => setMutationsForTests([]));

  itOnFakeClock.each(CONTROLS)('$mutation', async ({ mutation, shows }) => {
    setMutationsForTests([mutation]);
    let problems: string[] = [];
    for (let seed = 1; seed <= CONTROL_SEEDS && problems.length === 0; seed++) {
      problems = await runSeed(seed);
      vi.restoreAllMocks();
    }
    expect(problems.filter((p) => p.includes(shows))).not.toEqual([]);
  });
});
