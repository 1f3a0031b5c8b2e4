/** The LOCAL_SERIAL level (docs/design.md, "Claiming a process block", "Installing a grant"). */

import { randomUUID } from 'node:crypto';

import { ContentionError, StoreUnavailableError } from '../errors.js';
import type { DcState, Grant } from '../store/port.js';
import { mutated } from '../mutations.js';
import { GRANT_BLOCKS } from '../settings/model.js';
import { isOurs, type CasResult } from './cas.js';
import { MAX_CAS_ATTEMPTS, type DcContext } from './dc-context.js';
import type { DcGrants } from './dc-grants.js';
import { claim, giveBack, hasPreloaded, installAndClaim, installGrant } from './dc-state.js';
import { NO_STATE, type DcStateRow } from './dc-state-row.js';
import type { KnownState } from './range-requests.js';

/** Tries of a range request while SERIAL fails: a timeout under load is often transient. */
export const SERIAL_ATTEMPTS = 3;
const SERIAL_RETRY_MS = 250;

/** A block confirmed as this process's, with what the DC level needs to know after it. */
export interface ClaimedBlock {
  readonly first: bigint;
  readonly last: bigint;
  readonly rangeSize: bigint;
  /** No preloaded range and `threshold` of the reserved one claimed: request a range. */
  readonly rangeLow: boolean;
}

/** How long a block claim goes on, and what it asks for. */
export interface ClaimOptions {
  /** Asked after each lost race: false ends the claim. @default {@link MAX_CAS_ATTEMPTS} tries */
  readonly keepTrying?: (() => boolean) | undefined;
  /** The block size to ask for, per attempt, within the sizes. @default `blockSize` */
  readonly size?: (() => number) | undefined;
  /** IDs waiting calls need from this one block; {@link spreadOver} keeps it. @default 0 */
  readonly need?: (() => number) | undefined;
}

export interface BlockAsk {
  readonly size: bigint;
  readonly floor: bigint;
}

type Claim = NonNullable<ReturnType<typeof claim>>;
type Confirmed = { readonly block: ClaimedBlock; readonly version: number };

interface ClaimTally {
  attempts: number;
  unknowns: number;
  serialFailures: number;
  rangeWaits: number;
  readonly keepTrying: () => boolean;
}

export class DcClaims {
  /** Confirmed at SERIAL, maybe not installed: block claims install it in their write. */
  private confirmed: Grant | undefined;
  /** The block size the latest attempt asked for (a grant is sized to hold several). */
  blockAsk = 0n;

  constructor(
    private readonly ctx: DcContext,
    private readonly row: DcStateRow,
    private readonly grants: DcGrants,
    private readonly needRange: (known: KnownState) => Promise<void>,
  ) {}

  async giveBack(first: bigint, last: bigint): Promise<bigint> {
    for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
      const state = await this.row.read();
      if (state === undefined) return 0n;
      if (state.op !== this.row.lastOwnOp && !mutated('give-back-on-any-state')) return 0n;
      const back = giveBack(state, first, last, randomUUID());
      if (back === undefined) return 0n;
      this.ctx.seen.forgetClaims();
      const result = await this.row.write(state, back.next);
      if (isOurs(result.verdict)) return back.returned;
      if (result.verdict !== 'lost') return 0n;
      await this.ctx.backoff(attempt);
    }
    return 0n;
  }

  async claimBlock(options: ClaimOptions): Promise<ClaimedBlock> {
    // Unknown-outcome writes a later round may commit (docs/design.md, "Claiming a process block").
    const unresolved = new Map<string, Claim>();
    let version: number | undefined;
    try {
      const claimed = await this.claimRounds(options, unresolved);
      version = claimed.version;
      return claimed.block;
    } finally {
      for (const [op, { next, block }] of unresolved) {
        // Dead if the claim committed its version; else maybe committed by another round: a gap.
        if (next.version !== version) this.ctx.counters.wasted += idsIn(block);
        this.row.unresolvedOps.delete(op);
        this.row.committedOps.delete(op);
      }
    }
  }

  /**
   * A claim's attempts until a write is shown ours; each after the first writes on the state the
   * last one found. The awaits stay in this loop: each async layer delays the store calls.
   */
  private async claimRounds(
    options: ClaimOptions,
    unresolved: Map<string, Claim>,
  ): Promise<Confirmed> {
    const askOf = this.asker(options);
    const tally: ClaimTally = {
      attempts: 0,
      unknowns: 0,
      serialFailures: 0,
      rangeWaits: 0,
      keepTrying:
        options.keepTrying === undefined
          ? () => tally.attempts < MAX_CAS_ATTEMPTS
          : () => options.keepTrying!(),
    };
    let found: DcState | undefined;
    for (;;) {
      tally.attempts++;
      const op = randomUUID();
      const ask = askOf();
      this.blockAsk = ask.size;
      let state = found;
      let claimed = state === undefined ? undefined : this.claimFrom(state, ask, op);
      if (state === undefined) {
        // The plain-read guess, or the opening claim if it shows no state, else a read.
        const guess = await this.row.guess();
        if (guess === NO_STATE) {
          claimed = await this.openingClaim(ask, op);
        } else if (guess !== undefined) {
          state = guess;
          claimed = this.claimFromGuess(guess, ask, op);
        }
        if (claimed === undefined) {
          state = await this.row.read();
          claimed = state === undefined ? undefined : this.claimFrom(state, ask, op);
        }
      }
      found = undefined;
      if (claimed === undefined) {
        try {
          await this.needRange({ state });
        } catch (error) {
          await this.ctx.sleep(this.serialRetryDelay(error, state, tally));
          tally.attempts--;
          continue;
        }
        this.rangeCame(tally);
        continue;
      }
      const floor = this.ctx.seen.floor();
      const last = await this.row.write(state, claimed.next);
      if (isOurs(last.verdict)) return this.confirmClaim(claimed);
      this.holdUnknown(last, state, op, claimed, unresolved);
      if (last.found !== undefined) found = this.row.checked(floor, last.found);
      const ours = this.takeCommitted(unresolved);
      if (ours !== undefined) return this.confirmClaim(ours);
      this.countFailedWrite(last, tally);
      // After a timeout too: retrying at once adds a proposer to the contended round.
      await this.ctx.backoff(tally.attempts);
    }
  }

  private asker(options: ClaimOptions): () => BlockAsk {
    const { blockSize: least, maxBlockSize: most } = this.ctx.settings;
    const clamp = (n: number) => BigInt(Math.min(most, Math.max(least, n)));
    return () => ({
      size: clamp(options.size?.() ?? least),
      floor: clamp(options.need?.() ?? 0),
    });
  }

  /** The wait before a range request's next try; throws its failure when out of tries. */
  private serialRetryDelay(error: unknown, state: DcState | undefined, tally: ClaimTally): number {
    const serial = error instanceof StoreUnavailableError && error.level === 'serial';
    if (!serial || ++tally.serialFailures >= SERIAL_ATTEMPTS) {
      throw this.grants.explainFailure(error, state);
    }
    return SERIAL_RETRY_MS * tally.serialFailures * (0.5 + Math.random());
  }

  /** A range after the claim's first one means others drained it: a lost race. */
  private rangeCame(tally: ClaimTally): void {
    if (++tally.rangeWaits > 1 && !tally.keepTrying()) {
      throw new ContentionError(this.ctx.sequence, 'claim a block', tally.attempts);
    }
  }

  /** An unknown outcome: a gap if the state moved, else held in case a later round commits it. */
  private holdUnknown(
    last: CasResult<DcState>,
    state: DcState | undefined,
    op: string,
    claimed: Claim,
    unresolved: Map<string, Claim>,
  ): void {
    if (last.verdict !== 'unknown' || last.reported !== 'unknown') return;
    if (last.found?.version !== state?.version) {
      this.ctx.counters.wasted += idsIn(claimed.block);
    } else {
      unresolved.set(op, claimed);
      this.row.unresolvedOps.add(op);
    }
  }

  /** An unresolved write of this claim that a state seen since showed committed. */
  private takeCommitted(unresolved: Map<string, Claim>): Claim | undefined {
    const entries = [...unresolved];
    const any = mutated('committed-any') && entries.some(([op]) => this.row.committedOps.has(op));
    const entry = any ? entries[0] : entries.find(([op]) => this.row.committedOps.has(op));
    if (entry === undefined) return undefined;
    unresolved.delete(entry[0]);
    this.row.unresolvedOps.delete(entry[0]);
    this.row.committedOps.delete(entry[0]);
    this.row.lastOwnOp = entry[0];
    return entry[1];
  }

  /** A lost write asks `keepTrying`; only unknown ones count toward {@link MAX_CAS_ATTEMPTS}. */
  private countFailedWrite(last: CasResult<DcState>, tally: ClaimTally): void {
    if (last.reported === 'rejected' || last.verdict === 'lost') {
      tally.unknowns = 0;
      if (!tally.keepTrying()) {
        throw new ContentionError(this.ctx.sequence, 'claim a block', tally.attempts);
      }
    } else if (++tally.unknowns >= MAX_CAS_ATTEMPTS) {
      throw this.ctx.outOfAttempts('claim a block', tally.unknowns, last, 'local_serial');
    }
  }

  private confirmClaim({ next, block }: Claim): Confirmed {
    this.ctx.counters.blocksClaimed++;
    this.ctx.seen.raiseState(next);
    this.ctx.seen.raiseClaim(next.reservedGrant, block.last);
    return {
      block: {
        first: block.first,
        last: block.last,
        rangeSize: block.rangeMax - block.rangeMin + 1n,
        rangeLow: this.rangeLow(next),
      },
      version: next.version,
    };
  }

  /** The claim on `state`, installing {@link confirmed} in the same write when it can. */
  private claimFrom(state: DcState, ask: BlockAsk, op: string): Claim | undefined {
    const grant = this.confirmed;
    if (grant !== undefined && state.installedGrant >= grant.number) this.confirmed = undefined;
    const installs =
      grant !== undefined && state.installedGrant === grant.number - 1 && !hasPreloaded(state);
    const [low, high] =
      state.lastInteger < state.reservedMax
        ? [state.reservedMin, state.reservedMax]
        : hasPreloaded(state)
          ? [state.preloadedMin, state.preloadedMax]
          : installs
            ? [grant.min, grant.max]
            : [state.reservedMin, state.reservedMax];
    const size = spreadOver(high - low + 1n, ask);
    if (!installs) return claim(state, size, op);
    return this.transition(() => installAndClaim(state, grant, size, op));
  }

  /** The claim from the plain-read guess ({@link DcStateRow.guess} says why it is safe). */
  private claimFromGuess(state: DcState, ask: BlockAsk, op: string): Claim | undefined {
    try {
      return this.claimFrom(state, ask, op);
    } catch {
      return undefined;
    }
  }

  /** With no state: grant 1 installed and claimed in one `IF NOT EXISTS` write. */
  private async openingClaim(ask: BlockAsk, op: string): Promise<Claim | undefined> {
    const first = await this.grants.firstGrantLocally();
    if (first === undefined) return undefined;
    const size = spreadOver(first.max - first.min + 1n, ask);
    return this.transition(() => installAndClaim(undefined, first, size, op));
  }

  /** Installs `grant` from `known` (maybe stale); this process's claims carry it meanwhile. */
  async install(grant: Grant, known: DcState | undefined): Promise<void> {
    this.confirmed = grant;
    let state = known;
    let last: CasResult | undefined;
    for (let attempt = 1; ; attempt++) {
      const from = state;
      const next = this.transition(() => installGrant(from, grant, randomUUID()));
      if (next === undefined) return;
      if (last !== undefined && attempt > MAX_CAS_ATTEMPTS) {
        throw this.ctx.outOfAttempts('install a DC range', attempt - 1, last, 'local_serial');
      }
      last = await this.row.write(state, next);
      if (isOurs(last.verdict)) return;
      // No backoff: it loses to block claims (progress), which would drain the range meanwhile.
      state = await this.row.read();
    }
  }

  /** A dc-state.ts transition; a rule it says a grant breaks is an InvariantError. */
  private transition<T>(run: () => T): T {
    try {
      return run();
    } catch (error) {
      if (error instanceof RangeError) throw this.ctx.broken(error.message);
      throw error;
    }
  }

  private rangeLow(state: DcState): boolean {
    if (hasPreloaded(state)) return false;
    const used = Number(state.lastInteger - state.reservedMin + 1n);
    const size = Number(state.reservedMax - state.reservedMin + 1n);
    return used >= this.ctx.settings.threshold * size;
  }
}

/**
 * `ask.size`, capped at 1/{@link GRANT_BLOCKS} of the range (never below `ask.floor`): one fast
 * process must not take a whole range and make the DC's others wait on SERIAL.
 */
export function spreadOver(rangeSize: bigint, ask: BlockAsk): bigint {
  const cap = rangeSize / GRANT_BLOCKS;
  if (ask.size <= cap) return ask.size;
  return cap > ask.floor ? cap : ask.floor < ask.size ? ask.floor : ask.size;
}

function idsIn(block: { readonly first: bigint; readonly last: bigint }): number {
  return Number(block.last - block.first + 1n);
}
