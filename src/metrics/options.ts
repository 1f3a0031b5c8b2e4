/** The `metrics` option of `connect()` and {@link IdGen}. */
import type { Registry, RegistryContentType } from 'prom-client';

import { InvalidOptionError } from '../errors.js';
import { checkKeys, everyKeyOf, milliseconds } from '../options.js';

/** Prometheus metrics of an allocator (prom-client); without it nothing is registered. */
export interface MetricsOptions {
  /**
   * Registered on at `connect()`; allocators may share one (same-named metrics are reused).
   * @default prom-client's default registry, `register`
   */
  readonly registry?: Registry<RegistryContentType> | undefined;
  /**
   * Milliseconds between reads of the opened sequences' rows for the per-DC gauges and the SERIAL
   * probe. 0 turns them off; otherwise at least 1000.
   * @default 15000
   */
  readonly runwayIntervalMs?: number | undefined;
}

/** Defaults of {@link MetricsOptions}. */
export const METRICS_DEFAULTS = Object.freeze({ runwayIntervalMs: 15_000 });

const METRICS_KEYS = everyKeyOf<MetricsOptions>()(['registry', 'runwayIntervalMs']);

/** Each poll reads every opened sequence's rows. */
const MIN_RUNWAY_INTERVAL_MS = 1_000;

export type ResolvedMetricsOptions = MetricsOptions & { readonly runwayIntervalMs: number };

/** @throws {InvalidOptionError} naming `metrics` or the bad field. */
export function resolveMetricsOptions(options: unknown): ResolvedMetricsOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('metrics', options, 'an object such as { registry }');
  }
  checkKeys(options, METRICS_KEYS, 'metrics.');
  const { registry, runwayIntervalMs } = options as MetricsOptions;
  // Duck-typed: `instanceof` would refuse a registry from another copy of prom-client.
  const methods = ['getSingleMetric', 'registerMetric', 'metrics'] as const;
  if (registry !== undefined && methods.some((m) => typeof registry?.[m] !== 'function')) {
    throw new InvalidOptionError('metrics.registry', registry, 'a prom-client Registry');
  }
  const option = 'metrics.runwayIntervalMs';
  const ms = milliseconds(option, runwayIntervalMs, METRICS_DEFAULTS.runwayIntervalMs);
  if (ms !== 0 && ms < MIN_RUNWAY_INTERVAL_MS) {
    const allowed = `0 (no polling) or at least ${MIN_RUNWAY_INTERVAL_MS} milliseconds`;
    throw new InvalidOptionError(option, ms, allowed);
  }
  return { registry, runwayIntervalMs: ms };
}
