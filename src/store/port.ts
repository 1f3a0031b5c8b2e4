/**
 * The port between the allocator and its storage, in the domain's words. Two levels, never mixed
 * on one partition (docs/design.md): the grant level (GLOBAL row and every DC's immutable grant
 * rows; one partition per sequence, SERIAL only) and the DC level (a DC's allocation state; one
 * partition per sequence and DC, LOCAL_SERIAL only, written only from that DC).
 *
 * Every conditional write reports a {@link CasOutcome}. Neither `rejected` nor `unknown` proves
 * that nothing was written (a round can finish our proposal and then report our condition false;
 * a failed round can be committed by a later one): allocator/cas.ts classifies them.
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
   * How many state partitions (shards) each DC's claims spread over; only grows. Shard 0 is the
   * DC, shard k the grantee `dc/k` (names.ts), a DC of its own to the protocol (docs/design.md,
   * "Past one DC-state partition: shards").
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
   * The op of the create that made the sequence; no alter changes it. Tells a re-seeded
   * sequence's DC-state rows from those of an earlier one of the name.
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
  /** `address:port` */
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

/* "DC" below, and every `dc` parameter, means a grantee: a DC or one of its shards (names.ts). */

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

/** What identifies one write of a DC state: its version and the op written with it. */
export interface DcStamp {
  readonly version: number;
  readonly op: string;
}

/**
 * A DC's allocation state (the scheme's DC row), read and written at LOCAL_SERIAL.
 *
 * - `lastInteger`: highest ID handed to a process, in the reserved range (`reservedMin - 1`
 *   when none yet).
 * - reserved: the range blocks are claimed from, of grant `reservedGrant`.
 * - preloaded: the next range; exists iff `installedGrant === reservedGrant + 1`, else equals
 *   reserved.
 * - `version` grows by one with every write; each write is conditional on it and on `op`, the
 *   id that lets a writer recognise its own write after a timeout or a rejection.
 * - `incarnation`: written by the row's first write only; undefined in a rejected update's
 *   found state (its conditions do not name the column).
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
  /** Condition false against `found` (undefined: no row), which may be our own write. */
  | { readonly kind: 'rejected'; readonly found: Found | undefined }
  /**
   * The store cannot say (CAS timeout, Unavailable, a lost connection): the write may be applied
   * now or later. Re-read at the same level before using anything.
   */
  | { readonly kind: 'unknown'; readonly cause?: unknown };

/** What a rejected grant batch found: GLOBAL's value, and the DC's grant of the number asked. */
export interface GrantFound {
  readonly globalLast: bigint | undefined;
  readonly grant: Grant | undefined;
}

/** The changeable settings, which an alter writes together. */
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
  /** LOCAL_QUORUM: works inside a network partition; other DCs' rows may lag. */
  | 'local'
  /**
   * Cannot be stale: grants at SERIAL, DC states at EACH_QUORUM (which sees each DC's
   * LOCAL_QUORUM commits). Fails when a DC is unreachable.
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
 * What the allocator needs of its storage: settings, grants, DC states and usage counters. Reads
 * throw StoreUnavailableError when their level cannot be reached. Conditional writes report
 * failures as `unknown` (they may still be applied), may also throw, and are never retried by
 * the store.
 */
export interface ProtocolStore {
  /**
   * Creates the settings and GLOBAL row if no sequence of the name exists, else rejected with
   * the stored settings. `firstGrants` (contiguous from `start`) go in the same conditional write,
   * GLOBAL at the last one's end, so a sequence never exists without them nor they without it.
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
   * Writes `sizes` with `op` if the settings were last written by `expectedOp`, else rejected
   * with the stored settings (undefined: no sequence). Only a rejection's `op` is what the round
   * found; the rest may be read after it, so may belong to a later alter.
   */
  alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>>;
  /**
   * The DCs with replicas under NetworkTopologyStrategy, by name; undefined under any other
   * strategy.
   */
  readReplicaDcs(): Promise<readonly string[] | undefined>;

  /**
   * `dc`'s latest grant, then the GLOBAL row: two reads at SERIAL, in that order, so that
   * `globalLast` is never older than `latest` (docs/design.md, "Granting a DC range").
   */
  readGrants(sequence: string, dc: string): Promise<GrantView>;
  /**
   * `dc`'s latest grant and GLOBAL in one LOCAL_QUORUM read (no Paxos), or undefined before the
   * local DC has GLOBAL. Never proves that no later grant exists (docs/design.md, "A DC's first
   * range, granted at creation").
   */
  readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined>;
  /**
   * Grants `grant` to `dc` in one conditional batch at SERIAL, moving GLOBAL.last_integer to
   * `grant.max`, applied only if GLOBAL is still `expectedGlobalLast` and the DC has no grant of
   * that number (inserted IF NOT EXISTS, never changed). Callers number grants `installed + 1`.
   */
  grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>>;

  /** `dc`'s allocation state at LOCAL_SERIAL, or undefined before its first grant is installed. */
  readDcState(sequence: string, dc: string): Promise<DcState | undefined>;
  /**
   * `dc`'s state in one LOCAL_QUORUM read (no Paxos), maybe not the latest: a guess that a
   * claim's conditional write checks (docs/design.md, "Claiming a block").
   */
  readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined>;
  /**
   * Replaces `dc`'s state with `next` at LOCAL_SERIAL if the stored version and op are `expected`
   * (undefined: no row yet); `next.version` is `expected.version + 1`. Rejected with the whole
   * state found, which a losing claim goes on from. `next.incarnation` is written by the first
   * write only, so a process of another sequence of the name never changes it.
   */
  writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>>;
  /**
   * The states of `grantees` found in LOCAL_QUORUM reads, settings or not: rows an earlier
   * sequence of the name left (settings-writes.ts). May miss rows not yet replicated here.
   */
  readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>>;

  /**
   * Adds a process's issued and wasted counts to the DC's usage counters: plain counter writes,
   * outside every safety argument; a timed-out one may have counted, so totals are approximate.
   */
  addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void>;

  /** Releases connections the store owns. */
  close(): Promise<void>;
}

/** The reads of status, check, preflight and metrics; no ID depends on them. */
export interface AdminStore {
  /** GLOBAL and every grant of every DC, read as `reading` says (default `local`). */
  readGrantsOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<GrantsOverview | undefined>;
  /** Every DC's allocation state, read as `reading` says (default `local`). */
  readDcStatesOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<ReadonlyMap<string, DcState>>;
  /** Every DC's usage counters, read in the local DC; undefined when the table is missing. */
  readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts> | undefined>;
  /** Resolves if a SERIAL round completes, on a partition no sequence uses (never contends). */
  probeSerial(): Promise<void>;
  /**
   * The durability and Paxos settings of every node the client reaches, asked of each node; one
   * that cannot be read comes back with its `error`.
   */
  readNodeSettings(): Promise<readonly NodeSettings[]>;
}

/** The storage port: the Cassandra adapter and the in-memory store implement both halves. */
export interface IdStore extends ProtocolStore, AdminStore {}
