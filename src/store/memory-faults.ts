/**
 * The wire between a {@link MemoryStore}'s callers and its rows: each call is counted, waits its
 * latency and meets the first matching {@link Fault}; each conditional write is one Paxos round,
 * whose outcome the fault decides as a real cluster's could.
 */

import { StoreUnavailableError } from '../errors.js';
import type { CasOutcome, IdStore, StoreLevel } from './port.js';

export type StoreMethod = keyof IdStore;

/** The conditional writes whose outcome may be `rejected` or `unknown`. */
export type ConditionalMethod = 'grantRange' | 'writeDcState' | 'createSequence' | 'alterSequence';

interface FaultScope {
  /** Only calls for this sequence (and DC). @default any */
  readonly sequence?: string | undefined;
  readonly dc?: string | undefined;
  /** How many matching calls the fault affects; `Infinity` keeps it. @default 1 */
  times?: number | undefined;
  /** Runs when the fault fires, after a write it let through and before the call returns. */
  readonly onHit?: (() => void | Promise<void>) | undefined;
}

/**
 * A conditional write's outcome on a real cluster, besides the plain ones ("applied": if its
 * condition holds):
 * - `rejected`: not applied, reports `rejected`.
 * - `unknown-applied`: applied, reports `unknown` (a CAS timeout after the commit).
 * - `unknown-not-applied`: not applied, reports `unknown` (a timeout before any accept).
 * - `applied-reported-rejected`: applied, reports `rejected` (a later round finished ours).
 * - `applied-then-unavailable`: applied, then throws {@link StoreUnavailableError}.
 * - `in-flight`: not applied now, reports `unknown`; a later round commits it at the next read or
 *   write (`completesOn: 'read'`, the default), the next write only (`'write'`), or at
 *   `readGrants`'s second round (`'second-read'`).
 */
export type ConditionalEffect =
  | 'rejected'
  | 'unknown-applied'
  | 'unknown-not-applied'
  | 'applied-reported-rejected'
  | 'applied-then-unavailable'
  | 'in-flight';

/**
 * A fault for the next matching call(s):
 * - `unavailable`: throws {@link StoreUnavailableError} at the method's level (or `level`).
 * - a {@link ConditionalEffect}, for conditional writes.
 * - `delay`: the call waits for `until`, then runs.
 * - `slow-reply`: the call runs at once; its reply waits for `until`.
 * - `missed-locally` (readSequence): local reads find no settings until a SERIAL read.
 */
export type Fault = FaultScope &
  (
    | { readonly op: StoreMethod; readonly effect: 'unavailable'; readonly level?: StoreLevel }
    | {
        readonly op: ConditionalMethod;
        readonly effect: Exclude<ConditionalEffect, 'in-flight'>;
      }
    | {
        readonly op: ConditionalMethod;
        readonly effect: 'in-flight';
        readonly completesOn?: 'read' | 'write' | 'second-read' | undefined;
      }
    | { readonly op: StoreMethod; readonly effect: 'delay'; readonly until: Promise<unknown> }
    | { readonly op: StoreMethod; readonly effect: 'slow-reply'; readonly until: Promise<unknown> }
    | { readonly op: 'readSequence'; readonly effect: 'missed-locally' }
  );

/** A fault {@link FaultInjector.call} leaves for the method to apply. */
type CasFault = Extract<Fault, { effect: ConditionalEffect | 'missed-locally' }>;

/** The level each method's failures are reported at, as by the Cassandra store. */
const LEVELS: Readonly<Record<StoreMethod, StoreLevel>> = {
  createSequence: 'serial',
  readSequence: 'local',
  listSequences: 'local',
  alterSequence: 'serial',
  readGrants: 'serial',
  readGrantsLocal: 'local',
  grantRange: 'serial',
  readGrantsOverview: 'local',
  readDcState: 'local_serial',
  readDcStateLocal: 'local',
  writeDcState: 'local_serial',
  readDcStatesOf: 'local',
  readDcStatesOverview: 'local',
  addDcUsage: 'local',
  readDcUsage: 'local',
  probeSerial: 'serial',
  readNodeSettings: 'local',
  readReplicaDcs: 'local',
  close: 'local',
};

/** A write accepted by a minority of replicas (see `in-flight`). */
interface InFlightWrite {
  readonly completesOn: 'read' | 'write' | 'second-read';
  readonly apply: () => boolean;
}

/** The faults, call counts and writes in flight of one MemoryStore. */
export class FaultInjector {
  readonly faults: Fault[] = [];
  readonly calls: Record<StoreMethod, number> = zeroCalls();
  readonly faultsLanded = new Map<string, number>();
  readonly #inFlight = new Map<string, InFlightWrite>();

  constructor(private readonly latencyMs: number) {}

  resetCalls(): void {
    Object.assign(this.calls, zeroCalls());
  }

  /**
   * One call: counted, delayed, met by its faults; `run` gets the fault left for it (a CAS effect
   * or `missed-locally`), and its result waits for a `slow-reply` gate.
   * @throws StoreUnavailableError
   */
  async call<R = undefined>(
    op: StoreMethod,
    scope: { readonly sequence?: string; readonly dc?: string | undefined },
    run: (fault: CasFault | undefined) => R | Promise<R> = () => undefined as R,
  ): Promise<R> {
    this.calls[op]++;
    let reply: Promise<unknown> | undefined;
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    else await Promise.resolve();
    for (let delayed = false; ; delayed = true) {
      const fault = this.#take(op, scope.sequence, scope.dc, delayed);
      if (fault?.effect === 'slow-reply') {
        reply = fault.until;
      } else if (fault?.effect === 'delay') {
        await fault.onHit?.();
        await fault.until;
      } else if (fault?.effect === 'unavailable') {
        await fault.onHit?.();
        throw new StoreUnavailableError(fault.level ?? LEVELS[op], op, 'injected fault');
      } else {
        const value = await run(fault);
        await reply;
        return value;
      }
    }
  }

  /** A SERIAL read of `sequence`'s settings repairs every `missed-locally` fault of it. */
  repairMissedLocally(sequence: string): void {
    const missed = this.faults.filter(
      (f) => f.effect === 'missed-locally' && (f.sequence === undefined || f.sequence === sequence),
    );
    for (const fault of missed) this.faults.splice(this.faults.indexOf(fault), 1);
  }

  /** One Paxos round on `partition`: settles a write in flight, then `write` as `fault` says. */
  async conditional<Found>(
    fault: CasFault | undefined,
    partition: string,
    write: () => boolean,
    found: () => Found | undefined,
  ): Promise<CasOutcome<Found>> {
    this.settleInFlight(partition, 'write');
    if (fault === undefined) {
      return write() ? { kind: 'applied' } : { kind: 'rejected', found: found() };
    }
    const apply = () => {
      const applied = write();
      const key = `${fault.op} ${fault.effect}`;
      if (applied) this.faultsLanded.set(key, (this.faultsLanded.get(key) ?? 0) + 1);
      return applied;
    };
    if (fault.effect === 'in-flight') {
      this.#inFlight.set(partition, { completesOn: fault.completesOn ?? 'read', apply });
    } else if (fault.effect !== 'rejected' && fault.effect !== 'unknown-not-applied') {
      apply();
    }
    await fault.onHit?.();
    switch (fault.effect) {
      case 'applied-then-unavailable':
        throw new StoreUnavailableError(
          LEVELS[fault.op],
          fault.op,
          'injected fault: applied, then Unavailable',
        );
      case 'rejected':
      case 'applied-reported-rejected':
        return { kind: 'rejected', found: found() };
      default:
        return { kind: 'unknown', cause: new Error(`injected fault: ${fault.effect}`) };
    }
  }

  completesOnSecondRead(partition: string): boolean {
    return this.#inFlight.get(partition)?.completesOn === 'second-read';
  }

  settleInFlight(partition: string, round: 'read' | 'write'): void {
    const pending = this.#inFlight.get(partition);
    if (pending === undefined || (round === 'read' && pending.completesOn === 'write')) return;
    this.#inFlight.delete(partition);
    pending.apply();
  }

  #take(
    op: StoreMethod,
    sequence: string | undefined,
    dc: string | undefined,
    skipDelays: boolean,
  ): Fault | undefined {
    const index = this.faults.findIndex(
      (f) =>
        f.op === op &&
        (f.sequence === undefined || f.sequence === sequence) &&
        (f.dc === undefined || f.dc === dc) &&
        !(skipDelays && (f.effect === 'delay' || f.effect === 'slow-reply')),
    );
    const fault = this.faults[index];
    if (fault === undefined) return undefined;
    fault.times = (fault.times ?? 1) - 1;
    if (fault.times <= 0) this.faults.splice(index, 1);
    return fault;
  }
}

function zeroCalls(): Record<StoreMethod, number> {
  const zeros = Object.keys(LEVELS).map((method) => [method, 0]);
  return Object.fromEntries(zeros) as Record<StoreMethod, number>;
}
