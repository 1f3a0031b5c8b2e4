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
 * Every conditional write reports {@link CasOutcome}: `unknown` means a CAS timeout; the
 * allocator must re-read at the same level before it may use anything that write would give.
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
  /** How many IDs one grant gives a DC. */
  readonly dcRangeSize: bigint;
  /** How many IDs one process claims from its DC at a time. */
  readonly blockSize: number;
  /** Share of a range or block used before the next one is loaded, in (0, 1). */
  readonly threshold: number;
}

/** The changeable part of {@link SequenceSettings}. */
export type SequenceChanges = Partial<
  Pick<SequenceSettings, 'dcRangeSize' | 'blockSize' | 'threshold'>
>;

/** A range of IDs granted to one DC at SERIAL: `[min, max]`, grant number `number` (1, 2, …). */
export interface Grant {
  readonly number: number;
  readonly min: bigint;
  readonly max: bigint;
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
 * A DC's process-allocation state (the scheme's DC row), read and written at LOCAL_SERIAL.
 *
 * - `lastInteger`: highest ID handed to a process of this DC, in the reserved range
 *   (`reservedMin - 1` when none yet).
 * - reserved: the range blocks are claimed from; `reservedGrant` its grant number.
 * - preloaded: the next range. `installedGrant` is the newest grant installed here; a preloaded
 *   range exists iff `installedGrant === reservedGrant + 1`. Without one, preloaded equals
 *   reserved, as in the published scheme.
 * - `version` grows by one with every write: each write is conditional on it.
 * - `op`: id of the operation that wrote this version, so a writer can recognise its own write
 *   after a CAS timeout.
 */
export interface DcState {
  readonly lastInteger: bigint;
  readonly reservedMin: bigint;
  readonly reservedMax: bigint;
  readonly reservedGrant: number;
  readonly preloadedMin: bigint;
  readonly preloadedMax: bigint;
  readonly installedGrant: number;
  readonly version: number;
  readonly op: string;
}

/** Result of a conditional write. */
export type CasOutcome =
  | { readonly kind: 'applied' }
  /** The condition did not hold; nothing was written. */
  | { readonly kind: 'rejected' }
  /** CAS timeout: the write may or may not have been applied. Re-read at the same level. */
  | { readonly kind: 'unknown' };

/** Which consistency level a store failure happened at; SERIAL failures mean no new grants. */
export type StoreLevel = 'serial' | 'local_serial' | 'local';

/**
 * The storage port. Implementations: the Cassandra adapter and an in-memory store for tests.
 * Methods throw {@link StoreUnavailableError} (from errors.ts) when the level they need cannot be
 * reached; they never retry conditional writes themselves.
 */
export interface IdStore {
  /** Creates the sequence's settings and GLOBAL row; false if it already exists (nothing written). */
  createSequence(settings: SequenceSettings): Promise<boolean>;
  /** The sequence's settings, or undefined. Needs only the local DC. */
  readSequence(name: string): Promise<SequenceSettings | undefined>;
  /** Every sequence's settings, sorted by name. Needs only the local DC. */
  listSequences(): Promise<readonly SequenceSettings[]>;
  /** Changes sizes or threshold; false if the sequence does not exist. */
  alterSequence(name: string, changes: SequenceChanges): Promise<boolean>;

  /**
   * `dc`'s latest grant, then the GLOBAL row: two reads at SERIAL, in that order, so that
   * `globalLast` is never older than `latest` (docs/design.md, "Granting a DC range").
   */
  readGrants(sequence: string, dc: string): Promise<GrantView>;
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
  ): Promise<CasOutcome>;
  /** GLOBAL and every grant of every DC, read without Paxos at the local DC (may lag). */
  readGrantsOverview(sequence: string): Promise<GrantsOverview | undefined>;

  /** `dc`'s allocation state at LOCAL_SERIAL, or undefined before its first grant is installed. */
  readDcState(sequence: string, dc: string): Promise<DcState | undefined>;
  /**
   * Replaces `dc`'s state with `next` at LOCAL_SERIAL, applied only if the stored version is
   * `expectedVersion` (0: the row must not exist yet). `next.version` must be `expectedVersion + 1`.
   */
  writeDcState(
    sequence: string,
    dc: string,
    expectedVersion: number,
    next: DcState,
  ): Promise<CasOutcome>;
  /** Every DC's allocation state as the local DC's replicas see it, without Paxos (may lag). */
  readDcStatesOverview(sequence: string): Promise<ReadonlyMap<string, DcState>>;

  /** Releases connections the store owns. */
  close(): Promise<void>;
}
