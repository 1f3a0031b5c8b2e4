/**
 * The metric objects of one prom-client registry, shared by every allocator reporting to it.
 * Counters a handle keeps (`stats()`) are read at scrape time, adding what grew since the last
 * one, so the ID paths count nothing twice; durations and failures come from observer.ts.
 */
import type { Counter, Gauge, Histogram, Registry, RegistryContentType } from 'prom-client';

import type { SequenceStats } from '../allocator/sequence-stats.js';
import { InvalidOptionError } from '../errors.js';
import { promClientModule } from '../lazy-modules.js';
import { DURATION_BUCKETS, METRICS, type MetricDescription } from './table.js';

export interface StatsHandle {
  readonly name: string;
  stats(): SequenceStats;
}

/** One allocator's handles, read at every scrape while attached. */
export interface StatsSource {
  handles(): Iterable<StatsHandle>;
}

const COUNTED_FROM_STATS: Readonly<Record<string, (stats: SequenceStats) => number>> = {
  idgen_ids_issued_total: (stats) => stats.issued,
  idgen_waits_total: (stats) => stats.waits,
  idgen_block_claims_total: (stats) => stats.blocksClaimed,
  idgen_dc_grants_total: (stats) => stats.rangesGranted,
  idgen_cas_rejections_total: (stats) => stats.casRejections,
  idgen_cas_unknown_outcomes_total: (stats) => stats.casUnknown,
};
const WASTED = 'idgen_ids_wasted_total';
const HELD = 'idgen_ids_held';
/** Each of these refreshes them all when scraped. */
const FROM_STATS = new Set([...Object.keys(COUNTED_FROM_STATS), WASTED, HELD]);

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;
type AnyRegistry = Registry<RegistryContentType>;

/** Weak: a registry dropped by its user is not kept. */
const byRegistry = new WeakMap<AnyRegistry, RegistryMetrics>();

export class RegistryMetrics {
  readonly #metrics = new Map<string, AnyMetric>();
  readonly #sources = new Set<StatsSource>();
  /** Each handle's counters at the last scrape, by metric (and cause). */
  readonly #lastSeen = new WeakMap<StatsHandle, Map<string, number>>();
  /** A sequence's held gauge goes to 0, not away, once its handles closed. */
  readonly #sequences = new Set<string>();

  private constructor(registry: AnyRegistry) {
    // Every name is checked before anything is registered: a refused registry is left as it was.
    const existing = METRICS.map((description) => {
      const metric = registry.getSingleMetric(description.name);
      if (metric !== undefined && !fits(metric, description)) {
        throw new InvalidOptionError(
          'metrics.registry',
          `a registry holding another metric named "${description.name}"`,
          `a registry where "${description.name}" is a ${description.type} labelled [${description.labels.join(', ')}], or is not registered`,
        );
      }
      return metric;
    });
    const refresh = () => this.refresh();
    METRICS.forEach((description, i) => {
      const collect = FROM_STATS.has(description.name) ? refresh : undefined;
      const found = existing[i] as AnyMetric | undefined;
      if (found !== undefined && collect !== undefined) collectToo(found, collect);
      this.#metrics.set(description.name, found ?? create(description, registry, collect));
    });
  }

  /**
   * The metrics of `registry` (default: prom-client's `register`), registered on first use.
   * @throws {InvalidOptionError} if it holds one of these names as another kind of metric.
   */
  static of(registry: AnyRegistry = promClientModule().register): RegistryMetrics {
    const known = byRegistry.get(registry);
    // A registry cleared by its user (`registry.clear()`) gets its metrics registered again.
    const first = METRICS[0]!.name;
    if (known !== undefined && registry.getSingleMetric(first) === known.#metrics.get(first)) {
      return known;
    }
    const metrics = new RegistryMetrics(registry);
    byRegistry.set(registry, metrics);
    return metrics;
  }

  counter(name: string): Counter<string> {
    return this.#typed(name, promClientModule().Counter);
  }

  gauge(name: string): Gauge<string> {
    return this.#typed(name, promClientModule().Gauge);
  }

  histogram(name: string): Histogram<string> {
    return this.#typed(name, promClientModule().Histogram);
  }

  attach(source: StatsSource): void {
    this.#sources.add(source);
  }

  /** Adds what `source`'s handles counted since the last scrape, then stops reading them. */
  detach(source: StatsSource): void {
    this.#fold(source);
    this.#sources.delete(source);
  }

  /** The `collect()` of each metric read from `stats()`. */
  refresh(): void {
    const held = new Map<string, number>();
    for (const source of this.#sources) {
      for (const handle of this.#fold(source)) {
        held.set(handle.name, (held.get(handle.name) ?? 0) + handle.held);
      }
    }
    const gauge = this.gauge(HELD);
    for (const sequence of this.#sequences) gauge.set({ sequence }, held.get(sequence) ?? 0);
  }

  /** Adds each handle's growth since the last scrape to the counters; returns what each holds. */
  #fold(source: StatsSource): { name: string; held: number }[] {
    const held: { name: string; held: number }[] = [];
    for (const handle of source.handles()) {
      const stats = handle.stats();
      const sequence = handle.name;
      this.#sequences.add(sequence);
      const seen = this.#lastSeen.get(handle) ?? new Map<string, number>();
      this.#lastSeen.set(handle, seen);
      const add = (key: string, value: number, inc: (delta: number) => void) => {
        const delta = value - (seen.get(key) ?? 0);
        // Counters only grow: a value read between two steps of a close is caught up later.
        if (delta > 0) {
          inc(delta);
          seen.set(key, value);
        }
      };
      for (const [name, read] of Object.entries(COUNTED_FROM_STATS)) {
        add(name, read(stats), (delta) => this.counter(name).inc({ sequence }, delta));
      }
      for (const [cause, ids] of Object.entries(stats.waste)) {
        add(`${WASTED}/${cause}`, ids, (delta) =>
          this.counter(WASTED).inc({ sequence, cause }, delta),
        );
      }
      held.push({ name: sequence, held: stats.remaining });
    }
    return held;
  }

  #typed<M extends AnyMetric>(name: string, kind: abstract new (...args: never[]) => M): M {
    const metric = this.#metrics.get(name);
    if (!(metric instanceof kind)) throw new Error(`metric ${name} is not a ${kind.name}`);
    return metric;
  }
}

/** Same kind and labels (prom-client refuses label names it was not created with). */
function fits(metric: unknown, description: MetricDescription): boolean {
  const { Counter, Gauge, Histogram } = promClientModule();
  const kind = { counter: Counter, gauge: Gauge, histogram: Histogram }[description.type];
  if (!(metric instanceof kind)) return false;
  const labels = (metric as unknown as { readonly labelNames?: readonly string[] }).labelNames;
  return (
    labels !== undefined && [...labels].sort().join() === [...description.labels].sort().join()
  );
}

/**
 * Has a metric this code did not create also read its handles when scraped (else it would never
 * move). prom-client calls the `collect` kept on the metric, with the metric as `this`.
 */
function collectToo(metric: AnyMetric, collect: () => void): void {
  const held = metric as unknown as { collect?: (this: AnyMetric) => unknown };
  const before = held.collect;
  held.collect = async function (this: AnyMetric) {
    await before?.call(this);
    collect();
  };
}

function create(
  { name, help, labels, type }: MetricDescription,
  registry: AnyRegistry,
  collect: (() => void) | undefined,
): AnyMetric {
  const { Counter, Gauge, Histogram } = promClientModule();
  const configuration = {
    name,
    help,
    labelNames: [...labels],
    registers: [registry],
    ...(collect === undefined ? {} : { collect }),
  };
  if (type === 'histogram') {
    return new Histogram({ ...configuration, buckets: [...DURATION_BUCKETS] });
  }
  return type === 'counter' ? new Counter(configuration) : new Gauge(configuration);
}
