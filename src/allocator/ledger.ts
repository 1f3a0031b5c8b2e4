/**
 * A handle's counters (issued, wasted by cause, drawn until delivered), failures and usage
 * reports. Invariants: `issued` never goes down; `wasted` is the sum of `waste`'s causes.
 */

import type { Logger } from '../logger.js';
import { USAGE_CAUSES, type IdStore, type UsageCause } from '../store/port.js';
import { RANGE_FAILURE } from './dc-allocator.js';
import { newDcCounters } from './dc-context.js';
import { FailureLog } from './failures.js';
import type { AllocatorObserver } from './observer.js';
import type { SequenceStats, WasteByCause } from './sequence-stats.js';
import type { Clock } from './clock.js';

/** Least interval between a process's usage reports. */
export const USAGE_REPORT_MS = 10_000;

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
  range: RANGE_FAILURE,
} as const;

export interface BufferCounts {
  readonly taken: number;
  readonly remaining: number;
  readonly blockSize: number;
  readonly drawRate: number | undefined;
}

export interface LedgerContext {
  readonly name: string;
  readonly store: Pick<IdStore, 'addDcUsage'>;
  readonly clock: Clock;
  readonly log: Logger | undefined;
  readonly observer: AllocatorObserver | undefined;
  readonly stats: () => SequenceStats;
}

export class Ledger {
  readonly failures: FailureLog<keyof typeof PROCESS_FAILURES>;
  /** Kept across shard moves. */
  readonly dcCounters = newDcCounters();
  waits = 0;
  shardMoves = 0;
  private readonly waste: { -readonly [K in keyof ProcessWaste]: number } = {
    takeSkipped: 0,
    notReturned: 0,
    dropped: 0,
    refused: 0,
    undelivered: 0,
  };
  /** Taken but not yet delivered: neither issued nor wasted, so `issued` only grows. */
  private drawing = 0;
  private reportedUsage: Readonly<Record<UsageCause, number>> = zeroUsage();
  private usageReportedAt: number | undefined;
  private reportingUsage: Promise<void> | undefined;

  constructor(private readonly context: LedgerContext) {
    const observer = context.observer;
    this.failures = new FailureLog(
      context.log,
      PROCESS_FAILURES,
      observer && ((error) => observer.failed(context.name, error)),
    );
  }

  wasted(cause: keyof ProcessWaste, count: number): void {
    this.waste[cause] += count;
  }

  drawn(count: number): void {
    this.drawing += count;
  }

  undrawn(count: number): void {
    this.drawing -= count;
  }

  /** Drawn until `delivered` settles: then issued if true, else `undelivered`. */
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

  stats(buffer: BufferCounts, dcRate: number | undefined): SequenceStats {
    const { dcCounters, failures, waste } = this;
    const wasted = Object.values(waste).reduce((sum, count) => sum + count, dcCounters.wasted);
    return Object.freeze({
      issued: buffer.taken - waste.takeSkipped - waste.undelivered - this.drawing,
      remaining: buffer.remaining,
      blocksClaimed: dcCounters.blocksClaimed,
      blockSize: buffer.blockSize,
      drawRate: buffer.drawRate,
      dcRate,
      rangesGranted: dcCounters.rangesGranted,
      waits: this.waits,
      errors: failures.errors,
      casRejections: dcCounters.casRejections,
      casUnknown: dcCounters.casUnknown,
      wasted,
      waste: Object.freeze({ unknownOutcome: dcCounters.wasted, ...waste }),
      lwtWrites: dcCounters.lwtWrites,
      serialReads: dcCounters.serialReads,
      localSerialReads: dcCounters.localSerialReads,
      shardMoves: this.shardMoves,
      lastError: failures.lastError,
    });
  }

  /** A usage report, unless one went out less than {@link USAGE_REPORT_MS} ago. */
  reportNowAndThen(grantee: string): void {
    const now = this.context.clock.now();
    if (this.usageReportedAt !== undefined && now - this.usageReportedAt < USAGE_REPORT_MS) return;
    this.usageReportedAt = now;
    void this.report(grantee);
  }

  /** A usage report at once, or after the one in flight. */
  reportNow(grantee: string): Promise<void> {
    const inFlight = this.reportingUsage;
    return inFlight === undefined
      ? this.report(grantee)
      : inFlight.then(() => this.report(grantee));
  }

  /** Adds the counts since the last report to the DC's; never throws: no ID depends on them. */
  private report(grantee: string): Promise<void> {
    if (this.reportingUsage !== undefined) return this.reportingUsage;
    const { name, store, log } = this.context;
    const stats = this.context.stats();
    const now: Record<UsageCause, number> = { issued: stats.issued, ...stats.waste, retired: 0 };
    const deltas: Partial<Record<UsageCause, number>> = {};
    for (const cause of USAGE_CAUSES) {
      const delta = now[cause] - this.reportedUsage[cause];
      if (delta > 0) deltas[cause] = delta;
    }
    if (Object.keys(deltas).length === 0) return Promise.resolve();
    this.reportingUsage = store
      .addDcUsage(name, grantee, deltas)
      .then(
        () => {
          this.reportedUsage = now;
        },
        (error: unknown) => {
          log?.debug({ err: error, dc: grantee }, 'usage counters not updated');
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

export interface SummedCounts {
  readonly counts: Readonly<Record<string, number>>;
  readonly waste: Readonly<Record<string, number>>;
}

/** Fields of {@link SequenceStats} never summed. */
const PER_HANDLE = new Set(['blockSize', 'drawRate', 'dcRate']);

function addCounts(into: Record<string, number>, more: object): void {
  for (const [key, value] of Object.entries(more)) {
    if (!PER_HANDLE.has(key) && typeof value === 'number') into[key] = (into[key] ?? 0) + value;
  }
}

export function sumCounts(snapshots: readonly SequenceStats[]): SummedCounts {
  const counts: Record<string, number> = {};
  const waste: Record<string, number> = {};
  for (const stats of snapshots) {
    addCounts(counts, stats);
    addCounts(waste, stats.waste);
  }
  return { counts, waste };
}

/** `current` with the counts of the handles it replaced added, so no counter goes back. */
export function withFormer(
  current: SequenceStats,
  former: SequenceStats | undefined,
  closing: readonly SequenceStats[],
): SequenceStats {
  const all = former === undefined ? [current, ...closing] : [current, ...closing, former];
  if (all.length === 1) return current;
  const { counts, waste } = sumCounts(all);
  return Object.freeze({
    ...current,
    ...counts,
    waste: Object.freeze(waste),
    lastError: all.find((stats) => stats.lastError !== undefined)?.lastError,
  }) as unknown as SequenceStats;
}
