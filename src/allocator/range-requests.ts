/**
 * A DC's range requests: at most one in flight (callers join it), and the background request,
 * retried with backoff until it succeeds, the domain is spent, the rows went back, or close.
 */

import { SequenceExhaustedError, StateRolledBackError } from '../errors.js';
import type { DcState } from '../store/port.js';
import type { Logger } from '../logger.js';
import type { Clock } from './clock.js';
import type { FailureLog } from './failures.js';
import type { AllocatorObserver } from './observer.js';

/** Background request retries: about 1 s, doubling up to 30 s. */
const RANGE_RETRY_FIRST_MS = 1_000;
const RANGE_RETRY_MAX_MS = 30_000;

/** The DC state as a claim just read it; a range request may start from it. */
export interface KnownState {
  readonly state: DcState | undefined;
}

export interface RangeRequestsOptions {
  readonly run: (known?: KnownState) => Promise<void>;
  readonly sequence: string;
  readonly dc: string;
  readonly clock: Clock;
  readonly log: Logger | undefined;
  readonly failures: FailureLog<'range'>;
  readonly observer: AllocatorObserver | undefined;
  readonly onRangeInstalled: (() => void) | undefined;
  /** Whether a read showed the rows gone back: no request starts or is retried then. */
  readonly wentBack: () => boolean;
  /** Whether the domain is spent: no background request starts then. */
  readonly exhausted: () => boolean;
}

export class RangeRequests {
  private inFlight: Promise<void> | undefined;
  private background: Promise<void> | undefined;
  private cancelRetry: (() => void) | undefined;
  private retries = 0;
  private closed = false;
  private exhaustionLogged = false;

  constructor(private readonly options: RangeRequestsOptions) {}

  ensure(known?: KnownState): Promise<void> {
    this.inFlight ??= this.request(known).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Starts one background request unless one is in flight or pending, or none may start. */
  inBackground(): void {
    if (
      this.closed ||
      this.options.wentBack() ||
      this.options.exhausted() ||
      this.background !== undefined ||
      this.cancelRetry !== undefined
    ) {
      return;
    }
    // Failures are recorded, and the retry scheduled, where every request ends.
    this.background = this.ensure()
      .catch(() => undefined)
      .finally(() => {
        this.background = undefined;
      });
  }

  /** Stops background requests and their retries; waits for the one in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    await this.background;
  }

  private async request(known?: KnownState): Promise<void> {
    const { clock, observer } = this.options;
    const started = clock.now();
    try {
      await this.options.run(known);
    } catch (error) {
      this.failed(error);
      throw error;
    } finally {
      observer?.rangeRequested(this.options.sequence, clock.now() - started);
    }
    this.retries = 0;
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    this.options.failures.recovered('range', { dc: this.options.dc });
    this.options.onRangeInstalled?.();
  }

  private failed(error: unknown): void {
    const { failures, dc } = this.options;
    // The process level was told at the read that showed it (DcContext.rolledBack).
    if (error instanceof StateRolledBackError) {
      failures.record(error);
      return;
    }
    if (error instanceof SequenceExhaustedError) {
      failures.record(error);
      if (!this.exhaustionLogged) {
        this.exhaustionLogged = true;
        this.options.log?.warn(
          { dc, globalLast: error.globalLast },
          'the sequence is exhausted; the IDs left in this DC are still served',
        );
      }
      return;
    }
    failures.failed('range', error, { dc });
    if (this.closed || this.options.wentBack() || this.cancelRetry !== undefined) return;
    const base = RANGE_RETRY_FIRST_MS * 2 ** this.retries;
    this.retries++;
    const delay = Math.min(RANGE_RETRY_MAX_MS, base * (0.5 + Math.random()));
    this.cancelRetry = this.options.clock.after(delay, () => {
      this.cancelRetry = undefined;
      this.inBackground();
    });
  }
}
