/**
 * The allocator against the real multi-DC cluster, with real allocator processes in every DC:
 * uniqueness under concurrency, DC partitions, paused nodes, killed processes, close() and the
 * 32-bit edge.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { connect, IdGen, openAdmin, StoreUnavailableError } from '../../src/index.js';
import { dcOfGrantee } from '../../src/names.js';
import type { CreateSequenceOptions } from '../../src/index.js';
import { CassandraStore } from '../../src/store/cassandra/store.js';
import type { Grant } from '../../src/store/port.js';
import { clusterInfo, faults, withKeyspace } from '../support/cluster.js';
import {
  duplicatesAcross,
  finishAll,
  monotonic,
  readIds,
  startWorker,
} from '../support/workers.js';
import type { Worker, WorkerSpec } from '../support/workers.js';

const ks = withKeyspace('alloc');
let admin: IdGen;

beforeAll(async () => {
  admin = await connectIn('dc1');
});

afterAll(async () => {
  await admin?.close();
});

async function seed(name: string, options: CreateSequenceOptions): Promise<void> {
  await admin.createSequence(name, options);
}

/** A process of `dc`, as a service there would connect. */
function connectIn(dc: string): ReturnType<typeof connect> {
  return connect(ks.connection(dc));
}

/**
 * Gives every DC its first range before the workers start: one process per DC, one after the
 * other, gets a range and claims a block, then gives the block back on close. The fault tests
 * below are about partitions, pauses and kills, not about a start on a fresh sequence, where
 * every process of every DC asks SERIAL for a first range at once (CI on Paxos v1 saw nine and
 * twelve such processes draw next to nothing for 60 s and 120 s, with SERIAL timeouts; the
 * benchmark's scale phase measures that start).
 */
async function warm(sequence: string): Promise<void> {
  for (const dc of ks.dcs) {
    const ids = await connectIn(dc);
    try {
      await ids.sequence(sequence).ready({ timeoutMs: 60_000 });
    } finally {
      await ids.close();
    }
  }
}

/**
 * The grant level at SERIAL: GLOBAL and every DC's grants. (The overview's plain read, at
 * LOCAL_ONE, may reach the one replica of dc1 that the create's commit has not reached yet.)
 * A SERIAL read is a Paxos round on the grants partition: right after a heal, with a process
 * granting on that partition, Paxos v1 can time it out (4 of 5 replies once in CI), so this
 * observer retries a few times; what it reads is what the assertions judge.
 */
async function grants(
  sequence: string,
): Promise<{ globalLast: bigint; byDc: ReadonlyMap<string, readonly Grant[]> }> {
  const store = new CassandraStore(await ks.client('dc1'), ks.name, { ownsClient: false });
  for (let attempt = 1; ; attempt++) {
    try {
      const overview = await store.readGrantsOverview(sequence, 'consistent');
      if (!overview) throw new Error(`no grants for ${sequence}`);
      return { globalLast: overview.globalLast, byDc: overview.grants };
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || attempt === 5) throw error;
      await sleep(2_000);
    }
  }
}

function workers(sequence: string, perDc: number, spec: Partial<WorkerSpec>): Worker[] {
  return ks.dcs.flatMap((dc) =>
    Array.from({ length: perDc }, () =>
      startWorker({
        dc,
        contactPoints: ks.contactPoints(dc),
        keyspace: ks.name,
        sequence,
        ...spec,
      }),
    ),
  );
}

/** Asserts the uniqueness and provenance of every ID the workers wrote; returns how many. */
async function assertAllIdsSound(sequence: string, all: readonly Worker[]): Promise<number> {
  expect(duplicatesAcross(all)).toEqual([]);
  for (const w of all) expect(monotonic(w)).toBe(true);
  const { globalLast, byDc } = await grants(sequence);
  let checked = 0;
  for (const w of all) {
    const own = byDc.get(w.spec.dc) ?? [];
    for (const id of readIds(w)) {
      expect(own.some((g) => g.min <= id && id <= g.max)).toBe(true);
      checked++;
    }
  }
  // Grants are disjoint across DCs and all lie at or below GLOBAL's high-water mark.
  const flat = [...byDc.values()].flat().sort((a, b) => (a.min < b.min ? -1 : 1));
  for (let i = 0; i < flat.length; i++) {
    expect(flat[i]!.max).toBeLessThanOrEqual(globalLast);
    if (i > 0) expect(flat[i]!.min).toBeGreaterThan(flat[i - 1]!.max);
  }
  return checked;
}

describe('allocator processes in every DC', () => {
  it('hand out unique IDs, each inside a range granted to its DC', async () => {
    await seed('concurrent', { dcRangeSize: 1_000, blockSize: 50 });
    const all = workers('concurrent', 4, { count: 1_500 });
    const summaries = await finishAll(all);
    for (const [i, s] of summaries.entries()) {
      expect(s, all[i]!.stderr()).toBeDefined();
      expect(s!.drawn).toBe(1_500);
    }
    const checked = await assertAllIdsSound('concurrent', all);
    expect(checked).toBe(all.length * 1_500);
    console.info(`concurrent: ${checked} IDs from ${all.length} processes checked`);
    // Six minutes, not the suite's three: on Paxos v1, twelve tight loops on blocks of 50 with
    // two cores shared by the nine nodes took 140 s, 162 s and 167 s in runs here.
  }, 360_000);

  it("spread each DC's processes over its shards: unique IDs, each inside a grant of its process's shard, and check finds nothing", async () => {
    await seed('sharded', { dcRangeSize: 1_000, blockSize: 50, shards: 3 });
    await warm('sharded'); // a first range for one shard of each DC, as a process of it would ask
    const all = workers('sharded', 3, { count: 1_000 });
    const summaries = await finishAll(all);
    const grantees = summaries.map((s, i) => {
      expect(s, all[i]!.stderr()).toBeDefined();
      expect(s!.drawn).toBe(1_000);
      // Each process claims from a shard of its own DC, named as the protocol names grantees.
      expect(dcOfGrantee(s!.grantee)).toBe(all[i]!.spec.dc);
      return s!.grantee;
    });
    expect(duplicatesAcross(all)).toEqual([]);
    for (const w of all) expect(monotonic(w)).toBe(true);
    const checker = await openAdmin({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      keyspace: ks.name,
    });
    const checked = await checker.check('sharded').finally(() => checker.close());
    expect(checked.violations).toEqual([]);
    expect(checked.verdict).toBe('ok');
    const { grants: byGrantee } = checked.snapshot;
    for (const [i, w] of all.entries()) {
      const own = byGrantee.get(grantees[i]!) ?? [];
      for (const id of readIds(w)) expect(own.some((g) => g.min <= id && id <= g.max)).toBe(true);
    }
    for (const name of byGrantee.keys()) expect(ks.dcs).toContain(dcOfGrantee(name));
    console.info(
      `sharded: ${all.length} processes on ${new Set(grantees).size} shards (${[...new Set(grantees)].sort().join(', ')})`,
    );
  }, 360_000);

  it('start on first ranges granted with the sequence: no write or read at SERIAL, IDs inside the first grants, and check finds nothing', async () => {
    const options = { dcRangeSize: 1_000, blockSize: 50, shards: 2, firstRanges: ks.dcs };
    await seed('first_ranges', options);
    // The create batch is conditional like any create: a second one is refused, and applies nothing.
    await expect(admin.createSequence('first_ranges', options)).rejects.toMatchObject({
      code: 'IDGEN_SEQUENCE_EXISTS',
    });
    const before = await grants('first_ranges');
    expect(before.globalLast).toBe(BigInt(ks.dcs.length * 2 * 1_000));
    for (const dc of ks.dcs) {
      expect(before.byDc.get(dc)).toEqual([
        { number: 1, min: expect.any(BigInt), max: expect.any(BigInt) },
      ]);
      expect(before.byDc.get(`${dc}/1`)).toHaveLength(1);
    }
    // Three processes per DC start at once, every store call counted.
    const serialCalls: string[] = [];
    const starters = await Promise.all(
      ks.dcs.flatMap((dc) =>
        [0, 1, 2].map(async () => {
          const store = new CassandraStore(await ks.client(dc), ks.name, { ownsClient: false });
          for (const method of ['grantRange', 'readGrants', 'probeSerial'] as const) {
            const original = store[method].bind(store) as (...args: unknown[]) => unknown;
            (store as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
              serialCalls.push(`${dc} ${method}`);
              return original(...args);
            };
          }
          return { dc, ids: new IdGen({ store, dc, keyspace: ks.name }) };
        }),
      ),
    );
    try {
      const drawn = await Promise.all(
        starters.map(async ({ dc, ids }) => {
          const handle = ids.sequence('first_ranges');
          const got = [await handle.next(), await handle.next()];
          expect(handle.stats()).toMatchObject({ serialReads: 0, rangesGranted: 0 });
          return { dc, got };
        }),
      );
      expect(serialCalls).toEqual([]);
      const all = drawn.flatMap((d) => d.got);
      expect(new Set(all).size).toBe(all.length);
      for (const { dc, got } of drawn) {
        const own = [...(before.byDc.get(dc) ?? []), ...(before.byDc.get(`${dc}/1`) ?? [])];
        for (const id of got) {
          expect(own.some((g) => g.min <= BigInt(id) && BigInt(id) <= g.max)).toBe(true);
        }
      }
    } finally {
      await Promise.all(starters.map(({ ids }) => ids.close()));
    }
    const checker = await openAdmin({
      contactPoints: ks.contactPoints('dc1'),
      localDataCenter: 'dc1',
      keyspace: ks.name,
    });
    const checked = await checker.check('first_ranges').finally(() => checker.close());
    expect(checked.violations).toEqual([]);
    expect(checked.verdict).toBe('ok');
    // Nearly as many first ranges as one create may write (64) fit the batch Cassandra accepts.
    const shards = Math.floor(64 / ks.dcs.length);
    await seed('first_ranges_most', { dcRangeSize: 1_000, shards, firstRanges: ks.dcs });
    const most = await grants('first_ranges_most');
    expect([...most.byDc.values()].flat()).toHaveLength(ks.dcs.length * shards);
    expect(most.globalLast).toBe(BigInt(ks.dcs.length * shards * 1_000));
  }, 180_000);

  it('close() gives back the unused block and the next process continues from it', async () => {
    await seed('giveback', { dcRangeSize: 10_000, blockSize: 100 });
    const spec = {
      dc: 'dc1',
      contactPoints: ks.contactPoints('dc1'),
      keyspace: ks.name,
      sequence: 'giveback',
    };
    const first = startWorker({ ...spec, count: 10 });
    await first.done;
    const second = startWorker({ ...spec, count: 10 });
    await second.done;
    const a = readIds(first);
    const b = readIds(second);
    expect(a).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i + 1)));
    expect(b).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i + 11)));
  });

  it('close() while calls still draw hands out no ID twice (5 rounds, two processes of a DC)', async () => {
    await seed('closerace', { dcRangeSize: 10_000, blockSize: 50, threshold: 0.5 });
    const handedOut: number[] = [];
    let afterClose = 0;
    for (let round = 0; round < 5; round++) {
      const a = await connectIn('dc1');
      const seq = a.sequence('closerace');
      for (let i = 0; i < 20; i++) handedOut.push(await seq.next());
      // A SIGTERM handler closes while requests keep calling next() and tryNext().
      let closed = false;
      const closing = a.close().then(() => (closed = true));
      while (!closed) {
        try {
          const id = seq.tryNext() ?? (await seq.next());
          handedOut.push(id);
          afterClose++;
        } catch (error) {
          expect(error).toMatchObject({ code: 'IDGEN_CLOSED' });
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      await closing;
      const b = await connectIn('dc1');
      try {
        const other = b.sequence('closerace');
        for (let i = 0; i < 60; i++) handedOut.push(await other.next());
      } finally {
        await b.close();
      }
    }
    expect(afterClose).toBe(0);
    expect(handedOut.length - new Set(handedOut).size).toBe(0);
  });

  it('end exactly at 2^31-1 for an int32 sequence, then fail with SequenceExhausted', async () => {
    const max = 2 ** 31 - 1;
    await seed('edge32', {
      domain: 'int32',
      start: max - 2_499,
      dcRangeSize: 1_000,
      blockSize: 100,
    });
    const ids = await connectIn('dc2');
    try {
      const seq = ids.sequence('edge32');
      const got: number[] = [];
      let failure: unknown;
      for (;;) {
        try {
          got.push(await seq.next());
        } catch (err) {
          failure = err;
          break;
        }
      }
      const { casUnknown, wasted } = seq.stats();
      expect(got).toEqual([...got].sort((a, b) => a - b));
      expect(new Set(got).size).toBe(got.length);
      expect(got[0]).toBeGreaterThanOrEqual(max - 2_499);
      expect(got.at(-1)).toBeLessThanOrEqual(max);
      // Every ID is handed out or counted as a possible gap (a claim whose outcome stayed
      // unknown); with no unknown outcome, every one is handed out, up to max exactly.
      expect(got.length).toBeLessThanOrEqual(2_500);
      expect(got.length + wasted).toBeGreaterThanOrEqual(2_500);
      if (casUnknown === 0) {
        expect(got.length).toBe(2_500);
        expect(got.at(-1)).toBe(max);
      }
      expect(failure).toMatchObject({ code: 'IDGEN_SEQUENCE_EXHAUSTED' });
      expect(String((failure as Error).message)).toContain(String(max));
    } finally {
      await ids.close();
    }
  });
});

describe.runIf(clusterInfo().faults)('allocator processes under faults', () => {
  afterAll(async () => {
    await faults.heal();
  });

  it('keep serving in a partitioned DC and stay unique after heal', async () => {
    // A DC holds at least R × (1 - threshold) IDs of its ranges (20 000 × 0.5 here, 10 000): dc3
    // is cut off from the moment the rules go in, through the wait for the cut to show (4 s to
    // 68 s in runs here) and the 20 s window, at up to 4 × 20 IDs/s. With R = 10 000 and 40 IDs/s
    // a process, a run whose cut took 50 s to show drew dc3 dry (one IDGEN_SERIAL_UNAVAILABLE).
    const held = 10_000;
    await seed('partitioned', { dcRangeSize: 2 * held, blockSize: 50 });
    await warm('partitioned');
    // The workers draw until told to stop, after the cut's window: waiting for the cut to show
    // takes as long as the machine's load makes it (a fixed 50 s run once ended while dc3 was
    // still cut off, and the window counted 0 IDs). The duration is only a backstop.
    const all = workers('partitioned', 4, { durationMs: 300_000, rate: 20 });
    onTestFinished(() => void all.forEach((w) => w.child.kill('SIGKILL')));
    await Promise.all(all.map((w) => w.ready));
    const dc3 = all.filter((w) => w.spec.dc === 'dc3');
    const dc3Drawn = () => dc3.reduce((n, w) => n + readIds(w).length, 0);
    // The pace is measured once every process draws: twelve processes' first grants and claims
    // on a loaded machine took longer than a fixed 15 s once (CI on Paxos v1 counted dc3 at 0/s
    // before the cut). The assertions are about the cut, not about how long the start takes.
    const startedAt = Date.now();
    await until(
      () => all.every((w) => readIds(w).length > 0),
      120_000,
      'every process to draw',
      all,
    );
    const startMs = Date.now() - startedAt;
    await sleep(5_000);
    const dc3Start = dc3Drawn();
    await sleep(10_000);
    // dc3's own pace before the cut, on this machine under this load.
    const dc3RateBefore = (dc3Drawn() - dc3Start) / 10;
    const cutAt = Date.now();
    const dc3AtCut = dc3Drawn();
    await faults.partition('dc3');
    const cutMs = Date.now() - cutAt;
    const dc3Before = dc3Drawn();
    const grantsAtCut = (await grants('partitioned')).byDc.get('dc3')?.length ?? 0;
    await sleep(20_000);
    const dc3During = dc3Drawn() - dc3Before;
    const dc3WhileCut = dc3Drawn() - dc3AtCut;
    await faults.heal();
    for (const w of all) w.child.kill('SIGTERM');
    const summaries = await finishAll(all);
    for (const [i, s] of summaries.entries()) expect(s, all[i]!.stderr()).toBeDefined();

    // dc3 kept issuing IDs while cut off, at least at half its pace before the cut (nominally
    // 4 processes × 20/s; the machine's load sets the real pace).
    console.info(
      `partition: every process drew after ${startMs} ms; dc3 drew ${dc3RateBefore.toFixed(0)}/s before the cut, ${(dc3During / 20).toFixed(0)}/s during it (the cut took ${cutMs} ms to show)`,
    );
    const dc3Said = dc3.map((w) => w.stderr()).join('');
    expect(dc3RateBefore, dc3Said).toBeGreaterThan(0);
    expect(dc3During / 20, dc3Said).toBeGreaterThan(dc3RateBefore / 2);
    // Nothing needed SERIAL while dc3 drew no more than it surely held at the cut. (A cut that
    // took longer to show than the IDs held last may end in SerialUnavailableError: that is the
    // documented end of a partition longer than the DC's ranges cover, not a fault.)
    // Only errors from the cut on count: twelve processes' first grants at SERIAL at once can
    // time out on a loaded machine (CI on Paxos v1: a dc3 process's first calls failed with
    // IDGEN_SERIAL_UNAVAILABLE during a 69 s start, long before the cut), and that is not what
    // this test is about.
    const dc3Serial = summaries
      .filter((s) => s?.dc === 'dc3')
      .map((s) => s!.errorsAt['IDGEN_SERIAL_UNAVAILABLE'] ?? []);
    const serialBefore = dc3Serial.map((at) => at.filter((t) => t < cutAt).length);
    const serialSince = dc3Serial.map((at) => at.filter((t) => t >= cutAt).length);
    console.info(
      `partition: dc3 drew ${dc3WhileCut} IDs while cut off, of at least ${held} held; its processes' IDGEN_SERIAL_UNAVAILABLE errors before the cut ${serialBefore.join(', ')}, since ${serialSince.join(', ')}`,
    );
    if (dc3WhileCut <= held) {
      expect(serialSince, dc3Said).toEqual(serialSince.map(() => 0));
    } else {
      console.info(
        'partition: the cut outlasted the IDs dc3 surely held; SERIAL errors not checked',
      );
    }
    const checked = await assertAllIdsSound('partitioned', all);

    // After heal dc3 gets new ranges again: draw from dc3 until a new grant shows.
    const ids = await connectIn('dc3');
    try {
      const seq = ids.sequence('partitioned');
      for (
        let i = 0;
        i < 600 && ((await grants('partitioned')).byDc.get('dc3')?.length ?? 0) <= grantsAtCut;
        i++
      ) {
        await seq.take(50);
      }
    } finally {
      await ids.close();
    }
    expect((await grants('partitioned')).byDc.get('dc3')?.length ?? 0).toBeGreaterThan(grantsAtCut);
    console.info(`partition: ${checked} IDs checked, ${dc3During} drawn in dc3 while cut off`);
    // Six minutes, not the suite's three: on two cores that also run twelve allocator processes,
    // the cut alone took 4 s to 68 s to show in runs here, and one run took 154 s in all.
  }, 360_000);

  it('start in a DC listed in firstRanges while it is cut off from the other DCs: IDs from its first range, nothing at SERIAL', async () => {
    await seed('first_cut', { dcRangeSize: 1_000, blockSize: 50, firstRanges: ks.dcs });
    const own = (await grants('first_cut')).byDc.get('dc3') ?? [];
    expect(own).toHaveLength(1);
    onTestFinished(() => faults.heal());
    await faults.partition('dc3');
    // The first process of dc3 ever, started while dc3 reaches no other DC: SERIAL cannot be
    // reached, and the first range granted with the sequence is all it may use.
    const ids = await connectIn('dc3');
    try {
      const handle = ids.sequence('first_cut');
      const drawn: number[] = [];
      for (let i = 0; i < 120; i++) drawn.push(await handle.next({ timeoutMs: 60_000 }));
      expect(new Set(drawn).size).toBe(drawn.length);
      for (const id of drawn) {
        expect(own.some((g) => g.min <= BigInt(id) && BigInt(id) <= g.max)).toBe(true);
      }
      expect(handle.stats()).toMatchObject({ serialReads: 0, rangesGranted: 0 });
    } finally {
      await ids.close();
    }
  }, 240_000);

  it('start on a shard that never got a range while the DC is cut off: the process moves to a shard of its DC that holds IDs', async () => {
    await seed('shard_cut', { dcRangeSize: 1_000, blockSize: 50, shards: 2 });
    // A handle picks its shard as floor(Math.random() × shards). A constant Math.random also
    // reaches the driver's own uses of it (shuffles, jitter), where any value is valid.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.9);
    onTestFinished(() => random.mockRestore());
    const first = await connectIn('dc3');
    try {
      const handle = first.sequence('shard_cut');
      await handle.ready({ timeoutMs: 60_000 });
      expect(handle.grantee).toBe('dc3/1');
    } finally {
      await first.close();
    }
    const before = await grants('shard_cut');
    const own = before.byDc.get('dc3/1') ?? [];
    expect(own).toHaveLength(1);
    expect(before.byDc.get('dc3')).toBeUndefined();
    onTestFinished(() => faults.heal());
    await faults.partition('dc3');
    // Shard 0 first, which holds nothing and cannot be granted a range now; then shard 1.
    random.mockReturnValue(0.1);
    const ids = await connectIn('dc3');
    try {
      const handle = ids.sequence('shard_cut');
      const drawn: number[] = [];
      for (let i = 0; i < 60; i++) drawn.push(await handle.next({ timeoutMs: 120_000 }));
      expect(handle.grantee).toBe('dc3/1');
      expect(new Set(drawn).size).toBe(drawn.length);
      for (const id of drawn) {
        expect(own.some((g) => g.min <= BigInt(id) && BigInt(id) <= g.max)).toBe(true);
      }
      expect(handle.stats().rangesGranted).toBe(0);
    } finally {
      await ids.close();
    }
  }, 360_000);

  // One node of three hangs or pauses; with one node per DC that would stop the DC.
  it.runIf(clusterInfo().nodesPerDc >= 3)(
    'start while a node of the DC hangs: connect() returns within one call deadline, then draws and closes',
    async () => {
      await seed('hung_start', { dcRangeSize: 1_000, blockSize: 50, firstRanges: ks.dcs });
      const dc3 = clusterInfo().nodes.filter((node) => node.dc === 'dc3');
      const hung = dc3[1];
      if (hung === undefined) throw new Error('the fault tests need 3 nodes in dc3');
      // A paused JVM still accepts TCP connections: connect() waits for its handshake until the
      // client's own timeout before the driver counts it down (12 s, once).
      onTestFinished(() => faults.resume(hung.name));
      await faults.pause(hung.name);
      const started = Date.now();
      const ids = await connect({
        contactPoints: dc3.filter((node) => node !== hung).map((node) => node.address),
        localDataCenter: 'dc3',
        keyspace: ks.name,
      });
      // The default call deadline. (The first ID and close() may wait too, on the coordinators'
      // side, until the other nodes count the paused one down: 2.6 s and 5 s were seen here.)
      expect(Date.now() - started).toBeLessThan(10_000);
      try {
        expect(await ids.sequence('hung_start').next({ timeoutMs: 30_000 })).toBeGreaterThan(0);
      } finally {
        await ids.close();
      }
    },
    120_000,
  );

  // One node of three hangs or pauses; with one node per DC that would stop the DC.
  it.runIf(clusterInfo().nodesPerDc >= 3)(
    'stay unique when a node pauses mid-LWT and processes are SIGKILLed mid-refill',
    async () => {
      // Tiny blocks: claims are nearly continuous, so pauses and kills land mid-LWT. Ranges of
      // 1,000 (200 blocks) still make grants frequent; with ranges of 200, nine tight loops kept
      // every DC asking SERIAL for ranges, and CI on Paxos v1 saw eight of the nine processes draw
      // nothing in 60 s.
      await seed('faulty', { dcRangeSize: 1_000, blockSize: 5 });
      await warm('faulty');
      // Calls get 30 s here, not the default 10 s: tight loops keep every process of a DC racing
      // for the DC state, and on Paxos v1 on a small machine lost races alone have spent 10 s
      // (the bench measures deadlines and tails; this test is about the faults).
      // They draw until told to stop, after the replacements: their start and first draws take
      // as long as the machine's load makes them (a fixed 36 s run once ended before the kills,
      // and the survivors showed no progress after them). The duration is only a backstop.
      const first = workers('faulty', 3, { durationMs: 300_000, callTimeoutMs: 30_000 });
      onTestFinished(() => void first.forEach((w) => w.child.kill('SIGKILL')));
      const drawnBy = (ws: readonly Worker[]) => ws.map((w) => readIds(w).length);
      // Faults start once every process draws: the assertions below are about the pause and the
      // kills, not about how long nine processes take to start on a loaded machine.
      await until(() => drawnBy(first).every((n) => n > 0), 60_000, 'every process to draw', first);
      await sleep(3_000);
      await faults.pause('dc2');
      const atPause = drawnBy(first);
      // 12 s: longer than a request's timeout (5 s), so that a process that waits on the paused
      // coordinator for all of it shows as a dc2 process drawing nothing in the pause's second half.
      await sleep(6_000);
      const midPause = drawnBy(first);
      await sleep(6_000);
      const beforeResume = drawnBy(first);
      await faults.resume('dc2');
      await sleep(2_000);
      const victims = first.filter((_, i) => i % 3 === 0);
      const atKill = drawnBy(first);
      for (const v of victims) v.child.kill('SIGKILL');
      // New processes take over where the killed ones stopped, possibly mid-grant. Like the first
      // ones, they get 30 s calls, and draw until they have 20 IDs (the duration is a backstop):
      // with 8 s and the default 10 s deadline, CI on Paxos v1 saw a dc2 replacement's first call
      // lose races to the survivors' tight loops until IDGEN_DEADLINE_EXCEEDED, and draw nothing.
      const second = workers('faulty', 1, {
        count: 20,
        durationMs: 120_000,
        callTimeoutMs: 30_000,
      });
      await finishAll(second);
      for (const w of first) if (!victims.includes(w)) w.child.kill('SIGTERM');
      const summaries = await finishAll([...first, ...second]);
      const atEnd = drawnBy(first);
      for (const [i, w] of [...first, ...second].entries()) {
        if (!victims.includes(w)) expect(summaries[i], w.stderr()).toBeDefined();
      }
      const checked = await assertAllIdsSound('faulty', [...first, ...second]);
      const report = first.map(
        (w, i) =>
          `${w.spec.dc}: ${atPause[i]} → ${midPause[i]} → ${beforeResume[i]} (paused) → ${atKill[i]} → ${atEnd[i]}` +
          (victims.includes(w) ? ' killed' : ` errors ${JSON.stringify(summaries[i]?.errors)}`),
      );
      console.info(`pause+kill: ${checked} IDs checked\n  ${report.join('\n  ')}`);
      // The faults must stop neither calls nor progress (the pace is the machine's): with one of
      // its three replicas paused, dc2 keeps a LOCAL_SERIAL quorum, so no call fails; a request
      // held by the paused coordinator times out after 5 s and that node is then tried last, so
      // dc2 draws in the pause's second half. (Held for the driver's 12 s instead, every dc2
      // process drew nothing in the second half. One process alone may, even for the whole pause:
      // its claims also lose races for seconds under this contention; CI on Paxos v1 saw one go
      // 16 → 16 → 16 while the other two drew.) After the kills every surviving process draws
      // again, and so does every replacement.
      const dc2 = [...first.entries()].filter(([, w]) => w.spec.dc === 'dc2').map(([i]) => i);
      const sum = (counts: readonly number[]) => dc2.reduce((total, i) => total + counts[i]!, 0);
      expect(sum(beforeResume)).toBeGreaterThan(sum(midPause));
      first.forEach((w, i) => {
        if (victims.includes(w)) return;
        expect(summaries[i]?.errors, w.stderr()).toEqual({});
        expect(atEnd[i]!, w.stderr()).toBeGreaterThan(atKill[i]!);
      });
      for (const w of second) expect(readIds(w).length, w.stderr()).toBeGreaterThan(0);
      // Six minutes, not the suite's three: nine processes' start, the pause, the replacements'
      // start and every close took 171 s in a passing run on Paxos v1 here.
    },
    360_000,
  );

  it('leave no linearizability violation in the Cassandra logs', () => {
    // The local cluster runs with paxos_on_linearizability_violations: log.
    expect(faults.linearizabilityViolations()).toEqual([]);
  });
});

/**
 * Waits for `done`, polling; on timeout the error says what was awaited, how many IDs each of
 * `workers` drew and what they printed on stderr.
 */
async function until(
  done: () => boolean,
  timeoutMs: number,
  what: string,
  workers: readonly Worker[],
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) {
      const counts = workers.map((w) => `${w.spec.dc} ${readIds(w).length}`).join(', ');
      const said = workers.map((w) => w.stderr()).join('');
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} (drawn: ${counts})\n${said}`,
      );
    }
    await sleep(200);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
