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
  /** Only calls for this sequence. @default any */
  readonly sequence?: string | undefined;
  /** Only calls for this DC. @default any */
  readonly dc?: string | undefined;
  /** How many matching calls the fault affects before it is removed; `Infinity` keeps it. @default 1 */
  times?: number | undefined;
  /**
   * Runs when the fault fires, after a write it let through and before the call returns, so a
   * test can slip another process's write in between.
   */
  readonly onHit?: (() => void | Promise<void>) | undefined;
}

/**
 * The outcomes a conditional write can have on a real cluster besides the plain ones ("applied
 * if its condition holds" is meant by "applied"):
 * - `rejected`: not applied, reports `rejected`.
 * - `unknown-applied`: applied, reports `unknown` (a CAS timeout after the commit).
 * - `unknown-not-applied`: not applied, reports `unknown` (a CAS timeout before any accept).
 * - `applied-reported-rejected`: applied, reports `rejected` (a second round, by the
 *   coordinator's contention loop or a driver retry, finished our proposal and then evaluated
 *   our condition against it).
 * - `applied-then-unavailable`: applied, then throws {@link StoreUnavailableError} (Paxos v1:
 *   the commit failed after the proposal was accepted).
 * - `in-flight`: not applied now, reports `unknown`; a minority accepted it, and a later round on
 *   the partition commits it first: the next read or write (`completesOn: 'read'`, the default),
 *   only the next conditional write (`'write'`: the re-read's quorum missed it), or, for a grant
 *   batch, the second of `readGrants`'s two rounds (`'second-read'`), whose quorums may differ.
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
 * - `unavailable`: throws {@link StoreUnavailableError} at the method's level (or `level`);
 *   nothing is read or written.
 * - a {@link ConditionalEffect}, for conditional writes.
 * - `delay`: the call waits for `until`, then runs (other faults may still match it).
 * - `slow-reply`: the call runs at once, its reply waits for `until` (replies arrive in any
 *   order, as over a network).
 * - `missed-locally` (readSequence): a local read finds no settings, as a LOCAL_QUORUM read that
 *   missed a create committed below its DC's quorum; a SERIAL read of the sequence clears it.
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

/** A fault a call returns with from {@link FaultInjector.enter}: its effect is the method's. */
export type CasFault = Extract<Fault, { effect: ConditionalEffect | 'missed-locally' }>;

/**
 * A call once through {@link FaultInjector.enter}: the fault for the method to apply, and the
 * `slow-reply` gate its result waits for ({@link replied}).
 */
export interface Entered {
  readonly fault: CasFault | undefined;
  readonly reply: Promise<unknown> | undefined;
}

/** The level each method needs, as the Cassandra adapter reports it when unreachable. */
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

/** A write accepted by a minority of replicas, which a later round commits (see `in-flight`). */
interface InFlightWrite {
  readonly completesOn: 'read' | 'write' | 'second-read';
  readonly apply: () => boolean;
}

/** The faults, call counts and writes in flight of one MemoryStore, which exposes the first three. */
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
   * Counts the call, waits its latency, runs `unavailable` and `delay` faults, arms a
   * `slow-reply`; returns a CAS fault for the call to apply.
   * @throws {StoreUnavailableError} for an `unavailable` fault.
   */
  async enter(op: StoreMethod, sequence?: string, dc?: string): Promise<Entered> {
    this.calls[op]++;
    let reply: Promise<unknown> | undefined;
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    else await Promise.resolve();
    let delayed = false;
    for (;;) {
      const fault = this.#take(op, sequence, dc, delayed);
      if (fault === undefined) return { fault: undefined, reply };
      if (fault.effect === 'delay' || fault.effect === 'slow-reply') {
        delayed = true;
        if (fault.effect === 'slow-reply') {
          reply = fault.until;
        } else {
          await fault.onHit?.();
          await fault.until;
        }
        continue;
      }
      if (fault.effect === 'unavailable') {
        await fault.onHit?.();
        throw new StoreUnavailableError(fault.level ?? LEVELS[op], op, 'injected fault');
      }
      return { fault, reply };
    }
  }

  /** A SERIAL read of `sequence`'s settings repairs every `missed-locally` fault of it. */
  repairMissedLocally(sequence: string): void {
    for (let i = this.faults.length - 1; i >= 0; i--) {
      const f = this.faults[i]!;
      if (f.effect === 'missed-locally' && (f.sequence === undefined || f.sequence === sequence)) {
        this.faults.splice(i, 1);
      }
    }
  }

  /**
   * One Paxos round of a conditional write on `partition`: any write in flight there is committed
   * or superseded first, then `write` runs as the fault says.
   * @throws {StoreUnavailableError} for `applied-then-unavailable`.
   */
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
    const landed = () => {
      const key = `${fault.op} ${fault.effect}`;
      this.faultsLanded.set(key, (this.faultsLanded.get(key) ?? 0) + 1);
    };
    switch (fault.effect) {
      case 'unknown-applied':
      case 'applied-reported-rejected':
      case 'applied-then-unavailable':
        if (write()) landed();
        break;
      case 'in-flight':
        this.#inFlight.set(partition, {
          completesOn: fault.completesOn ?? 'read',
          apply: () => {
            const applied = write();
            if (applied) landed();
            return applied;
          },
        });
        break;
      case 'rejected':
      case 'unknown-not-applied':
        break;
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

  /** Whether the write in flight on `partition` completes only on a grant read's second round. */
  completesOnSecondRead(partition: string): boolean {
    return this.#inFlight.get(partition)?.completesOn === 'second-read';
  }

  /** A Paxos round on `partition` commits the write in flight there, if the round sees it. */
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

/** `result`, held until the call's `slow-reply` gate opens if it has one. */
export async function replied<R>(
  reply: Promise<unknown> | undefined,
  result: R | Promise<R>,
): Promise<R> {
  const value = await result;
  if (reply !== undefined) await reply;
  return value;
}

function zeroCalls(): Record<StoreMethod, number> {
  return Object.fromEntries(Object.keys(LEVELS).map((method) => [method, 0])) as Record<
    StoreMethod,
    number
  >;
}
