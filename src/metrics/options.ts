/**
 * The `metrics` option of `connect()` and {@link IdGen}: where the metrics go and how often the
 * rows are read for the runway gauges.
 */
import type { Registry, RegistryContentType } from 'prom-client';

import { InvalidOptionError } from '../errors.js';
import { checkKeys, everyKeyOf } from '../options.js';

/**
 * Prometheus metrics of an allocator (prom-client). Without this option nothing is registered
 * and nothing is polled.
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * const registry = new Registry();
 * const ids = await connect({ contactPoints, localDataCenter: 'dc1', keyspace: 'idgen', metrics: { registry } });
 * // serve `await registry.metrics()` with `registry.contentType` on GET /metrics
 * ```
 */
export interface MetricsOptions {
  /**
   * The registry the metrics are registered on, at `connect()` (never on import). Several
   * allocators may share one: metrics already registered under the same name are reused, and
   * the `sequence` label tells sequences apart.
   * @default prom-client's default registry, `register`
   */
  readonly registry?: Registry<RegistryContentType> | undefined;
  /**
   * Milliseconds between two reads of the opened sequences' rows for the per-DC gauges and the
   * SERIAL probe (rates appear at the second read). 0 turns them off; otherwise at least 1000.
   * @default 15000
   */
  readonly runwayIntervalMs?: number | undefined;
}

/** Defaults of {@link MetricsOptions}. */
export const METRICS_DEFAULTS = Object.freeze({ runwayIntervalMs: 15_000 });

const METRICS_KEYS = everyKeyOf<MetricsOptions>()(['registry', 'runwayIntervalMs']);

/** The shortest runway poll interval: each poll reads every opened sequence's rows. */
const MIN_RUNWAY_INTERVAL_MS = 1_000;

/** {@link MetricsOptions} with its defaults applied, checked. */
export interface ResolvedMetricsOptions {
  /** Undefined: prom-client's default registry. */
  readonly registry: Registry<RegistryContentType> | undefined;
  readonly runwayIntervalMs: number;
}

/**
 * Checks `options` once, when the allocator is built.
 * @throws {InvalidOptionError} naming `metrics`, `metrics.registry` or `metrics.runwayIntervalMs`.
 */
export function resolveMetricsOptions(options: unknown): ResolvedMetricsOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('metrics', options, 'an object such as { registry }');
  }
  // A misspelt `regsitry` would otherwise register on prom-client's default registry.
  checkKeys(options, METRICS_KEYS, 'metrics.');
  const { registry, runwayIntervalMs = METRICS_DEFAULTS.runwayIntervalMs } =
    options as MetricsOptions;
  if (registry !== undefined && !isRegistry(registry)) {
    throw new InvalidOptionError('metrics.registry', registry, 'a prom-client Registry');
  }
  if (
    typeof runwayIntervalMs !== 'number' ||
    !Number.isFinite(runwayIntervalMs) ||
    (runwayIntervalMs !== 0 && !(runwayIntervalMs >= MIN_RUNWAY_INTERVAL_MS))
  ) {
    throw new InvalidOptionError(
      'metrics.runwayIntervalMs',
      runwayIntervalMs,
      `0 (no polling) or a finite number of milliseconds, at least ${MIN_RUNWAY_INTERVAL_MS}`,
    );
  }
  return { registry, runwayIntervalMs };
}

/**
 * A registry from any copy of prom-client: `instanceof` would refuse one from another copy
 * installed beside the library's.
 */
function isRegistry(value: unknown): value is Registry<RegistryContentType> {
  const candidate = value as Partial<Registry<RegistryContentType>> | null;
  return (
    typeof candidate?.getSingleMetric === 'function' &&
    typeof candidate.registerMetric === 'function' &&
    typeof candidate.metrics === 'function'
  );
}
