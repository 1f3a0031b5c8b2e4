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
import { RegistryMetrics, type StatsHandle, type StatsSource } from './registry-metrics.js';

/** What {@link ProcessMetrics} is built from. */
export interface ProcessMetricsParts {
  readonly options: ResolvedMetricsOptions;
  readonly store: IdStore;
  readonly dc: string;
  readonly keyspace: string;
  /** Schedules the polls; its timers never keep the process alive. */
  readonly clock: Clock;
  readonly logger: Logger | undefined;
}

/** A handle as the metrics see it: its counters, and whether it still reads rows worth polling. */
export interface MeteredHandle extends StatsHandle {
  readonly state: string;
}

/** How long the SERIAL probe may take: as long as `idgen-cass status` gives it by default. */
const SERIAL_PROBE_TIMEOUT_MS = 3_000;

/** The gauges set per sequence and DC (or shard) from the rows. */
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

export class ProcessMetrics implements AllocatorObserver, StatsSource {
  readonly #metrics: RegistryMetrics;
  readonly #handles = new Set<MeteredHandle>();
  readonly #parts: ProcessMetricsParts;
  readonly #failures: FailureLog<'poll'>;
  /** Each sequence's rows at the previous poll: rates are measured between two polls. */
  readonly #previous = new Map<string, SequenceSnapshot>();
  /** The `dc` labels this process set the DC gauges for, by sequence (see #dropUnpolled). */
  readonly #gauged = new Map<string, Set<string>>();
  #cancelPoll: (() => void) | undefined;
  /** The poll in flight, so that close() can wait for it before the store closes. */
  #polling: Promise<void> | undefined;
  #closed = false;

  /**
   * Registers the metrics on the registry (or finds them there) and starts the runway polls.
   * @throws {InvalidOptionError} if the registry holds one of the names as another kind of metric.
   */
  constructor(parts: ProcessMetricsParts) {
    this.#metrics = RegistryMetrics.of(parts.options.registry);
    this.#parts = parts;
    this.#failures = new FailureLog(parts.logger, POLL_FAILURES);
    this.#metrics.attach(this);
    this.#schedule();
  }

  /** Counts `handle`'s IDs from now on, and polls its sequence's rows. */
  track(handle: MeteredHandle): void {
    this.#handles.add(handle);
  }

  handles(): Iterable<StatsHandle> {
    return this.#handles;
  }

  waited(sequence: string, ms: number, error: unknown): void {
    this.#metrics.histogram('idgen_wait_duration_seconds').observe({ sequence }, ms / 1000);
    if (error !== undefined) {
      this.#metrics.counter('idgen_call_errors_total').inc({ sequence, code: codeOf(error) });
    }
  }

  blockClaimed(sequence: string, ms: number): void {
    this.#metrics.histogram('idgen_block_claim_duration_seconds').observe({ sequence }, ms / 1000);
  }

  rangeRequested(sequence: string, ms: number): void {
    this.#metrics.histogram('idgen_dc_grant_duration_seconds').observe({ sequence }, ms / 1000);
  }

  failed(sequence: string, error: unknown): void {
    this.#metrics.counter('idgen_errors_total').inc({ sequence, code: codeOf(error) });
  }

  /**
   * Stops the polls (waiting for one in flight) and adds the handles' last counts; the metrics
   * stay registered with their values. Call it after the handles closed, before the store.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelPoll?.();
    this.#cancelPoll = undefined;
    try {
      await this.#polling;
    } finally {
      this.#metrics.detach(this);
    }
  }

  /** One poll now (or the one in flight); resolves when its gauges are set. Never rejects. */
  #poll(): Promise<void> {
    this.#polling ??= this.#readRows()
      .catch((error: unknown) => this.#pollFailed(error))
      .finally(() => {
        this.#polling = undefined;
      });
    return this.#polling;
  }

  #schedule(): void {
    const { clock, options } = this.#parts;
    if (this.#closed || options.runwayIntervalMs === 0) return;
    this.#cancelPoll = clock.after(options.runwayIntervalMs, () => {
      this.#cancelPoll = undefined;
      void this.#poll().finally(() => this.#schedule());
    });
  }

  async #readRows(): Promise<void> {
    const { store, dc, keyspace, options } = this.#parts;
    // A probe that fails or times out is reported, never thrown; it ends before the next poll.
    const timeoutMs = Math.min(SERIAL_PROBE_TIMEOUT_MS, options.runwayIntervalMs);
    const probe = await probeSerial(store, dc, timeoutMs);
    this.#metrics.gauge('idgen_serial_reachable').set({ dc }, probe.reachable ? 1 : 0);
    let failed: { readonly error: unknown; readonly sequence: string } | undefined;
    const polled = this.#polledSequences();
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

  /** Counts a poll that failed (once, however many sequences it could not read) and logs it. */
  #pollFailed(error: unknown, fields: Record<string, unknown> = {}): void {
    this.#metrics.counter('idgen_runway_poll_failures_total').inc();
    this.#failures.failed('poll', error, fields);
  }

  /** The sequences of the handles still open, once each. */
  #polledSequences(): Set<string> {
    const names = new Set<string>();
    for (const handle of this.#handles) {
      if (handle.state !== 'closing' && handle.state !== 'closed') names.add(handle.name);
    }
    return names;
  }

  /**
   * Takes the DC gauges of sequences no handle polls any more (all closed) off the registry:
   * kept, their last values would read as current, a low runway firing alerts for good.
   */
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
      // Rows that may lag: no series rather than a stale one (the DC's own processes still report
      // it). Rate and runway are undefined until two polls measured a rate, or while the DC holds
      // no range: left unset.
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
  // The label value of a failure that is not an IdGenError.
  return error instanceof IdGenError ? error.code : 'other';
}
