/** The naive baseline: one LOCAL_SERIAL compare-and-set per ID on one row (unique in one DC). */
import cassandra from 'cassandra-driver';

import type { BenchCluster } from './cluster.js';
import type { NaiveRun } from './results.js';
import { Histogram, latencySummary, hrNow } from './stats.js';

const { consistencies } = cassandra.types;
const Long = cassandra.types.Long;
const CAS = {
  prepare: true,
  consistency: consistencies.localQuorum,
  serialConsistency: consistencies.localSerial,
};
const SERIAL_READ = { prepare: true, consistency: consistencies.localSerial };
const SETUP_ATTEMPTS = 10;

/**
 * `clients` loops in the first DC sharing one driver pool; a rejection retries from the value it
 * returns, a timeout (unknown outcome) re-reads at LOCAL_SERIAL, leaving a gap at worst.
 */
export async function runNaive(
  cluster: BenchCluster,
  key: string,
  clients: number,
  durationMs: number,
): Promise<NaiveRun> {
  const client = cluster.client(cluster.dcs[0]!);
  const table = `"${cluster.keyspace}".naive_counter`;
  const update = `UPDATE ${table} SET v = ? WHERE k = ? IF v = ?`;
  const read = `SELECT v FROM ${table} WHERE k = ?`;
  const readRow = async (): Promise<InstanceType<typeof Long> | undefined> => {
    const row = (await client.execute(read, [key], SERIAL_READ)).first();
    return row === null ? undefined : (row.get('v') as InstanceType<typeof Long>);
  };
  // Setting up may time out too (LWTs on a busy machine): a row read back is as good as applied.
  const setUp = async <V>(step: () => Promise<V | undefined>): Promise<V> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await step();
        if (value !== undefined) return value;
        if (attempt >= SETUP_ATTEMPTS) throw new Error(`row ${key} of ${table} was not created`);
      } catch (error) {
        if (attempt >= SETUP_ATTEMPTS) throw error;
      }
    }
  };
  await setUp(async () => {
    try {
      await client.execute(
        `INSERT INTO ${table} (k, v) VALUES (?, ?) IF NOT EXISTS`,
        [key, Long.ZERO],
        CAS,
      );
    } catch {
      // Unknown outcome: the read below tells.
    }
    return readRow();
  });
  const readValue = (): Promise<InstanceType<typeof Long>> => setUp(readRow);
  const histogram = new Histogram();
  let ids = 0;
  let rejections = 0;
  let errors = 0;
  let measuring = false;
  const takeOne = async (known: InstanceType<typeof Long>): Promise<InstanceType<typeof Long>> => {
    let value = known;
    for (;;) {
      try {
        const row = (await client.execute(update, [value.add(1), key, value], CAS)).first();
        if (row.get('[applied]') === true) return value.add(1);
        if (measuring) rejections++;
        value = row.get('v') as InstanceType<typeof Long>;
      } catch {
        if (measuring) errors++;
        value = await readValue().catch(() => value);
      }
    }
  };
  // Every client takes one ID unmeasured first, so statements are prepared and pools open.
  const known = await Promise.all(
    Array.from({ length: clients }, async () => takeOne(await readValue())),
  );
  measuring = true;
  const start = hrNow();
  const end = start + durationMs * 1e6;
  await Promise.all(
    known.map(async (first) => {
      let value = first;
      for (let t0 = hrNow(); t0 < end; t0 = hrNow()) {
        value = await takeOne(value);
        histogram.record(hrNow() - t0);
        ids++;
      }
    }),
  );
  const seconds = (hrNow() - start) / 1e9;
  return { ids, seconds, rejections, errors, latency: latencySummary(histogram) };
}
