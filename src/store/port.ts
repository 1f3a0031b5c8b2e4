/**
 * The port between the allocator and its storage: the grant level (SERIAL only) and the DC level
 * (LOCAL_SERIAL only), never mixed on one partition (docs/design.md).
 */

/** How the IDs of a sequence are bounded; `custom`: an explicit maximum. */
export type DomainName = 'int32' | 'safe53' | 'int63' | 'custom';

/** Settings every client of a sequence agrees on. */
export interface SequenceSettings {
  readonly name: string;
  readonly domain: DomainName;
  /** IDs lie in `[min, max]`; the first handed out is `start`. */
  readonly min: bigint;
  readonly max: bigint;
  readonly start: bigint;
  /** IDs per grant to a DC (the least, when grants follow the DC's rate). */
  readonly dcRangeSize: bigint;
  /** IDs per process claim (the least, when blocks adapt). */
  readonly blockSize: number;
  /** Share of a range or block used before the next one is loaded, in (0, 1). */
  readonly threshold: number;
  /** Above `blockSize`, blocks adapt so a process claims about once every `claimIntervalMs`. */
  readonly maxBlockSize: number;
  readonly claimIntervalMs: number;
  /** Above `dcRangeSize` (with `autonomySeconds > 0`), grants follow the DC's rate. */
  readonly maxDcRangeSize: bigint;
  /** Seconds a cut-off DC must keep serving at its rate; 0: fixed `dcRangeSize`. */
  readonly autonomySeconds: number;
  /** State partitions per DC; only grows. */
  readonly shards: number;
}

/** `op`: the write that last set the settings; `incarnation`: the create's op, never altered. */
export interface StoredSettings {
  readonly settings: SequenceSettings;
  readonly op: string;
  readonly incarnation: string | undefined;
}

export type SequenceChanges = Partial<SizeSettings>;

/** A table's settings that Paxos depends on (`gc_grace_seconds`, `default_time_to_live`). */
export interface TableSettings {
  readonly gcGraceSeconds: number;
  readonly defaultTtlSeconds: number;
}

/** A node's settings that safety depends on; one not read has `error` and empty maps. */
export interface NodeSettings {
  /** `address:port` */
  readonly host: string;
  readonly dc: string;
  readonly version: string | undefined;
  readonly commitlogSync: string | undefined;
  readonly paxosVariant: string | undefined;
  /** `system_views.settings` and `.system_properties`, and the idgen tables, by name. */
  readonly settings: ReadonlyMap<string, string>;
  readonly properties: ReadonlyMap<string, string>;
  readonly tables: ReadonlyMap<string, TableSettings>;
  readonly error?: string | undefined;
}

/* "DC" below, and every `dc` parameter, means a grantee: a DC or one of its shards (names.ts). */

/** IDs `[min, max]` granted to one DC at SERIAL as its grant `number` (1, 2, …). */
export interface Grant {
  readonly number: number;
  readonly min: bigint;
  readonly max: bigint;
}

/** Grant 1 of `grantee`, written with the sequence. */
export interface FirstGrant {
  readonly grantee: string;
  readonly grant: Grant;
}

/** `globalLast`: GLOBAL.last_integer, the highest ID granted (`start - 1` before any). */
export interface GrantView {
  readonly globalLast: bigint;
  readonly latest: Grant | undefined;
}

/** Every DC's grants (ascending by number) and GLOBAL, for status and check. */
export interface GrantsOverview {
  readonly globalLast: bigint;
  readonly grants: ReadonlyMap<string, readonly Grant[]>;
}

export interface DcStamp {
  readonly version: number;
  readonly op: string;
}

/**
 * A DC's allocation state, at LOCAL_SERIAL. `lastInteger` is in reserved (`reservedMin - 1` when
 * none claimed); preloaded exists iff `installedGrant === reservedGrant + 1`, else equals
 * reserved. `incarnation` is written by the first write only, undefined in a rejection's found.
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
 * A conditional write's result. `rejected`: condition false against `found` (undefined: no row),
 * maybe our own write; `unknown`: may be applied now or later, re-read at the same level.
 */
export type CasOutcome<Found> =
  | { readonly kind: 'applied' }
  | { readonly kind: 'rejected'; readonly found: Found | undefined }
  | { readonly kind: 'unknown'; readonly cause?: unknown };

/** What a rejected grant found: GLOBAL, and the DC's grant of the number asked. */
export interface GrantFound {
  readonly globalLast: bigint | undefined;
  readonly grant: Grant | undefined;
}

/** The changeable settings, which an alter writes together. */
export type SizeSettings = Omit<SequenceSettings, 'name' | 'domain' | 'min' | 'max' | 'start'>;

/** `local`: LOCAL_QUORUM, may lag; `consistent`: SERIAL and EACH_QUORUM, needs every DC. */
export type OverviewReading = 'local' | 'consistent';

/** Usage counter causes: IDs issued, wasted by cause, and `retired` (allocator/retire.ts). */
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
export type UsageDeltas = Readonly<Partial<Record<UsageCause, number>>>;
export type DcUsageCounts = Readonly<Record<UsageCause, bigint>>;

export function zeroUsageCounts(): Record<UsageCause, bigint> {
  return Object.fromEntries(USAGE_CAUSES.map((cause) => [cause, 0n])) as Record<UsageCause, bigint>;
}

/** Which consistency level a store failure happened at; SERIAL failures mean no new grants. */
export type StoreLevel = 'serial' | 'local_serial' | 'local';

/**
 * What the allocator needs of its storage. Reads throw StoreUnavailableError when their level
 * cannot be reached; conditional writes report failures as `unknown`, may throw, never retry.
 */
export interface ProtocolStore {
  /**
   * Creates settings, GLOBAL and `firstGrants` (contiguous from `start`) in one conditional
   * write; rejected with the stored settings if the sequence exists.
   */
  createSequence(
    settings: SequenceSettings,
    op: string,
    firstGrants?: readonly FirstGrant[],
  ): Promise<CasOutcome<StoredSettings>>;
  /** `serial` finishes any settings write in flight. */
  readSequence(name: string, reading?: 'local' | 'serial'): Promise<StoredSettings | undefined>;
  listSequences(): Promise<readonly SequenceSettings[]>;
  /**
   * Writes `sizes` with `op` if the settings' op is `expectedOp`, else rejected with the stored
   * settings, of which only `op` is surely what the round found.
   */
  alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>>;
  /** The DCs with replicas; undefined unless NetworkTopologyStrategy. */
  readReplicaDcs(): Promise<readonly string[] | undefined>;

  /** `dc`'s latest grant, then GLOBAL, at SERIAL (docs/design.md, "Granting a DC range"). */
  readGrants(sequence: string, dc: string): Promise<GrantView>;
  /**
   * The same in one LOCAL_QUORUM read; undefined before GLOBAL is here. Never proves that no later
   * grant exists (docs/design.md, "A DC's first range, granted at creation").
   */
  readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined>;
  /** Grants `grant` to `dc` if GLOBAL is `expectedGlobalLast` and grant `grant.number` is new. */
  grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>>;

  /** At LOCAL_SERIAL; undefined before `dc`'s first install. */
  readDcState(sequence: string, dc: string): Promise<DcState | undefined>;
  /** At LOCAL_QUORUM, maybe stale (docs/design.md, "Claiming a process block"). */
  readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined>;
  /**
   * Replaces `dc`'s state with `next` if its stamp is `expected` (undefined: no row); rejected
   * with the whole state found.
   */
  writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>>;
  /** At LOCAL_QUORUM, settings or not (settings-writes.ts). */
  readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>>;

  /** Plain counter writes: approximate, outside safety. */
  addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void>;

  close(): Promise<void>;
}

/** The reads of status, check, preflight and metrics; no ID depends on them. */
export interface AdminStore {
  readGrantsOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<GrantsOverview | undefined>;
  readDcStatesOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<ReadonlyMap<string, DcState>>;
  readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts> | undefined>;
  /** Resolves if a SERIAL round completes, on a partition no sequence uses. */
  probeSerial(): Promise<void>;
  /** The local DC's nodes, each asked itself. */
  readNodeSettings(): Promise<readonly NodeSettings[]>;
}

export interface IdStore extends ProtocolStore, AdminStore {}

/** Grants in ascending order of their numbers. */
export function byGrantNumber(a: Grant, b: Grant): number {
  return a.number - b.number;
}

/** Both stores' preconditions of {@link ProtocolStore.grantRange}. @throws RangeError */
export function checkGrant(grant: Grant): void {
  if (!Number.isInteger(grant.number) || grant.number < 1 || grant.max < grant.min) {
    throw new RangeError(
      `grantRange: grant ${grant.number} [${grant.min}, ${grant.max}] must be numbered 1, 2, … with min <= max`,
    );
  }
}

/** Both stores' precondition of {@link ProtocolStore.writeDcState}. @throws RangeError */
export function checkDcStateWrite(expected: DcStamp | undefined, next: DcState): void {
  if (next.version !== (expected?.version ?? 0) + 1) {
    throw new RangeError(
      `writeDcState: next.version must be expected + 1 (expected ${expected?.version ?? 0}, next ${next.version})`,
    );
  }
}
