/**
 * An in-memory {@link IdStore} with the Cassandra adapter's semantics, for tests and benchmarks.
 *
 * Every call is atomic, as a Paxos round is. Several allocators ("processes", in any DCs) may
 * share one store: `dc` is an argument of every DC-level call, and {@link MemoryStore.close}
 * keeps the data.
 *
 * Fault injection: push a {@link Fault} onto {@link MemoryStore.faults}; the first fault that
 * matches a call's method (and `sequence`/`dc`, if given) fires and is used up after `times`
 * calls.
 */

import assert from 'node:assert/strict';

import { SequenceNotFoundError, StoreUnavailableError } from '../errors.js';
import { ascending } from '../order.js';
import type {
  CasOutcome,
  DcStamp,
  DcState,
  FirstGrant,
  Grant,
  GrantFound,
  GrantView,
  GrantsOverview,
  IdStore,
  NodeSettings,
  SequenceSettings,
  SizeSettings,
  StoreLevel,
  StoredSettings,
  DcUsageCounts,
  UsageCause,
  UsageDeltas,
} from './port.js';
import { USAGE_CAUSES, zeroUsageCounts } from './port.js';

/** The methods of the port. */
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
   * Runs when the fault fires, after a write it let through was applied and before the call
   * returns or throws; lets a test slip another process's write in between.
   */
  readonly onHit?: (() => void | Promise<void>) | undefined;
}

/**
 * The outcomes a conditional write can have on a real cluster besides the plain ones, each an
 * effect a {@link Fault} can inject:
 * - `rejected`: the write is not applied and reports `rejected`.
 * - `unknown-applied`: the write is applied if its condition holds, and reports `unknown` (a CAS
 *   timeout after the commit).
 * - `unknown-not-applied`: the write is not applied, and reports `unknown` (a CAS timeout before
 *   any replica accepted it).
 * - `applied-reported-rejected`: the write is applied if its condition holds, and reports
 *   `rejected` (a second Paxos round, by the coordinator's own contention loop or a driver retry,
 *   finished our proposal and then evaluated our condition against it).
 * - `applied-then-unavailable`: the write is applied if its condition holds, then the call throws
 *   {@link StoreUnavailableError} (Paxos v1: the commit failed with Unavailable after the
 *   proposal was accepted).
 * - `in-flight`: the write is not applied now and reports `unknown`; it stays accepted by a
 *   minority of replicas, and a later Paxos round on the partition commits it before doing its
 *   own work: the next read or write with `completesOn: 'read'` (the default: the re-read
 *   finishes it), only the next conditional write with `'write'` (the re-read's quorum missed
 *   the replica that accepted it, a later round's did not). With `'second-read'` (a grant batch),
 *   the next `readGrants` reads the latest grant without it and finishes it before reading
 *   GLOBAL: CassandraStore reads the two in separate Paxos rounds, whose quorums may differ.
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
 * - `slow-reply`: the call runs at once, and its reply waits for `until`: what it read or did
 *   reaches the caller after later calls may have changed the rows (replies of concurrent
 *   calls arrive in any order, as over a network).
 * - `missed-locally` (readSequence): a local read finds no settings, as a LOCAL_QUORUM read
 *   that reached none of the replicas of a create committed below a quorum of its DC (a create
 *   whose outcome a SERIAL read settled, and whose repair reached other DCs). A SERIAL read
 *   repairs it: it clears every such fault of the sequence.
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

/** A grant as applied; {@link MemoryStore.grantLog} keeps them in the order of all DCs. */
export interface GrantRecord {
  readonly sequence: string;
  readonly dc: string;
  readonly grant: Grant;
}

export interface MemoryStoreOptions {
  /**
   * Keyspace named in errors.
   * @default 'memory'
   */
  readonly keyspace?: string | undefined;
  /**
   * Delay of every call in milliseconds, as a network round trip would add.
   * @default 0 (calls still yield to other tasks once, as real I/O does)
   */
  readonly latencyMs?: number | undefined;
  /**
   * How many writes behind the latest a plain read of a DC state answers, as a local quorum
   * whose replicas missed the last commits would (a lag past the first write shows no state).
   * A Paxos round on the partition still sees the latest.
   * @default 0
   */
  readonly plainReadLag?: number | undefined;
  /**
   * The nodes {@link MemoryStore.readNodeSettings} reports, in any DCs (the store stands for the
   * whole cluster); what a node leaves out takes the default of {@link MemoryNode}.
   * @default one node in dc1 with `commitlog_sync: batch` and `paxos_variant: v2`
   */
  readonly nodeSettings?: readonly MemoryNode[] | undefined;
  /**
   * What {@link MemoryStore.readReplicaDcs} answers: the DCs of a NetworkTopologyStrategy
   * keyspace, or undefined for a keyspace of another strategy.
   * @default undefined (so a sequence created here gets no first ranges unless it names them)
   */
  readonly replicaDcs?: readonly string[] | undefined;
}

/**
 * A node as {@link MemoryStore.readNodeSettings} reports it: `host` and `dc`, and whatever a test
 * sets of the rest. Defaults: Cassandra 5.0.9, `commitlog_sync: batch`, `paxos_variant: v2`, no
 * other setting or JVM property, no idgen tables.
 */
export type MemoryNode = Pick<NodeSettings, 'host' | 'dc'> &
  Partial<Omit<NodeSettings, 'host' | 'dc'>>;

/** The level each method needs, as the Cassandra adapter reports it when unreachable. */
const LEVELS: Readonly<Record<StoreMethod, StoreLevel>> = {
  createSequence: 'serial',
  alterSequence: 'serial',
  readSequence: 'local',
  listSequences: 'local',
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

/** A sequence's grants partition: its settings, GLOBAL and every grant. */
interface SequenceRecord {
  settings: SequenceSettings;
  /** The op of the settings write (create or alter) that set `settings`. */
  settingsOp: string;
  /** The op of the create that made the sequence. */
  readonly incarnation: string;
  globalLast: bigint;
  /** Every grant of each DC, ascending by number. */
  readonly grants: Map<string, Grant[]>;
}

/**
 * A sequence's DC-state partitions, apart from its grants partition as in Cassandra: deleting
 * one by hand leaves the other ({@link MemoryStore.deleteRowsByHand}).
 */
interface StateRecord {
  readonly dcStates: Map<string, DcState>;
  /** Every DC state version ever written, per DC, so that a test can roll a DC back. */
  readonly dcHistory: Map<string, DcState[]>;
}

type CasFault = Extract<Fault, { effect: ConditionalEffect | 'missed-locally' }>;

/** A write accepted by a minority of replicas, which a later round commits (see `in-flight`). */
interface InFlightWrite {
  readonly completesOn: 'read' | 'write' | 'second-read';
  /** Applies the write if its condition holds. */
  readonly apply: () => boolean;
}

export class MemoryStore implements IdStore {
  /** Faults waiting for their calls; tests push, splice or empty it at will. */
  readonly faults: Fault[] = [];
  /** Calls per method since creation or {@link MemoryStore.resetCalls}, counted on entry. */
  readonly calls: Record<StoreMethod, number> = zeroCalls();
  /**
   * Injected faults that took effect, by `<op> <effect>`: a write applied under a fault that
   * reports it otherwise (`unknown-applied`, `applied-reported-rejected`,
   * `applied-then-unavailable`), or left in flight and applied by a later round (`in-flight`).
   * A fault whose write's condition failed changes nothing and is not counted: tests (the
   * simulation's coverage) require that their runs still reach these outcomes.
   */
  readonly faultsLanded = new Map<string, number>();
  /** Every grant applied, in order. */
  readonly grantLog: GrantRecord[] = [];

  private readonly sequences = new Map<string, SequenceRecord>();
  private readonly states = new Map<string, StateRecord>();
  /** In-flight writes by partition (`sequence` for grants, `sequence/dc` for DC states). */
  private readonly inFlight = new Map<string, InFlightWrite>();
  private readonly latencyMs: number;
  private readonly plainReadLag: number;
  private readonly keyspace: string;
  /** Usage counters by `sequence \0 dc`. */
  private readonly usage = new Map<string, Record<UsageCause, bigint>>();
  /** The nodes {@link MemoryStore.readNodeSettings} reports; tests may change them at will. */
  readonly nodes: MemoryNode[];
  /** What {@link MemoryStore.readReplicaDcs} answers; tests may change it at will. */
  replicaDcs: readonly string[] | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.latencyMs = options.latencyMs ?? 0;
    this.plainReadLag = options.plainReadLag ?? 0;
    this.keyspace = options.keyspace ?? 'memory';
    this.nodes = [...(options.nodeSettings ?? [{ host: 'memory:9042', dc: 'dc1' }])];
    this.replicaDcs = options.replicaDcs;
  }

  resetCalls(): void {
    Object.assign(this.calls, zeroCalls());
  }

  async createSequence(
    settings: SequenceSettings,
    op: string,
    firstGrants: readonly FirstGrant[] = [],
  ): Promise<CasOutcome<StoredSettings>> {
    const { fault, reply } = await this.enter('createSequence', settings.name);
    return this.replied(
      reply,
      this.conditional(
        fault,
        `settings/${settings.name}`,
        () => {
          if (this.sequences.has(settings.name)) return false;
          this.sequences.set(settings.name, {
            settings: Object.freeze({ ...settings }),
            settingsOp: op,
            incarnation: op,
            globalLast: firstGrants.at(-1)?.grant.max ?? settings.start - 1n,
            grants: new Map(
              firstGrants.map(({ grantee, grant }) => [grantee, [Object.freeze({ ...grant })]]),
            ),
          });
          return true;
        },
        () => this.storedSettings(settings.name),
      ),
    );
  }

  async readSequence(
    name: string,
    reading: 'local' | 'serial' = 'local',
  ): Promise<StoredSettings | undefined> {
    if (reading === 'serial') {
      for (let i = this.faults.length - 1; i >= 0; i--) {
        const f = this.faults[i]!;
        if (f.effect === 'missed-locally' && (f.sequence === undefined || f.sequence === name)) {
          this.faults.splice(i, 1);
        }
      }
    }
    const { fault, reply } = await this.enter('readSequence', name);
    // Only a serial read is a Paxos round: a plain read (LOCAL_QUORUM) completes nothing in flight.
    if (reading === 'serial') this.settleInFlight(`settings/${name}`, 'read');
    const missed = fault?.effect === 'missed-locally';
    return this.replied(reply, missed ? undefined : this.storedSettings(name));
  }

  async listSequences(): Promise<readonly SequenceSettings[]> {
    await this.enter('listSequences');
    return [...this.sequences.values()]
      .map((record) => record.settings)
      .sort((a, b) => ascending(a.name, b.name));
  }

  async alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>> {
    const { fault, reply } = await this.enter('alterSequence', name);
    return this.replied(
      reply,
      this.conditional(
        fault,
        `settings/${name}`,
        () => {
          const record = this.sequences.get(name);
          if (record === undefined || record.settingsOp !== expectedOp) return false;
          record.settings = Object.freeze({ ...record.settings, ...sizes });
          record.settingsOp = op;
          return true;
        },
        () => this.storedSettings(name),
      ),
    );
  }

  /** Test hook: stores `state` as `dc`'s state as it is, bypassing the protocol. */
  seedDcState(sequence: string, dc: string, state: DcState): void {
    const record = this.stateRecord(sequence);
    const row = Object.freeze({ ...state });
    record.dcStates.set(dc, row);
    record.dcHistory.set(dc, [...(record.dcHistory.get(dc) ?? []), row]);
  }

  /**
   * Test hook: deletes the sequence's rows as an operator might by hand, against the advice of
   * docs/operations.md: its grants partition (settings, GLOBAL and grants, as
   * `DELETE FROM idgen_grants WHERE sequence = ?`), and with `states` its DC-state rows too.
   */
  deleteRowsByHand(sequence: string, { states = false } = {}): void {
    this.sequences.delete(sequence);
    if (states) this.states.delete(sequence);
  }

  /**
   * Test hook: loses the last `writes` writes of `dc`'s state, as replicas that crash with
   * `commitlog_sync: periodic` lose what they acknowledged but had not synced. Removes the row
   * if no earlier version remains.
   */
  rollBackDcState(sequence: string, dc: string, writes = 1): void {
    const record = this.states.get(sequence);
    const history = record?.dcHistory.get(dc);
    assert(record !== undefined && history !== undefined, `no state of ${dc} to roll back`);
    history.splice(Math.max(0, history.length - writes));
    const previous = history.at(-1);
    if (previous === undefined) record.dcStates.delete(dc);
    else record.dcStates.set(dc, previous);
  }

  async readGrants(sequence: string, dc: string): Promise<GrantView> {
    const { reply } = await this.enter('readGrants', sequence, dc);
    const partition = `grants/${sequence}`;
    const split = this.inFlight.get(partition)?.completesOn === 'second-read';
    if (!split) this.settleInFlight(partition, 'read');
    const latest = this.sequences.get(sequence)?.grants.get(dc)?.at(-1);
    // The latest grant's round missed the batch in flight; GLOBAL's round finishes it.
    if (split) this.settleInFlight(partition, 'read');
    const record = this.sequences.get(sequence);
    if (record === undefined) throw new SequenceNotFoundError(sequence, this.keyspace);
    return this.replied(reply, { globalLast: record.globalLast, latest });
  }

  async readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined> {
    const { reply } = await this.enter('readGrantsLocal', sequence, dc);
    // A plain read completes no Paxos round: a write still in flight stays unseen.
    const record = this.sequences.get(sequence);
    return this.replied(
      reply,
      record && { globalLast: record.globalLast, latest: record.grants.get(dc)?.at(-1) },
    );
  }

  async grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>> {
    const { fault, reply } = await this.enter('grantRange', sequence, dc);
    const found = (): GrantFound => {
      const record = this.sequences.get(sequence);
      return {
        globalLast: record?.globalLast,
        grant: record?.grants.get(dc)?.find((g) => g.number === grant.number),
      };
    };
    return this.replied(
      reply,
      this.conditional(
        fault,
        `grants/${sequence}`,
        () => {
          const record = this.sequences.get(sequence);
          if (record === undefined || record.globalLast !== expectedGlobalLast) return false;
          const history = record.grants.get(dc) ?? [];
          // The grant row is inserted IF NOT EXISTS: a number the DC already has is refused.
          if (history.some((g) => g.number === grant.number)) return false;
          record.globalLast = grant.max;
          const stored = Object.freeze({ ...grant });
          // Kept ascending by number, as the Cassandra table's clustering order gives them.
          record.grants.set(
            dc,
            [...history, stored].sort((a, b) => a.number - b.number),
          );
          this.grantLog.push({ sequence, dc, grant: stored });
          return true;
        },
        found,
      ),
    );
  }

  /** Every read here is current, so both readings are the same. */
  async readGrantsOverview(sequence: string): Promise<GrantsOverview | undefined> {
    await this.enter('readGrantsOverview', sequence);
    const record = this.sequences.get(sequence);
    if (record === undefined) return undefined;
    const grants = new Map<string, readonly Grant[]>();
    for (const [dc, history] of record.grants) grants.set(dc, [...history]);
    return { globalLast: record.globalLast, grants };
  }

  async probeSerial(): Promise<void> {
    await this.enter('probeSerial');
  }

  async readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    const { reply } = await this.enter('readDcState', sequence, dc);
    this.settleInFlight(`state/${sequence}/${dc}`, 'read');
    return this.replied(reply, this.states.get(sequence)?.dcStates.get(dc));
  }

  async readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined> {
    const { reply } = await this.enter('readDcStateLocal', sequence, dc);
    // A plain read completes no Paxos round: a write still in flight stays unseen.
    const record = this.states.get(sequence);
    const state =
      this.plainReadLag === 0
        ? record?.dcStates.get(dc)
        : record?.dcHistory.get(dc)?.at(-1 - this.plainReadLag);
    return this.replied(reply, state);
  }

  async writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>> {
    assert.equal(next.version, (expected?.version ?? 0) + 1, 'next.version must be expected + 1');
    const { fault, reply } = await this.enter('writeDcState', sequence, dc);
    // As the Cassandra adapter's rejection returns it: the whole row after IF NOT EXISTS; the
    // columns of its conditions after an update, which name every column but the incarnation.
    const found = (): DcState | undefined => {
      const stored = this.states.get(sequence)?.dcStates.get(dc);
      if (stored === undefined || expected === undefined) return stored;
      return withIncarnation(stored, undefined);
    };
    return this.replied(
      reply,
      this.conditional(
        fault,
        `state/${sequence}/${dc}`,
        () => {
          // As in Cassandra, a state partition needs no settings row.
          const record = this.stateRecord(sequence);
          const stored = record.dcStates.get(dc);
          const holds =
            expected === undefined
              ? stored === undefined
              : stored?.version === expected.version && stored.op === expected.op;
          if (holds) {
            // As in Cassandra: the incarnation is written with the row's first write only.
            const row = Object.freeze(
              stored === undefined ? { ...next } : withIncarnation(next, stored.incarnation),
            );
            record.dcStates.set(dc, row);
            const history = record.dcHistory.get(dc) ?? [];
            history.push(row);
            record.dcHistory.set(dc, history);
          }
          return holds;
        },
        found,
      ),
    );
  }

  async readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>> {
    await this.enter('readDcStatesOf', sequence);
    const states = this.states.get(sequence)?.dcStates;
    return new Map(
      grantees.flatMap((dc) => {
        const state = states?.get(dc);
        return state === undefined ? [] : [[dc, state] as const];
      }),
    );
  }

  async readDcStatesOverview(sequence: string): Promise<ReadonlyMap<string, DcState>> {
    await this.enter('readDcStatesOverview', sequence);
    return new Map(this.sequences.has(sequence) ? this.states.get(sequence)?.dcStates : undefined);
  }

  async addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void> {
    await this.enter('addDcUsage', sequence, dc);
    const counts = { ...(this.usage.get(`${sequence}\u0000${dc}`) ?? zeroUsageCounts()) };
    for (const cause of USAGE_CAUSES) counts[cause] += BigInt(deltas[cause] ?? 0);
    this.usage.set(`${sequence}\u0000${dc}`, counts);
  }

  async readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts>> {
    await this.enter('readDcUsage', sequence);
    const result = new Map<string, DcUsageCounts>();
    for (const [key, counts] of [...this.usage].sort(([a], [b]) => ascending(a, b))) {
      const [name, dc] = key.split('\u0000') as [string, string];
      if (name === sequence) result.set(dc, { ...counts });
    }
    return result;
  }

  async readReplicaDcs(): Promise<readonly string[] | undefined> {
    await this.enter('readReplicaDcs');
    return this.replicaDcs === undefined ? undefined : [...this.replicaDcs];
  }

  async readNodeSettings(): Promise<readonly NodeSettings[]> {
    await this.enter('readNodeSettings');
    return this.nodes.map((node) => {
      const commitlogSync = 'commitlogSync' in node ? node.commitlogSync : 'batch';
      const paxosVariant = 'paxosVariant' in node ? node.paxosVariant : 'v2';
      // The settings map holds the two named fields too, as the Cassandra store's does.
      const settings = new Map(node.settings);
      if (commitlogSync !== undefined) settings.set('commitlog_sync', commitlogSync);
      if (paxosVariant !== undefined) settings.set('paxos_variant', paxosVariant);
      return {
        version: '5.0.9',
        properties: new Map(),
        tables: new Map(),
        ...node,
        commitlogSync,
        paxosVariant,
        settings,
      };
    });
  }

  private storedSettings(name: string): StoredSettings | undefined {
    const record = this.sequences.get(name);
    return (
      record && {
        settings: record.settings,
        op: record.settingsOp,
        incarnation: record.incarnation,
      }
    );
  }

  /** The sequence's DC-state partitions, made empty on first use. */
  private stateRecord(sequence: string): StateRecord {
    let record = this.states.get(sequence);
    if (record === undefined) {
      record = { dcStates: new Map(), dcHistory: new Map() };
      this.states.set(sequence, record);
    }
    return record;
  }

  /** Counts the call; the data stays, so other "processes" sharing the store go on working. */
  async close(): Promise<void> {
    await this.enter('close');
  }

  /**
   * Counts the call, waits its latency, runs `unavailable` and `delay` faults, arms a
   * `slow-reply` (whose gate the call's result then waits for); returns a CAS fault.
   */
  private async enter(
    op: StoreMethod,
    sequence?: string,
    dc?: string,
  ): Promise<{
    readonly fault: CasFault | undefined;
    readonly reply: Promise<unknown> | undefined;
  }> {
    this.calls[op]++;
    let reply: Promise<unknown> | undefined;
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    else await Promise.resolve();
    let delayed = false;
    for (;;) {
      const fault = this.takeFault(op, sequence, dc, delayed);
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

  private takeFault(
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

  /**
   * Runs one Paxos round of a conditional write on `partition`: first any write in flight there
   * is committed or superseded, then `write` (which applies itself iff its condition holds) runs
   * as the fault says.
   */
  private async conditional<Found>(
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
        this.inFlight.set(partition, {
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

  /** Holds a result until the call's `slow-reply` gate opens, if it has one. */
  private async replied<R>(
    reply: Promise<unknown> | undefined,
    result: R | Promise<R>,
  ): Promise<R> {
    const value = await result;
    if (reply !== undefined) await reply;
    return value;
  }

  /** A Paxos round on `partition` commits the write in flight there, if the round sees it. */
  private settleInFlight(partition: string, round: 'read' | 'write'): void {
    const pending = this.inFlight.get(partition);
    if (pending === undefined || (round === 'read' && pending.completesOn === 'write')) return;
    this.inFlight.delete(partition);
    pending.apply();
  }
}

function zeroCalls(): Record<StoreMethod, number> {
  return {
    createSequence: 0,
    readSequence: 0,
    listSequences: 0,
    alterSequence: 0,
    readGrants: 0,
    readGrantsLocal: 0,
    grantRange: 0,
    readGrantsOverview: 0,
    readDcState: 0,
    readDcStateLocal: 0,
    writeDcState: 0,
    readDcStatesOf: 0,
    readDcStatesOverview: 0,
    addDcUsage: 0,
    readDcUsage: 0,
    probeSerial: 0,
    readNodeSettings: 0,
    readReplicaDcs: 0,
    close: 0,
  };
}

/** `state` carrying `incarnation`, or no incarnation at all (not even an undefined one). */
function withIncarnation(state: DcState, incarnation: string | undefined): DcState {
  const row: { -readonly [K in keyof DcState]: DcState[K] } = { ...state };
  if (incarnation === undefined) delete row.incarnation;
  else row.incarnation = incarnation;
  return row;
}
