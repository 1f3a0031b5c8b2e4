/**
 * The DC level of docs/design.md for one sequence in one DC, against the {@link IdStore} port.
 * The DC state's transitions and invariants are in dc-state.ts; this file runs them.
 *
 * - {@link DcAllocator.claimBlock}: claims a process block from the DC state (LOCAL_SERIAL).
 * - {@link DcAllocator.ensureRange}: grants the DC a new range at SERIAL and installs it in the
 *   DC state (LOCAL_SERIAL). Single-flight: concurrent callers share one request.
 * - {@link DcAllocator.requestRangeInBackground}: the DC level's double buffering: one
 *   background range request, retried with backoff while it fails, until the domain is spent.
 * - {@link DcAllocator.returnBlock}: gives the unused tail of a block back on close.
 *
 * Every write goes through {@link runConditionalWrite}, which says whether it is shown to be
 * ours; nothing else is ever used. Every row read is checked first (dc-state.ts lists the
 * invariants), and compared with what this process saw before (watermarks.ts): rows that went
 * backwards mean lost writes, and the process stops allocating rather than hand out IDs again.
 */

import { randomUUID } from 'node:crypto';

import {
  ContentionError,
  InvariantError,
  SequenceRecreatedError,
  SequenceExhaustedError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../errors.js';
import type {
  DcStamp,
  DcState,
  Grant,
  GrantFound,
  GrantView,
  IdStore,
  SequenceSettings,
} from '../store/port.js';
import type { Logger } from '../logger.js';
import { mutated } from '../mutations.js';
import { GRANT_BLOCKS } from '../settings/model.js';
import { isOurs, runConditionalWrite, type CasResult, type Judgement } from './cas.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import {
  claim,
  dcStateViolations,
  giveBack,
  hasPreloaded,
  installAndClaim,
  installGrant,
  otherIncarnation,
  remainingIn,
} from './dc-state.js';
import { FailureLog } from './failures.js';
import type { AllocatorObserver } from './observer.js';
import { DcUsage, Rate, grantSizeFor } from './sizing.js';
import {
  globalWentBack,
  grantsWentBack,
  stateWentBack,
  Watermarks,
  type RowMarks,
  type Floor,
} from './watermarks.js';

/**
 * How many conditional writes in a row may fail to be ours before an operation gives up: every
 * operation but a block claim, and a block claim whose outcomes stay unknown (the level is
 * unreachable). A block claim that loses races retries for as long as its caller's `keepTrying`
 * says (the process level: while a call waits, up to its deadline).
 */
export const MAX_CAS_ATTEMPTS = 12;
/** What a claim's plain read of the DC state returns when it shows none and none was ever seen. */
const NO_STATE = Symbol('no DC state');

/** Backoff after a lost race: full jitter, up to a cap doubling from 2 ms to 100 ms. */
const BACKOFF_MIN_MS = 2;
export const BACKOFF_MAX_MS = 100;
/**
 * How often a claim that needs a DC range tries to get one while SERIAL fails. A SERIAL
 * timeout on a loaded cluster is often transient; a real partition fails every attempt.
 */
export const SERIAL_ATTEMPTS = 3;
const SERIAL_RETRY_MS = 250;

/** Retries of a failed background range request: the first after about 1 s, doubling up to 30 s. */
const RANGE_RETRY_FIRST_MS = 1_000;
const RANGE_RETRY_MAX_MS = 30_000;

/** The DC's rate is sampled over at least this long: reads come many a second. */
const DC_RATE_SAMPLE_MS = 1_000;

/** What the DC level counts, since the allocator was created. */
export interface DcCounters {
  /** Blocks claimed from the DC (confirmed claims only). */
  blocksClaimed: number;
  /**
   * DC ranges this process got granted at SERIAL: batches reported applied, or whose unknown
   * outcome a re-read showed applied. A batch reported rejected whose grant is found is installed
   * but not counted: it is most often another process's identical batch.
   */
  rangesGranted: number;
  /** Conditional writes whose condition did not hold (lost races). */
  casRejections: number;
  /** Conditional writes whose outcome stayed unknown until re-read. */
  casUnknown: number;
  /** IDs of claims that may have been applied but could not be shown to be ours (gaps). */
  wasted: number;
  /** Conditional writes sent (SERIAL and LOCAL_SERIAL). */
  lwtWrites: number;
  /** Reads of the grant level at SERIAL. */
  serialReads: number;
  /** Reads of the DC state at LOCAL_SERIAL. */
  localSerialReads: number;
}

export interface DcAllocatorOptions {
  readonly store: IdStore;
  readonly dc: string;
  readonly settings: SequenceSettings;
  /**
   * The incarnation of the sequence loaded (`StoredSettings.incarnation`; undefined for
   * one created by an older release): every state row this allocator opens carries it, and a
   * state row that carries another is refused ({@link SequenceRecreatedError}). @default undefined
   */
  readonly incarnation?: string | undefined;
  /** Timers for backoffs and retries. @default real timers */
  readonly clock?: Clock | undefined;
  /** Waits between lost CAS races; tests may replace it. @default `clock.sleep` */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
  /** Receives range failures, once per episode. */
  readonly log?: Logger | undefined;
  /** Called when a range request installed a range (a preload that waited for it may go now). */
  readonly onRangeInstalled?: (() => void) | undefined;
  /**
   * Called when a read shows the rows gone back, or a state row of another incarnation, at that
   * read, before the operation that made it unwinds: the process level drops what it holds, and
   * every block this allocator hands up from then on (a claim whose write was on the wire) finds
   * it told.
   */
  readonly onRolledBack?:
    ((error: StateRolledBackError | SequenceRecreatedError) => void) | undefined;
  /** Told how long claims and range requests take, and of every failure. @default none */
  readonly observer?: AllocatorObserver | undefined;
  /**
   * The allocator of another shard this one takes over from (a handle that moved before its
   * first block, sequence.ts): its counters and failure log go on here, so the handle's stats
   * count what it did on every shard. @default none
   */
  readonly continues?: DcAllocator | undefined;
  /**
   * The rollback marks of this grantee's rows as the process saw them, shared by the process's
   * handles of the sequence (watermarks.ts). @default marks of this allocator's own
   */
  readonly marks?: RowMarks | undefined;
}

/** A block confirmed as this process's, with what the DC level needs to know after it. */
export interface ClaimedBlock {
  readonly first: bigint;
  readonly last: bigint;
  /** Size of the DC range the block was cut from. */
  readonly rangeSize: bigint;
  /**
   * The DC has no preloaded range and `threshold` of its reserved range is claimed: the caller
   * should start a background {@link DcAllocator.ensureRange}.
   */
  readonly rangeLow: boolean;
}

/** How long {@link DcAllocator.claimBlock} goes on. */
export interface ClaimOptions {
  /**
   * Asked after each lost race (and after each range installed by someone else): false ends the
   * claim with a {@link ContentionError}. @default true for {@link MAX_CAS_ATTEMPTS} attempts
   */
  readonly keepTrying?: (() => boolean) | undefined;
  /**
   * The block size to ask for, asked before each attempt (sizing.ts); clamped to the stored
   * `[blockSize, maxBlockSize]`, to an eighth of the range it is cut from (see
   * {@link spreadOver}), and to what that range has left. @default `blockSize`
   */
  readonly size?: (() => number) | undefined;
  /**
   * IDs the calls waiting right now need from this one block (a run for `take(n)`): the eighth
   * of a range never cuts the block below it. @default 0
   */
  readonly need?: (() => number) | undefined;
}

/** A claim's block size (the grant ask), and what the block must hold at least. */
export interface BlockAsk {
  readonly size: bigint;
  readonly floor: bigint;
}

/** One sequence in one DC; one instance per sequence handle. */
export class DcAllocator {
  /** What this DC level did; see {@link DcCounters}. */
  readonly counters: DcCounters;
  /** Range requests that failed; logged once per episode. */
  readonly failures: FailureLog<'range'>;
  private readonly store: IdStore;
  private readonly dc: string;
  private settings: SequenceSettings;
  private readonly clock: Clock;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly log: Logger | undefined;
  private readonly onRangeInstalled: (() => void) | undefined;
  private readonly onRolledBack:
    ((error: StateRolledBackError | SequenceRecreatedError) => void) | undefined;
  private readonly incarnation: string | undefined;
  private readonly observer: AllocatorObserver | undefined;
  private rangeRequest: Promise<void> | undefined;
  /** The background range request in flight, if any. */
  private background: Promise<void> | undefined;
  /** Cancels the pending retry of a failed background range request. */
  private cancelRangeRetry: (() => void) | undefined;
  private rangeRetries = 0;
  private closed = false;
  private exhaustionLogged = false;
  /**
   * Set once GLOBAL reached `max` with no grant pending for this DC (read at SERIAL after GLOBAL
   * was seen at `max`); it can never change.
   */
  private exhaustedError: SequenceExhaustedError | undefined;
  /** What this process saw of the rows, to tell rows that went back (watermarks.ts). */
  private readonly seen: Watermarks;
  /**
   * The first sign that the rows went back. From then on this allocator sends no write: a write
   * on the wire then (a claim, a grant batch, an install) may still land, but none follows it,
   * neither the install of a grant such a batch got, nor a range request or its retry.
   */
  private wentBack: StateRolledBackError | SequenceRecreatedError | undefined;
  /**
   * A grant shown at SERIAL (ours, or read there) that may not be installed yet: block claims
   * install it in the same write while the install of the range request still races them.
   */
  private confirmed: Grant | undefined;
  /** The DC's claims as this process sees them in the states it reads, and their rate. */
  private readonly usage = new DcUsage();
  private readonly rate = new Rate(DC_RATE_SAMPLE_MS);
  /** The size of this process's latest block request: a grant holds several such blocks. */
  private blockAsk = 0n;
  /**
   * Ops of claim writes in flight here whose outcome stayed unknown with the state unmoved when
   * read back (see claimFromDc), and those of them that a state a Paxos round showed since
   * carries: committed by a later round, the claim's own retry or this process's range install.
   */
  private readonly unresolvedOps = new Set<string>();
  private readonly committedOps = new Set<string>();
  /**
   * The op of the latest state write of this process shown applied. A give-back goes only on
   * the state that write left: `last_integer` at the end of our run proves nothing by itself,
   * since retire-ranges leaves it at its grant's end too, and a give-back on the retire's state
   * reopens IDs handed out before the rows went back.
   */
  private lastOwnOp: string | undefined;

  constructor(options: DcAllocatorOptions) {
    this.store = options.store;
    this.dc = options.dc;
    this.settings = options.settings;
    this.incarnation = options.incarnation;
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.sleep = options.sleep ?? ((ms) => this.clock.sleep(ms));
    this.log = options.log;
    this.onRangeInstalled = options.onRangeInstalled;
    this.onRolledBack = options.onRolledBack;
    const observer = options.observer;
    this.observer = observer;
    this.counters = options.continues?.counters ?? {
      blocksClaimed: 0,
      rangesGranted: 0,
      casRejections: 0,
      casUnknown: 0,
      wasted: 0,
      lwtWrites: 0,
      serialReads: 0,
      localSerialReads: 0,
    };
    this.failures =
      options.continues?.failures ??
      new FailureLog(
        options.log,
        {
          range: {
            failed:
              'requesting a DC range failed; the DC still serves its ranges, retrying in the background',
            recovered: 'requesting DC ranges works again',
          },
        },
        observer && ((error) => observer.failed(options.settings.name, error)),
      );
    this.seen = new Watermarks(options.settings.start - 1n, options.marks);
  }

  private get sequence(): string {
    return this.settings.name;
  }

  /**
   * Takes the sizes of settings re-read after an alter (the process level re-reads them, see
   * sequence.ts); claims and range requests from now on use them. The domain (`min`, `max`,
   * `start`) never changes: settings that move it are refused before they get here.
   */
  updateSettings(settings: SequenceSettings): void {
    this.settings = settings;
  }

  /**
   * Claims the next process block from the DC state, getting a DC range first if the DC has
   * none left. Lost races back off (full jitter, growing to {@link BACKOFF_MAX_MS}) and retry
   * while `options.keepTrying()` holds; unknown outcomes are retried from a fresh read, up to
   * {@link MAX_CAS_ATTEMPTS} in a row.
   * @throws {SerialUnavailableError} if a DC range was needed and SERIAL could not be reached.
   * @throws {SequenceExhaustedError} if the DC has no IDs left and the domain is spent.
   * @throws {ContentionError} once `keepTrying()` says no after a lost race.
   * @throws {InvariantError} if a row read breaks an invariant (nothing is written).
   * @throws {StateRolledBackError} if a row read is older than one seen before.
   * @throws {StoreUnavailableError} if LOCAL_SERIAL cannot be reached.
   */
  async claimBlock(options: ClaimOptions = {}): Promise<ClaimedBlock> {
    const observer = this.observer;
    if (observer === undefined) return this.claimFromDc(options);
    const started = this.clock.now();
    try {
      return await this.claimFromDc(options);
    } finally {
      observer.blockClaimed(this.sequence, this.clock.now() - started);
    }
  }

  private async claimFromDc(options: ClaimOptions): Promise<ClaimedBlock> {
    // This claim's writes whose outcome stayed unknown with the state not moved when read back,
    // by op. On Paxos v1 such a write may have been accepted by a replica the re-read's quorum
    // missed, and a later round (our own retry's prepare, or our range install's) commits it:
    // the state then carries its op, and its block is ours and nobody else's (every later claim
    // starts above it). Using it leaves no gap where a retry was reported lost to our own
    // earlier write. The allocator's sets hold the ops while the claim lasts (see sight).
    const unresolved = new Map<string, NonNullable<ReturnType<typeof claim>>>();
    let version: number | undefined;
    try {
      const claimed = await this.claimRounds(options, unresolved);
      version = claimed.version;
      return claimed.block;
    } finally {
      for (const [op, { next, block }] of unresolved) {
        // One never seen committed is dead if the claim committed the version it proposed (one
        // op per version). One for an earlier version may have been committed by another
        // process's round, which then claimed above it: a possible gap, counted as an unknown
        // claim's block is. (The one the claim used has left the map.)
        if (next.version !== version) this.counters.wasted += Number(block.last - block.first + 1n);
        this.unresolvedOps.delete(op);
        this.committedOps.delete(op);
      }
    }
  }

  /** The rounds of one claim (see claimFromDc); `unresolved` is the claim's, kept by the caller. */
  private async claimRounds(
    options: ClaimOptions,
    unresolved: Map<string, NonNullable<ReturnType<typeof claim>>>,
  ): Promise<{ readonly block: ClaimedBlock; readonly version: number }> {
    const { blockSize: least, maxBlockSize: most } = this.settings;
    const clamp = (n: number) => BigInt(Math.min(most, Math.max(least, n)));
    const askOf = (): BlockAsk => ({
      size: clamp(options.size?.() ?? least),
      floor: clamp(options.need?.() ?? 0),
    });
    let attempts = 0;
    const keepTrying =
      options.keepTrying === undefined
        ? () => attempts < MAX_CAS_ATTEMPTS
        : () => options.keepTrying!();
    let unknowns = 0;
    let serialFailures = 0;
    let rangeWaits = 0;
    // The state the last write of this claim found (the round's own read, or the re-read after
    // an unknown outcome), checked as a read at LOCAL_SERIAL is: the next attempt starts from it.
    let found: DcState | undefined;
    // One of this claim's unresolved writes that a state seen since showed committed. Checked
    // after each write: the next write is conditional on the state the last one found, so a
    // commit seen in between (by the install) makes it rejected, and the check runs.
    const committed = () => {
      const entries = [...unresolved];
      // A negative control (mutations.ts) takes the first of them once any is seen committed.
      const any = mutated('committed-any') && entries.some(([op]) => this.committedOps.has(op));
      const entry = any ? entries[0] : entries.find(([op]) => this.committedOps.has(op));
      if (entry === undefined) return undefined;
      unresolved.delete(entry[0]);
      this.unresolvedOps.delete(entry[0]);
      this.committedOps.delete(entry[0]);
      this.lastOwnOp = entry[0];
      return entry[1];
    };
    for (;;) {
      attempts++;
      const op = randomUUID();
      const ask = askOf();
      this.blockAsk = ask.size;
      let state = found;
      let claimed = state === undefined ? undefined : this.claimFrom(state, ask, op);
      if (state === undefined) {
        // The first attempt tries its write on a plain read's state: the write's condition holds
        // only on the very state it was computed from, so a guess costs at most a rejected write,
        // and saves a Paxos round (docs/design.md, "Claiming a process block"). Anything but a
        // claimable guess, or no state where grant 1 opens it, is decided on a read at
        // LOCAL_SERIAL.
        const guess = await this.guessState();
        if (guess === NO_STATE) {
          // No state yet: the claim may open it (openingClaim); state stays undefined, so the
          // write is the first one, `IF NOT EXISTS`.
          claimed = await this.openingClaim(ask, op);
        } else if (guess !== undefined) {
          state = guess;
          claimed = this.claimFromGuess(guess, ask, op);
        }
        if (claimed === undefined) {
          state = await this.readState();
          claimed = state === undefined ? undefined : this.claimFrom(state, ask, op);
        }
      }
      found = undefined;
      if (claimed === undefined) {
        try {
          // The state just read starts the range request: no second LOCAL_SERIAL read of it.
          await this.ensureRange({ state });
        } catch (error) {
          const serial = error instanceof StoreUnavailableError && error.level === 'serial';
          if (!serial || ++serialFailures >= SERIAL_ATTEMPTS) {
            throw this.explainRangeFailure(error, state);
          }
          await this.sleep(SERIAL_RETRY_MS * serialFailures * (0.5 + Math.random()));
          attempts--; // a SERIAL failure is not a lost race
          continue;
        }
        // A range came: claim from it. Others drained the one that came before: a lost race.
        if (++rangeWaits > 1 && !keepTrying()) {
          throw new ContentionError(this.sequence, 'claim a block', attempts);
        }
        continue;
      }

      const { next, block } = claimed;
      const floor = this.seen.floor();
      const last = await this.writeState(state, next);
      if (isOurs(last.verdict)) return this.confirmClaim(claimed);
      // A claim that timed out and was overwritten before the re-read may have been applied:
      // its block is a gap. (A state not yet moved when read back means ours was not committed
      // then: kept in `unresolved`, in case a later round commits it, and counted when the claim
      // ends without having seen it committed. A rejection that found a later version is, but
      // for the rarest interleaving, a lost race, and not counted.)
      if (last.verdict === 'unknown' && last.reported === 'unknown') {
        if (last.found?.version !== state?.version) {
          this.counters.wasted += Number(block.last - block.first + 1n);
        } else {
          unresolved.set(op, claimed);
          this.unresolvedOps.add(op);
        }
      }
      // A write shown to be lost is a lost race however it was reported: on Paxos v1 most
      // timeouts under contention are races that the re-read then shows lost. Only a write
      // whose fate stays unknown counts toward the bound on unknown outcomes in a row.
      if (last.found !== undefined) found = this.checkedState(floor, last.found);
      const ours = committed();
      if (ours !== undefined) return this.confirmClaim(ours);
      if (last.reported === 'rejected' || last.verdict === 'lost') {
        unknowns = 0;
        if (!keepTrying()) throw new ContentionError(this.sequence, 'claim a block', attempts);
      } else if (++unknowns >= MAX_CAS_ATTEMPTS) {
        throw this.outOfAttempts('claim a block', unknowns, last, 'local_serial');
      }
      // Backing off after a timeout too: retrying at once only adds a proposer to the round
      // that timed out, which on Paxos v1 prolongs the contention.
      await this.backoff(attempts);
    }
  }

  /** A claim write shown to be ours: counted, marked, and handed to the process level. */
  private confirmClaim({ next, block }: NonNullable<ReturnType<typeof claim>>): {
    readonly block: ClaimedBlock;
    readonly version: number;
  } {
    this.counters.blocksClaimed++;
    this.seen.raiseState(next);
    this.seen.raiseClaim(next.reservedGrant, block.last);
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

  /**
   * The claim transition on `state`, installing {@link confirmed} in the same write when the
   * state is ready for it (dc-state.ts, `installAndClaim`).
   */
  private claimFrom(state: DcState, ask: BlockAsk, op: string): ReturnType<typeof claim> {
    const grant = this.confirmed;
    if (grant !== undefined && state.installedGrant >= grant.number) this.confirmed = undefined;
    const installs =
      grant !== undefined && state.installedGrant === grant.number - 1 && !hasPreloaded(state);
    // The block comes from the reserved range while it lasts, else from the preloaded range, or
    // from the grant this write installs as the preloaded one.
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
    try {
      return installAndClaim(state, grant, size, op);
    } catch (error) {
      if (error instanceof RangeError) throw this.broken(error.message);
      throw error;
    }
  }

  /**
   * Makes sure the DC has a preloaded range: installs a confirmed grant that is not installed yet,
   * or grants the DC its next range at SERIAL and installs it. Does nothing if a preloaded range
   * exists. Concurrent callers share one request.
   * @param known the DC state as a claim just read it, holding no ID to claim: the request
   *   starts from it instead of reading it again, and ends as soon as a later read shows the DC
   *   holding IDs again (another process of the DC got the range first: the claim needs IDs,
   *   not a preload, and a second grant request at SERIAL would only add to the crowd there).
   *   A caller that joins a request in flight shares that request's reads and its end.
   * @throws {StoreUnavailableError} `level: 'serial'` if SERIAL cannot be reached.
   * @throws {SequenceExhaustedError} if GLOBAL is at `max` and no grant is pending.
   * @throws {ContentionError} after {@link MAX_CAS_ATTEMPTS} writes that were not ours.
   * @throws {InvariantError} if a row read breaks an invariant (nothing is written).
   * @throws {StateRolledBackError} if a row read is older than one seen before.
   */
  ensureRange(known?: { readonly state: DcState | undefined }): Promise<void> {
    this.rangeRequest ??= this.requestRange(known).finally(() => {
      this.rangeRequest = undefined;
    });
    return this.rangeRequest;
  }

  /**
   * Gives back `[first, last]`, unused IDs this process holds, by moving the DC's `lastInteger`
   * back to `first - 1`, only if the state is the one this process's own latest write left
   * (its op) and `lastInteger` is still `last`: any other writer since, a claim, an install or
   * a retire (whose state also ends at a grant's end), leaves the run a gap.
   * Retried only after a write shown to be lost: a give-back that might have been applied is
   * never repeated, since another process may have claimed the same IDs in between.
   * @returns how many IDs were returned (0 if they stay a gap).
   */
  async returnBlock(first: bigint, last: bigint): Promise<bigint> {
    for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
      const state = await this.readState();
      if (state === undefined) return 0n;
      if (state.op !== this.lastOwnOp && !mutated('give-back-on-any-state')) return 0n;
      const back = giveBack(state, first, last, randomUUID());
      if (back === undefined) return 0n;
      // From here this process's own write may move last_integer below its blocks.
      this.seen.forgetClaims();
      const result = await this.writeState(state, back.next);
      if (isOurs(result.verdict)) return back.returned;
      if (result.verdict !== 'lost') return 0n;
      await this.backoff(attempt);
    }
    return 0n;
  }

  /**
   * Starts one background range request unless one is in flight or waiting to be retried, the
   * domain is spent, or the allocator is closed. A failed request is retried after about 1 s,
   * doubling up to 30 s, until one succeeds.
   */
  requestRangeInBackground(): void {
    if (
      this.closed ||
      this.wentBack !== undefined ||
      this.exhaustedError !== undefined ||
      this.background !== undefined ||
      this.cancelRangeRetry !== undefined
    ) {
      return;
    }
    // Failures are recorded (and the retry scheduled) where every range request ends.
    this.background = this.ensureRange()
      .catch(() => undefined)
      .finally(() => {
        this.background = undefined;
      });
  }

  /**
   * The DC's claim rate in IDs/s, measured from the DC states this process read (sizing.ts);
   * undefined until two reads lay a second apart.
   */
  get dcRate(): number | undefined {
    return this.rate.perSecond;
  }

  /** The domain is spent and this DC holds no grant not yet installed; never changes again. */
  get exhausted(): SequenceExhaustedError | undefined {
    return this.exhaustedError;
  }

  /**
   * A write of the claim in flight may have been committed without this process knowing (its
   * outcome stayed unknown, the state unmoved when read back): leaving now would make its
   * block a gap no counter shows.
   */
  get claimUnresolved(): boolean {
    return this.unresolvedOps.size > 0;
  }

  /** Stops background range requests and their retries; waits for the one in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancelRangeRetry?.();
    this.cancelRangeRetry = undefined;
    await this.background;
  }

  /** Runs one range request and records how it ended (every caller joins the same one). */
  private async requestRange(known?: { readonly state: DcState | undefined }): Promise<void> {
    const started = this.clock.now();
    try {
      await this.grantAndInstall(known);
    } catch (error) {
      this.rangeFailed(error);
      throw error;
    } finally {
      this.observer?.rangeRequested(this.sequence, this.clock.now() - started);
    }
    this.rangeRetries = 0;
    this.cancelRangeRetry?.();
    this.cancelRangeRetry = undefined;
    this.failures.recovered('range', { dc: this.dc });
    this.onRangeInstalled?.();
  }

  private rangeFailed(error: unknown): void {
    // The process level was told at the read that showed it (see rolledBack).
    if (error instanceof StateRolledBackError) {
      this.failures.record(error);
      return;
    }
    if (error instanceof SequenceExhaustedError) {
      this.failures.record(error);
      if (!this.exhaustionLogged) {
        this.exhaustionLogged = true;
        this.log?.warn(
          { dc: this.dc, globalLast: error.globalLast },
          'the sequence is exhausted; the IDs left in this DC are still served',
        );
      }
      return;
    }
    this.failures.failed('range', error, { dc: this.dc });
    if (this.closed || this.wentBack !== undefined || this.cancelRangeRetry !== undefined) return;
    const base = RANGE_RETRY_FIRST_MS * 2 ** this.rangeRetries;
    this.rangeRetries++;
    const delay = Math.min(RANGE_RETRY_MAX_MS, base * (0.5 + Math.random()));
    this.cancelRangeRetry = this.clock.after(delay, () => {
      this.cancelRangeRetry = undefined;
      this.requestRangeInBackground();
    });
  }

  private async grantAndInstall(known?: { readonly state: DcState | undefined }): Promise<void> {
    if (this.exhaustedError !== undefined) throw this.exhaustedError;
    let given = known;
    for (let attempt = 1; ; attempt++) {
      // The DC state is read before the grants: installed grants never outrun the latest grant,
      // so with this order `latest < installed` can only mean broken rows, never a race. A state
      // the caller read (checked, and raised in the watermarks, by readState) was read before too.
      const state = given === undefined ? await this.readState() : given.state;
      // A claim's request ends once another process of the DC brought IDs (see ensureRange).
      if (known !== undefined && given === undefined && remainingIn(state) > 0n) return;
      given = undefined;
      // The DC has its next range already (another process of the DC installed it, or a grant
      // waits for the preloaded range to become the reserved one): nothing to ask SERIAL. Every
      // process of the DC whose claim crosses the threshold starts a request; all but the first
      // end here, not after two reads at SERIAL on the partition every DC shares.
      if (state !== undefined && hasPreloaded(state)) return;
      // A DC (or shard) with no state whose grant 1 was made with the sequence: installed from a
      // plain read, with no round at SERIAL (see firstGrantLocally).
      if (attempt === 1 && state === undefined) {
        const first = await this.firstGrantLocally();
        if (first !== undefined) {
          this.confirmed = first;
          await this.install(first, undefined);
          return;
        }
      }
      const installed = state?.installedGrant ?? 0;
      // A DC (or shard) with no state yet has never installed a grant: its processes are
      // starting on it, as a deploy or a fresh sequence starts them all at once, and every DC's
      // on the one grants partition. Their first batch goes without the two reads at SERIAL,
      // conditional on the highest GLOBAL this process knows of (`start - 1` at first); the
      // batch's own round reads GLOBAL and grant 1 anyway and answers with them when it does not
      // apply, and the loop below goes on from there. A DC with state keeps the reads, and with
      // them every check of the grants against its state.
      const blind = attempt === 1 && state === undefined;
      const view = blind ? undefined : await this.readGrants();
      const latest = view?.latest;
      const latestNumber = latest?.number ?? 0;
      if (latestNumber < installed) {
        throw this.broken(
          `latest grant ${latestNumber} is older than installed grant ${installed}`,
        );
      }
      if (state !== undefined && view !== undefined) {
        this.checkState(state, { grants: latest && [latest], globalLast: view.globalLast });
      }
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
        this.confirmed = latest;
        await this.install(latest, state);
        return;
      }
      // GLOBAL as read above, or (no state) the highest this process knows of; after a batch lost
      // to another grant, as that batch's round found it.
      let globalLast = view?.globalLast ?? this.seen.floor().globalLast;
      let guessed = blind;
      for (;;) {
        if (globalLast >= this.settings.max) {
          // Final only with no grant of this DC left to install. The reads above (or a re-read
          // after an unknown outcome) take the latest grant before GLOBAL, so a grant made in
          // between, whose requester may have crashed before installing it, can hide behind
          // GLOBAL at `max`; and without reads this process knows nothing of the grants. GLOBAL
          // moves no more, so a read of the latest grant from now on is final.
          const final = await this.readGrants();
          if ((final.latest?.number ?? 0) > installed) break; // the next round installs it
          this.exhaustedError = new SequenceExhaustedError(
            this.sequence,
            this.settings.max,
            globalLast,
          );
          throw this.exhaustedError;
        }
        // Sized by the DC's rate for the autonomy target (sizing.ts); only a size: the batch
        // below is conditional on GLOBAL as for any grant, and the grant ends at `max` at the latest.
        const size = grantSizeFor({
          rate: this.rate.perSecond,
          autonomySeconds: this.settings.autonomySeconds,
          threshold: this.settings.threshold,
          min: this.settings.dcRangeSize,
          max: this.settings.maxDcRangeSize,
          unGranted: this.settings.max - globalLast,
          block: this.blockAsk,
        });
        const grant: Grant = {
          number: installed + 1,
          min: globalLast + 1n,
          max: min(globalLast + size, this.settings.max),
        };
        const floor = this.seen.floor();
        const last = await this.writeGrant(globalLast, grant);
        this.checkFound(last, floor);
        // A batch on a guessed GLOBAL that found grant 1 of this DC, ours in bounds or not,
        // cannot tell another starting process's grant from the first of an older chain whose
        // DC state is gone (installing that again would serve its IDs twice): the reads of the
        // next round show the latest grant, and install grant 1 only if it is the only one.
        if (guessed && last.reported === 'rejected' && last.found?.grant !== undefined) break;
        if (isOurs(last.verdict)) {
          // Not counted when reported rejected: the processes of a DC that start at once send
          // the same batch, and all but one find the winner's grant, equal to theirs. Installing
          // it is right either way; counting it in every process is not. (A driver retry that
          // finished our own batch is the rarer case, and goes uncounted.)
          if (last.reported !== 'rejected') this.counters.rangesGranted++;
          this.confirmed = grant;
          await this.install(grant, state);
          return;
        }
        if (attempt >= MAX_CAS_ATTEMPTS) {
          throw this.outOfAttempts('grant a DC range', attempt, last, 'serial');
        }
        // A batch on a guessed GLOBAL lost to what was there before it, not to a race: no backoff.
        if (last.reported === 'rejected' && !guessed) await this.backoff(attempt);
        guessed = false;
        const moved = this.globalAfterLoss(last);
        // Not shown to be ours, and not simply lost to another grant: the next round re-reads,
        // and installs grant `n` if it exists.
        if (moved === undefined) break;
        globalLast = moved;
        attempt++;
      }
    }
  }

  /**
   * The DC's grant 1, if a plain LOCAL_QUORUM read shows it as the DC's latest grant: granted
   * when the sequence was created (or by a process of the DC that started first). It is checked
   * against GLOBAL and the domain as a read at SERIAL is, not against what this process read
   * before: a plain read may lag behind, which is no loss of rows. A grant row
   * is written only by a Paxos commit, which writes only a value the round chose, and a grant
   * number is never written twice: a row seen at all is that grant for ever. The DC state read
   * before showed no grant installed, and the install is conditional on there still being no
   * state, so the grant is installed once, as after a read at SERIAL. What the plain read cannot
   * show is a later grant whose commit has not reached the local DC: the check that a DC
   * without state has no grant 2 (which catches a DC state lost with acknowledged writes) is
   * made only when it is. Undefined (the reads at SERIAL decide) when no row is seen, the latest
   * is not grant 1, or the read fails.
   */
  private async firstGrantLocally(): Promise<Grant | undefined> {
    let view: GrantView | undefined;
    try {
      view = await this.store.readGrantsLocal(this.sequence, this.dc);
    } catch (error) {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    }
    if (view?.latest?.number !== 1) return undefined;
    // Each replica answers from one snapshot of the partition, where GLOBAL covers every grant.
    this.checkGrants(view);
    return view.latest;
  }

  /**
   * Checks what the round that rejected a grant batch found (GLOBAL, and grant `n` of this DC if
   * it exists) as {@link readGrants} checks a read at SERIAL, for that is what it is; before
   * anything acts on it: judges a batch ours by it, or asks from its GLOBAL.
   * (After an unknown outcome, what was found comes from readGrants itself.)
   */
  private checkFound(last: CasResult<GrantFound>, floor: Floor): void {
    const globalLast = last.found?.globalLast;
    if (last.reported !== 'rejected' || globalLast === undefined) return;
    const view = { globalLast, latest: last.found?.grant };
    this.checkGrants(view);
    // GLOBAL only: grant `n` found, or not, says nothing of the latest grant.
    const wentBack = globalWentBack(floor, globalLast);
    if (wentBack !== undefined) throw this.rolledBack(wentBack);
    this.seen.raiseGrants(view);
  }

  /**
   * GLOBAL as the round that decided our lost batch found it, if that round also found no grant
   * `n` of this DC: another grant took the value ours was conditional on, and nobody of this DC
   * holds the grant we asked for. The next batch may then be conditional on that GLOBAL without
   * reading the grants again at SERIAL (the batch's own conditions decide, as for any value read;
   * at a start on a fresh sequence every DC's processes race there, and each lost round cost
   * every loser a DC-state read and two reads at SERIAL). Checked before, by checkFound.
   */
  private globalAfterLoss(last: CasResult<GrantFound>): bigint | undefined {
    const globalLast = last.found?.globalLast;
    if (last.verdict !== 'lost' || last.found?.grant !== undefined) return undefined;
    return globalLast;
  }

  /** Installs confirmed grant `grant` in the DC state, starting from `known` (possibly stale). */
  private async install(grant: Grant, known: DcState | undefined): Promise<void> {
    let state = known;
    let last: CasResult | undefined;
    for (let attempt = 1; ; attempt++) {
      let next: DcState | undefined;
      try {
        next = installGrant(state, grant, randomUUID());
      } catch (error) {
        if (error instanceof RangeError) throw this.broken(error.message);
        throw error;
      }
      // Installed by someone else, or it must wait for the preloaded range to be used.
      if (next === undefined) return;
      if (last !== undefined && attempt > MAX_CAS_ATTEMPTS) {
        throw this.outOfAttempts('install a DC range', attempt - 1, last, 'local_serial');
      }
      last = await this.writeState(state, next);
      if (isOurs(last.verdict)) return;
      // No backoff: the races an install loses are to block claims (progress, not a crowd of
      // installers: a second installer finds the grant installed). Backing off let a tight
      // loop's claims drain the reserved range meanwhile, and every claim then waited for this
      // install. This process's own claims also carry the grant (claimFrom), so the install
      // lands with whichever write wins first.
      state = await this.readState();
    }
  }

  /** A DC-state write conditional on `current`'s stamp, classified. */
  private async writeState(
    current: DcState | undefined,
    next: DcState,
  ): Promise<CasResult<DcState>> {
    this.assertRowsHeld();
    this.counters.lwtWrites++;
    const expected: DcStamp | undefined = current && { version: current.version, op: current.op };
    // Stamped here, the one place states are written; the store writes it with a row's first
    // write only, so a row keeps the incarnation of the process that opened it.
    const stamped: DcState = { ...next, incarnation: this.incarnation };
    const result = await runConditionalWrite<DcState>({
      write: () => this.store.writeDcState(this.sequence, this.dc, expected, stamped),
      judge: (found) => judgeStateWrite(found, next),
      reread: () => this.readState(),
    });
    this.count(result);
    this.sight(result.found);
    if (isOurs(result.verdict)) {
      this.seen.raiseState(next);
      this.lastOwnOp = next.op;
    }
    return result;
  }

  /**
   * Notes a state a Paxos round showed (a read at LOCAL_SERIAL, or a rejected write's round) that
   * carries the op of a claim write whose outcome stayed unknown: that write was committed, as
   * the version after the state it was conditional on, so its block is the claim's.
   */
  private sight(state: DcState | undefined): void {
    if (state !== undefined && this.unresolvedOps.has(state.op)) this.committedOps.add(state.op);
  }

  /** The grant batch at SERIAL, classified. */
  private async writeGrant(
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasResult<GrantFound>> {
    this.assertRowsHeld();
    this.counters.lwtWrites++;
    const result = await runConditionalWrite<GrantFound>({
      write: () => this.store.grantRange(this.sequence, this.dc, expectedGlobalLast, grant),
      judge: (found) => judgeGrant(found, expectedGlobalLast, grant),
      reread: async () => {
        const view = await this.readGrants();
        let latest = view.latest;
        // The store reads the latest grant, then GLOBAL, each in a Paxos round of its own: the
        // first may miss our batch, accepted by a minority, that the second finishes. GLOBAL
        // moved with no grant `n` seen says "lost" only once a grant read after that GLOBAL read
        // shows none either (our batch, committed, would show there: one partition).
        if ((latest?.number ?? 0) < grant.number && view.globalLast !== expectedGlobalLast) {
          latest = (await this.readGrants()).latest;
        }
        if (latest !== undefined && latest.number > grant.number) {
          // Grant `n` exists and the DC moved past it; whose it was cannot be read back.
          return { globalLast: undefined, grant: undefined };
        }
        return {
          globalLast: view.globalLast,
          grant: latest?.number === grant.number ? latest : undefined,
        };
      },
    });
    this.count(result);
    return result;
  }

  private count(result: CasResult): void {
    if (result.reported === 'rejected' && result.verdict !== 'ours') this.counters.casRejections++;
    if (result.reported === 'unknown') this.counters.casUnknown++;
  }

  private async readState(): Promise<DcState | undefined> {
    this.counters.localSerialReads++;
    const floor = this.seen.floor();
    const state = await this.store.readDcState(this.sequence, this.dc);
    this.sight(state);
    if (state !== undefined) return this.checkedState(floor, state);
    const wentBack = stateWentBack(floor, state);
    if (wentBack !== undefined) throw this.rolledBack(wentBack);
    return state;
  }

  /**
   * The DC state as one plain LOCAL_QUORUM read shows it, for a claim to try its write on;
   * {@link NO_STATE} if it shows none where this process never saw one (the claim may open the
   * state, see openingClaim); or undefined, and the claim reads at LOCAL_SERIAL instead, if the
   * read failed, or shows a state (or none) older than this process saw (replicas that missed a
   * commit, or a round not yet completed). Only committed states reach the table, so a state
   * shown is checked and raises the marks as a LOCAL_SERIAL read's does; but one that went back
   * is never taken for a rollback: only a Paxos round can show that.
   */
  private async guessState(): Promise<DcState | typeof NO_STATE | undefined> {
    const floor = this.seen.floor();
    let state: DcState | undefined;
    try {
      state = await this.store.readDcStateLocal(this.sequence, this.dc);
    } catch (error) {
      if (error instanceof StoreUnavailableError) return undefined;
      throw error;
    }
    if (stateWentBack(floor, state) !== undefined) return undefined;
    if (state === undefined) return NO_STATE;
    this.checkState(state, {});
    this.observeState(state);
    return state;
  }

  /**
   * A state a Paxos round showed (a read at LOCAL_SERIAL, or the round of a rejected write),
   * checked; `floor` is the marks taken before the read or the write was sent.
   * @throws {InvariantError} if it breaks an invariant.
   * @throws {StateRolledBackError} if it is older than a state seen before then.
   */
  private checkedState(floor: Floor, state: DcState): DcState {
    this.checkState(state, {});
    const wentBack = stateWentBack(floor, state);
    if (wentBack !== undefined) throw this.rolledBack(wentBack);
    this.observeState(state);
    return state;
  }

  /** Raises the marks and the DC's rate by a checked state that a read or a round showed. */
  private observeState(state: DcState): void {
    this.seen.raiseState(state);
    this.usage.observe(state);
    this.rate.sample(this.usage.total, this.clock.now());
  }

  /**
   * A DC (or shard) with no state whose grant 1 a plain read shows (made with the sequence, or by
   * a process of the DC that did not install it; see firstGrantLocally): the claim's write
   * installs grant 1 and claims its block in one `INSERT … IF NOT EXISTS` (docs/design.md, "A
   * DC's first range, granted at creation"). The processes of a fleet that starts at once then
   * each send one write, not an install each and a claim each: the first opens the state, and
   * the others' rejected writes return it, to claim from with no read. Undefined (the claim
   * reads at LOCAL_SERIAL) if the read shows no grant 1.
   */
  private async openingClaim(ask: BlockAsk, op: string): Promise<ReturnType<typeof claim>> {
    const first = await this.firstGrantLocally();
    if (first === undefined) return undefined;
    try {
      return installAndClaim(undefined, first, spreadOver(first.max - first.min + 1n, ask), op);
    } catch (error) {
      if (error instanceof RangeError) throw this.broken(error.message);
      throw error;
    }
  }

  /** {@link claimFrom} on a guess; undefined if it cannot (the claim then reads at LOCAL_SERIAL). */
  private claimFromGuess(state: DcState, ask: BlockAsk, op: string): ReturnType<typeof claim> {
    try {
      return this.claimFrom(state, ask, op);
    } catch {
      return undefined;
    }
  }

  private async readGrants(): Promise<GrantView> {
    this.counters.serialReads++;
    const floor = this.seen.floor();
    const view = await this.store.readGrants(this.sequence, this.dc);
    this.checkGrants(view);
    const wentBack = grantsWentBack(floor, view);
    if (wentBack !== undefined) throw this.rolledBack(wentBack);
    this.seen.raiseGrants(view);
    return view;
  }

  private rangeLow(state: DcState): boolean {
    if (hasPreloaded(state)) return false;
    const used = Number(state.lastInteger - state.reservedMin + 1n);
    const size = Number(state.reservedMax - state.reservedMin + 1n);
    return used >= this.settings.threshold * size;
  }

  private checkState(
    state: DcState,
    context: { grants?: readonly Grant[] | undefined; globalLast?: bigint | undefined },
  ): void {
    // Before any other check: a row of another sequence of this name is not ours to judge.
    const other = otherIncarnation(this.dc, state, this.incarnation);
    if (other !== undefined) throw this.recreated(other);
    const first = dcStateViolations(this.dc, state, { settings: this.settings, ...context })[0];
    if (first !== undefined) throw this.broken(`${first.message} (version ${state.version})`);
  }

  private checkGrants(view: GrantView): void {
    // Grants start at `start` (GLOBAL begins at start - 1), as check holds them to.
    const { start, max: high } = this.settings;
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
    if (g.min > g.max || g.min < start || g.max > high) {
      throw this.broken(
        `DC "${this.dc}" grant ${g.number} [${g.min}, ${g.max}] is not within [${start}, ${high}]`,
      );
    }
    // readGrants reads the latest grant before GLOBAL, so even a grant made in between is covered.
    if (g.max > view.globalLast) {
      throw this.broken(
        `DC "${this.dc}" grant ${g.number} ends at ${g.max}, above GLOBAL last_integer ${view.globalLast}`,
      );
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

  /**
   * Writes that were rejected mean contention; writes whose outcome stayed unknown mean the
   * level is unreachable (the error behind them, if any, is the cause).
   */
  private outOfAttempts(
    operation: string,
    attempts: number,
    last: CasResult,
    level: 'serial' | 'local_serial',
  ): Error {
    if (last.reported === 'unknown') {
      const failure = last.rereadError ?? last.cause;
      if (failure instanceof StoreUnavailableError) return failure;
      return new StoreUnavailableError(
        level,
        operation,
        `the last of ${attempts} conditional writes had an unknown outcome`,
        { cause: last.cause },
      );
    }
    return new ContentionError(this.sequence, operation, attempts);
  }

  private broken(detail: string): InvariantError {
    return new InvariantError(this.sequence, detail);
  }

  /**
   * The error of a read that shows the rows gone back, thrown by the caller. The first one stops
   * this allocator's writes (see {@link wentBack}) and tells the process level at once.
   */
  private rolledBack(detail: string): StateRolledBackError {
    return this.latch(new StateRolledBackError(this.sequence, this.dc, detail));
  }

  /**
   * The error of a read that shows a state row of another incarnation, thrown by the caller.
   * Latched as {@link rolledBack} latches: the IDs this process holds may be the other
   * sequence's too, so it drops them, and writes nothing more here.
   */
  private recreated(detail: string): SequenceRecreatedError {
    return this.latch(new SequenceRecreatedError(this.sequence, detail));
  }

  /** The first error of either kind stops this allocator's writes and tells the process level. */
  private latch<E extends StateRolledBackError | SequenceRecreatedError>(error: E): E {
    if (this.wentBack === undefined) {
      this.wentBack = error;
      this.onRolledBack?.(error);
    }
    return error;
  }

  /**
   * Every conditional write passes here first: once the rows were seen gone back, none is sent.
   * @throws {StateRolledBackError} the first sign of it ({@link SequenceRecreatedError} if a row of
   *   another incarnation came first).
   */
  private assertRowsHeld(): void {
    if (this.wentBack !== undefined) throw this.wentBack;
  }

  /** Full jitter: anywhere from 0 to a cap that doubles per lost race up to {@link BACKOFF_MAX_MS}. */
  private backoff(attempt: number): Promise<void> {
    const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt - 1, 30));
    return this.sleep(Math.random() * cap);
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

/**
 * Whose grant the DC's grant `n` is: ours if it has our bounds (grants belong to the DC, so an
 * identical grant by another process of the DC serves as well); lost if it has other bounds (the
 * number is taken for ever), or if it does not exist and GLOBAL has moved past the value ours
 * was conditional on (GLOBAL only grows); otherwise unknown (ours may still be in flight).
 */
export function judgeGrant(
  found: GrantFound | undefined,
  expectedGlobalLast: bigint,
  grant: Grant,
): Judgement {
  if (found?.grant !== undefined) {
    return found.grant.min === grant.min && found.grant.max === grant.max ? 'ours' : 'lost';
  }
  if (found?.globalLast !== undefined && found.globalLast !== expectedGlobalLast) return 'lost';
  return 'unknown';
}

/**
 * The block to cut from a range of `rangeSize` IDs: `ask.size`, but at most an eighth of the
 * range ({@link GRANT_BLOCKS}), and never below `ask.floor` (nor above `ask.size`). A process
 * whose rate asks for a block as large as the DC's range (adaptive blocks start from `blockSize`
 * and grow to `maxBlockSize`, which defaults to `dcRangeSize`) would otherwise take the whole
 * range in one claim, and every other process of the DC would wait for a grant at SERIAL. The
 * grant that follows is sized from the full ask (grantSizeFor: at least eight of its blocks), so
 * blocks reach the asked size from the next range on. Fixed blocks (`blockSize = maxBlockSize`)
 * have floor = size: unchanged.
 */
export function spreadOver(rangeSize: bigint, ask: BlockAsk): bigint {
  const cap = rangeSize / GRANT_BLOCKS;
  if (ask.size <= cap) return ask.size;
  return cap > ask.floor ? cap : min(ask.floor, ask.size);
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
