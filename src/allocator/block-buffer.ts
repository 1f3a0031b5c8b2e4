/**
 * A handle's blocks, in one of three modes, changed only by {@link BlockBuffer.changeMode}:
 * - `serving`: `current` and at most one `preloaded`; a block arrives only when nothing is
 *   preloaded, above every block before it. Goes to `retired` or `dropped`.
 * - `retired` (closing): serves nothing; holds every block, to be given back.
 * - `dropped` (rows went back): holds nothing, since others may claim the blocks again.
 */
import assert from 'node:assert/strict';

import { mutated } from '../mutations.js';
import type { Block } from './block.js';

export type BufferMode = 'serving' | 'retired' | 'dropped';

const MODE_CHANGES: Readonly<Record<BufferMode, readonly BufferMode[]>> = {
  serving: ['retired', 'dropped'],
  retired: [],
  dropped: [],
};

export class BlockBuffer<T extends number | bigint> {
  current: Block<T> | undefined;
  preloaded: Block<T> | undefined;
  /** `current.used` at which the next block is to be claimed; Infinity: not now. */
  preloadAt = Infinity;
  private retired: Block<T>[] = [];
  private mode: BufferMode = 'serving';
  private highest = -1n;
  private takenFromFormer = 0;

  constructor(private readonly threshold: () => number) {}

  get serving(): boolean {
    return this.mode === 'serving';
  }

  get remaining(): number {
    return this.held().reduce((sum, block) => sum + block.remaining, 0);
  }

  private held(): Block<T>[] {
    const held = this.mode === 'retired' ? this.retired : [this.current, this.preloaded];
    return held.filter((block): block is Block<T> => block !== undefined);
  }

  /** IDs taken from every block this buffer held, handed out or skipped. */
  get taken(): number {
    return this.held().reduce((sum, block) => sum + block.used, this.takenFromFormer);
  }

  /** Takes a claimed block; false, taking nothing, unless it lies above every earlier one. */
  accept(block: Block<T>): boolean {
    if (block.first <= this.highest && !mutated('no-accept-guard')) return false;
    if (block.last > this.highest) this.highest = block.last;
    if (this.mode === 'retired') {
      this.retired.push(block);
      return true;
    }
    assert(this.mode === 'serving', `a block arrived in mode ${this.mode}`);
    assert(this.preloaded === undefined, 'a block arrived while another one is preloaded');
    this.preloaded = block;
    return true;
  }

  get highestAccepted(): bigint {
    return this.highest;
  }

  switchToPreloaded(): Block<T> | undefined {
    const next = this.preloaded;
    if (next === undefined || this.mode !== 'serving') return undefined;
    assert(
      this.current === undefined || this.current.remaining === 0,
      'switching blocks while the current one has IDs left',
    );
    this.takenFromFormer += this.current?.used ?? 0;
    this.current = next;
    this.preloaded = undefined;
    this.preloadAt = this.preloadPoint(next);
    return next;
  }

  preloadPoint(block: Block<T>): number {
    return Math.max(1, Math.ceil(this.threshold() * block.size));
  }

  get wantsPreload(): boolean {
    const block = this.current;
    return (
      this.mode === 'serving' &&
      this.preloaded === undefined &&
      block !== undefined &&
      block.used >= this.preloadPoint(block)
    );
  }

  /** The one place the mode changes; returns how many IDs were held. */
  changeMode(to: Exclude<BufferMode, 'serving'>, keepServing = false): number {
    assert(MODE_CHANGES[this.mode].includes(to), `block buffer: ${this.mode} -> ${to}`);
    const held = this.remaining;
    if (to === 'dropped') this.takenFromFormer = this.taken;
    if (to === 'retired') {
      this.retired = [this.current, this.preloaded].filter(
        (block): block is Block<T> => block !== undefined,
      );
    }
    this.mode = to;
    this.preloadAt = Infinity;
    if (!keepServing) {
      this.current = undefined;
      this.preloaded = undefined;
    }
    return held;
  }

  clear(): void {
    this.takenFromFormer = this.taken;
    this.current = undefined;
    this.preloaded = undefined;
    this.retired = [];
  }

  /** The retired blocks' unused IDs ending at the highest claimed, as one contiguous run. */
  unusedRun(): { first: bigint; last: bigint } | undefined {
    const blocks = this.retired;
    let index = blocks.length - 1;
    const top = blocks[index];
    if (top === undefined || top.remaining === 0) return undefined;
    let first = top.nextUnused;
    for (index--; index >= 0; index--) {
      const block = blocks[index]!;
      const after = blocks[index + 1]!;
      if (after.used > 0 || block.last + 1n !== after.first || block.remaining === 0) break;
      first = block.nextUnused;
    }
    return { first, last: top.last };
  }
}
