/**
 * A handle's ledger: the IDs it issued and wasted (by cause), the IDs it holds back until the HTTP
 * service knows whether they reached their caller, its failures, and the usage reports that add
 * its counts to its DC's usage counters. {@link Sequence} calls it where IDs are issued, wasted or
 * delivered; `stats()` merges it with the DC level's counters (dc-allocator.ts). The functions at
 * the end carry a replaced handle's counts on into its successor's ({@link IdGen}).
 *
 * Invariants: `issued` never goes down (metrics and usage reports add its increases), and
 * `wasted` is the sum of `waste`'s causes.
 */

import type { Logger } from '../logger.js';

import { USAGE_CAUSES, type IdStore, type UsageCause } from '../store/port.js';
import type { DcCounters } from './dc-allocator.js';
import { FailureLog } from './failures.js';
import type { AllocatorObserver } from './observer.js';
import type { SequenceStats, WasteByCause } from './sequence-stats.js';
import type { Clock } from './clock.js';

/**
 * A process reports what it issued and wasted to its DC's usage counters at most this often (at
 * a block claim), and once more when it closes: `status` shows them per DC.
 */
export const USAGE_REPORT_MS = 10_000;

/** The causes of waste the process level counts (unknown outcomes are the DC level's). */
export type ProcessWaste = Omit<WasteByCause, 'unknownOutcome'>;

const PROCESS_FAILURES = {
  claim: {
    failed: 'claiming a block failed; the IDs this process holds are still served',
    recovered: 'claiming blocks works again',
  },
  return: {
    failed: 'returning unused IDs on close failed; they stay a gap',
    recovered: 'returning unused IDs works again',
  },
} as const;

/** What one level's {@link FailureLog} contributes. */
type Failures = Pick<FailureLog<string>, 'errors' | 'lastError' | 'lastErrorAt'>;

/** What the handle tells the ledger of its buffer when a snapshot is taken. */
export interface BufferCounts {
  /** IDs taken from blocks, issued or not. */
  readonly taken: number;
  /** IDs held and not handed out. */
  readonly remaining: number;
  readonly blockSize: number;
  readonly drawRate: number | undefined;
}

/** What the DC level counts; undefined before the settings are loaded. */
export interface DcLevel {
  readonly counters: Readonly<DcCounters>;
  readonly dcRate: number | undefined;
  readonly failures: Failures;
}

export interface LedgerContext {
  readonly name: string;
  readonly store: Pick<IdStore, 'addDcUsage'>;
  readonly clock: Clock;
  readonly log: Logger | undefined;
  readonly observer: AllocatorObserver | undefined;
  /** The handle's snapshot, which a usage report sends the increases of. */
  readonly stats: () => SequenceStats;
}

export class Ledger {
  /** Failed claims and give-backs; logged once per episode. */
  readonly failures: FailureLog<'claim' | 'return'>;
  private readonly name: string;
  private readonly store: Pick<IdStore, 'addDcUsage'>;
  private readonly clock: Clock;
  private readonly log: Logger | undefined;
  private readonly snapshot: () => SequenceStats;
  private waits = 0;
  private wastedIds = 0;
  private shardMoves = 0;
  private readonly waste: { -readonly [K in keyof ProcessWaste]: number } = {
    takeSkipped: 0,
    notReturned: 0,
    dropped: 0,
    refused: 0,
    undelivered: 0,
  };
  /**
   * IDs taken by {@link Sequence.nextIds} calls still running, or by the HTTP service's calls
   * whose response is not yet delivered: neither issued nor wasted until then, so that `issued`
   * only grows.
   */
  private drawing = 0;
  /** What the DC's usage counters were told so far, and when; the report in flight. */
  private reportedUsage: Readonly<Record<UsageCause, number>> = zeroUsage();
  private usageReportedAt: number | undefined;
  private reportingUsage: Promise<void> | undefined;

  constructor(context: LedgerContext) {
    this.name = context.name;
    this.store = context.store;
    this.clock = context.clock;
    this.log = context.log;
    this.snapshot = context.stats;
    const observer = context.observer;
    this.failures = new FailureLog(
      context.log,
      PROCESS_FAILURES,
      observer && ((error) => observer.failed(context.name, error)),
    );
  }

  /** A call found no ID (nextIds: too few) in the process and waits for a refill. */
  waited(): void {
    this.waits++;
  }

  /** `count` IDs this process will never hand out, for `cause`. */
  wasted(cause: keyof ProcessWaste, count: number): void {
    this.wastedIds += count;
    this.waste[cause] += count;
  }

  /** The handle went on from another shard before its first block. */
  movedShard(): void {
    this.shardMoves++;
  }

  /** `count` IDs taken by a call that has not handed them out yet: neither issued nor wasted. */
  drawn(count: number): void {
    this.drawing += count;
  }

  /** The end of {@link drawn}: the IDs are issued now, or were counted wasted. */
  undrawn(count: number): void {
    this.drawing -= count;
  }

  /**
   * `count` IDs already {@link drawn} stay so until `delivered` settles: issued if it resolves
   * true, else wasted as `undelivered`. The promise must settle.
   */
  settleDelivery(count: number, delivered: Promise<boolean>): void {
    void delivered
      .then(
        (reached) => reached,
        () => false,
      )
      .then((reached) => {
        this.drawing -= count;
        if (reached) return;
        this.wasted('undelivered', count);
      });
  }

  /** {@link drawn}, then {@link settleDelivery}: a run taken for the service. */
  drawnUntil(count: number, delivered: Promise<boolean>): void {
    this.drawn(count);
    this.settleDelivery(count, delivered);
  }

  /** A frozen snapshot of both levels: counts added up, and the latest failure of either. */
  stats(buffer: BufferCounts, dc: DcLevel | undefined): SequenceStats {
    const dcCounters = dc?.counters;
    const rangeFailures = dc?.failures;
    const failures = this.failures;
    const lastError =
      rangeFailures !== undefined && rangeFailures.lastErrorAt > failures.lastErrorAt
        ? rangeFailures.lastError
        : (failures.lastError ?? rangeFailures?.lastError);
    const waste = this.waste;
    return Object.freeze({
      // Every ID taken from a block was handed out, except the remainders take() skipped, the
      // IDs of calls that failed or were not delivered, and those whose delivery is not known.
      issued: buffer.taken - waste.takeSkipped - waste.undelivered - this.drawing,
      remaining: buffer.remaining,
      blocksClaimed: dcCounters?.blocksClaimed ?? 0,
      blockSize: buffer.blockSize,
      drawRate: buffer.drawRate,
      dcRate: dc?.dcRate,
      rangesGranted: dcCounters?.rangesGranted ?? 0,
      waits: this.waits,
      errors: failures.errors + (rangeFailures?.errors ?? 0),
      casRejections: dcCounters?.casRejections ?? 0,
      casUnknown: dcCounters?.casUnknown ?? 0,
      wasted: this.wastedIds + (dcCounters?.wasted ?? 0),
      waste: Object.freeze({ unknownOutcome: dcCounters?.wasted ?? 0, ...waste }),
      lwtWrites: dcCounters?.lwtWrites ?? 0,
      serialReads: dcCounters?.serialReads ?? 0,
      localSerialReads: dcCounters?.localSerialReads ?? 0,
      shardMoves: this.shardMoves,
      lastError,
    });
  }

  /** At a claim: a usage report, unless one went out less than {@link USAGE_REPORT_MS} ago. */
  reportNowAndThen(grantee: string): void {
    const now = this.clock.now();
    if (this.usageReportedAt !== undefined && now - this.usageReportedAt < USAGE_REPORT_MS) return;
    this.usageReportedAt = now;
    void this.report(grantee);
  }

  /**
   * A usage report under `grantee`: at once, counting up to now, or after the one in flight,
   * which holds only the counts up to its start.
   */
  reportNow(grantee: string): Promise<void> {
    const inFlight = this.reportingUsage;
    return inFlight === undefined
      ? this.report(grantee)
      : inFlight.then(() => this.report(grantee));
  }

  /**
   * Adds what this process issued and wasted since its last report to the DC's usage counters,
   * one report at a time. Never throws: the counters are for `status`, and no ID depends on them.
   * A report that failed is sent again with the next one, so a report that timed out but was
   * applied counts twice.
   */
  private report(grantee: string): Promise<void> {
    if (this.reportingUsage !== undefined) return this.reportingUsage;
    const stats = this.snapshot();
    // `retired` is counted by retire-ranges, never by a process.
    const now: Record<UsageCause, number> = { issued: stats.issued, ...stats.waste, retired: 0 };
    const deltas: Partial<Record<UsageCause, number>> = {};
    for (const cause of USAGE_CAUSES) {
      const delta = now[cause] - this.reportedUsage[cause];
      if (delta > 0) deltas[cause] = delta;
    }
    if (Object.keys(deltas).length === 0) return Promise.resolve();
    this.reportingUsage = this.store
      .addDcUsage(this.name, grantee, deltas)
      .then(
        () => {
          this.reportedUsage = now;
        },
        (error: unknown) => {
          this.log?.debug({ err: error, dc: grantee }, 'usage counters not updated');
        },
      )
      .finally(() => {
        this.reportingUsage = undefined;
      });
    return this.reportingUsage;
  }
}

function zeroUsage(): Record<UsageCause, number> {
  return Object.fromEntries(USAGE_CAUSES.map((cause) => [cause, 0])) as Record<UsageCause, number>;
}

/** The counters of the closed handles one handle replaced, summed. */
export interface FormerCounts {
  readonly counts: Readonly<Record<string, number>>;
  readonly waste: Readonly<Record<string, number>>;
  readonly lastError: Error | undefined;
}

/** Counts and waste causes summed over several snapshots. */
export interface SummedCounts {
  readonly counts: Readonly<Record<string, number>>;
  readonly waste: Readonly<Record<string, number>>;
}

/** Fields of {@link SequenceStats} that describe the handle now (rates, sizes): never summed. */
const PER_HANDLE = new Set(['blockSize', 'drawRate', 'dcRate']);

/** Adds the numbers of `more` that are counts into `into`, key by key. */
function addCounts(into: Record<string, number>, more: object): void {
  for (const [key, value] of Object.entries(more)) {
    if (!PER_HANDLE.has(key) && typeof value === 'number') into[key] = (into[key] ?? 0) + value;
  }
}

/** The counts of `snapshots` summed (rates and sizes left out), `waste` cause by cause. */
export function sumCounts(snapshots: readonly SequenceStats[]): SummedCounts {
  const counts: Record<string, number> = {};
  const waste: Record<string, number> = {};
  for (const stats of snapshots) {
    addCounts(counts, stats);
    addCounts(waste, stats.waste);
  }
  return { counts, waste };
}

/** What a closed handle leaves its successor: its counts with those it carried itself. */
export function foldCounts(closed: SequenceStats, former: FormerCounts | undefined): FormerCounts {
  const folded = withFormer(closed, former, []);
  const counts: Record<string, number> = {};
  addCounts(counts, folded);
  return { counts, waste: { ...folded.waste }, lastError: folded.lastError };
}

/**
 * `current` with the counters of the handles it replaced added: those folded when they closed
 * (`former`), and those still closing (`closing`), so that no counter goes back.
 */
export function withFormer(
  current: SequenceStats,
  former: FormerCounts | undefined,
  closing: readonly SequenceStats[],
): SequenceStats {
  if (former === undefined && closing.length === 0) return current;
  const counts: Record<string, number> = {};
  const waste: Record<string, number> = {};
  let lastError = current.lastError;
  for (const other of [current, ...closing]) {
    addCounts(counts, other);
    addCounts(waste, other.waste);
    lastError ??= other.lastError;
  }
  if (former !== undefined) {
    addCounts(counts, former.counts);
    addCounts(waste, former.waste);
    lastError ??= former.lastError;
  }
  return Object.freeze({
    ...current,
    ...counts,
    waste: Object.freeze(waste),
    lastError,
  }) as unknown as SequenceStats;
}
