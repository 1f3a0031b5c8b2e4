/** Where a handle claims from (docs/design.md, "Past one DC-state partition: shards"). */

import type { Logger } from '../logger.js';
import {
  ContentionError,
  SequenceExhaustedError,
  SerialUnavailableError,
  StateRolledBackError,
  type SequenceRecreatedError,
} from '../errors.js';
import { mutated } from '../mutations.js';
import { granteeName } from '../names.js';
import type { IdStore, SequenceSettings } from '../store/port.js';
import type { Clock } from './clock.js';
import { DcAllocator, type ClaimGate } from './dc-allocator.js';
import { holdsIdsAbove } from './dc-state.js';
import type { Ledger } from './ledger.js';
import type { AllocatorObserver } from './observer.js';
import type { RowMarks } from './watermarks.js';

/** Lost races in a row before a first-block claim moves to another shard. */
export const MOVE_AFTER_LOST_RACES = 2;

/** Why a handle moves (logged at debug). */
export type ShardMoveReason = 'lost races' | 'no IDs and no SERIAL' | 'shard spent';
export const SHARD_MOVE_MESSAGE = 'moved to another shard';

export interface Loaded {
  readonly settings: SequenceSettings;
  readonly allocator: DcAllocator;
}

export interface ShardsContext {
  readonly name: string;
  readonly dc: string;
  readonly store: IdStore;
  readonly clock: Clock;
  readonly log: Logger | undefined;
  readonly observer: AllocatorObserver | undefined;
  readonly marks: ((grantee: string, start: bigint) => RowMarks) | undefined;
  readonly ledger: Ledger;
  readonly onRangeInstalled: () => void;
  readonly forfeit: (error: StateRolledBackError | SequenceRecreatedError) => void;
  readonly isOpen: () => boolean;
  readonly beforeFirstBlock: () => boolean;
  readonly highestAccepted: () => bigint;
  readonly claimGate: ClaimGate | undefined;
}

export class Shards {
  private current: Loaded | undefined;
  private incarnation: string | undefined;
  private claimsFrom: string;
  private shard = 0;
  /** Of the claim in flight: races lost here, whether it gave up here, shards not to revisit. */
  private racesHere = 0;
  private moveWanted = false;
  private spent = new Set<number>();

  constructor(private readonly context: ShardsContext) {
    this.claimsFrom = context.dc;
  }

  get grantee(): string {
    return this.claimsFrom;
  }

  get loaded(): Loaded | undefined {
    return this.current;
  }

  open(settings: SequenceSettings, incarnation: string | undefined): Loaded {
    this.incarnation = incarnation;
    return this.useShard(settings, Math.floor(Math.random() * settings.shards));
  }

  updateSettings(settings: SequenceSettings): void {
    const { allocator } = this.current!;
    this.current = { settings, allocator };
    allocator.updateSettings(settings);
  }

  claimStarts(): void {
    this.racesHere = 0;
    this.moveWanted = false;
    this.spent = new Set();
  }

  /**
   * True when the claim in flight is to move: it then ends with a ContentionError. Not with a
   * write of unknown outcome: its block would be a gap no counter shows.
   */
  lostRace(): boolean {
    const held = this.current;
    this.racesHere++;
    if (this.racesHere < MOVE_AFTER_LOST_RACES || !this.mayMove(held)) return false;
    if (held.allocator.claimUnresolved) return false;
    this.moveWanted = true;
    return true;
  }

  /** The move {@link lostRace} asked for, if it did; races lost on a crowded shard are no failure. */
  async moveAfterLostRaces(error: unknown): Promise<boolean> {
    const held = this.current;
    if (held === undefined || !this.moveWanted || !(error instanceof ContentionError)) return false;
    await this.moveShard(held, 'lost races');
    return true;
  }

  /** On a spent domain, moves to a shard holding IDs above the handle's; true if it moved. */
  async moveFromSpent(error: unknown): Promise<boolean> {
    const held = this.current;
    if (held === undefined || !(error instanceof SequenceExhaustedError)) return false;
    const to = await this.shardWithIdsAbove(held);
    if (to === undefined) return false;
    this.spent.add(this.shard);
    await this.moveShard(held, 'shard spent', to);
    return true;
  }

  /** Moves a first claim from a shard with no IDs and no SERIAL; true if it moved. */
  async moveFromEmpty(error: unknown): Promise<boolean> {
    const held = this.current;
    const empty = error instanceof SerialUnavailableError && error.dcRemaining === 0n;
    if (!empty || !this.mayMove(held)) return false;
    this.spent.add(this.shard);
    await this.moveShard(held, 'no IDs and no SERIAL', await this.shardWithIdsAbove(held));
    return true;
  }

  /** Gives the unused `run` back at close; what does not go back is counted as waste. */
  async giveBack(
    held: number,
    run: { first: bigint; last: bigint } | undefined,
    wentBack: () => boolean,
  ): Promise<void> {
    const allocator = this.current?.allocator;
    if (allocator === undefined || run === undefined) return;
    const { ledger, log } = this.context;
    let returned = 0n;
    try {
      returned = await allocator.returnBlock(run.first, run.last);
    } catch (error) {
      // Gone back: forfeit() logged it.
      if (error instanceof StateRolledBackError) ledger.failures.record(error);
      else ledger.failures.failed('return', error, { dc: this.grantee });
    }
    ledger.wasted(wentBack() ? 'dropped' : 'notReturned', held - Number(returned));
    const fields = { first: String(run.first), last: String(run.last), returned: String(returned) };
    log?.debug({ dc: this.grantee, ...fields }, 'closed');
  }

  private mayMove(held: Loaded | undefined): held is Loaded {
    return (
      held !== undefined &&
      (this.context.beforeFirstBlock() || mutated('move-after-first-block')) &&
      held.settings.shards > 1 &&
      this.context.isOpen()
    );
  }

  private async moveShard(
    { allocator, settings: claimed }: Loaded,
    reason: ShardMoveReason,
    to?: number,
  ): Promise<void> {
    // The settings read last: a take() may have re-read them meanwhile.
    const settings = this.current?.settings ?? claimed;
    this.moveWanted = false;
    this.racesHere = 0;
    const { ledger, log } = this.context;
    ledger.shardMoves++;
    const from = this.grantee;
    // Not awaited: a caller may wait.
    void ledger.reportNow(from);
    const others = settings.shards - 1;
    const shard = to ?? (this.shard + 1 + Math.floor(Math.random() * others)) % settings.shards;
    this.useShard(settings, shard);
    log?.debug({ from, to: this.grantee, reason }, SHARD_MOVE_MESSAGE);
    await allocator.close();
  }

  /** A random other shard a local read shows holding IDs above the handle's. */
  private async shardWithIdsAbove({ settings }: Loaded): Promise<number | undefined> {
    const { store, name, dc } = this.context;
    if (settings.shards < 2 || !this.context.isOpen()) return undefined;
    const highest = this.context.highestAccepted();
    const candidates = Array.from({ length: settings.shards }, (_, shard) => shard).filter(
      (shard) => shard !== this.shard && !this.spent.has(shard),
    );
    const states = await Promise.all(
      candidates.map((shard) =>
        store.readDcStateLocal(name, granteeName(dc, shard)).catch(() => undefined),
      ),
    );
    const above = candidates.filter((_, i) => {
      const state = states[i];
      return state !== undefined && holdsIdsAbove(state, highest);
    });
    return above.length === 0 ? undefined : above[Math.floor(Math.random() * above.length)];
  }

  private useShard(settings: SequenceSettings, shard: number): Loaded {
    const context = this.context;
    this.shard = shard;
    this.claimsFrom = granteeName(context.dc, shard);
    const { store, clock, log, onRangeInstalled, observer, ledger, claimGate } = context;
    const allocator = new DcAllocator({
      ...{ store, clock, log, onRangeInstalled, observer, settings, incarnation: this.incarnation },
      claimGate,
      dc: this.grantee,
      onRolledBack: context.forfeit,
      counters: ledger.dcCounters,
      failures: ledger.failures,
      marks: context.marks?.(this.grantee, settings.start),
    });
    this.current = { settings, allocator };
    return this.current;
  }
}
