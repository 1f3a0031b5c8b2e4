/**
 * What one simulated run is made of, as fast-check arbitraries: the sequence's settings, the
 * processes and their DCs, the commands callers issue, the faults the store injects, and the
 * seed of the allocator's jitter. Everything a run does follows from these values and the
 * scheduler's choices, so a failing run is replayed from its seed alone, and shrinking acts on
 * these values (the scheduler itself does not shrink; it replays its choices on what is left).
 */
import fc from 'fast-check';

import type { ConditionalEffect } from '../../../src/store/memory-faults.js';

export const SEQUENCE = 'sim';
export const DCS = ['dc1', 'dc2', 'dc3'] as const;

/**
 * Small sizes on purpose: blocks and ranges run out every few calls, so grants, switches to the
 * preloaded range, give-backs and exhaustion happen in nearly every run.
 */
export interface SimSettings {
  readonly dcRangeSize: number;
  readonly blockSize: number;
  readonly threshold: number;
  /** Above blockSize: blocks sized from each process's rate (sizing.ts); equal: fixed. */
  readonly maxBlockSize: number;
  /** Short, against the 25 ms tick, so that measured rates move block sizes within a run. */
  readonly claimIntervalMs: number;
  /** 0: fixed DC ranges; else grants sized from the DC's rate, up to maxDcRangeSize. */
  readonly autonomySeconds: number;
  readonly maxDcRangeSize: number;
  /** State partitions per DC: handles of one DC claim from different shards, each its own grantee. */
  readonly shards: number;
  /**
   * A custom domain's size, so that some runs spend the whole domain; else int32 (or 300 IDs at
   * the top of a {@link Domain} other than `low`).
   */
  readonly max: number | undefined;
  /** Where the domain lies: IDs that need a bigint, or not (see {@link domainBounds}). */
  readonly domain: Domain;
  /** DCs granted their first ranges with the sequence: their processes start on a plain read. */
  readonly firstRanges: readonly string[];
  /**
   * How many writes behind a plain read of a DC state answers (MemoryStore `plainReadLag`): a
   * claim's guess then often shows a state older than the process saw, or one a rejection
   * showed to be old.
   */
  readonly plainReadLag: number;
}

/**
 * `low`: from 0 (int32 or `max`). The others hold `max` IDs (300 without one) at the top of the
 * safe numbers (2^53-1 is the last ID, still a number), across 2^53 (number handles must refuse
 * the sequence with IDGEN_DOMAIN_NEEDS_BIGINT) and at the top of int63: where arithmetic on
 * doubles or a bigint's width would go wrong first.
 */
export type Domain = 'low' | 'top-of-safe53' | 'across-2^53' | 'top-of-int63';

/** Size of a domain other than `low` without a `max`. */
const HIGH_DOMAIN_SIZE = 300;

/** The sequence's `min`, `start` and `max` for `settings` (none: the defaults, from 0). */
export function domainBounds(settings: Pick<SimSettings, 'max' | 'domain'>): {
  readonly min?: bigint;
  readonly start?: bigint;
  readonly max?: bigint;
} {
  const size = BigInt(settings.max ?? HIGH_DOMAIN_SIZE);
  const from = (first: bigint) => ({ min: first, start: first, max: first + size - 1n });
  switch (settings.domain) {
    case 'low':
      return settings.max === undefined ? {} : { max: BigInt(settings.max) };
    case 'top-of-safe53':
      return from(2n ** 53n - size);
    case 'across-2^53':
      return from(2n ** 53n - size / 2n);
    case 'top-of-int63':
      return from(2n ** 63n - size);
  }
}

export interface SimProcess {
  readonly dc: (typeof DCS)[number];
  /** Bigint handles take the other block type (BigIntBlock). */
  readonly bigint: boolean;
}

/** Which of a slot's handles a call goes to: the open one, or the one closed last. */
export type Target = 'current' | 'previous';

/** The options a call that waits for IDs may carry (CallOptions), as a command gives them. */
export interface WithCallOptions {
  /** The call's own deadline (CallOptions.timeoutMs), ms of virtual time. */
  readonly timeoutMs?: number;
  /** The call carries an AbortSignal, fired at a step the scheduler picks. */
  readonly abort?: boolean;
}

/**
 * What a slot's client does. Each slot runs its commands in order; `wait: false` goes on to the
 * next command without waiting for this one, so calls of one handle overlap.
 */
export type Command =
  | ({
      readonly kind: 'next';
      readonly slot: number;
      readonly target: Target;
      readonly wait: boolean;
    } & WithCallOptions)
  | { readonly kind: 'tryNext'; readonly slot: number; readonly target: Target }
  /**
   * `count` calls of next(), each after the one before resolved: in a burst, or `paced`, each
   * at a step the scheduler picks.
   */
  | {
      readonly kind: 'draw';
      readonly slot: number;
      readonly count: number;
      readonly paced: boolean;
      readonly wait: boolean;
    }
  | {
      readonly kind: 'take';
      readonly slot: number;
      /**
       * `block`: the sequence's block size as created, which spends a whole block per call, so a
       * handle closes holding exactly its preloaded block (the run the protocol gives back).
       */
      readonly count: number | 'block';
      readonly target: Target;
      readonly wait: boolean;
    }
  /**
   * Sequence.nextIds, the HTTP service's draw of `count` IDs under one deadline: counts up to a
   * little more than the largest block, so that a call takes IDs, waits for blocks and may fail
   * after taking some.
   */
  | ({
      readonly kind: 'nextIds';
      readonly slot: number;
      readonly count: number;
      readonly target: Target;
      readonly wait: boolean;
    } & WithCallOptions)
  /**
   * Closes the slot's open handle (later calls open a new one) while its callers go on calling
   * it: each of `callsDuring` is issued on the closing handle at a step the scheduler picks.
   */
  | {
      readonly kind: 'close';
      readonly slot: number;
      readonly callsDuring: readonly ('next' | 'tryNext')[];
    }
  /** The process dies: nothing it sent is answered, no timer of it fires; a new one starts. */
  | { readonly kind: 'restart'; readonly slot: number }
  /** IdGen.close(), then a new process in the slot. */
  | { readonly kind: 'shutdown'; readonly slot: number }
  /**
   * The client waits `ms` of virtual time before its next command: long enough, past
   * SETTINGS_REFRESH_MS (10 s), for a claim of a running process to re-read settings altered
   * meanwhile.
   */
  | { readonly kind: 'pause'; readonly slot: number; readonly ms: number }
  | {
      readonly kind: 'alter';
      readonly slot: number;
      readonly changes: {
        readonly dcRangeSize?: number;
        readonly blockSize?: number;
        readonly threshold?: number;
        readonly maxBlockSize?: number;
        readonly claimIntervalMs?: number;
        readonly autonomySeconds?: number;
        readonly maxDcRangeSize?: number;
        /** Only ever raised: an alter below the current number is refused. */
        readonly shards?: number;
      };
    };

/**
 * A fault of a conditional write: the MemoryStore's own outcomes (its `in-flight` split by the
 * round that finishes the write: the writer's re-read, only a later write, or for a grant batch
 * the second of the two rounds that read the grants, after the first missed it), plus one the
 * simulation adds: the write applied (if its condition held), then the call throws a plain
 * error, as a lost connection does.
 */
export type WriteFault =
  | Exclude<ConditionalEffect, 'in-flight'>
  | 'applied-then-error'
  | 'in-flight-until-read'
  | 'in-flight-until-write'
  | 'in-flight-until-second-read';

export const WRITE_FAULTS: readonly WriteFault[] = [
  'rejected',
  'unknown-applied',
  'unknown-not-applied',
  'applied-reported-rejected',
  'applied-then-unavailable',
  'applied-then-error',
  'in-flight-until-read',
  'in-flight-until-write',
  'in-flight-until-second-read',
];

/**
 * What a conditional write is for. A DC-state write is told from the rows it is about to change
 * (claim, give-back or install), so that faults can aim at the rare writes as well as at claims.
 */
export type WriteKind = 'claim' | 'give-back' | 'install' | 'grant' | 'alter';

/**
 * The `at`-th write of that kind (or read) in the run, counted over every process, fails. The
 * `at`-th call at SERIAL (a grant read or batch) cuts its caller's DC off from SERIAL for
 * {@link SERIAL_OUTAGE_MS} of virtual time, as a DC partitioned from the others is: each call at
 * SERIAL from that DC then fails as unavailable, while LOCAL_SERIAL still works.
 */
export type PlannedFault =
  | { readonly on: WriteKind; readonly at: number; readonly fault: WriteFault }
  | { readonly on: 'read'; readonly at: number; readonly fault: 'unavailable' }
  | { readonly on: 'serial'; readonly at: number; readonly fault: 'outage' };

/** How long a planned SERIAL outage cuts a DC off, ms of virtual time. */
export const SERIAL_OUTAGE_MS = 3_000;

/** Where a planned fault lands: a kind of write, or any read of the rows. */
export type FaultSite = PlannedFault['on'];

/** How many writes of each kind (and reads) a run has, about: where planned faults may land. */
const FAULT_REACH: Readonly<Record<FaultSite, number>> = {
  claim: 30,
  'give-back': 4,
  install: 8,
  grant: 8,
  alter: 1,
  read: 100,
  serial: 12,
};

/**
 * A claim left with several writes of unknown fate: the `at`-th claim write of the run gets
 * `faults[0]`, and the next claim writes of the process that sent it get the rest in turn
 * (`none`: that one goes through; a fault planned for a write comes first). A write not applied
 * and reported unknown, or left in flight until a later write, whose re-read shows the state
 * unmoved stays unresolved while its claim lasts (dc-allocator.ts), and a later round may commit
 * it; two in one claim, written on states another process moved in between, are where taking
 * the wrong one for the one committed hands out that process's block.
 */
export interface PlannedBurst {
  readonly at: number;
  readonly faults: readonly BurstFault[];
}

export type BurstFault = 'unknown-not-applied' | 'in-flight-until-write' | 'none';

/**
 * Acknowledged writes lost, as when every replica of a DC-state partition crashes with
 * `commitlog_sync: periodic`: right after the store runs the `at`-th DC-state write of the run
 * (counted over every process and DC), that DC's state loses its last `writes` writes.
 */
export interface PlannedRollback {
  readonly at: number;
  readonly writes: 1 | 2;
  /** The operator's repair once the rollback landed, in half the rollback runs; else none. */
  readonly repair: PlannedRepair | undefined;
}

/**
 * The repair docs/design.md prescribes when a DC's rows went back ("Rows that went back"), at a
 * step the scheduler picks after the rollback and `afterMs` of virtual time later: every process
 * of the DC stops (`close`: IdGen.close(), awaited; `crash`: it dies, and what it sent may still
 * land), `retireDcRanges` runs from the DC until it succeeds (re-run after an unavailable store
 * or a lost race, as an operator would), then fresh processes take the stopped ones' places.
 */
export interface PlannedRepair {
  readonly stop: 'close' | 'crash';
  readonly afterMs: number;
}

/** DC-state writes a run has, about (claims, give-backs, installs): where a rollback may land. */
const ROLLBACK_REACH = FAULT_REACH.claim + FAULT_REACH['give-back'] + FAULT_REACH.install;

export interface Scenario {
  readonly settings: SimSettings;
  /** One slot each: a client and the process it calls (a new one after a restart). */
  readonly processes: readonly SimProcess[];
  readonly commands: readonly Command[];
  readonly faults: readonly PlannedFault[];
  /**
   * A rollback breaks what the protocol rests on (docs/design.md, "What the cluster must
   * guarantee"): runs with one are held to what is promised then (checker.ts).
   */
  readonly rollback: PlannedRollback | undefined;
  /** At the end, live handles hand out every ID they hold (tryNext) before they close. */
  readonly drainAtEnd: boolean;
  /** Seeds the allocator's backoff jitter (Math.random) for this run. */
  readonly jitterSeed: number;
  /**
   * Claim writes of one process left unknown one after the other, in half the runs. Generated
   * last, so that it changes nothing else a seed draws.
   */
  readonly burst: PlannedBurst | undefined;
}

const settingsArb: fc.Arbitrary<SimSettings> = fc
  .record({
    dcRangeSize: fc.integer({ min: 4, max: 40 }),
    // Blocks of one or two IDs often: every claim then ends where a give-back's run ends.
    blockSize: fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: 10 })),
    threshold: fc.constantFrom(0.25, 0.5, 0.75, 0.9),
    // Fixed blocks in a third of the runs; else up to 12 IDs, sized from the rate.
    maxBlockSize: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12 })),
    claimIntervalMs: fc.constantFrom(10, 50, 200, 1_000),
    // Virtual seconds pass in ticks of 25 ms: short targets make grants grow within a run.
    autonomySeconds: fc.constantFrom(0, 0, 1, 5),
    maxDcRangeSize: fc.integer({ min: 4, max: 120 }),
    // Sharded DCs in half the runs: more grantees racing for GLOBAL, fewer for each state.
    shards: fc.constantFrom(1, 1, 2, 3),
    max: fc.option(fc.integer({ min: 40, max: 300 }), { nil: undefined, freq: 3 }),
    // IDs past 2^31 in 3 runs of 10: at the top of the safe numbers, across 2^53, of int63.
    domain: fc.oneof(
      { weight: 7, arbitrary: fc.constant<Domain>('low') },
      { weight: 1, arbitrary: fc.constant<Domain>('top-of-safe53') },
      { weight: 1, arbitrary: fc.constant<Domain>('across-2^53') },
      { weight: 1, arbitrary: fc.constant<Domain>('top-of-int63') },
    ),
    // In half the runs some or every DC starts on first ranges made with the sequence.
    firstRanges: fc.constantFrom<readonly string[]>([], [], ['dc1'], DCS),
    // Plain reads that lag behind the latest state in half the runs.
    plainReadLag: fc.constantFrom(0, 0, 1, 2),
  })
  .map((s) => {
    const blockSize = Math.min(s.blockSize, s.dcRangeSize);
    const maxBlockSize = Math.min(Math.max(s.maxBlockSize, blockSize), s.dcRangeSize);
    const domainSize = s.max ?? (s.domain === 'low' ? 2 ** 31 - 1 : HIGH_DOMAIN_SIZE);
    const maxDcRangeSize =
      s.autonomySeconds === 0
        ? s.dcRangeSize
        : Math.min(Math.max(s.maxDcRangeSize, s.dcRangeSize), domainSize);
    // First ranges that do not fit the domain are refused at creation: none, then.
    const fits = s.firstRanges.length * s.shards * s.dcRangeSize <= domainSize;
    return {
      ...s,
      blockSize,
      maxBlockSize,
      maxDcRangeSize,
      firstRanges: fits ? s.firstRanges : [],
    };
  });

const processArb: fc.Arbitrary<SimProcess> = fc.record({
  // dc1 twice as often: processes of one DC racing for its state is where the protocol is subtle.
  dc: fc.constantFrom('dc1', ...DCS),
  bigint: fc.boolean(),
});

export interface ScenarioBounds {
  /** Most processes at once. */
  readonly processes: number;
  /** Most commands in a run. */
  readonly commands: number;
  /** Most faults in a run. */
  readonly faults: number;
}

export const DEFAULT_BOUNDS: ScenarioBounds = { processes: 5, commands: 30, faults: 12 };

function commandArb(bounds: ScenarioBounds): fc.Arbitrary<Command> {
  const slot = fc.nat({ max: bounds.processes - 1 });
  // Mostly the open handle; sometimes the one just closed, to call it while it closes.
  const target = fc.constantFrom<Target>('current', 'current', 'current', 'previous');
  const wait = fc.boolean();
  // Some calls with a deadline of their own (0: only IDs held), some with a signal.
  const callOptions = {
    timeoutMs: fc.constantFrom(0, 25, 100, 1_000),
    abort: fc.constant(true),
  };
  const nextIds = {
    kind: fc.constant('nextIds'),
    slot,
    // Blocks hold 1 to 12 IDs: a few IDs often, else up to past a block or two.
    count: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 16 })),
    target,
    wait,
  };
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record(
        { kind: fc.constant('next'), slot, target, wait, ...callOptions },
        { requiredKeys: ['kind', 'slot', 'target', 'wait'] },
      ),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('tryNext'), slot, target }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('draw'),
        slot,
        count: fc.integer({ min: 2, max: 12 }),
        paced: fc.boolean(),
        wait,
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('take'),
        slot,
        count: fc.oneof(fc.constant<'block'>('block'), fc.integer({ min: 1, max: 10 })),
        target,
        wait,
      }),
    },
    {
      weight: 2,
      // Options in a third of the calls only: a call that waits for blocks mostly ends at its
      // signal or deadline, and the calls that get their IDs are the ones to judge.
      arbitrary: fc.oneof(
        { weight: 2, arbitrary: fc.record(nextIds) },
        {
          weight: 1,
          arbitrary: fc.record(
            { ...nextIds, ...callOptions },
            { requiredKeys: ['kind', 'slot', 'count', 'target', 'wait'] },
          ),
        },
      ),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('close'),
        slot,
        callsDuring: fc.array(fc.constantFrom('next', 'tryNext'), { maxLength: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart'), slot }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('shutdown'), slot }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('pause'),
        slot,
        ms: fc.constantFrom(3_000, 11_000, 31_000),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('alter'),
        slot,
        changes: fc.record(
          {
            dcRangeSize: fc.integer({ min: 4, max: 40 }),
            blockSize: fc.integer({ min: 1, max: 10 }),
            threshold: fc.constantFrom(0.25, 0.5, 0.75, 0.9),
            maxBlockSize: fc.integer({ min: 1, max: 12 }),
            claimIntervalMs: fc.constantFrom(10, 50, 200, 1_000),
            autonomySeconds: fc.constantFrom(0, 1, 5),
            maxDcRangeSize: fc.integer({ min: 4, max: 120 }),
            shards: fc.integer({ min: 1, max: 4 }),
          },
          { requiredKeys: [] },
        ),
      }),
    },
  ) as fc.Arbitrary<Command>;
}

/** Faults land on claims and give-backs most: the writes whose outcome decides who holds IDs. */
const FAULT_WEIGHT: Readonly<Record<FaultSite, number>> = {
  claim: 3,
  'give-back': 5,
  install: 1,
  grant: 1,
  alter: 1,
  read: 1,
  serial: 1,
};

const faultArb: fc.Arbitrary<PlannedFault> = fc.oneof(
  ...(['claim', 'give-back', 'install', 'grant', 'alter'] as const).map((on) => ({
    weight: FAULT_WEIGHT[on],
    arbitrary: fc.record({
      on: fc.constant(on),
      at: fc.nat({ max: FAULT_REACH[on] }),
      fault: fc.constantFrom(...WRITE_FAULTS),
    }),
  })),
  {
    weight: FAULT_WEIGHT.read,
    arbitrary: fc.record({
      on: fc.constant('read'),
      at: fc.nat({ max: FAULT_REACH.read }),
      fault: fc.constant('unavailable'),
    }),
  },
  {
    weight: FAULT_WEIGHT.serial,
    arbitrary: fc.record({
      on: fc.constant('serial'),
      at: fc.nat({ max: FAULT_REACH.serial }),
      fault: fc.constant('outage'),
    }),
  },
) as fc.Arbitrary<PlannedFault>;

export function scenarioArb(bounds: ScenarioBounds = DEFAULT_BOUNDS): fc.Arbitrary<Scenario> {
  return fc.record({
    settings: settingsArb,
    processes: fc.array(processArb, { minLength: 2, maxLength: bounds.processes }),
    // 'medium': fast-check's default size would keep arrays to about ten elements.
    commands: fc.array(commandArb(bounds), {
      minLength: 1,
      maxLength: bounds.commands,
      size: 'medium',
    }),
    faults: fc.array(faultArb, { maxLength: bounds.faults, size: 'medium' }),
    // A rollback in a run of 5; it lands only if the run makes that many DC-state writes.
    rollback: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      {
        weight: 1,
        arbitrary: fc.record({
          at: fc.nat({ max: ROLLBACK_REACH }),
          writes: fc.constantFrom<1 | 2>(1, 2),
          // Repaired in half the rollback runs: at once, or once processes had time to notice.
          repair: fc.option(
            fc.record({
              stop: fc.constantFrom<PlannedRepair['stop']>('close', 'crash'),
              afterMs: fc.constantFrom(0, 1_000, 5_000, 30_000),
            }),
            { nil: undefined, freq: 2 },
          ),
        }),
      },
    ),
    drainAtEnd: fc.boolean(),
    jitterSeed: fc.integer(),
    // A write that never lands, then 1 or 2 more (rejected once another process moved the
    // state, or lost as well), then one left in flight until a later write commits it.
    burst: fc.option(
      fc.record({
        at: fc.nat({ max: FAULT_REACH.claim }),
        faults: fc
          .array(fc.constantFrom<BurstFault>('none', 'unknown-not-applied'), {
            minLength: 1,
            maxLength: 2,
          })
          .map((between) => [
            'unknown-not-applied' as const,
            ...between,
            'in-flight-until-write' as const,
          ]),
      }),
      { nil: undefined },
    ),
  });
}
