/**
 * One allocator's metrics: its observer, its counters' source at scrape time, and the periodic
 * read of the rows that sets the per-DC gauges as `idgen-cass status` computes them.
 */
import { probeSerial, readSnapshot } from '../admin/overview-reads.js';
import { sequenceStatus, type SequenceSnapshot } from '../admin/status.js';
import type { Clock } from '../allocator/clock.js';
import { FailureLog } from '../allocator/failures.js';
import type { AllocatorObserver } from '../allocator/observer.js';
import { IdGenError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { IdStore } from '../store/port.js';
import type { ResolvedMetricsOptions } from './options.js';
import { RegistryMetrics, type StatsHandle } from './registry-metrics.js';

export interface ProcessMetricsParts {
  readonly options: ResolvedMetricsOptions;
  readonly store: IdStore;
  readonly dc: string;
  readonly keyspace: string;
  readonly clock: Clock;
  readonly logger: Logger | undefined;
}

/** A handle: its counters, and whether it is still open (its rows worth polling). */
export interface MeteredHandle extends StatsHandle {
  readonly state: string;
}

/** As long as `idgen-cass status` gives it by default. */
const SERIAL_PROBE_TIMEOUT_MS = 3_000;

const DC_GAUGES = [
  'idgen_dc_ids_left',
  'idgen_dc_rate_ids_per_second',
  'idgen_dc_runway_seconds',
] as const;

const POLL_FAILURES = {
  poll: {
    failed: 'reading the rows for the runway metrics failed; the gauges keep their last values',
    recovered: 'reading the rows for the runway metrics works again',
  },
} as const;

export class ProcessMetrics implements AllocatorObserver {
  readonly #metrics: RegistryMetrics;
  readonly #handles = new Set<MeteredHandle>();
  readonly #parts: ProcessMetricsParts;
  readonly #failures: FailureLog<'poll'>;
  readonly #previous = new Map<string, SequenceSnapshot>();
  readonly #gauged = new Map<string, Set<string>>();
  #cancelPoll: (() => void) | undefined;
  #polling: Promise<void> | undefined;
  #closed = false;

  /** @throws {InvalidOptionError} if the registry holds one of the names as another kind. */
  constructor(parts: ProcessMetricsParts) {
    this.#metrics = RegistryMetrics.of(parts.options.registry);
    this.#parts = parts;
    this.#failures = new FailureLog(parts.logger, POLL_FAILURES);
    this.#metrics.attach(this.#handles);
    this.#schedule();
  }

  track(handle: MeteredHandle): void {
    this.#handles.add(handle);
  }

  waited(sequence: string, ms: number, error: unknown): void {
    this.#seconds('idgen_wait_duration_seconds', sequence, ms);
    if (error !== undefined) {
      this.#metrics.counter('idgen_call_errors_total').inc({ sequence, code: codeOf(error) });
    }
  }

  blockClaimed(sequence: string, ms: number): void {
    this.#seconds('idgen_block_claim_duration_seconds', sequence, ms);
  }

  rangeRequested(sequence: string, ms: number): void {
    this.#seconds('idgen_dc_grant_duration_seconds', sequence, ms);
  }

  failed(sequence: string, error: unknown): void {
    this.#metrics.counter('idgen_errors_total').inc({ sequence, code: codeOf(error) });
  }

  unsafeNodes(count: number): void {
    this.#metrics.gauge('idgen_dc_unsafe_nodes').set({ dc: this.#parts.dc }, count);
  }

  /** Stops the polls, adds the handles' last counts. Call after the handles, before the store. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelPoll?.();
    this.#cancelPoll = undefined;
    try {
      await this.#polling;
    } finally {
      this.#metrics.detach(this.#handles);
    }
  }

  #seconds(histogram: string, sequence: string, ms: number): void {
    this.#metrics.histogram(histogram).observe({ sequence }, ms / 1000);
  }

  /** The next poll; one at a time, as each is scheduled once the previous one settled. */
  #schedule(): void {
    const { clock, options } = this.#parts;
    if (this.#closed || options.runwayIntervalMs === 0) return;
    this.#cancelPoll = clock.after(options.runwayIntervalMs, () => {
      this.#cancelPoll = undefined;
      this.#polling = this.#readRows()
        .catch((error: unknown) => this.#pollFailed(error))
        .finally(() => {
          this.#polling = undefined;
          this.#schedule();
        });
    });
  }

  async #readRows(): Promise<void> {
    const { store, dc, keyspace, options } = this.#parts;
    // Reported, never thrown; it ends before the next poll.
    const timeoutMs = Math.min(SERIAL_PROBE_TIMEOUT_MS, options.runwayIntervalMs);
    const probe = await probeSerial(store, dc, timeoutMs);
    this.#metrics.gauge('idgen_serial_reachable').set({ dc }, probe.reachable ? 1 : 0);
    let failed: { readonly error: unknown; readonly sequence: string } | undefined;
    const open = [...this.#handles].filter((h) => h.state !== 'closing' && h.state !== 'closed');
    const polled = new Set(open.map((handle) => handle.name));
    this.#dropUnpolled(polled);
    for (const sequence of polled) {
      try {
        this.#setDcGauges(sequence, await readSnapshot(store, keyspace, sequence, dc));
      } catch (error) {
        failed ??= { error, sequence };
      }
    }
    if (failed === undefined) this.#failures.recovered('poll', {});
    else this.#pollFailed(failed.error, { sequence: failed.sequence });
  }

  #pollFailed(error: unknown, fields: Record<string, unknown> = {}): void {
    this.#metrics.counter('idgen_runway_poll_failures_total').inc();
    this.#failures.failed('poll', error, fields);
  }

  /** Kept, a closed sequence's last values would read as current (a low runway alerting on). */
  #dropUnpolled(polled: ReadonlySet<string>): void {
    for (const [sequence, dcs] of this.#gauged) {
      if (polled.has(sequence)) continue;
      for (const name of DC_GAUGES) {
        for (const dc of dcs) this.#metrics.gauge(name).remove({ sequence, dc });
      }
      this.#gauged.delete(sequence);
      this.#previous.delete(sequence);
    }
  }

  #setDcGauges(sequence: string, current: SequenceSnapshot): void {
    const status = sequenceStatus(current, this.#previous.get(sequence));
    this.#previous.set(sequence, current);
    let gauged = this.#gauged.get(sequence);
    if (gauged === undefined) this.#gauged.set(sequence, (gauged = new Set()));
    const left = this.#metrics.gauge('idgen_dc_ids_left');
    const rate = this.#metrics.gauge('idgen_dc_rate_ids_per_second');
    const runway = this.#metrics.gauge('idgen_dc_runway_seconds');
    for (const dc of status.dcs) {
      const labels = { sequence, dc: dc.dc };
      gauged.add(dc.dc);
      left.set(labels, Number(dc.left));
      // Rows that may lag: no series rather than a stale one. Undefined ones are left unset.
      if (dc.rowsNotCurrent !== undefined) {
        rate.remove(labels);
        runway.remove(labels);
      } else {
        if (dc.rate !== undefined) rate.set(labels, dc.rate);
        if (dc.runway !== undefined) runway.set(labels, dc.runway);
      }
    }
  }
}

function codeOf(error: unknown): string {
  return error instanceof IdGenError ? error.code : 'other';
}
