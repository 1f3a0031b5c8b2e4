/**
 * The narrow port between the allocator and its storage, in the domain's words.
 *
 * Two levels, never mixed on one partition (docs/design.md):
 * - the **grant level** (GLOBAL row + every grant ever made to a DC, one immutable row each):
 *   one partition per sequence, touched only at SERIAL. Granting a DC range moves GLOBAL's
 *   `last_integer` and inserts the DC's numbered grant row together in one conditional batch.
 * - the **DC level** (a DC's process-allocation state): one partition per sequence and DC,
 *   touched only at LOCAL_SERIAL, and only by clients whose local DC is that DC.
 *
 * Every conditional write reports a {@link CasOutcome}. Neither `rejected` nor `unknown` proves
 * that nothing was written: a Paxos round can finish our proposal and then report our condition
 * false against it, and a timed-out or failed round can still be committed by a later one. The
 * allocator classifies outcomes in one place (allocator/cas.ts) before it uses anything.
 */

/** How the IDs of a sequence are bounded. `custom` means an explicit maximum was given. */
export type DomainName = 'int32' | 'safe53' | 'int63' | 'custom';

/** Settings every client of a sequence agrees on; stored once, when the sequence is created. */
export interface SequenceSettings {
  readonly name: string;
  readonly domain: DomainName;
  /** Smallest ID the sequence may ever hand out. */
  readonly min: bigint;
  /** Largest ID the sequence may ever hand out (inclusive). */
  readonly max: bigint;
  /** First ID handed out; `min <= start <= max`. */
  readonly start: bigint;
  /** How many IDs one grant gives a DC (the least, when grants follow the DC's rate). */
  readonly dcRangeSize: bigint;
  /** How many IDs one process claims from its DC at a time (the least, when blocks adapt). */
  readonly blockSize: number;
  /** Share of a range or block used before the next one is loaded, in (0, 1). */
  readonly threshold: number;
  /**
   * The most IDs one block may hold. Above `blockSize`, each process sizes its blocks from its
   * own draw rate so that it claims about once every `claimIntervalMs`; equal to it, blocks have
   * the fixed size `blockSize`.
   */
  readonly maxBlockSize: number;
  /** The time between one process's claims that adaptive blocks aim for, in ms. */
  readonly claimIntervalMs: number;
  /**
   * The most IDs one grant may give a DC; above `dcRangeSize` (with `autonomySeconds > 0`),
   * grants follow the DC's rate.
   */
  readonly maxDcRangeSize: bigint;
  /**
   * Seconds a DC cut off from the others must keep serving at its measured rate: each grant is
   * sized so that the IDs the DC holds last that long, within `[dcRangeSize, maxDcRangeSize]`.
   * 0: every grant has `dcRangeSize` IDs.
   */
  readonly autonomySeconds: number;
  /**
   * How many state partitions (shards) each DC's claims spread over. Each process claims from
   * one shard, picked at random when it opens the sequence and kept from its first block on
   * unless that shard is spent (before it, a claim may move: docs/design.md, "Past one DC-state
   * partition: shards"); shard 0 is the DC itself, shard k > 0 the grantee `dc/k` (names.ts),
   * which the protocol treats as a DC of its own: its own state partition and its own chain of
   * grants. Only grows.
   */
  readonly shards: number;
}

/**
 * The settings as stored, with the id of the write (create or alter) that last set them: a
 * writer recognises its own write by it, and an alter is conditional on it.
 */
export interface StoredSettings {
  readonly settings: SequenceSettings;
  readonly op: string;
  /**
   * The op of the create that made the sequence, which no alter changes; undefined for a
   * sequence created by an older release. A sequence whose rows were deleted by hand and seeded
   * again has another, and the DC-state rows of the earlier one are told apart by it.
   */
  readonly incarnation: string | undefined;
}

/** The changeable part of {@link SequenceSettings}. */
export type SequenceChanges = Partial<SizeSettings>;

/** A table's settings that Paxos depends on, as one node's schema holds them. */
export interface TableSettings {
  /** `gc_grace_seconds`: with `paxos_state_purging: gc_grace` also how long Paxos state is kept. */
  readonly gcGraceSeconds: number;
  /** `default_time_to_live`: above 0, every row the protocol writes expires after that long. */
  readonly defaultTtlSeconds: number;
}

/**
 * A node's settings that the safety argument depends on, read from the node itself (virtual
 * tables answer for their coordinator only). A node that could not be read has `error` set and
 * empty maps.
 */
export interface NodeSettings {
  /** `address:port` of the node. */
  readonly host: string;
  readonly dc: string;
  /** Cassandra's release, as the node announces it (e.g. `5.0.8`); undefined if unknown. */
  readonly version: string | undefined;
  /** `commitlog_sync`: `batch` or `group` sync before acknowledging; `periodic` does not. */
  readonly commitlogSync: string | undefined;
  /** `paxos_variant`: `v1` or `v2` (or a `*_without_linearizable_*` variant). */
  readonly paxosVariant: string | undefined;
  /** Every setting read from `system_views.settings`, by name (the two above included). */
  readonly settings: ReadonlyMap<string, string>;
  /** JVM system properties read from `system_views.system_properties`, by name; unset ones are absent. */
  readonly properties: ReadonlyMap<string, string>;
  /** The keyspace's idgen tables as the node's schema has them, by table name; empty before `init`. */
  readonly tables: ReadonlyMap<string, TableSettings>;
  /** Why the node could not be read; undefined when it was. */
  readonly error?: string | undefined;
}

/*
 * "DC" below, and every `dc` parameter, means a grantee: a DC or one of its shards (`dc1/3`,
 * names.ts). The protocol treats each the same way; only the check that a state partition is
 * written from its own DC looks at the DC part of the name.
 */

/** A range of IDs granted to one DC at SERIAL: `[min, max]`, grant number `number` (1, 2, …). */
export interface Grant {
  readonly number: number;
  readonly min: bigint;
  readonly max: bigint;
}

/** Grant 1 of `grantee` (a DC, or a shard of one), written when the sequence is created. */
export interface FirstGrant {
  readonly grantee: string;
  readonly grant: Grant;
}

/** The grant level as seen by one DC, read at SERIAL. */
export interface GrantView {
  /** GLOBAL.last_integer: the highest ID granted to any DC (`start - 1` before the first grant). */
  readonly globalLast: bigint;
  /** The DC's latest grant, or undefined before its first one. */
  readonly latest: Grant | undefined;
}

/** The grant level of a whole sequence (every DC), read without Paxos, for status and check. */
export interface GrantsOverview {
  readonly globalLast: bigint;
  /** Every grant of each DC that has one, ascending by number (1, 2, …). */
  readonly grants: ReadonlyMap<string, readonly Grant[]>;
}

/**
 * What identifies one write of a DC state: its version and the operation id written with it. A
 * rejected DC-state write returns the stamp the round found.
 */
export interface DcStamp {
  readonly version: number;
  readonly op: string;
}

/**
 * A DC's process-allocation state (the scheme's DC row), read and written at LOCAL_SERIAL.
 *
 * - `lastInteger`: highest ID handed to a process of this DC, in the reserved range
 *   (`reservedMin - 1` when none yet).
 * - reserved: the range blocks are claimed from; `reservedGrant` its grant number.
 * - preloaded: the next range. `installedGrant` is the newest grant installed here; a preloaded
 *   range exists iff `installedGrant === reservedGrant + 1`. Without one, preloaded equals
 *   reserved, as in the published scheme.
 * - `version` grows by one with every write: each write is conditional on it (and on `op`).
 * - `op`: id of the operation that wrote this version, so a writer can recognise its own write
 *   after a CAS timeout or a rejection.
 * - `incarnation`: the {@link StoredSettings.incarnation} of the sequence loaded by the process
 *   that wrote the row first; later writes leave it (see {@link IdStore.writeDcState}). Undefined
 *   in rows an older release opened, and in a rejected update's found state (its conditions do
 *   not name the column).
 */
export interface DcState extends DcStamp {
  readonly incarnation?: string | undefined;
  readonly lastInteger: bigint;
  readonly reservedMin: bigint;
  readonly reservedMax: bigint;
  readonly reservedGrant: number;
  readonly preloadedMin: bigint;
  readonly preloadedMax: bigint;
  readonly installedGrant: number;
}

/**
 * Result of a conditional write, as the store saw it. `Found` is what the round read when it
 * evaluated the condition and found it false.
 */
export type CasOutcome<Found> =
  | { readonly kind: 'applied' }
  /**
   * The condition was false when the round evaluated it, against `found` (undefined: no row).
   * Our own write may still be what made it false: compare `found` with what we wrote.
   */
  | { readonly kind: 'rejected'; readonly found: Found | undefined }
  /**
   * The store cannot say (CAS timeout, Unavailable after the proposal, a lost connection): the
   * write may be applied now or later. Re-read at the same level before using anything.
   */
  | { readonly kind: 'unknown'; readonly cause?: unknown };

/** What a rejected grant batch found: GLOBAL's value, and the DC's grant of the number asked. */
export interface GrantFound {
  readonly globalLast: bigint | undefined;
  readonly grant: Grant | undefined;
}

/** The changeable settings as they are stored; an alter is conditional on all of them. */
export type SizeSettings = Pick<
  SequenceSettings,
  | 'dcRangeSize'
  | 'blockSize'
  | 'threshold'
  | 'maxBlockSize'
  | 'claimIntervalMs'
  | 'maxDcRangeSize'
  | 'autonomySeconds'
  | 'shards'
>;

/** How fresh an overview read must be. */
export type OverviewReading =
  /**
   * Plain reads at the local DC (LOCAL_QUORUM): work inside a partition and see what the local
   * DC committed; other DCs' rows may lag.
   */
  | 'local'
  /**
   * Reads that cannot be stale: grants at SERIAL, DC states at EACH_QUORUM (a quorum in every
   * DC, so the DC's own LOCAL_QUORUM commits are seen). Fail when a DC is unreachable.
   */
  | 'consistent';

/**
 * What a process reports to its DC's usage counters: IDs issued, and IDs wasted by cause; and
 * `retired`: the IDs a `retire-ranges` left as a gap (allocator/retire.ts).
 */
export const USAGE_CAUSES = [
  'issued',
  'unknownOutcome',
  'takeSkipped',
  'notReturned',
  'dropped',
  'refused',
  'undelivered',
  'retired',
] as const;
export type UsageCause = (typeof USAGE_CAUSES)[number];
/** Non-negative increments; causes left out add nothing. */
export type UsageDeltas = Readonly<Partial<Record<UsageCause, number>>>;
/** A DC's counters: every cause, 0 where nothing was reported. */
export type DcUsageCounts = Readonly<Record<UsageCause, bigint>>;

/** Counters of every cause at 0, for a store to add to. */
export function zeroUsageCounts(): Record<UsageCause, bigint> {
  return Object.fromEntries(USAGE_CAUSES.map((cause) => [cause, 0n])) as Record<UsageCause, bigint>;
}

/** Which consistency level a store failure happened at; SERIAL failures mean no new grants. */
export type StoreLevel = 'serial' | 'local_serial' | 'local';

/**
 * The storage port. Implementations: the Cassandra adapter and an in-memory store for tests.
 * Reads throw {@link StoreUnavailableError} (from errors.ts) when the level they need cannot be
 * reached. Conditional writes report failures as `unknown` (they may still have been applied),
 * may also throw, and are never retried by the store.
 */
export interface IdStore {
  /**
   * Creates the sequence's settings (written with `op`) and GLOBAL row if no sequence of that
   * name exists; rejected with the stored settings otherwise. `firstGrants` (grant 1 of some
   * grantees, contiguous from `start`) are written in the same conditional write, with GLOBAL
   * at the last one's end: a sequence never exists without them, nor they without it.
   */
  createSequence(
    settings: SequenceSettings,
    op: string,
    firstGrants?: readonly FirstGrant[],
  ): Promise<CasOutcome<StoredSettings>>;
  /**
   * The sequence's settings, or undefined. `local` reads (the default) need only the local DC;
   * `serial` reads finish any settings write in flight (they need SERIAL).
   */
  readSequence(name: string, reading?: 'local' | 'serial'): Promise<StoredSettings | undefined>;
  /** Every sequence's settings, sorted by name. Needs only the local DC. */
  listSequences(): Promise<readonly SequenceSettings[]>;
  /**
   * Writes `sizes` (with a fresh `op`) if the settings were last written by `expectedOp`;
   * rejected with the stored settings (undefined if the sequence does not exist). A rejection's
   * `op` is the one the round found; CassandraStore reads the rest of the settings at SERIAL
   * after the round (an UPDATE's rejection returns only its condition's column), so they can be
   * those of a later alter: only the `op` tells whose write the round found.
   */
  alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>>;

  /**
   * `dc`'s latest grant, then the GLOBAL row: two reads at SERIAL, in that order, so that
   * `globalLast` is never older than `latest` (docs/design.md, "Granting a DC range").
   */
  readGrants(sequence: string, dc: string): Promise<GrantView>;
  /**
   * `dc`'s latest grant and GLOBAL in one plain LOCAL_QUORUM read of their partition (no Paxos
   * round), or undefined if the local DC has no GLOBAL row yet. Shows only committed rows, and
   * GLOBAL at or above every grant shown; never a proof that no later grant exists
   * (docs/design.md, "A DC's first range, granted at creation").
   */
  readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined>;
  /**
   * Grants `grant` to `dc` in one conditional batch at SERIAL, applied only if GLOBAL.last_integer
   * is still `expectedGlobalLast` and the DC has no grant numbered `grant.number` yet (the grant
   * row is inserted IF NOT EXISTS and never changed). Moves GLOBAL.last_integer to `grant.max`.
   * Callers number a DC's grants `installed + 1`, which keeps each DC's grants a chain 1, 2, 3….
   */
  grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>>;
  /** GLOBAL and every grant of every DC, read as `reading` says (default `local`). */
  readGrantsOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<GrantsOverview | undefined>;
  /**
   * Resolves if a SERIAL round (Paxos over every DC) completes from the local DC, on a partition
   * no sequence uses, so that probing never contends with grants.
   */
  probeSerial(): Promise<void>;

  /** `dc`'s allocation state at LOCAL_SERIAL, or undefined before its first grant is installed. */
  readDcState(sequence: string, dc: string): Promise<DcState | undefined>;
  /**
   * `dc`'s allocation state in one plain LOCAL_QUORUM read (no Paxos round), or undefined if the
   * replicas asked have none. Shows only committed states, maybe not the latest: a guess for a
   * claim's conditional write, which its version and op check (docs/design.md, "Claiming a
   * block").
   */
  readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined>;
  /**
   * Replaces `dc`'s state with `next` at LOCAL_SERIAL, applied only if the stored version and op
   * are `expected` (undefined: the row must not exist yet). `next.version` must be
   * `expected.version + 1` (1 for the first write). Rejected with the whole state the round found
   * (undefined if none), which a claim that lost its race goes on from without another read.
   * `next.incarnation` is written with the first write only: an update leaves the row's, so a
   * process of another sequence of the name never changes it.
   */
  writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>>;
  /**
   * The allocation states of `grantees` (of any DC), each in one plain LOCAL_QUORUM read (no
   * Paxos round), whether or not the sequence's settings exist; only those found. What `seed`
   * looks for before it creates a sequence: state rows left behind by an earlier sequence of the
   * name, whose rows were deleted by hand (settings-writes.ts). May miss rows of another DC that
   * have not reached this one yet.
   */
  readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>>;
  /** Every DC's allocation state, read as `reading` says (default `local`). */
  readDcStatesOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<ReadonlyMap<string, DcState>>;

  /**
   * Adds what a process of `dc` issued and wasted since its last report to the DC's usage
   * counters: plain counter writes, outside every safety argument (no ID depends on them). A
   * write that timed out may have been counted, so totals are close, not exact.
   */
  addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void>;
  /**
   * Every DC's usage counters, as its processes reported them, read in the local DC; undefined
   * where the keyspace predates them (no table).
   */
  readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts> | undefined>;

  /**
   * The durability and Paxos settings of every node the store's client reaches (the Cassandra
   * store: the local DC's; the in-memory store: every node it was given), asked of each node. A
   * node that cannot be read is returned with its `error`; this never throws for one node.
   */
  readNodeSettings(): Promise<readonly NodeSettings[]>;

  /**
   * The DCs the keyspace keeps replicas in (a factor above 0 under NetworkTopologyStrategy), in
   * order of their names; undefined under any other strategy, where no DC is named.
   * A sequence created with adaptive blocks grants each of them its first ranges unless told.
   */
  readReplicaDcs(): Promise<readonly string[] | undefined>;

  /** Releases connections the store owns. */
  close(): Promise<void>;
}
