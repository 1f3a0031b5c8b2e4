/**
 * What a simulated run leaves behind for the checker: what each handle's callers were given,
 * and the rows after every step that changed them. Nothing in it comes from asking the
 * allocator what it did, but for the white-box {@link History.heldLog} and one count for coverage
 * only ({@link Fired.undelivered}).
 */
import type { CheckSnapshot } from '../../../src/admin/check.js';
import type { RetiredState } from '../../../src/allocator/retire.js';
import type { ShardMoveReason } from '../../../src/allocator/shards.js';

/**
 * One call of a handle as its caller saw it. `issued` and `returned` are positions in one count
 * of events over the whole run, so calls can be ordered in real time: a call that returned
 * before another was issued happened before it.
 */
export interface CallRecord {
  readonly call: string;
  /**
   * How many IDs the call asked for, where it promises exactly that many or an error: take(n)
   * (one run) and nextIds(n). Undefined for calls of one ID.
   */
  readonly count?: number;
  readonly issued: number;
  /** Undefined while the call is pending. */
  returned: number | undefined;
  /** The IDs it returned, in order (a take's whole run); bigint whatever the handle's type. */
  ids: readonly bigint[];
  /** The error it rejected (or threw) with. */
  error?: unknown;
}

/** What callers of one handle (an instance: one Sequence handle of one process) were given. */
export interface HandleHistory {
  /** `p<slot>.<incarnation>/h<n>`, or `final-<dc>/h1` for the draws after the commands. */
  readonly name: string;
  readonly dc: string;
  /** Position in the count of events at which the handle was opened (see {@link RepairAt}). */
  readonly opened: number;
  /** A bigint handle; a number handle must refuse a domain past 2^53-1. */
  readonly bigint: boolean;
  readonly calls: CallRecord[];
  /** Its process died: calls still pending stay so for ever. */
  crashed: boolean;
}

/** The rows as they were after `step`, at position `event` of the calls' count of events. */
export interface RowsAt {
  readonly step: number;
  readonly event: number;
  readonly rows: CheckSnapshot;
}

/**
 * The unused IDs of one live handle's current and preloaded blocks (its buffer serving): IDs
 * its callers may still be given.
 */
export interface HeldRun {
  readonly by: string;
  readonly first: bigint;
  readonly last: bigint;
}

/** What every live, serving handle held unused after `step`, at position `event`. */
export interface HeldAt {
  readonly step: number;
  readonly event: number;
  readonly held: readonly HeldRun[];
}

/** A planned rollback that landed: `dc`'s state lost its last `writes` writes at `event`. */
export interface RollbackAt {
  readonly step: number;
  readonly event: number;
  readonly dc: string;
  readonly writes: number;
}

/**
 * The operator's repair of a rolled-back DC (model.ts, PlannedRepair), as it went: handles
 * opened after `completed` are the ones the repair promises something about.
 */
export interface RepairAt {
  /** The DC whose processes were stopped and whose ranges were retired. */
  readonly dc: string;
  readonly stop: 'close' | 'crash';
  /** Event at which the operator began stopping the DC's processes. */
  readonly stopped: number;
  /** Each run of retireDcRanges: what it retired, or what it threw. */
  readonly runs: RetireRun[];
  /** Event at which a run of retireDcRanges succeeded; undefined if none did. */
  completed: number | undefined;
}

export type RetireRun = { readonly retired: readonly RetiredState[] } | { readonly error: unknown };

/** A DC state as a Paxos round showed it: its stamp, or `none` (no row). */
export type StateShown = { readonly version: number; readonly op: string } | 'none';

/**
 * One call of a process on a grantee's DC state, as the wire between the process and the store
 * saw it (scheduled-store.ts): a read at LOCAL_SERIAL, or a conditional write. `sent` and
 * `replied` are positions in one count over the run ({@link History.stateCalls}).
 */
export interface StateCall {
  /** The process incarnation (`p<slot>.<incarnation>`, `final-<dc>`…). */
  readonly process: string;
  readonly grantee: string;
  readonly kind: 'read' | 'write';
  /** When the process sent it. */
  readonly sent: number;
  /** When its reply reached the process; undefined if none did (it died, or the run ended). */
  replied: number | undefined;
  /**
   * What the reply showed the process of the rows: a read's state; a write's new stamp if the
   * reply said it was applied (reported applied, or rejected with the write's own op found);
   * undefined otherwise (a failure, an unknown outcome, another writer's state).
   */
  shown: StateShown | undefined;
}

/** A process told its user (its logger) that `grantee`'s rows went back, at position `at`. */
export interface RollbackReport {
  readonly process: string;
  readonly grantee: string;
  readonly at: number;
}

/** How often the simulation's own commands and faults fired in a run, for coverage counts. */
export interface Fired {
  /** Pauses of a client that ran to their end. */
  pauses: number;
  /** Signals of next() and nextIds() calls fired while the call was still pending. */
  aborts: number;
  /** IDs live handles handed out in the drain at the end. */
  drained: number;
  /**
   * IDs nextIds() calls took and then failed with, handed to nobody: the sum of every handle's
   * `stats().waste.undelivered` at the end (no caller sees them; counted for coverage only).
   */
  undelivered: number;
  /** Rows found gone back, as logged (warn or error) by any process. */
  rollbacksLogged: number;
  /** The store's injected faults that took effect, by `<op> <effect>` (MemoryStore.faultsLanded). */
  faultsLanded: Record<string, number>;
  /**
   * Claims seen holding two or more writes of unknown fate at once (white-box, as the held-twice
   * oracle: the DC allocator's unresolved ops after each step; counted for coverage only).
   */
  unresolvedTwice: number;
}

export interface History {
  readonly handles: readonly HandleHistory[];
  /** Errors of calls that belong to no handle (alters, shutdowns). */
  readonly otherErrors: readonly { readonly call: string; readonly error: unknown }[];
  /**
   * The rows after every step that changed them, in order; the last entry is the rows at the
   * end, read after the last call returned.
   */
  readonly rowLog: readonly RowsAt[];
  /**
   * What live handles held unused after every step that changed it (a white-box look into each
   * handle's block buffer, the one thing here not seen by a caller).
   */
  readonly heldLog: readonly HeldAt[];
  /**
   * Every process's reads at LOCAL_SERIAL and conditional writes of DC states, in the order sent
   * (the operator's retire aside), with what their replies showed.
   */
  readonly stateCalls: readonly StateCall[];
  /** Every IDGEN_STATE_ROLLED_BACK a process logged, on the same count as {@link stateCalls}. */
  readonly rollbackReports: readonly RollbackReport[];
  /** The planned rollback, if it landed. */
  readonly rollback: RollbackAt | undefined;
  /** The operator's repair after it, if one was planned and began. */
  readonly repair: RepairAt | undefined;
  readonly fired: Readonly<Fired>;
  /** Moves of handles to another shard before their first block, by reason (their logs). */
  readonly shardMoves: Readonly<Record<ShardMoveReason, number>>;
  /** False if the step limit stopped the run before everything settled. */
  readonly settled: boolean;
  readonly steps: number;
  /** What ran at each step and what it gave, prefixed by the step. */
  readonly trace: readonly string[];
}
