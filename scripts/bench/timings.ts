/** The DC-state calls of an allocator instance, timed at its store. */
import type { IdStore } from '../../src/store/port.js';
import { TIMING_KEYS, type DcStateTimings, type Timing } from './results.js';
import { hrNow, sum } from './stats.js';

type Key = keyof DcStateTimings;

const byKey = (timing: (key: Key) => Timing): DcStateTimings =>
  Object.fromEntries(TIMING_KEYS.map((key) => [key, timing(key)])) as Record<Key, Timing>;

export const emptyTimings = (): DcStateTimings => addTimings([]);

export function addTimings(all: readonly DcStateTimings[]): DcStateTimings {
  return byKey((key) => ({
    count: sum(all.map((t) => t[key].count)),
    totalNs: sum(all.map((t) => t[key].totalNs)),
  }));
}

export function timingsBetween(before: DcStateTimings, after: DcStateTimings): DcStateTimings {
  return byKey((key) => ({
    count: after[key].count - before[key].count,
    totalNs: after[key].totalNs - before[key].totalNs,
  }));
}

export const meanNs = (timing: Timing): number =>
  timing.count > 0 ? timing.totalNs / timing.count : NaN;

/** `store` with its DC-state calls timed; a Proxy, so the port may grow without this file. */
export class TimedStore {
  private readonly totals = addTimings([]);
  /** When the last rejected write answered: the backoff runs to the next read or write. */
  private rejectedAt: number | undefined;
  readonly store: IdStore;

  constructor(inner: IdStore) {
    const record = (key: Key, ns: number): void => {
      const timing = this.totals[key] as { count: number; totalNs: number };
      timing.count++;
      timing.totalNs += ns;
    };
    const timedRead =
      (read: IdStore['readDcState']): IdStore['readDcState'] =>
      async (sequence, dc) => {
        const t0 = hrNow();
        if (this.rejectedAt !== undefined) record('backoffs', t0 - this.rejectedAt);
        this.rejectedAt = undefined;
        try {
          return await read(sequence, dc);
        } finally {
          record('reads', hrNow() - t0);
        }
      };
    const readDcState = timedRead((sequence, dc) => inner.readDcState(sequence, dc));
    const readDcStateLocal = timedRead((sequence, dc) => inner.readDcStateLocal(sequence, dc));
    const writeDcState: IdStore['writeDcState'] = async (sequence, dc, expected, next) => {
      const t0 = hrNow();
      if (this.rejectedAt !== undefined) record('backoffs', t0 - this.rejectedAt);
      this.rejectedAt = undefined;
      let key: Key = 'unknownWrites';
      try {
        const outcome = await inner.writeDcState(sequence, dc, expected, next);
        key = outcome.kind === 'applied' ? 'appliedWrites' : `${outcome.kind}Writes`;
        return outcome;
      } finally {
        const t1 = hrNow();
        record(key, t1 - t0);
        if (key === 'rejectedWrites') this.rejectedAt = t1;
      }
    };
    this.store = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'readDcState') return readDcState;
        if (property === 'readDcStateLocal') return readDcStateLocal;
        if (property === 'writeDcState') return writeDcState;
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  snapshot(): DcStateTimings {
    return addTimings([this.totals]);
  }
}
