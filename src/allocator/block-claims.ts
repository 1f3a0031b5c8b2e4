/**
 * A handle's block claim: one claim from its shard's DC allocator, retried with a growing pause
 * while it fails for a reason that passes (see {@link isTransient}), going on from another shard
 * where shards.ts says so. The handle keeps it single-flight (sequence.ts); this holds what the
 * claim in flight knows of its failures.
 *
 * A claim retries while a caller waits for it or, for a claim nobody waits for (a preload), for up
 * to `callTimeoutMs` after it started: a preload never spins against a dead store, and the next
 * call that needs IDs starts a new claim. Lost races are retried inside the DC level with a
 * shorter backoff (dc-allocator.ts).
 */

import {
  ClosedError,
  ContentionError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import type { Clock } from './clock.js';
import type { ClaimedBlock } from './dc-allocator.js';
import type { Demand } from './demand.js';
import type { Ledger } from './ledger.js';
import type { Lifecycle } from './lifecycle.js';
import type { Loaded, Shards } from './shards.js';

/** Retries of a claim that failed for a reason that passes: after about 50 ms, doubling to 2 s. */
const CLAIM_RETRY_FIRST_MS = 50;
const CLAIM_RETRY_MAX_MS = 2_000;

/** What a claim needs of its handle. */
export interface ClaimHost {
  readonly name: string;
  readonly clock: Clock;
  readonly callTimeoutMs: number;
  readonly ledger: Ledger;
  readonly shards: Shards;
  readonly demand: Demand;
  readonly lifecycle: Lifecycle;
  /** Whether the handle wants its next block now (block-buffer.ts). */
  readonly wantsPreload: () => boolean;
  /** The settings and allocator in use, loading them first. */
  readonly ensureLoaded: () => Promise<Loaded>;
  /** Re-reads the settings when due. */
  readonly refreshSettings: () => Promise<void>;
  readonly loaded: () => Loaded | undefined;
  /** Puts the block in the buffer; throws if it must not be served. */
  readonly accept: (claimed: ClaimedBlock) => void;
  readonly forfeit: (error: StateRolledBackError) => void;
  /** IDs the handle holds. */
  readonly held: () => number;
}

export class BlockClaims {
  private readonly host: ClaimHost;
  /** The claim in flight, which every caller that needs IDs shares. */
  private claiming: Promise<void> | undefined;
  /** The error of the attempt that failed last, while the claim retries; cleared on success. */
  private failure: Error | undefined;
  /** Races the claim in flight lost in a row (it retries them); the cause a late caller is given. */
  private lostRaces = 0;
  /** Ends the retry pause at once. */
  private wake: (() => void) | undefined;
  /** A DC range was installed since the claim in flight began its current attempt. */
  private rangeArrived = false;

  constructor(host: ClaimHost) {
    this.host = host;
  }

  /** The claim in flight, if any. */
  get inFlight(): Promise<void> | undefined {
    return this.claiming;
  }

  /** Single-flight block claim: every caller shares the claim in flight. */
  refill(): Promise<void> {
    const { lifecycle } = this.host;
    if (lifecycle.closing) return Promise.reject(new ClosedError(this.host.name));
    const { rolledBack } = lifecycle;
    if (rolledBack !== undefined) return Promise.reject(rolledBack);
    this.claiming ??= this.claim().finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  /** A refill nobody awaits (a preload). */
  inBackground(): void {
    if (this.host.lifecycle.closing) return;
    // The claim records its failures; whoever needs the IDs awaits the refill itself.
    this.refill().catch(ignore);
  }

  /**
   * Claims one block, retrying failures that pass while {@link keepTrying} says so. Rejects on
   * any other failure, which every waiting caller then gets; a lost-race {@link ContentionError}
   * only when nobody waits any more.
   */
  private async claim(): Promise<void> {
    const { clock, ledger, shards, demand } = this.host;
    const started = clock.now();
    // Past its window a claim still tries again when a DC range arrived during it (see
    // rangeInstalled): the failure it would give up on may be for want of that range.
    const goesOn = () =>
      this.keepTrying(started) || (this.rangeArrived && this.host.lifecycle.open);
    // What an earlier claim gave up on is not why this one has brought nothing yet: a caller
    // whose deadline passes during it would get an outage that has ended.
    this.failure = undefined;
    this.lostRaces = 0;
    demand.claimStarts(started);
    shards.claimStarts();
    // The DC level asks after each lost race.
    const keepTrying = () => {
      this.lostRaces++;
      return !shards.lostRace() && this.keepTrying(started);
    };
    for (let attempt = 1; ; attempt++) {
      let failure: Error;
      this.rangeArrived = false;
      try {
        const first = await this.host.ensureLoaded();
        await this.host.refreshSettings();
        this.host.lifecycle.assertOpen();
        const { allocator, settings } = this.host.loaded() ?? first;
        const claimed = await allocator.claimBlock({
          keepTrying,
          size: () => demand.blockSize(settings, allocator.dcRate, this.lostRaces),
          need: () => demand.idsWanted(),
        });
        this.host.accept(claimed);
        demand.claimTook(clock.now() - started);
        ledger.reportNowAndThen(shards.grantee);
        this.failure = undefined;
        this.lostRaces = 0;
        ledger.failures.recovered('claim', { dc: shards.grantee });
        // Not once closing: close() would wait for a round at SERIAL it no longer needs.
        if (claimed.rangeLow && this.host.lifecycle.open) allocator.requestRangeInBackground();
        return;
      } catch (error) {
        const afterRaces = shards.moveAfterLostRaces(error);
        if (afterRaces !== undefined) {
          await afterRaces;
          continue;
        }
        if (error instanceof StateRolledBackError) {
          ledger.failures.record(error);
          this.host.forfeit(error);
        } else if (!(error instanceof ClosedError)) {
          ledger.failures.failed('claim', error, {
            dc: shards.grantee,
            localIds: this.host.held(),
          });
        }
        const fromSpent = shards.moveFromSpent(error);
        if (fromSpent !== undefined && (await fromSpent)) continue;
        if (!isTransient(error) || !goesOn()) throw error;
        this.failure = failure = error;
        const fromEmpty = shards.moveFromEmpty(error);
        if (fromEmpty !== undefined) {
          await fromEmpty;
          continue;
        }
      }
      const cap = Math.min(CLAIM_RETRY_MAX_MS, CLAIM_RETRY_FIRST_MS * 2 ** (attempt - 1));
      if (!this.rangeArrived) await this.pause(cap * (0.5 + Math.random() / 2));
      this.host.lifecycle.assertOpen();
      // A pause that began before the preload's time was up can end after it.
      if (!goesOn()) throw failure;
    }
  }

  /**
   * The DC allocator installed a range. A claim in flight pausing after a failure tries again at
   * once, and even past its window (a preload's), since it may have failed for want of this
   * range: were it to give up, the process would hold no IDs until a caller waited. With no claim
   * in flight, one starts if the handle wants its next block.
   */
  rangeInstalled(): void {
    if (this.host.lifecycle.state !== 'ready') return;
    if (this.claiming !== undefined) {
      this.rangeArrived = true;
      this.wake?.();
    } else if (this.host.wantsPreload()) {
      this.inBackground();
    }
  }

  /** Ends a retry pause at once (close()). */
  wakeUp(): void {
    this.wake?.();
  }

  /** Why the claim in flight has not brought IDs yet, if it failed or keeps losing races. */
  lastFailure(): Error | undefined {
    if (this.failure !== undefined || this.lostRaces === 0) return this.failure;
    return new ContentionError(this.host.name, 'claim a block', this.lostRaces);
  }

  /**
   * Whether a claim started at `started` goes on after a failure that passes: while the handle
   * is open and a caller waits for it, or, with nobody waiting (a preload), for `callTimeoutMs`.
   */
  private keepTrying(started: number): boolean {
    const { clock, callTimeoutMs, demand } = this.host;
    if (!this.host.lifecycle.open) return false;
    return demand.waiters > 0 || clock.now() - started < callTimeoutMs;
  }

  /** Sleeps `ms` unless woken first. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const cancel = this.host.clock.after(ms, () => {
        this.wake = undefined;
        resolve();
      });
      this.wake = () => {
        cancel();
        this.wake = undefined;
        resolve();
      };
    });
  }
}

function ignore(): void {
  // Failure already recorded where it happened.
}

/**
 * Failures that pass without anyone acting: the store unreachable at the level needed (a replica
 * paused, a node restarting, SERIAL cut off while the DC needs a range) and lost races. Every
 * other failure (broken rows, a missing sequence, a spent domain, rows that went back) is final
 * for the calls waiting on it.
 */
function isTransient(
  error: unknown,
): error is StoreUnavailableError | SerialUnavailableError | ContentionError {
  return (
    error instanceof StoreUnavailableError ||
    error instanceof SerialUnavailableError ||
    error instanceof ContentionError
  );
}
