/**
 * The DC state row of one sequence in one DC (or shard) at LOCAL_SERIAL, as one process reads and
 * writes it: every state read is checked against dc-state.ts's invariants and against the rows
 * this process saw before (watermarks.ts); every write is classified (cas.ts), stamped with the
 * incarnation, and noted if ours. A claim write of unknown fate is recognised here when a state a
 * later round shows carries its op.
 */

import { StoreUnavailableError } from '../errors.js';
import type { DcStamp, DcState } from '../store/port.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';
import type { DcContext } from './dc-context.js';
import { DcUsage, Rate } from './sizing.js';
import { stateWentBack, type Floor } from './watermarks.js';

/** What the plain-read guess returns when it shows no state and none was ever seen. */
export const NO_STATE = Symbol('no DC state');

/** The DC's rate is sampled over at least this long: reads come many a second. */
const DC_RATE_SAMPLE_MS = 1_000;

export class DcStateRow {
  /**
   * Those of `unresolvedOps` that a state a Paxos round showed since carries: committed by a
   * later round, the claim's own retry or this process's range install.
   */
  readonly committedOps = new Set<string>();
  /**
   * The op of the latest state write of this process shown to be ours. A give-back goes only on
   * the state that write left: `last_integer` at the end of our run proves nothing by itself,
   * since retire-ranges leaves it at its grant's end too, and a give-back on the retire's state
   * reopens IDs handed out before the rows went back.
   */
  lastOwnOp: string | undefined;
  /** The DC's claims as this process sees them in the states it reads, and their rate. */
  private readonly usage = new DcUsage();
  private readonly rate = new Rate(DC_RATE_SAMPLE_MS);

  /**
   * @param unresolvedOps ops of claim writes in flight whose outcome stayed unknown with the state
   *   unmoved when read back (dc-claims.ts fills it).
   */
  constructor(
    private readonly ctx: DcContext,
    readonly unresolvedOps: Set<string>,
  ) {}

  /**
   * The DC's claim rate in IDs/s, measured from the DC states this process read (sizing.ts);
   * undefined until two reads lay a second apart.
   */
  get dcRate(): number | undefined {
    return this.rate.perSecond;
  }

  /** A DC-state write conditional on `current`'s stamp, classified. */
  async write(current: DcState | undefined, next: DcState): Promise<CasResult<DcState>> {
    const { ctx } = this;
    ctx.assertRowsHeld();
    ctx.counters.lwtWrites++;
    const expected: DcStamp | undefined = current && { version: current.version, op: current.op };
    // Stamped here, the one place states are written; the store writes it with a row's first
    // write only, so a row keeps the incarnation of the process that opened it.
    const stamped: DcState = { ...next, incarnation: ctx.incarnation };
    const result = await runConditionalWrite<DcState>({
      write: () => ctx.store.writeDcState(ctx.sequence, ctx.dc, expected, stamped),
      judge: (found) => judgeStateWrite(found, next),
      reread: () => this.read(),
    });
    ctx.count(result);
    this.sight(result.found);
    if (isOurs(result.verdict)) {
      ctx.seen.raiseState(next);
      this.lastOwnOp = next.op;
    }
    return result;
  }

  /**
   * Notes a state a Paxos round showed that carries the op of a claim write whose outcome stayed
   * unknown: that write was committed, as the version after the state it was conditional on, so
   * its block is the claim's.
   */
  private sight(state: DcState | undefined): void {
    if (state !== undefined && this.unresolvedOps.has(state.op)) this.committedOps.add(state.op);
  }

  /** The DC state at LOCAL_SERIAL, checked. */
  async read(): Promise<DcState | undefined> {
    this.ctx.counters.localSerialReads++;
    const floor = this.ctx.seen.floor();
    const state = await this.ctx.store.readDcState(this.ctx.sequence, this.ctx.dc);
    this.sight(state);
    if (state !== undefined) return this.checked(floor, state);
    const wentBack = stateWentBack(floor, state);
    if (wentBack !== undefined) throw this.ctx.rolledBack(wentBack);
    return state;
  }

  /**
   * The plain-read guess: the DC state as one LOCAL_QUORUM read shows it, so that a claim's first
   * write needs no Paxos round before it. Safe because that write is conditional on the state's
   * version and op, which hold only on that very state: a stale guess costs a rejected write.
   * {@link NO_STATE} if it shows none where this process never saw one; undefined (read at
   * LOCAL_SERIAL instead) if the read failed or is older than what this process saw. A state shown
   * raises the marks (only commits reach the table), but one that went back is never taken for a
   * rollback: only a Paxos round can show that.
   */
  async guess(): Promise<DcState | typeof NO_STATE | undefined> {
    const floor = this.ctx.seen.floor();
    let state: DcState | undefined;
    try {
      state = await this.ctx.store.readDcStateLocal(this.ctx.sequence, this.ctx.dc);
    } catch (error) {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    }
    if (stateWentBack(floor, state) !== undefined) return undefined;
    if (state === undefined) return NO_STATE;
    this.ctx.checkState(state, {});
    this.observe(state);
    return state;
  }

  /**
   * A state a Paxos round showed (a read at LOCAL_SERIAL, or the round of a rejected write),
   * checked; `floor` is the marks taken before the read or the write was sent.
   * @throws {InvariantError} if it breaks an invariant.
   * @throws {StateRolledBackError} if it is older than a state seen before then.
   */
  checked(floor: Floor, state: DcState): DcState {
    this.ctx.checkState(state, {});
    const wentBack = stateWentBack(floor, state);
    if (wentBack !== undefined) throw this.ctx.rolledBack(wentBack);
    this.observe(state);
    return state;
  }

  /** Raises the marks and the DC's rate by a checked state that a read or a round showed. */
  private observe(state: DcState): void {
    this.ctx.seen.raiseState(state);
    this.usage.observe(state);
    this.rate.sample(this.usage.total, this.ctx.clock.now());
  }
}

/**
 * Whose write a DC-state stamp shows: ours if it carries our op; lost if another write took the
 * version ours was going to write (both were conditional on the same stamp, so ours can never
 * apply); otherwise unknown (ours may have been applied and overwritten since, or still be in
 * flight).
 */
export function judgeStateWrite(found: DcStamp | undefined, next: DcStamp): Judgement {
  if (found === undefined) return 'unknown';
  if (found.op === next.op) return 'ours';
  return found.version === next.version ? 'lost' : 'unknown';
}
