/**
 * One process's view of a DC state row at LOCAL_SERIAL: every read is checked against the
 * invariants (dc-state.ts) and the rows seen before (watermarks.ts); every write is classified
 * (cas.ts), stamped with the incarnation, and noted if ours. A claim write of unknown fate is
 * recognised here when a later round shows a state carrying its op.
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
  /** Those of `unresolvedOps` a later round showed committed. */
  readonly committedOps = new Set<string>();
  /**
   * The op of this process's latest state write shown ours. A give-back goes only on the state it
   * left: `last_integer` at the end of our run proves nothing, as retire-ranges leaves it at its
   * grant's end too, and a give-back there reopens IDs handed out before the rows went back.
   */
  lastOwnOp: string | undefined;
  private readonly usage = new DcUsage();
  private readonly rate = new Rate(DC_RATE_SAMPLE_MS);

  /** @param unresolvedOps ops of claim writes of unknown fate whose state had not moved. */
  constructor(
    private readonly ctx: DcContext,
    readonly unresolvedOps: Set<string>,
  ) {}

  /** The DC's claim rate in IDs/s, once two reads lay a second apart. */
  get dcRate(): number | undefined {
    return this.rate.perSecond;
  }

  /** A DC-state write conditional on `current`'s stamp, classified. */
  async write(current: DcState | undefined, next: DcState): Promise<CasResult<DcState>> {
    const { ctx } = this;
    ctx.assertRowsHeld();
    ctx.counters.lwtWrites++;
    const expected: DcStamp | undefined = current && { version: current.version, op: current.op };
    // Stamped here, the one place states are written; the store writes it only with a row's first
    // write, so a row keeps the incarnation of the process that opened it.
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
   * A state a round showed carries the op of a claim write of unknown outcome: that write was
   * committed (as the version after its condition), so its block is the claim's.
   */
  private sight(state: DcState | undefined): void {
    if (state !== undefined && this.unresolvedOps.has(state.op)) this.committedOps.add(state.op);
  }

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
   * The plain-read guess: the state as one LOCAL_QUORUM read shows it, so a claim's first write
   * needs no Paxos round before it. Safe: the write is conditional on version and op, which hold
   * only on that very state, so a stale guess costs a rejected write. {@link NO_STATE} if it shows
   * none where none was seen; undefined (read at LOCAL_SERIAL instead) if it failed or is older
   * than what was seen. It raises the marks, but never proves a rollback: only a round can.
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
   * A state a Paxos round showed (a LOCAL_SERIAL read, or a rejected write's round), checked
   * against `floor`, the marks taken before it was sent.
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

  private observe(state: DcState): void {
    this.ctx.seen.raiseState(state);
    this.usage.observe(state);
    this.rate.sample(this.usage.total, this.ctx.clock.now());
  }
}

/**
 * Whose write a DC-state stamp shows: ours if it carries our op; lost if another write took the
 * version ours would write (same condition, so ours can never apply); else unknown.
 */
export function judgeStateWrite(found: DcStamp | undefined, next: DcStamp): Judgement {
  if (found === undefined) return 'unknown';
  if (found.op === next.op) return 'ours';
  return found.version === next.version ? 'lost' : 'unknown';
}
