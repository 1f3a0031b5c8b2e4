/** A DC state row as one process sees it: reads checked, writes classified and stamped. */

import { StoreUnavailableError } from '../errors.js';
import type { DcStamp, DcState } from '../store/port.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';
import type { DcContext } from './dc-context.js';
import { DcUsage, Rate } from './sizing.js';
import { stateWentBack, type Floor } from './watermarks.js';

/** The plain-read guess when it shows no state and none was ever seen. */
export const NO_STATE = Symbol('no DC state');

const DC_RATE_SAMPLE_MS = 1_000;

export class DcStateRow {
  /** Ops of this process's writes of unknown outcome, and those a state read since showed. */
  readonly unresolvedOps = new Set<string>();
  readonly committedOps = new Set<string>();
  /**
   * The op of this process's latest write shown ours: a give-back goes only on that state, since
   * a retire also leaves `last_integer` at a run's end.
   */
  lastOwnOp: string | undefined;
  private readonly usage = new DcUsage();
  private readonly rate = new Rate(DC_RATE_SAMPLE_MS);

  constructor(private readonly ctx: DcContext) {}

  get dcRate(): number | undefined {
    return this.rate.perSecond;
  }

  async write(current: DcState | undefined, next: DcState): Promise<CasResult<DcState>> {
    const { ctx } = this;
    ctx.assertRowsHeld();
    ctx.counters.lwtWrites++;
    const expected: DcStamp | undefined = current && { version: current.version, op: current.op };
    // The one place states are written; the store keeps a row's first incarnation.
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

  /** A state carrying the op of a write of unknown outcome shows it committed. */
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
   * The state a plain read shows, so a first write needs no Paxos read (a stale guess costs a
   * rejected write). Undefined if it failed or is older than seen; it never proves a rollback.
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

  /** A state a Paxos round showed, checked against the marks taken before it was sent. */
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

/** Ours if the stamp carries our op; lost if another took our version; else unknown. */
export function judgeStateWrite(found: DcStamp | undefined, next: DcStamp): Judgement {
  if (found === undefined) return 'unknown';
  if (found.op === next.op) return 'ours';
  return found.version === next.version ? 'lost' : 'unknown';
}
