/**
 * What a handle knows of its settings: read at load (locally or at SERIAL), re-read at a claim
 * once older than {@link SETTINGS_REFRESH_MS} so an alter reaches running processes, checked on
 * every read, and ordered against accepted blocks so take() refuses a count only on settings not
 * older than what it saw.
 */

import type { Logger } from '../logger.js';

import {
  DomainNeedsBigIntError,
  InvalidCountError,
  InvariantError,
  SequenceNotFoundError,
  SequenceRecreatedError,
} from '../errors.js';
import { MAX_SAFE_ID } from '../settings/model.js';
import { validateStoredSettings } from '../settings/resolve.js';
import type { IdStore, SequenceSettings, StoredSettings } from '../store/port.js';
import type { Clock } from './clock.js';
import { readSettingsFound } from './settings-writes.js';

/** Settings older than this are re-read at the next claim (one LOCAL_QUORUM read). */
export const SETTINGS_REFRESH_MS = 10_000;

/** take()'s answer when it cannot decide on the settings held (see {@link runRefusal}). */
export const RE_READ_SETTINGS = Symbol('re-read the settings');

interface NextBlock {
  readonly size: number;
  readonly rangeSize: bigint;
}

export interface HeldSettingsContext {
  readonly name: string;
  readonly keyspace: string;
  readonly store: IdStore;
  readonly clock: Clock;
  readonly log: Logger | undefined;
  readonly bigint: boolean;
  /** Told before the error is thrown: the IDs held may be the new sequence's too. */
  readonly forfeit: (error: SequenceRecreatedError) => void;
}

/** The refusal of a count above the largest block, naming the setting that bounds it. */
export function largestBlockError(count: number, settings: SequenceSettings): InvalidCountError {
  const fixed = settings.maxBlockSize === settings.blockSize;
  return new InvalidCountError(count, settings.maxBlockSize, fixed ? 'block' : 'maxBlock');
}

export class HeldSettings {
  private readonly context: HeldSettingsContext;
  private incarnation: string | undefined;
  private readAt = 0;
  /**
   * A tick per block accepted and per read started; `readTick` is that of the read whose settings
   * are held, so an earlier-started read never replaces them.
   */
  private ticks = 0;
  private readTick = 0;
  private readonly blockTicks = new WeakMap<object, number>();

  constructor(context: HeldSettingsContext) {
    this.context = context;
  }

  /** @throws {SequenceNotFoundError} if there are none; what {@link check} throws. */
  async load(): Promise<StoredSettings> {
    const { store, name, keyspace, clock } = this.context;
    const stored = await readSettingsFound(store, name);
    if (stored === undefined) throw new SequenceNotFoundError(name, keyspace);
    this.check(stored.settings);
    this.incarnation = stored.incarnation;
    this.readAt = clock.now();
    this.readTick = ++this.ticks;
    return stored;
  }

  /**
   * The settings re-read if those held are older than {@link SETTINGS_REFRESH_MS} (or with
   * `force`); undefined if they stay. Only sizes may change: settings that break the rules or move
   * the domain are refused ({@link InvariantError}). A failed read keeps those held (they are only
   * sizes) and is retried at the next claim.
   * @throws {SequenceRecreatedError} if the sequence was created again meanwhile.
   */
  reread(
    held: () => SequenceSettings | undefined,
    force: boolean,
  ): Promise<SequenceSettings | undefined> | undefined {
    const now = this.context.clock.now();
    if (held() === undefined) return undefined;
    if (!force && now - this.readAt < SETTINGS_REFRESH_MS) return undefined;
    return this.read(held, now);
  }

  private async read(
    held: () => SequenceSettings | undefined,
    now: number,
  ): Promise<SequenceSettings | undefined> {
    const { store, name, log } = this.context;
    const tick = ++this.ticks;
    let stored: StoredSettings | undefined;
    try {
      stored = await store.readSequence(name);
    } catch (error) {
      log?.debug({ err: error }, 'could not re-read the settings; keeping the ones held');
      return undefined;
    }
    // Sequences are never dropped: missing from a local read is a missed read, like a failed one.
    if (stored === undefined) return undefined;
    // Only a create writes the incarnation, once: another one is another sequence of this name.
    if (stored.incarnation !== this.incarnation) {
      const error = new SequenceRecreatedError(
        name,
        `it was created again while this process used it (incarnation ${stored.incarnation ?? 'none'}, loaded ${this.incarnation ?? 'none'})`,
      );
      this.context.forfeit(error);
      throw error;
    }
    const { settings } = stored;
    this.check(settings);
    // A take() and a claim may re-read at once: the read that started last wins.
    if (tick < this.readTick) return undefined;
    const before = held()!;
    for (const key of ['domain', 'min', 'max', 'start'] as const) {
      if (settings[key] !== before[key]) {
        throw new InvariantError(
          name,
          `settings: ${key} changed from ${String(before[key])} to ${String(settings[key])} while in use`,
        );
      }
    }
    this.readAt = now;
    this.readTick = tick;
    return settings;
  }

  /** `block` was accepted: settings read after it may decide on it (see {@link runRefusal}). */
  blockAccepted(block: object): void {
    this.blockTicks.set(block, ++this.ticks);
  }

  /**
   * Why take() must not skip to `next` or claim another block for a run the current block cannot
   * hold: when no block can hold it, each would only burn a block. Refused on settings at most
   * {@link SETTINGS_REFRESH_MS} old (or just re-read):
   * - above the largest block (`maxBlockSize` lowered since take() checked);
   * - above the DC's ranges, when `next` comes from a range smaller than the run and the settings
   *   say ranges stay that small. Settings saying they are large enough decide only if read after
   *   `next` came; read before, they may predate an alter that lowered them, and are re-read.
   */
  runRefusal(
    count: number,
    next: NextBlock | undefined,
    settings: SequenceSettings,
    reread: boolean,
  ): InvalidCountError | typeof RE_READ_SETTINGS | undefined {
    const recent = reread || this.context.clock.now() - this.readAt < SETTINGS_REFRESH_MS;
    const smallRange =
      next !== undefined && next.size < count && next.rangeSize < BigInt(count)
        ? new InvalidCountError(count, Number(next.rangeSize), 'range')
        : undefined;
    // The range first: with ranges that small, a larger block would not help.
    if (smallRange !== undefined && count > settings.dcRangeSize) {
      return recent ? smallRange : RE_READ_SETTINGS;
    }
    if (count > settings.maxBlockSize) {
      return recent ? largestBlockError(count, settings) : RE_READ_SETTINGS;
    }
    if (smallRange === undefined) return undefined;
    if (this.readTick > (this.blockTicks.get(next!) ?? Infinity)) return undefined;
    // A re-read that failed leaves the settings as old as before: refused, as by the range.
    return reread ? smallRange : RE_READ_SETTINGS;
  }

  private check(settings: SequenceSettings): void {
    const { name, bigint } = this.context;
    validateStoredSettings(settings);
    if (settings.name !== name) {
      throw new InvariantError(name, `settings name is ${JSON.stringify(settings.name)}`);
    }
    if (!bigint && settings.max > MAX_SAFE_ID) {
      throw new DomainNeedsBigIntError(name, settings.max);
    }
  }
}
