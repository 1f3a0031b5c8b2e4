/** What both levels of a DC allocator share: read checks, the rollback latch, retry bounds. */

import {
  ContentionError,
  InvariantError,
  SequenceRecreatedError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import type { DcState, Grant, IdStore, SequenceSettings } from '../store/port.js';
import type { CasResult } from './cas.js';
import type { Clock } from './clock.js';
import { dcStateViolations, otherIncarnation } from './dc-state.js';
import type { SequenceStats } from './sequence-stats.js';
import type { Watermarks } from './watermarks.js';

/** Conditional writes in a row not shown ours before an operation gives up. */
export const MAX_CAS_ATTEMPTS = 12;

const BACKOFF_MIN_MS = 2;
export const BACKOFF_MAX_MS = 100;

/** What the DC level counts, named as in {@link SequenceStats}; `wasted` is `unknownOutcome`. */
const DC_COUNTERS = [
  'blocksClaimed',
  'rangesGranted',
  'casRejections',
  'casUnknown',
  'wasted',
  'lwtWrites',
  'serialReads',
  'localSerialReads',
] as const satisfies readonly (keyof SequenceStats)[];
export type DcCounters = Record<(typeof DC_COUNTERS)[number], number>;

export function newDcCounters(): DcCounters {
  return Object.fromEntries(DC_COUNTERS.map((key) => [key, 0])) as DcCounters;
}

export type DcContextOptions = Pick<
  DcContext,
  'store' | 'dc' | 'settings' | 'clock' | 'sleep' | 'counters' | 'seen'
> & {
  readonly incarnation?: string | undefined;
  readonly onRolledBack?:
    ((error: StateRolledBackError | SequenceRecreatedError) => void) | undefined;
};

export class DcContext {
  readonly store: IdStore;
  readonly dc: string;
  /** The sizes may change; the domain never does. */
  settings: SequenceSettings;
  readonly incarnation: string | undefined;
  readonly clock: Clock;
  readonly counters: DcCounters;
  readonly seen: Watermarks;
  readonly sleep: (ms: number) => Promise<void>;
  private readonly onRolledBack: DcContextOptions['onRolledBack'];
  /** The first sign the rows went back: from then on no write is sent. */
  private latched: StateRolledBackError | SequenceRecreatedError | undefined;

  constructor(options: DcContextOptions) {
    this.store = options.store;
    this.dc = options.dc;
    this.settings = options.settings;
    this.incarnation = options.incarnation;
    this.clock = options.clock;
    this.sleep = options.sleep;
    this.counters = options.counters;
    this.seen = options.seen;
    this.onRolledBack = options.onRolledBack;
  }

  get sequence(): string {
    return this.settings.name;
  }

  get wentBack(): boolean {
    return this.latched !== undefined;
  }

  /** Every conditional write passes here first. */
  assertRowsHeld(): void {
    if (this.latched !== undefined) throw this.latched;
  }

  checkState(
    state: DcState,
    context: { grants?: readonly Grant[] | undefined; globalLast?: bigint | undefined },
  ): void {
    const other = otherIncarnation(this.dc, state, this.incarnation);
    if (other !== undefined) throw this.recreated(other);
    const first = dcStateViolations(this.dc, state, { settings: this.settings, ...context })[0];
    if (first !== undefined) throw this.broken(`${first.message} (version ${state.version})`);
  }

  broken(detail: string): InvariantError {
    return new InvariantError(this.sequence, detail);
  }

  /** The error of a read showing the rows gone back; the first also latches. */
  rolledBack(detail: string): StateRolledBackError {
    return this.latch(new StateRolledBackError(this.sequence, this.dc, detail));
  }

  recreated(detail: string): SequenceRecreatedError {
    return this.latch(new SequenceRecreatedError(this.sequence, detail));
  }

  count(result: CasResult): void {
    if (result.reported === 'rejected' && result.verdict !== 'ours') this.counters.casRejections++;
    if (result.reported === 'unknown') this.counters.casUnknown++;
  }

  /** Rejections mean contention; unknown outcomes mean the level is unreachable. */
  outOfAttempts(
    operation: string,
    attempts: number,
    last: CasResult,
    level: 'serial' | 'local_serial',
  ): Error {
    if (last.reported === 'unknown') {
      const failure = last.rereadError ?? last.cause;
      if (failure instanceof StoreUnavailableError) return failure;
      return new StoreUnavailableError(
        level,
        operation,
        `the last of ${attempts} conditional writes had an unknown outcome`,
        { cause: last.cause },
      );
    }
    return new ContentionError(this.sequence, operation, attempts);
  }

  backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt - 1, 30));
    return this.sleep(Math.random() * cap);
  }

  private latch<E extends StateRolledBackError | SequenceRecreatedError>(error: E): E {
    if (this.latched === undefined) {
      this.latched = error;
      this.onRolledBack?.(error);
    }
    return error;
  }
}
