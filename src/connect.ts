/** {@link IdGen}, the allocator with metrics as its monitor, and `connect()` over Cassandra. */
import { DurabilityWatch } from './admin/durability-watch.js';
import { SYSTEM_CLOCK } from './allocator/clock.js';
import { resolveMetricsOptions, type MetricsOptions } from './metrics/options.js';
import { ProcessMetrics } from './metrics/process-metrics.js';
import {
  checkConnectionKeys,
  openClient,
  type ConnectionOptions,
} from './store/cassandra/driver-client.js';
import {
  checkBooleanOption,
  checkKeys,
  everyKeyOf,
  milliseconds,
  validateName,
} from './options.js';
import {
  checkAllocatorOptions,
  IdGen as Allocator,
  SHARED_ID_GEN_KEYS,
  type IdGenMonitorParts,
  type IdGenOptions as AllocatorOptions,
} from './allocator/id-gen.js';
import { CassandraStore } from './store/cassandra/store.js';

/** Options of {@link IdGen}: the allocator's own, with `metrics` in place of its monitor. */
export interface IdGenOptions extends Omit<AllocatorOptions, 'monitor' | 'claimGate'> {
  /** Prometheus metrics (prom-client); without it nothing is registered. @default undefined */
  readonly metrics?: MetricsOptions | undefined;
  /**
   * Ms between checks of this DC's nodes' settings (also at start and when a node comes up); while
   * one is unsafe no block is claimed from the DC (docs/operations.md). @default 60000
   */
  readonly durabilityCheckMs?: number | undefined;
  /**
   * Claim blocks even while a node of this DC runs settings under which a crash can hand out IDs
   * twice (e.g. `commitlog_sync: periodic`); the finding is still logged and measured.
   * @default false
   */
  readonly allowUnsafeCluster?: boolean | undefined;
}

const DURABILITY_CHECK_MS = 60_000;

const ID_GEN_KEYS = everyKeyOf<IdGenOptions>()([
  ...SHARED_ID_GEN_KEYS,
  'metrics',
  'durabilityCheckMs',
  'allowUnsafeCluster',
]);

/** No field: IdGen stays the allocator's type. */
const WATCHES = new WeakMap<IdGen, DurabilityWatch>();

/** Unique integer IDs from sequences shared by every DC; built by {@link connect}. */
export class IdGen extends Allocator {
  /**
   * @throws {InvalidOptionError} for a bad option, or a `metrics.registry` holding one of
   * idgen-cass's metric names as another kind; {@link InvalidNameError} for a bad `dc`/`keyspace`.
   */
  constructor(options: IdGenOptions) {
    checkKeys(options, ID_GEN_KEYS);
    const { metrics, durabilityCheckMs, allowUnsafeCluster, ...allocator } = options;
    const everyMs = checkDurabilityOptions({ durabilityCheckMs, allowUnsafeCluster });
    let processMetrics: ProcessMetrics | undefined;
    // Called after the allocator checked its other options.
    const monitor =
      metrics === undefined
        ? undefined
        : (parts: IdGenMonitorParts) =>
            (processMetrics = new ProcessMetrics({
              options: resolveMetricsOptions(metrics),
              ...parts,
            }));
    const watch = new DurabilityWatch({
      store: options.store,
      dc: options.dc,
      clock: options.clock ?? SYSTEM_CLOCK,
      logger: options.logger,
      everyMs,
      allowUnsafe: allowUnsafeCluster === true,
      onChecked: (unsafeNodes) => processMetrics?.unsafeNodes(unsafeNodes),
    });
    super({ ...allocator, monitor, claimGate: () => watch.admit() });
    // Only once every option passed: a refused one leaves nothing running.
    watch.start();
    WATCHES.set(this, watch);
  }

  /** Also stops the watch. */
  override async close(): Promise<void> {
    const closing = super.close();
    await WATCHES.get(this)?.close();
    await closing;
  }
}

function checkDurabilityOptions(
  options: Pick<IdGenOptions, 'durabilityCheckMs' | 'allowUnsafeCluster'>,
): number {
  checkBooleanOption('allowUnsafeCluster', options.allowUnsafeCluster);
  return milliseconds('durabilityCheckMs', options.durabilityCheckMs, DURABILITY_CHECK_MS, true);
}

const CONNECT_KEYS = [
  'logger',
  'callTimeoutMs',
  'metrics',
  'durabilityCheckMs',
  'allowUnsafeCluster',
] as const;
type ConnectKey = (typeof CONNECT_KEYS)[number];

/** Where to connect, and some of the allocator's options. */
export type ConnectOptions = ConnectionOptions & Pick<IdGenOptions, ConnectKey>;

/**
 * Connects to Cassandra in this process's datacenter and returns the allocator, which watches
 * the settings of the DC's nodes from then on ({@link IdGenOptions.durabilityCheckMs}).
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
  checkDurabilityOptions(options);
  if (options.metrics !== undefined) resolveMetricsOptions(options.metrics);
  const opened = await openClient(options);
  try {
    const { keyspace, requestTimeoutMs } = options;
    const { ownsClient, localDataCenter: dc } = opened;
    const store = new CassandraStore(opened.client, keyspace, { ownsClient, requestTimeoutMs });
    const given = Object.fromEntries(CONNECT_KEYS.map((key) => [key, options[key]]));
    const ids = new IdGen({ ...(given as Pick<ConnectOptions, ConnectKey>), store, dc, keyspace });
    WATCHES.get(ids)?.follow(opened.client);
    return ids;
  } catch (err) {
    if (opened.ownsClient) await opened.client.shutdown().catch(() => undefined);
    throw err;
  }
}
