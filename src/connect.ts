/** {@link IdGen}, the allocator with metrics as its monitor, and `connect()` over Cassandra. */
import { resolveMetricsOptions, type MetricsOptions } from './metrics/options.js';
import { ProcessMetrics } from './metrics/process-metrics.js';
import {
  checkConnectionKeys,
  openClient,
  type ConnectionOptions,
} from './store/cassandra/driver-client.js';
import { checkKeys, everyKeyOf, validateName } from './options.js';
import {
  checkAllocatorOptions,
  IdGen as Allocator,
  SHARED_ID_GEN_KEYS,
  type IdGenMonitorParts,
  type IdGenOptions as AllocatorOptions,
} from './allocator/id-gen.js';
import { CassandraStore } from './store/cassandra/store.js';

/** Options of {@link IdGen}: the allocator's own, with `metrics` in place of its monitor. */
export interface IdGenOptions extends Omit<AllocatorOptions, 'monitor'> {
  /** Prometheus metrics (prom-client); without it nothing is registered. @default undefined */
  readonly metrics?: MetricsOptions | undefined;
}

const ID_GEN_KEYS = everyKeyOf<IdGenOptions>()([...SHARED_ID_GEN_KEYS, 'metrics']);

/** Unique integer IDs from sequences shared by every DC; built by {@link connect}. */
export class IdGen extends Allocator {
  /**
   * @throws {InvalidOptionError} for a bad option, or a `metrics.registry` that holds one of
   * idgen-cass's metric names as another kind of metric.
   * @throws {InvalidNameError} for a bad `dc` or `keyspace`.
   */
  constructor(options: IdGenOptions) {
    checkKeys(options, ID_GEN_KEYS);
    const { metrics, ...allocator } = options;
    // A function: metrics are checked after the allocator's other options.
    const monitor =
      metrics === undefined
        ? undefined
        : (parts: IdGenMonitorParts) =>
            new ProcessMetrics({ options: resolveMetricsOptions(metrics), ...parts });
    super({ ...allocator, monitor });
  }
}

/** Options of {@link connect}: where to connect, and some of the allocator's. */
export type ConnectOptions = ConnectionOptions &
  Pick<IdGenOptions, 'logger' | 'callTimeoutMs' | 'metrics'>;

const CONNECT_KEYS = everyKeyOf<Omit<ConnectOptions, keyof ConnectionOptions>>()([
  'logger',
  'callTimeoutMs',
  'metrics',
]);

/**
 * Connects to Cassandra in this process's datacenter and returns the allocator.
 * @example
 * ```ts
 * const ids = await connect({ contactPoints: ['10.0.0.1'], localDataCenter: 'dc1', keyspace: 'idgen' });
 * await ids.createSequence('orders', { domain: 'int32' });
 * const id = await ids.sequence('orders').next();
 * await ids.close();
 * ```
 * @throws {InvalidOptionError} for missing or bad options, or an unknown `localDataCenter`; for
 * a `metrics.registry` that holds one of idgen-cass's metric names as another kind of metric.
 * @throws {InvalidNameError} for a bad keyspace name.
 * @throws {StoreUnavailableError} when no contact point can be reached.
 */
export async function connect(options: ConnectOptions): Promise<IdGen> {
  checkConnectionKeys(options, CONNECT_KEYS);
  // Before connecting: a bad option is named even when Cassandra cannot be reached.
  validateName('keyspace', options.keyspace);
  checkAllocatorOptions(options);
  if (options.metrics !== undefined) resolveMetricsOptions(options.metrics);
  const opened = await openClient(options);
  try {
    const store = new CassandraStore(opened.client, options.keyspace, {
      ownsClient: opened.ownsClient,
      requestTimeoutMs: options.requestTimeoutMs,
    });
    const { keyspace, logger, callTimeoutMs, metrics } = options;
    return new IdGen({
      store,
      dc: opened.localDataCenter,
      keyspace,
      logger,
      callTimeoutMs,
      metrics,
    });
  } catch (err) {
    if (opened.ownsClient) await opened.client.shutdown().catch(() => undefined);
    throw err;
  }
}
