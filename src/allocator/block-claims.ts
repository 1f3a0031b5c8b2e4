/** A handle's block claim: single-flight, retried with a growing pause while a failure passes. */

import {
  ClosedError,
  ContentionError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import type { Clock } from './clock.js';
import type { ClaimedBlock } from './dc-claims.js';
import type { Demand } from './demand.js';
import type { Ledger } from './ledger.js';
import type { Lifecycle } from './lifecycle.js';
import type { Loaded, Shards } from './shards.js';

const CLAIM_RETRY_FIRST_MS = 50;
const CLAIM_RETRY_MAX_MS = 2_000;

export interface ClaimHost {
  readonly name: string;
  readonly clock: Clock;
  readonly callTimeoutMs: number;
  readonly ledger: Ledger;
  readonly shards: Shards;
  readonly demand: Demand;
  readonly lifecycle: Lifecycle;
  readonly wantsPreload: () => boolean;
  readonly ensureLoaded: () => Promise<Loaded>;
  readonly refreshSettings: () => Promise<void>;
  readonly loaded: () => Loaded | undefined;
  readonly accept: (claimed: ClaimedBlock) => void;
  readonly forfeit: (error: StateRolledBackError) => void;
  readonly held: () => number;
}

export class BlockClaims {
  private claiming: Promise<void> | undefined;
  private failure: Error | undefined;
  private lostRaces = 0;
  private wake: (() => void) | undefined;
  private rangeArrived = false;

  constructor(private readonly host: ClaimHost) {}

  get inFlight(): Promise<void> | undefined {
    return this.claiming;
  }

  async refill(): Promise<void> {
    this.host.lifecycle.assertOpen();
    this.claiming ??= this.claim().finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  inBackground(): void {
    if (this.host.lifecycle.closing) return;
    // Failures are recorded where they happen.
    this.refill().catch(() => undefined);
  }

  private async claim(): Promise<void> {
    const { clock, ledger, shards, demand } = this.host;
    const started = clock.now();
    // A range arriving may end a failure: retried past the window.
    const goesOn = () =>
      this.keepTrying(started) || (this.rangeArrived && this.host.lifecycle.open);
    this.failure = undefined;
    this.lostRaces = 0;
    demand.claimStarts(started);
    shards.claimStarts();
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
        // Not once closing: close() would wait for a SERIAL round it no longer needs.
        if (claimed.rangeLow && this.host.lifecycle.open) allocator.requestRangeInBackground();
        return;
      } catch (error) {
        if (await shards.moveAfterLostRaces(error)) continue;
        if (error instanceof StateRolledBackError) {
          ledger.failures.record(error);
          this.host.forfeit(error);
        } else if (!(error instanceof ClosedError)) {
          ledger.failures.failed('claim', error, {
            dc: shards.grantee,
            localIds: this.host.held(),
          });
        }
        if (await shards.moveFromSpent(error)) continue;
        if (!isTransient(error) || !goesOn()) throw error;
        this.failure = failure = error;
        if (await shards.moveFromEmpty(error)) continue;
      }
      const cap = Math.min(CLAIM_RETRY_MAX_MS, CLAIM_RETRY_FIRST_MS * 2 ** (attempt - 1));
      if (!this.rangeArrived) await this.pause(cap * (0.5 + Math.random() / 2));
      this.host.lifecycle.assertOpen();
      // A pause that began before the preload's time was up can end after it.
      if (!goesOn()) throw failure;
    }
  }

  /** A range came: a pausing claim retries at once, else a wanted preload starts. */
  rangeInstalled(): void {
    if (this.host.lifecycle.state !== 'ready') return;
    if (this.claiming !== undefined) {
      this.rangeArrived = true;
      this.wake?.();
    } else if (this.host.wantsPreload()) {
      this.inBackground();
    }
  }

  wakeUp(): void {
    this.wake?.();
  }

  lastFailure(): Error | undefined {
    if (this.failure !== undefined || this.lostRaces === 0) return this.failure;
    return new ContentionError(this.host.name, 'claim a block', this.lostRaces);
  }

  private keepTrying(started: number): boolean {
    const { clock, callTimeoutMs, demand } = this.host;
    if (!this.host.lifecycle.open) return false;
    return demand.waiters > 0 || clock.now() - started < callTimeoutMs;
  }

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

/** Failures that pass without anyone acting; every other one is final. */
function isTransient(
  error: unknown,
): error is StoreUnavailableError | SerialUnavailableError | ContentionError {
  return (
    error instanceof StoreUnavailableError ||
    error instanceof SerialUnavailableError ||
    error instanceof ContentionError
  );
}
