/** Section 1: the in-process cost of one ID; idgen-cass on the in-memory store, block loaded. */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Snowflake } from '@sapphire/snowflake';
import { v7 as uuidV7 } from 'uuid';

import { IdGen } from '../../src/allocator/id-gen.js';
import type { Sequence } from '../../src/index.js';
import { MAX_BLOCK_SIZE } from '../../src/settings/model.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { BenchSettings, InProcessCandidate, InProcessResult, Log } from './results.js';
import { hrNow } from './stats.js';

const IDGEN_BLOCK = MAX_BLOCK_SIZE;
/** So that a timed loop never reaches the block's end. */
const IDGEN_MAX_LOOP = 4_000_000;
const SEQUENCE = 'in_process';

/** Keeps results alive so the JIT cannot drop the work that made them. */
const blackhole = { value: 0 };

/** `run(n)` times `n` IDs and returns the nanoseconds they took. */
interface Runner extends InProcessCandidate {
  readonly maxLoop: number;
  run(n: number): number | Promise<number>;
}

/** A runner timing `n` calls of `draw`; `sink` keeps the last result alive. */
function loopRunner<T>(
  key: string,
  label: string,
  draw: () => T,
  sink: (last: T) => number,
): Runner {
  return {
    key,
    label,
    maxLoop: Infinity,
    run(n) {
      let last = draw();
      const t0 = hrNow();
      for (let i = 0; i < n; i++) last = draw();
      const elapsed = hrNow() - t0;
      blackhole.value ^= sink(last);
      return elapsed;
    },
  };
}

/** A handle replaced before its block could run out; counts calls that missed a loaded block. */
class IdgenHandle {
  private ids: IdGen | undefined;
  private handle: Sequence<number> | undefined;
  private used = 0;
  refills = 0;

  constructor(private readonly store: MemoryStore) {}

  /** Times `loop` over `n` calls of a handle with room for them. */
  async time(
    n: number,
    loop: (handle: Sequence<number>) => number | Promise<number>,
  ): Promise<number> {
    if (this.handle === undefined || this.used + n > IDGEN_BLOCK * 0.99) {
      await this.ids?.close();
      this.ids = new IdGen({ store: this.store, dc: 'dc1', keyspace: 'memory' });
      this.handle = this.ids.sequence(SEQUENCE);
      await this.handle.ready();
      this.used = 0;
    }
    this.used += n;
    const before = this.handle.stats();
    const t0 = hrNow();
    const last = loop(this.handle);
    // A sync loop is timed without the microtask an await would add.
    blackhole.value ^= typeof last === 'number' ? last : await last;
    const elapsed = hrNow() - t0;
    const after = this.handle.stats();
    this.refills += after.blocksClaimed - before.blocksClaimed + (after.waits - before.waits);
    return elapsed;
  }

  async close(): Promise<void> {
    await this.ids?.close();
  }
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
function packageVersion(name: string): string {
  const file = path.join(ROOT, 'node_modules', name, 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

async function runners(store: MemoryStore): Promise<{ list: Runner[]; idgen: IdgenHandle[] }> {
  await new IdGen({ store, dc: 'dc1', keyspace: 'memory' }).createSequence(SEQUENCE, {
    domain: 'safe53',
    blockSize: IDGEN_BLOCK,
    dcRangeSize: IDGEN_BLOCK * 1_000,
    // Preload only near the block's end: the timed loops stop well before it.
    threshold: 0.999,
  });
  const syncHandle = new IdgenHandle(store);
  const asyncHandle = new IdgenHandle(store);
  let counter = 0;
  const asyncCounter = async (): Promise<number> => ++counter;
  const snowflake = new Snowflake(new Date('2020-01-01T00:00:00Z'));
  const firstChar = (id: string) => id.charCodeAt(0);
  const list: Runner[] = [
    loopRunner('counter', 'plain integer counter (the floor)', () => ++counter, Number),
    {
      key: 'tryNext',
      label: 'idgen-cass `tryNext()` (sync fast path, block loaded)',
      maxLoop: IDGEN_MAX_LOOP,
      run: (n) =>
        syncHandle.time(n, (handle) => {
          let last = 0;
          for (let i = 0; i < n; i++) {
            const id = handle.tryNext();
            if (id === undefined) syncHandle.refills++;
            else last = id;
          }
          return last;
        }),
    },
    {
      key: 'asyncCounter',
      label: '`await` of an async counter (the async floor)',
      maxLoop: Infinity,
      async run(n) {
        let last = 0;
        const t0 = hrNow();
        for (let i = 0; i < n; i++) last = await asyncCounter();
        const elapsed = hrNow() - t0;
        blackhole.value ^= last;
        return elapsed;
      },
    },
    {
      key: 'next',
      label: 'idgen-cass `await next()` (async, block loaded)',
      maxLoop: IDGEN_MAX_LOOP,
      run: (n) =>
        asyncHandle.time(n, async (handle) => {
          let last = 0;
          for (let i = 0; i < n; i++) last = await handle.next();
          return last;
        }),
    },
    loopRunner(
      'snowflake',
      `@sapphire/snowflake ${packageVersion('@sapphire/snowflake')} \`generate()\` (bigint)`,
      () => snowflake.generate(),
      (last) => Number(last & 0xffffn),
    ),
    loopRunner('randomUUID', '`crypto.randomUUID()` (v4 string)', randomUUID, firstChar),
    loopRunner('uuidV7', `uuid ${packageVersion('uuid')} \`v7()\` (string)`, uuidV7, firstChar),
  ];
  return { list, idgen: [syncHandle, asyncHandle] };
}

/** Nanoseconds of one call's timing: two `process.hrtime.bigint()` reads and their difference. */
function timerPairNs(): number {
  const n = 200_000;
  let total = 0;
  const t0 = hrNow();
  for (let i = 0; i < n; i++) {
    const a = process.hrtime.bigint();
    const b = process.hrtime.bigint();
    total += Number(b - a);
  }
  const elapsed = hrNow() - t0;
  blackhole.value ^= total;
  return elapsed / n;
}

function snowflakeRepeats(n: number): { generated: number; repeated: number } {
  const snowflake = new Snowflake(new Date('2020-01-01T00:00:00Z'));
  const seen = new Set<bigint>();
  for (let i = 0; i < n; i++) seen.add(snowflake.generate());
  return { generated: n, repeated: n - seen.size };
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A loop length that takes about `targetMs`. */
async function calibrate(runner: Runner, targetMs: number): Promise<number> {
  let n = 1_000;
  for (;;) {
    const elapsed = await runner.run(n);
    await yieldToEventLoop();
    if (elapsed >= 10e6 || n >= runner.maxLoop) {
      const scaled = Math.ceil((n * targetMs * 1e6) / Math.max(elapsed, 1));
      return Math.max(1_000, Math.min(scaled, runner.maxLoop));
    }
    n = Math.min(n * 4, runner.maxLoop);
  }
}

/** Each run visits the candidates in a rotated order, so drift spreads over all of them. */
export async function measureInProcess(
  settings: BenchSettings,
  log: Log,
): Promise<InProcessResult> {
  const store = new MemoryStore();
  const { list, idgen } = await runners(store);
  try {
    const loops = new Map<string, number>();
    for (const runner of list)
      loops.set(runner.key, await calibrate(runner, settings.inProcessSampleMs));
    // Calibration was the warm-up; its refills do not count.
    for (const handle of idgen) handle.refills = 0;
    const runs: Record<string, number>[] = [];
    for (let r = 0; r < settings.runs; r++) {
      const perId: Record<string, number> = {};
      for (let i = 0; i < list.length; i++) {
        const runner = list[(i + r) % list.length]!;
        const n = loops.get(runner.key)!;
        perId[runner.key] = (await runner.run(n)) / n;
        await yieldToEventLoop();
      }
      runs.push(perId);
      log(
        `in-process run ${r + 1}/${settings.runs}: ` +
          list.map((c) => `${c.key} ${perId[c.key]!.toFixed(1)} ns`).join(', '),
      );
    }
    return {
      idgenStore:
        'the in-memory store (`MemoryStore` of src/store/memory.ts, through `new IdGen({ store, dc, keyspace })`)',
      idgenBlockSize: IDGEN_BLOCK,
      candidates: list.map(({ key, label }) => ({ key, label })),
      runs,
      refillsInLoops: idgen.reduce((total, h) => total + h.refills, 0),
      snowflakeRepeats: snowflakeRepeats(100_000),
      timerPairNs: timerPairNs(),
    };
  } finally {
    for (const handle of idgen) await handle.close();
  }
}
