/**
 * An in-memory {@link IdStore} with the Cassandra adapter's semantics, for tests and benchmarks.
 * Every call is atomic, as a Paxos round is. Allocators in any DCs may share one store; `close()`
 * keeps the data. Faults: push a {@link Fault} onto {@link MemoryStore.faults} (memory-faults.ts).
 */

import assert from 'node:assert/strict';

import { SequenceNotFoundError } from '../errors.js';
import { ascending } from '../order.js';
import {
  FaultInjector,
  type ConditionalMethod,
  type Fault,
  type StoreMethod,
} from './memory-faults.js';
import {
  checkDcStateWrite,
  byGrantNumber,
  checkGrant,
  USAGE_CAUSES,
  zeroUsageCounts,
  type CasOutcome,
  type DcStamp,
  type DcState,
  type DcUsageCounts,
  type FirstGrant,
  type Grant,
  type GrantFound,
  type GrantView,
  type GrantsOverview,
  type IdStore,
  type NodeSettings,
  type SequenceSettings,
  type SizeSettings,
  type StoredSettings,
  type UsageCause,
  type UsageDeltas,
} from './port.js';

/** A grant as applied; {@link MemoryStore.grantLog} keeps them in the order of all DCs. */
export interface GrantRecord {
  readonly sequence: string;
  readonly dc: string;
  readonly grant: Grant;
}

export interface MemoryStoreOptions {
  /** Keyspace named in errors. @default 'memory' */
  readonly keyspace?: string | undefined;
  /** Delay of every call in ms (calls always yield once, as real I/O does). @default 0 */
  readonly latencyMs?: number | undefined;
  /** How many writes behind the latest a plain DC-state read answers. @default 0 */
  readonly plainReadLag?: number | undefined;
  /** What `readNodeSettings()` reports. @default one node in dc1, as {@link MemoryNode} says */
  readonly nodeSettings?: readonly MemoryNode[] | undefined;
  /** What `readReplicaDcs()` answers; undefined: not NetworkTopologyStrategy. */
  readonly replicaDcs?: readonly string[] | undefined;
}

/** A node to report. Defaults: version 5.0.9, `commitlog_sync: batch`, `paxos_variant: v2`. */
export type MemoryNode = Pick<NodeSettings, 'host' | 'dc'> &
  Partial<Omit<NodeSettings, 'host' | 'dc'>>;

/** A sequence's grants partition; grants ascending by number. */
interface SequenceRecord {
  stored: StoredSettings;
  globalLast: bigint;
  readonly grants: Map<string, Grant[]>;
}

/** Every state each DC ever had, the last current, so a test can roll a DC back. */
type StateHistory = Map<string, DcState[]>;

export class MemoryStore implements IdStore {
  /** Faults waiting for their calls; tests may change it at will. */
  readonly faults: Fault[];
  /** Calls per method since creation or {@link MemoryStore.resetCalls}. */
  readonly calls: Record<StoreMethod, number>;
  /** Faults whose write was applied, by `<op> <effect>`. */
  readonly faultsLanded: Map<string, number>;
  readonly grantLog: GrantRecord[] = [];

  private readonly sequences = new Map<string, SequenceRecord>();
  private readonly states = new Map<string, StateHistory>();
  /** Its partitions: `settings/…`, `grants/…`, `state/…/…`. */
  private readonly wire: FaultInjector;
  private readonly plainReadLag: number;
  private readonly keyspace: string;
  private readonly usage = new Map<string, Map<string, Record<UsageCause, bigint>>>();
  /** Tests may change these two at will. */
  readonly nodes: MemoryNode[];
  replicaDcs: readonly string[] | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.wire = new FaultInjector(options.latencyMs ?? 0);
    this.faults = this.wire.faults;
    this.calls = this.wire.calls;
    this.faultsLanded = this.wire.faultsLanded;
    this.plainReadLag = options.plainReadLag ?? 0;
    this.keyspace = options.keyspace ?? 'memory';
    this.nodes = [...(options.nodeSettings ?? [{ host: 'memory:9042', dc: 'dc1' }])];
    this.replicaDcs = options.replicaDcs;
  }

  resetCalls(): void {
    this.wire.resetCalls();
  }

  async createSequence(
    settings: SequenceSettings,
    op: string,
    firstGrants: readonly FirstGrant[] = [],
  ): Promise<CasOutcome<StoredSettings>> {
    return this.conditional(
      { op: 'createSequence', sequence: settings.name, partition: `settings/${settings.name}` },
      () => {
        if (this.sequences.has(settings.name)) return false;
        this.sequences.set(settings.name, {
          stored: { settings: Object.freeze({ ...settings }), op, incarnation: op },
          globalLast: firstGrants.at(-1)?.grant.max ?? settings.start - 1n,
          grants: new Map(
            firstGrants.map(({ grantee, grant }) => [grantee, [Object.freeze({ ...grant })]]),
          ),
        });
        return true;
      },
      () => this.sequences.get(settings.name)?.stored,
    );
  }

  async readSequence(
    name: string,
    reading: 'local' | 'serial' = 'local',
  ): Promise<StoredSettings | undefined> {
    if (reading === 'serial') this.wire.repairMissedLocally(name);
    return this.wire.call('readSequence', { sequence: name }, (fault) => {
      // Only a serial read is a Paxos round: a plain read completes nothing in flight.
      if (reading === 'serial') this.wire.settleInFlight(`settings/${name}`, 'read');
      return fault?.effect === 'missed-locally' ? undefined : this.sequences.get(name)?.stored;
    });
  }

  async listSequences(): Promise<readonly SequenceSettings[]> {
    return this.wire.call('listSequences', {}, () =>
      [...this.sequences.values()]
        .map((record) => record.stored.settings)
        .sort((a, b) => ascending(a.name, b.name)),
    );
  }

  async alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>> {
    return this.conditional(
      { op: 'alterSequence', sequence: name, partition: `settings/${name}` },
      () => {
        const record = this.sequences.get(name);
        if (record === undefined || record.stored.op !== expectedOp) return false;
        const settings = Object.freeze({ ...record.stored.settings, ...sizes });
        record.stored = { ...record.stored, settings, op };
        return true;
      },
      () => this.sequences.get(name)?.stored,
    );
  }

  /** Test hook: stores `state` as `dc`'s state, bypassing the protocol. */
  seedDcState(sequence: string, dc: string, state: DcState): void {
    putDcState(this.stateHistory(sequence), dc, { ...state });
  }

  /** Test hook: deletes the grants partition (and with `states` the DC states) by hand. */
  deleteRowsByHand(sequence: string, { states = false } = {}): void {
    this.sequences.delete(sequence);
    if (states) this.states.delete(sequence);
  }

  /** Test hook: loses `dc`'s last `writes` writes, as `commitlog_sync: periodic` can. */
  rollBackDcState(sequence: string, dc: string, writes = 1): void {
    const history = this.states.get(sequence)?.get(dc);
    assert(history !== undefined, `no state of ${dc} to roll back`);
    history.splice(Math.max(0, history.length - writes));
  }

  async readGrants(sequence: string, dc: string): Promise<GrantView> {
    return this.wire.call('readGrants', { sequence, dc }, () => {
      const partition = `grants/${sequence}`;
      const split = this.wire.completesOnSecondRead(partition);
      if (!split) this.wire.settleInFlight(partition, 'read');
      const latest = this.sequences.get(sequence)?.grants.get(dc)?.at(-1);
      // The latest grant's round missed the batch in flight; GLOBAL's round finishes it.
      if (split) this.wire.settleInFlight(partition, 'read');
      const record = this.sequences.get(sequence);
      if (record === undefined) throw new SequenceNotFoundError(sequence, this.keyspace);
      return { globalLast: record.globalLast, latest };
    });
  }

  async readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined> {
    return this.wire.call('readGrantsLocal', { sequence, dc }, () => {
      const record = this.sequences.get(sequence);
      return record && { globalLast: record.globalLast, latest: record.grants.get(dc)?.at(-1) };
    });
  }

  async grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>> {
    checkGrant(grant);
    return this.conditional(
      { op: 'grantRange', sequence, dc, partition: `grants/${sequence}` },
      () => {
        const record = this.sequences.get(sequence);
        if (record === undefined || record.globalLast !== expectedGlobalLast) return false;
        const history = record.grants.get(dc) ?? [];
        if (history.some((g) => g.number === grant.number)) return false;
        record.globalLast = grant.max;
        const stored = Object.freeze({ ...grant });
        record.grants.set(dc, [...history, stored].sort(byGrantNumber));
        this.grantLog.push({ sequence, dc, grant: stored });
        return true;
      },
      (): GrantFound => {
        const record = this.sequences.get(sequence);
        return {
          globalLast: record?.globalLast,
          grant: record?.grants.get(dc)?.find((g) => g.number === grant.number),
        };
      },
    );
  }

  async readGrantsOverview(sequence: string): Promise<GrantsOverview | undefined> {
    return this.wire.call('readGrantsOverview', { sequence }, () => {
      const record = this.sequences.get(sequence);
      if (record === undefined) return undefined;
      const grants = new Map([...record.grants].map(([dc, history]) => [dc, [...history]]));
      return { globalLast: record.globalLast, grants };
    });
  }

  async probeSerial(): Promise<void> {
    await this.wire.call('probeSerial', {});
  }

  async readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    return this.wire.call('readDcState', { sequence, dc }, () => {
      this.wire.settleInFlight(`state/${sequence}/${dc}`, 'read');
      return this.dcState(sequence, dc);
    });
  }

  async readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined> {
    // A plain read completes no Paxos round: a write still in flight stays unseen.
    return this.wire.call('readDcStateLocal', { sequence, dc }, () =>
      this.dcState(sequence, dc, this.plainReadLag),
    );
  }

  async writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>> {
    checkDcStateWrite(expected, next);
    return this.conditional(
      { op: 'writeDcState', sequence, dc, partition: `state/${sequence}/${dc}` },
      () => {
        const history = this.stateHistory(sequence);
        const stored = history.get(dc)?.at(-1);
        const holds =
          expected === undefined
            ? stored === undefined
            : stored?.version === expected.version && stored.op === expected.op;
        // The incarnation is written with the row's first write only.
        if (holds) {
          putDcState(
            history,
            dc,
            stored === undefined ? { ...next } : withIncarnation(next, stored.incarnation),
          );
        }
        return holds;
      },
      // As Cassandra returns it: the whole row after IF NOT EXISTS; after an update, its
      // conditions' columns (all but the incarnation).
      () => {
        const stored = this.dcState(sequence, dc);
        return stored && expected ? withIncarnation(stored, undefined) : stored;
      },
    );
  }

  async readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>> {
    return this.wire.call('readDcStatesOf', { sequence }, () => this.dcStates(sequence, grantees));
  }

  async readDcStatesOverview(sequence: string): Promise<ReadonlyMap<string, DcState>> {
    return this.wire.call('readDcStatesOverview', { sequence }, () => {
      const dcs = this.sequences.has(sequence) ? this.states.get(sequence)?.keys() : undefined;
      return this.dcStates(sequence, [...(dcs ?? [])]);
    });
  }

  async addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void> {
    await this.wire.call('addDcUsage', { sequence, dc }, () => {
      const usage = this.usage.get(sequence) ?? new Map<string, Record<UsageCause, bigint>>();
      const counts = { ...(usage.get(dc) ?? zeroUsageCounts()) };
      for (const cause of USAGE_CAUSES) counts[cause] += BigInt(deltas[cause] ?? 0);
      this.usage.set(sequence, usage.set(dc, counts));
    });
  }

  async readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts>> {
    return this.wire.call('readDcUsage', { sequence }, () => {
      const usage = [...(this.usage.get(sequence) ?? [])].sort(([a], [b]) => ascending(a, b));
      return new Map(usage.map(([dc, counts]) => [dc, { ...counts }]));
    });
  }

  async readReplicaDcs(): Promise<readonly string[] | undefined> {
    return this.wire.call('readReplicaDcs', {}, () => this.replicaDcs && [...this.replicaDcs]);
  }

  async readNodeSettings(): Promise<readonly NodeSettings[]> {
    await this.wire.call('readNodeSettings', {});
    return this.nodes.map((node) => {
      const commitlogSync = 'commitlogSync' in node ? node.commitlogSync : 'batch';
      const paxosVariant = 'paxosVariant' in node ? node.paxosVariant : 'v2';
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

  private stateHistory(sequence: string): StateHistory {
    const history = this.states.get(sequence) ?? new Map<string, DcState[]>();
    this.states.set(sequence, history);
    return history;
  }

  private dcState(sequence: string, dc: string, writesBehind = 0): DcState | undefined {
    const history = this.states.get(sequence)?.get(dc);
    return history?.at(-1 - writesBehind);
  }

  private dcStates(sequence: string, dcs: readonly string[]): Map<string, DcState> {
    return new Map(
      dcs.flatMap((dc) => {
        const state = this.dcState(sequence, dc);
        return state === undefined ? [] : [[dc, state] as const];
      }),
    );
  }

  private async conditional<Found>(
    call: { op: ConditionalMethod; sequence: string; dc?: string; partition: string },
    write: () => boolean,
    found: () => Found | undefined,
  ): Promise<CasOutcome<Found>> {
    return this.wire.call(call.op, call, (fault) =>
      this.wire.conditional(fault, call.partition, write, found),
    );
  }

  async close(): Promise<void> {
    await this.wire.call('close', {});
  }
}

/** `state` carrying `incarnation`, or no incarnation at all (not even an undefined one). */
function withIncarnation(state: DcState, incarnation: string | undefined): DcState {
  const row: { -readonly [K in keyof DcState]: DcState[K] } = { ...state };
  if (incarnation === undefined) delete row.incarnation;
  else row.incarnation = incarnation;
  return row;
}

function putDcState(history: StateHistory, dc: string, row: DcState): void {
  history.set(dc, [...(history.get(dc) ?? []), Object.freeze(row)]);
}
