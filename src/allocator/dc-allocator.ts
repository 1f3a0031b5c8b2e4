/**
 * The protocol of docs/design.md for one sequence in one DC, against the {@link IdStore} port.
 *
 * - {@link DcAllocator.claimBlock}: claims a process block from the DC state (LOCAL_SERIAL).
 * - {@link DcAllocator.ensureRange}: grants the DC a new range at SERIAL and installs it in the
 *   DC state (LOCAL_SERIAL). Single-flight: concurrent callers share one request.
 * - {@link DcAllocator.returnBlock}: gives the unused tail of a block back on close.
 *
 * Every DC-state write is conditional on the version read and carries a fresh operation id, so
 * after a CAS timeout a re-read at the same level shows whether the write was ours. Nothing
 * unconfirmed is ever used: an unknown claim that cannot be shown is abandoned (a gap).
 * Every row read is checked first; a row that breaks an invariant stops the operation before
 * any write.
 */

import { randomUUID } from 'node:crypto';

import {
  ContentionError,
  InvariantError,
  SequenceExhaustedError,
  SerialUnavailableError,
  StoreUnavailableError,
} from '../errors.js';
import type {
  CasOutcome,
  DcState,
  Grant,
  GrantView,
  IdStore,
  SequenceSettings,
} from '../store/port.js';

/** How many conditional writes in a row may lose their race before {@link ContentionError}. */
export const MAX_CAS_ATTEMPTS = 12;
const BACKOFF_MIN_MS = 2;
const BACKOFF_MAX_MS = 200;
/**
 * How often a claim that needs a DC range tries to get one while SERIAL fails. A SERIAL
 * timeout on a loaded cluster is often transient; a real partition fails every attempt.
 */
export const SERIAL_ATTEMPTS = 3;
const SERIAL_RETRY_MS = 250;

/** Counters the allocator bumps; the sequence reports them in its stats. */
export interface AllocatorCounters {
  blocksClaimed: number;
  rangesGranted: number;
  casRejections: number;
  casUnknown: number;
  /** IDs of claims abandoned after a CAS timeout that could not be resolved. */
  wasted: number;
  lwtWrites: number;
  serialReads: number;
  localSerialReads: number;
}

/** Told about the end of every DC range request (not about each caller that joined it). */
export interface RangeListener {
  succeeded(): void;
  failed(error: unknown): void;
}

export interface DcAllocatorOptions {
  readonly store: IdStore;
  readonly dc: string;
  readonly settings: SequenceSettings;
  readonly counters: AllocatorCounters;
  readonly rangeListener?: RangeListener | undefined;
  /** Waits between lost CAS races; tests may replace it. */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}

/** A block confirmed as this process's, with what the DC level needs to know after it. */
export interface ClaimedBlock {
  readonly first: bigint;
  readonly last: bigint;
  /**
   * The DC has no preloaded range and `threshold` of its reserved range is claimed: the caller
   * should start a background {@link DcAllocator.ensureRange}.
   */
  readonly rangeLow: boolean;
}

type Confirmation = 'mine' | 'not-written' | 'cannot-tell';

/** One sequence in one DC; one instance per sequence handle. */
export class DcAllocator {
  private readonly store: IdStore;
  private readonly dc: string;
  private readonly settings: SequenceSettings;
  private readonly counters: AllocatorCounters;
  private readonly rangeListener: RangeListener | undefined;
  private readonly sleep: (ms: number) => Promise<void>;
  private rangeRequest: Promise<void> | undefined;
  /** Set once GLOBAL reached `max` with no grant pending for this DC; it can never change. */
  private exhausted: SequenceExhaustedError | undefined;

  constructor(options: DcAllocatorOptions) {
    this.store = options.store;
    this.dc = options.dc;
    this.settings = options.settings;
    this.counters = options.counters;
    this.rangeListener = options.rangeListener;
    this.sleep = options.sleep ?? defaultSleep;
  }

  private get sequence(): string {
    return this.settings.name;
  }

  /**
   * Claims the next process block from the DC state, getting a DC range first if the DC has
   * none left.
   * @throws {SerialUnavailableError} if a DC range was needed and SERIAL could not be reached.
   * @throws {SequenceExhaustedError} if the DC has no IDs left and the domain is spent.
   * @throws {ContentionError} after {@link MAX_CAS_ATTEMPTS} lost races.
   * @throws {InvariantError} if a row read breaks an invariant (nothing is written).
   * @throws {StoreUnavailableError} if LOCAL_SERIAL cannot be reached.
   */
  async claimBlock(): Promise<ClaimedBlock> {
    const blockSize = BigInt(this.settings.blockSize);
    let lastOutcome: CasOutcome['kind'] = 'rejected';
    let serialFailures = 0;
    for (let attempt = 1; ; attempt++) {
      const state = await this.readState();
      let next: DcState;
      let first: bigint;
      if (state !== undefined && state.lastInteger < state.reservedMax) {
        first = state.lastInteger + 1n;
        const last = min(state.lastInteger + blockSize, state.reservedMax);
        next = { ...state, lastInteger: last, version: state.version + 1, op: randomUUID() };
      } else if (state !== undefined && hasPreloaded(state)) {
        // The reserved range is spent: switch to the preloaded one and claim from its start.
        first = state.preloadedMin;
        const last = min(first + blockSize - 1n, state.preloadedMax);
        next = {
          ...state,
          reservedMin: state.preloadedMin,
          reservedMax: state.preloadedMax,
          reservedGrant: state.installedGrant,
          lastInteger: last,
          version: state.version + 1,
          op: randomUUID(),
        };
      } else {
        try {
          await this.ensureRange();
        } catch (error) {
          const serial = error instanceof StoreUnavailableError && error.level === 'serial';
          if (!serial || ++serialFailures >= SERIAL_ATTEMPTS) {
            throw this.explainRangeFailure(error, state);
          }
          await this.sleep(SERIAL_RETRY_MS * serialFailures * (0.5 + Math.random()));
          attempt--; // a SERIAL failure is not a lost race
          continue;
        }
        if (attempt >= MAX_CAS_ATTEMPTS) {
          throw new ContentionError(this.sequence, 'claim a block', attempt);
        }
        continue;
      }

      const outcome = await this.writeState(state.version, next);
      lastOutcome = outcome.kind;
      const confirmed =
        outcome.kind === 'applied' ? 'mine' : await this.resolveStateWrite(outcome, state, next);
      if (confirmed === 'mine') {
        this.counters.blocksClaimed++;
        return { first, last: next.lastInteger, rangeLow: this.rangeLow(next) };
      }
      if (confirmed === 'cannot-tell')
        this.counters.wasted += Number(next.lastInteger - first + 1n);
      if (attempt >= MAX_CAS_ATTEMPTS) {
        throw this.outOfAttempts('claim a block', attempt, lastOutcome, 'local_serial');
      }
      if (outcome.kind === 'rejected') await this.backoff(attempt);
    }
  }

  /**
   * Makes sure the DC has a preloaded range: installs a confirmed grant that is not installed yet,
   * or grants the DC its next range at SERIAL and installs it. Does nothing if a preloaded range
   * exists. Concurrent callers share one request.
   * @throws {StoreUnavailableError} `level: 'serial'` if SERIAL cannot be reached.
   * @throws {SequenceExhaustedError} if GLOBAL is at `max` and no grant is pending.
   * @throws {ContentionError} after {@link MAX_CAS_ATTEMPTS} lost races.
   * @throws {InvariantError} if a row read breaks an invariant (nothing is written).
   */
  ensureRange(): Promise<void> {
    this.rangeRequest ??= this.requestRange().finally(() => {
      this.rangeRequest = undefined;
    });
    return this.rangeRequest;
  }

  /**
   * Gives back `[first, last]`, unused IDs this process holds, by moving the DC's `lastInteger`
   * back to `first - 1` — only if nobody claimed after them: `lastInteger` must still be `last`.
   * If the run starts before the reserved range (it spans a switch), only the part within the
   * reserved range goes back.
   * @returns how many IDs were returned (0 if the DC moved on; they stay a gap).
   */
  async returnBlock(first: bigint, last: bigint): Promise<bigint> {
    for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
      const state = await this.readState();
      if (state === undefined || state.lastInteger !== last) return 0n;
      const from = first > state.reservedMin ? first : state.reservedMin;
      if (from > last) return 0n;
      const next = {
        ...state,
        lastInteger: from - 1n,
        version: state.version + 1,
        op: randomUUID(),
      };
      const outcome = await this.writeState(state.version, next);
      const confirmed =
        outcome.kind === 'applied' ? 'mine' : await this.resolveStateWrite(outcome, state, next);
      if (confirmed === 'mine') return last - from + 1n;
      if (confirmed === 'cannot-tell') return 0n;
      if (outcome.kind === 'rejected') await this.backoff(attempt);
    }
    return 0n;
  }

  private async requestRange(): Promise<void> {
    try {
      await this.grantAndInstall();
    } catch (error) {
      this.rangeListener?.failed(error);
      throw error;
    }
    this.rangeListener?.succeeded();
  }

  private async grantAndInstall(): Promise<void> {
    if (this.exhausted !== undefined) throw this.exhausted;
    let lastOutcome: CasOutcome['kind'] = 'rejected';
    for (let attempt = 1; ; attempt++) {
      // The DC state is read before the grants: installed grants never outrun the latest grant,
      // so with this order `latest < installed` can only mean broken rows, never a race.
      const state = await this.readState();
      const view = await this.readGrants();
      const installed = state?.installedGrant ?? 0;
      const latest = view.latest;
      const latestNumber = latest?.number ?? 0;
      if (latestNumber < installed) {
        throw this.broken(
          `latest grant ${latestNumber} is older than installed grant ${installed}`,
        );
      }
      if (state !== undefined) this.checkStateAgainstGrants(state, view);
      // A pending grant waits until the preloaded range becomes the reserved one.
      if (state !== undefined && hasPreloaded(state)) return;
      if (latest !== undefined && latestNumber > installed) {
        if (latestNumber > installed + 1) {
          // Another process may have installed grants since our state read; a fresh read decides.
          const fresh = await this.readState();
          if ((fresh?.installedGrant ?? 0) + 1 < latestNumber) {
            throw this.broken(
              `grant ${latestNumber} exists but only grant ${fresh?.installedGrant ?? 0} is installed`,
            );
          }
          if (attempt >= MAX_CAS_ATTEMPTS) {
            throw new ContentionError(this.sequence, 'install a DC range', attempt);
          }
          continue;
        }
        // Confirmed at SERIAL but not installed: its requester crashed or is slow.
        await this.install(latest, state);
        return;
      }
      if (view.globalLast >= this.settings.max) {
        this.exhausted = new SequenceExhaustedError(
          this.sequence,
          this.settings.max,
          view.globalLast,
        );
        throw this.exhausted;
      }
      const grant: Grant = {
        number: installed + 1,
        min: view.globalLast + 1n,
        max: min(view.globalLast + this.settings.dcRangeSize, this.settings.max),
      };
      this.counters.lwtWrites++;
      const outcome = await this.store.grantRange(this.sequence, this.dc, view.globalLast, grant);
      lastOutcome = outcome.kind;
      let confirmed = outcome.kind === 'applied';
      if (outcome.kind === 'unknown') {
        this.counters.casUnknown++;
        // The SERIAL read finishes any round in flight, so it shows whether the batch applied.
        const reread = await this.readGrants();
        confirmed =
          reread.latest?.number === grant.number &&
          reread.latest.min === grant.min &&
          reread.latest.max === grant.max;
      } else if (outcome.kind === 'rejected') {
        this.counters.casRejections++;
      }
      if (confirmed) {
        this.counters.rangesGranted++;
        await this.install(grant, state);
        return;
      }
      if (attempt >= MAX_CAS_ATTEMPTS) {
        throw this.outOfAttempts('grant a DC range', attempt, lastOutcome, 'serial');
      }
      if (outcome.kind === 'rejected') await this.backoff(attempt);
    }
  }

  /** Installs confirmed grant `grant` in the DC state, starting from `known` (possibly stale). */
  private async install(grant: Grant, known: DcState | undefined): Promise<void> {
    let state = known;
    let lastOutcome: CasOutcome['kind'] = 'rejected';
    for (let attempt = 1; ; attempt++) {
      if (state !== undefined && (state.installedGrant >= grant.number || hasPreloaded(state))) {
        return; // installed by someone else, or it must wait for the preloaded range to be used
      }
      if (attempt > MAX_CAS_ATTEMPTS) {
        throw this.outOfAttempts('install a DC range', attempt - 1, lastOutcome, 'local_serial');
      }
      if ((state?.installedGrant ?? 0) !== grant.number - 1) {
        throw this.broken(
          `grant ${grant.number} cannot follow installed grant ${state?.installedGrant ?? 0}`,
        );
      }
      if (state !== undefined && grant.min <= state.reservedMax) {
        throw this.broken(
          `grant ${grant.number} [${grant.min}, ${grant.max}] does not lie above the reserved range ending at ${state.reservedMax}`,
        );
      }
      const op = randomUUID();
      const next: DcState =
        state === undefined
          ? {
              lastInteger: grant.min - 1n,
              reservedMin: grant.min,
              reservedMax: grant.max,
              reservedGrant: grant.number,
              preloadedMin: grant.min,
              preloadedMax: grant.max,
              installedGrant: grant.number,
              version: 1,
              op,
            }
          : {
              ...state,
              preloadedMin: grant.min,
              preloadedMax: grant.max,
              installedGrant: grant.number,
              version: state.version + 1,
              op,
            };
      const outcome = await this.writeState(state?.version ?? 0, next);
      lastOutcome = outcome.kind;
      if (outcome.kind === 'applied') return;
      if (outcome.kind === 'unknown') {
        this.counters.casUnknown++;
      } else {
        this.counters.casRejections++;
        // Back off before the re-read: block claims keep moving the version, so a state read
        // before the pause would be stale by the time it is written.
        await this.backoff(attempt);
      }
      state = await this.readState();
      if (state?.op === op) return;
    }
  }

  /** After a state write that was not applied: was it ours after all? */
  private async resolveStateWrite(
    outcome: CasOutcome,
    before: DcState,
    next: DcState,
  ): Promise<Confirmation> {
    if (outcome.kind === 'rejected') {
      this.counters.casRejections++;
      return 'not-written';
    }
    this.counters.casUnknown++;
    const reread = await this.readState();
    if (reread?.op === next.op) return 'mine';
    if (reread?.version === before.version) return 'not-written';
    return 'cannot-tell';
  }

  private async readState(): Promise<DcState | undefined> {
    this.counters.localSerialReads++;
    const state = await this.store.readDcState(this.sequence, this.dc);
    if (state !== undefined) this.checkState(state);
    return state;
  }

  private async readGrants(): Promise<GrantView> {
    this.counters.serialReads++;
    const view = await this.store.readGrants(this.sequence, this.dc);
    this.checkGrants(view);
    return view;
  }

  private writeState(expectedVersion: number, next: DcState): Promise<CasOutcome> {
    this.counters.lwtWrites++;
    return this.store.writeDcState(this.sequence, this.dc, expectedVersion, next);
  }

  private rangeLow(state: DcState): boolean {
    if (hasPreloaded(state)) return false;
    const used = Number(state.lastInteger - state.reservedMin + 1n);
    const size = Number(state.reservedMax - state.reservedMin + 1n);
    return used >= this.settings.threshold * size;
  }

  private checkState(s: DcState): void {
    const { min: low, max: high } = this.settings;
    const where = `DC "${this.dc}" state version ${s.version}`;
    if (!Number.isSafeInteger(s.version) || s.version < 1) {
      throw this.broken(`${where}: version is not a positive integer`);
    }
    if (s.reservedMin > s.reservedMax || s.reservedMin < low || s.reservedMax > high) {
      throw this.broken(
        `${where}: reserved range [${s.reservedMin}, ${s.reservedMax}] is not within [${low}, ${high}]`,
      );
    }
    if (s.preloadedMin > s.preloadedMax || s.preloadedMin < low || s.preloadedMax > high) {
      throw this.broken(
        `${where}: preloaded range [${s.preloadedMin}, ${s.preloadedMax}] is not within [${low}, ${high}]`,
      );
    }
    if (s.lastInteger < s.reservedMin - 1n || s.lastInteger > s.reservedMax) {
      throw this.broken(
        `${where}: last_integer ${s.lastInteger} is outside [${s.reservedMin - 1n}, ${s.reservedMax}]`,
      );
    }
    if (!Number.isSafeInteger(s.reservedGrant) || s.reservedGrant < 1) {
      throw this.broken(`${where}: reserved grant ${s.reservedGrant} is not a positive integer`);
    }
    if (s.installedGrant !== s.reservedGrant && s.installedGrant !== s.reservedGrant + 1) {
      throw this.broken(
        `${where}: installed grant ${s.installedGrant} is neither reserved grant ${s.reservedGrant} nor the one after it`,
      );
    }
    if (hasPreloaded(s) && s.preloadedMin <= s.reservedMax) {
      throw this.broken(`${where}: preloaded range starts at or before the reserved range's end`);
    }
    if (
      !hasPreloaded(s) &&
      (s.preloadedMin !== s.reservedMin || s.preloadedMax !== s.reservedMax)
    ) {
      throw this.broken(`${where}: no preloaded range, yet preloaded differs from reserved`);
    }
  }

  private checkGrants(view: GrantView): void {
    const { start, max: high, min: low } = this.settings;
    if (view.globalLast < start - 1n || view.globalLast > high) {
      throw this.broken(
        `GLOBAL last_integer ${view.globalLast} is outside [${start - 1n}, ${high}]`,
      );
    }
    const g = view.latest;
    if (g === undefined) return;
    if (!Number.isSafeInteger(g.number) || g.number < 1) {
      throw this.broken(`DC "${this.dc}" grant number ${g.number} is not a positive integer`);
    }
    if (g.min > g.max || g.min < low || g.max > high) {
      throw this.broken(
        `DC "${this.dc}" grant ${g.number} [${g.min}, ${g.max}] is not within [${low}, ${high}]`,
      );
    }
    // readGrants reads the latest grant before GLOBAL, so even a grant made in between is covered.
    if (g.max > view.globalLast) {
      throw this.broken(
        `DC "${this.dc}" grant ${g.number} ends at ${g.max}, above GLOBAL last_integer ${view.globalLast}`,
      );
    }
  }

  private checkStateAgainstGrants(s: DcState, view: GrantView): void {
    const top = hasPreloaded(s) ? s.preloadedMax : s.reservedMax;
    if (top > view.globalLast) {
      throw this.broken(
        `DC "${this.dc}" holds IDs up to ${top}, above GLOBAL last_integer ${view.globalLast}`,
      );
    }
    const g = view.latest;
    // The installed grant's range is the preloaded one (equal to reserved when none is preloaded).
    if (g !== undefined && g.number === s.installedGrant) {
      if (g.min !== s.preloadedMin || g.max !== s.preloadedMax) {
        throw this.broken(
          `DC "${this.dc}" installed grant ${g.number} as [${s.preloadedMin}, ${s.preloadedMax}] but it is [${g.min}, ${g.max}]`,
        );
      }
    }
  }

  private explainRangeFailure(error: unknown, state: DcState | undefined): unknown {
    if (error instanceof StoreUnavailableError && error.level === 'serial') {
      return new SerialUnavailableError(this.sequence, this.dc, remainingIn(state), {
        cause: error,
      });
    }
    return error;
  }

  /** Lost races are contention; writes that only ever timed out mean the level is unreachable. */
  private outOfAttempts(
    operation: string,
    attempts: number,
    lastOutcome: CasOutcome['kind'],
    level: 'serial' | 'local_serial',
  ): Error {
    if (lastOutcome === 'unknown') {
      return new StoreUnavailableError(
        level,
        operation,
        `the last of ${attempts} conditional writes timed out with an unknown outcome`,
      );
    }
    return new ContentionError(this.sequence, operation, attempts);
  }

  private broken(detail: string): InvariantError {
    return new InvariantError(this.sequence, detail);
  }

  private backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (attempt - 1));
    return this.sleep(cap / 2 + (Math.random() * cap) / 2);
  }
}

/** A preloaded range exists iff the newest installed grant is the one after the reserved one. */
export function hasPreloaded(state: DcState): boolean {
  return state.installedGrant === state.reservedGrant + 1;
}

/** IDs the DC still holds: the rest of its reserved range plus any preloaded range. */
export function remainingIn(state: DcState | undefined): bigint {
  if (state === undefined) return 0n;
  const reserved = state.reservedMax - state.lastInteger;
  return hasPreloaded(state) ? reserved + state.preloadedMax - state.preloadedMin + 1n : reserved;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
