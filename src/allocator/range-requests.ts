/** A DC's range requests: one in flight at most; the background one retried with backoff. */

import { SequenceExhaustedError, StateRolledBackError } from '../errors.js';
import type { DcState } from '../store/port.js';
import type { Logger } from '../logger.js';
import type { Clock } from './clock.js';
import type { FailureSink } from './failures.js';
import { timed, type AllocatorObserver } from './observer.js';

const RANGE_RETRY_FIRST_MS = 1_000;
const RANGE_RETRY_MAX_MS = 30_000;

export interface KnownState {
  readonly state: DcState | undefined;
}

export interface RangeRequestsOptions {
  readonly run: (known?: KnownState) => Promise<void>;
  readonly sequence: string;
  readonly dc: string;
  readonly clock: Clock;
  readonly log: Logger | undefined;
  readonly failures: FailureSink<'range'>;
  readonly observer: AllocatorObserver | undefined;
  readonly onRangeInstalled: (() => void) | undefined;
  readonly wentBack: () => boolean;
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
    this.background = this.ensure()
      .catch(() => undefined)
      .finally(() => {
        this.background = undefined;
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    await this.background;
  }

  private async request(known?: KnownState): Promise<void> {
    const { clock, observer, sequence } = this.options;
    const report = observer && ((ms: number) => observer.rangeRequested(sequence, ms));
    try {
      await timed(clock, report, () => this.options.run(known));
    } catch (error) {
      this.failed(error);
      throw error;
    }
    this.retries = 0;
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    this.options.failures.recovered('range', { dc: this.options.dc });
    this.options.onRangeInstalled?.();
  }

  private failed(error: unknown): void {
    const { failures, dc } = this.options;
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
