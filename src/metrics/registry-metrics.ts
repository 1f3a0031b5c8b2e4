/**
 * The metric objects of one prom-client registry, shared by every allocator reporting to it.
 * Counters a handle keeps (`stats()`) are read at scrape time, adding what grew since the last.
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
const FROM_STATS = new Set([...Object.keys(COUNTED_FROM_STATS), WASTED, HELD]);

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;
type AnyRegistry = Registry<RegistryContentType>;

/** Weak: a registry dropped by its user is not kept. */
const byRegistry = new WeakMap<AnyRegistry, RegistryMetrics>();

export class RegistryMetrics {
  readonly #metrics = new Map<string, AnyMetric>();
  /** Each allocator's handles, read at every scrape while attached. */
  readonly #sources = new Set<Iterable<StatsHandle>>();
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
    METRICS.forEach((description, i) => {
      const metric = (existing[i] as AnyMetric | undefined) ?? create(description, registry);
      if (FROM_STATS.has(description.name)) collectToo(metric, () => this.refresh());
      this.#metrics.set(description.name, metric);
    });
  }

  /** @throws {InvalidOptionError} if `registry` holds one of these names as another kind. */
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

  // The kinds are those of the table: fits() checked any metric found in the registry.
  counter(name: string): Counter<string> {
    return this.#metrics.get(name) as Counter<string>;
  }

  gauge(name: string): Gauge<string> {
    return this.#metrics.get(name) as Gauge<string>;
  }

  histogram(name: string): Histogram<string> {
    return this.#metrics.get(name) as Histogram<string>;
  }

  attach(handles: Iterable<StatsHandle>): void {
    this.#sources.add(handles);
  }

  /** Adds what `handles` counted since the last scrape, then stops reading them. */
  detach(handles: Iterable<StatsHandle>): void {
    this.#fold(handles);
    this.#sources.delete(handles);
  }

  refresh(): void {
    const held = new Map<string, number>();
    for (const handles of this.#sources) this.#fold(handles, held);
    const gauge = this.gauge(HELD);
    for (const sequence of this.#sequences) gauge.set({ sequence }, held.get(sequence) ?? 0);
  }

  /** Adds each handle's growth since the last scrape to the counters, and what it holds to `held`. */
  #fold(handles: Iterable<StatsHandle>, held = new Map<string, number>()): void {
    for (const handle of handles) {
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
      held.set(sequence, (held.get(sequence) ?? 0) + stats.remaining);
    }
  }
}

/** Same kind and labels (prom-client refuses label names it was not created with). */
function fits(metric: unknown, description: MetricDescription): boolean {
  if (!(metric instanceof kindOf(description.type))) return false;
  const labels = (metric as unknown as { readonly labelNames?: readonly string[] }).labelNames;
  return (
    labels !== undefined && [...labels].sort().join() === [...description.labels].sort().join()
  );
}

/** Runs `collect` at each scrape of `metric`, after a `collect` it had (prom-client's `this`). */
function collectToo(metric: AnyMetric, collect: () => void): void {
  const held = metric as unknown as { collect?: (this: AnyMetric) => unknown };
  const before = held.collect;
  held.collect = async function (this: AnyMetric) {
    await before?.call(this);
    collect();
  };
}

function create({ name, help, labels, type }: MetricDescription, registry: AnyRegistry) {
  const Kind = kindOf(type);
  return new Kind({
    name,
    help,
    labelNames: [...labels],
    registers: [registry],
    ...(type === 'histogram' ? { buckets: [...DURATION_BUCKETS] } : {}),
  });
}

function kindOf(type: MetricDescription['type']) {
  const { Counter, Gauge, Histogram } = promClientModule();
  return { counter: Counter, gauge: Gauge, histogram: Histogram }[type];
}
