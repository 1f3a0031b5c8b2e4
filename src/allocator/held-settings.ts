/** A handle's settings: read at load, re-read when old, checked, ordered against blocks. */

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
import { ID_SPACE_KEYS, readSettingsFound } from './settings-writes.js';

/** Settings older than this are re-read at the next claim. */
export const SETTINGS_REFRESH_MS = 10_000;

/** take()'s answer when it cannot decide on the settings held. */
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
  readonly forfeit: (error: SequenceRecreatedError) => void;
}

/** The refusal of a count above the largest block. */
export function largestBlockError(count: number, settings: SequenceSettings): InvalidCountError {
  const fixed = settings.maxBlockSize === settings.blockSize;
  return new InvalidCountError(count, settings.maxBlockSize, fixed ? 'block' : 'maxBlock');
}

export class HeldSettings {
  private incarnation: string | undefined;
  private readAt = 0;
  /** A tick per block accepted and per read started: an earlier-started read never wins. */
  private ticks = 0;
  private readTick = 0;
  private readonly blockTicks = new WeakMap<object, number>();

  constructor(private readonly context: HeldSettingsContext) {}

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

  /** The settings re-read if due or `force`d; undefined if those held stay. */
  async reread(
    held: () => SequenceSettings | undefined,
    force: boolean,
  ): Promise<SequenceSettings | undefined> {
    const { store, name, log, clock } = this.context;
    const now = clock.now();
    if (held() === undefined) return undefined;
    if (!force && now - this.readAt < SETTINGS_REFRESH_MS) return undefined;
    const tick = ++this.ticks;
    let stored: StoredSettings | undefined;
    try {
      stored = await store.readSequence(name);
    } catch (error) {
      log?.debug({ err: error }, 'could not re-read the settings; keeping the ones held');
      return undefined;
    }
    // Sequences are never dropped: missing locally is a missed read.
    if (stored === undefined) return undefined;
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
    if (tick < this.readTick) return undefined;
    const before = held()!;
    for (const key of ID_SPACE_KEYS) {
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

  blockAccepted(block: object): void {
    this.blockTicks.set(block, ++this.ticks);
  }

  /**
   * Why no block can hold a take() of `count`, on recent settings; ones saying ranges are large
   * enough decide only if read after `next` came.
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
