/** An {@link Admin} over Cassandra, with a client per other DC for its virtual tables and rows. */

import type cassandra from 'cassandra-driver';

import {
  checkConnectionKeys,
  openClient,
  openClientInDc,
  type OpenedClient,
} from '../store/cassandra/driver-client.js';
import { CassandraStore } from '../store/cassandra/store.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import { Admin, type AdminOptions } from './admin.js';
import type { PreflightReport } from './preflight.js';

/**
 * Connects to Cassandra in the local DC for status, checks and preflight.
 * @throws {InvalidOptionError} for bad options or an unknown `localDataCenter`;
 *   {@link InvalidNameError} for a bad keyspace; {@link StoreUnavailableError} if unreachable.
 */
export async function openAdmin(options: AdminOptions): Promise<Admin> {
  checkConnectionKeys(options, []);
  const opened = await openClient(options);
  try {
    return adminOver(opened, options.keyspace, options.requestTimeoutMs);
  } catch (error) {
    if (opened.ownsClient) await opened.client.shutdown().catch(() => undefined);
    throw error;
  }
}

/** {@link Admin.preflight} over a client of its own. @throws as {@link openAdmin} */
export async function preflight(options: AdminOptions): Promise<PreflightReport> {
  const admin = await openAdmin(options);
  try {
    return await admin.preflight();
  } finally {
    await admin.close();
  }
}

/** `requestTimeoutMs` is passed again: each request sets its own. @throws {InvalidNameError} */
export function adminOver(
  opened: OpenedClient,
  keyspace: string,
  requestTimeoutMs?: number,
): Admin {
  const { client, ownsClient } = opened;
  const others = new OtherDcStores(client, keyspace, requestTimeoutMs);
  const store = new CassandraStore(client, keyspace, { ownsClient, requestTimeoutMs });
  return new Admin({
    store,
    dc: opened.localDataCenter,
    keyspace,
    hosts: () =>
      client.hosts
        .values()
        .map((host) => ({ address: host.address, dc: host.datacenter, up: host.isUp() })),
    nodeSettings: (dc) =>
      dc === opened.localDataCenter
        ? store.readNodeSettings()
        : others.storeIn(dc).then((there) => there.readNodeSettings()),
    statesInDc: async (dc, name) => {
      const reading = others.storeIn(dc).then((there) => there.readDcStatesOverview(name, 'local'));
      const states = await settleWithin(reading, OTHER_DC_READ_MS);
      if (states !== TIMED_OUT) return states;
      throw new Error(`no answer from ${dc} within ${OTHER_DC_READ_MS} ms`);
    },
    release: () => others.close(),
  });
}

/** How long status waits for another DC's rows before it shows them as not current. */
const OTHER_DC_READ_MS = 5_000;

/**
 * Stores over other DCs' clients, opened at first use and kept until `close()`, which does not
 * wait for a connect under way (one timeout per silent node): that client closes when it ends.
 */
class OtherDcStores {
  readonly #opening = new Map<string, Promise<CassandraStore>>();
  readonly #open = new Set<CassandraStore>();
  #closed = false;

  constructor(
    private readonly client: cassandra.Client,
    private readonly keyspace: string,
    private readonly requestTimeoutMs: number | undefined,
  ) {}

  storeIn(dc: string): Promise<CassandraStore> {
    if (this.#closed) return Promise.reject(new Error('the admin is closed'));
    const known = this.#opening.get(dc);
    if (known !== undefined) return known;
    const opening = openClientInDc(this.client, dc, { timeoutMs: OTHER_DC_READ_MS }).then(
      async (other) => {
        const { keyspace, requestTimeoutMs } = this;
        const store = new CassandraStore(other, keyspace, { ownsClient: true, requestTimeoutMs });
        if (this.#closed) {
          await store.close().catch(() => undefined);
          throw new Error(`the admin closed while connecting to ${dc}`);
        }
        this.#open.add(store);
        return store;
      },
    );
    this.#opening.set(dc, opening);
    opening.catch(() => {
      if (this.#opening.get(dc) === opening) this.#opening.delete(dc);
    });
    return opening;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const open = [...this.#open];
    this.#open.clear();
    this.#opening.clear();
    await Promise.all(open.map((store) => store.close().catch(() => undefined)));
  }
}
