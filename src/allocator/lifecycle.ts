/** A handle's lifecycle, changed only by {@link Lifecycle.to}, which asserts the transition. */

import assert from 'node:assert/strict';

import { ClosedError, type SequenceRecreatedError, type StateRolledBackError } from '../errors.js';

/**
 * Lifecycle of a {@link Sequence}:
 *
 * | state | meaning | next states |
 * |---|---|---|
 * | `idle` | settings not loaded (never used, or the last load failed) | `loading`, `closing` |
 * | `loading` | reading the settings from the store | `ready`, `idle` (load failed), `closing` |
 * | `ready` | settings loaded; IDs are served and blocks refilled | `closing` |
 * | `closing` | `close()` called: from that moment no ID is taken (a call in flight may still resolve with one taken before); in-flight refills finish, the unused IDs go back, the usage counters get a last report | `closed` |
 * | `closed` | nothing held; every call throws {@link ClosedError} | – |
 */
export type SequenceState = 'idle' | 'loading' | 'ready' | 'closing' | 'closed';

const TRANSITIONS: Readonly<Record<SequenceState, readonly SequenceState[]>> = {
  idle: ['loading', 'closing'],
  loading: ['ready', 'idle', 'closing'],
  ready: ['closing'],
  closing: ['closed'],
  closed: [],
};

export class Lifecycle {
  state: SequenceState = 'idle';
  /** The rows went back or the sequence was recreated: nothing is served or claimed any more. */
  rolledBack: StateRolledBackError | SequenceRecreatedError | undefined;

  constructor(private readonly name: string) {}

  to(next: SequenceState): void {
    assert(
      TRANSITIONS[this.state].includes(next),
      `sequence "${this.name}": ${this.state} -> ${next} is not a transition`,
    );
    this.state = next;
  }

  get closing(): boolean {
    return this.state === 'closing' || this.state === 'closed';
  }

  /** Whether blocks may still be claimed: not closing, closed or rolled back. */
  get open(): boolean {
    return !this.closing && this.rolledBack === undefined;
  }

  /** @throws {ClosedError} once closing; the rollback once the rows went back. */
  assertOpen(): void {
    if (this.closing) throw new ClosedError(this.name);
    if (this.rolledBack !== undefined) throw this.rolledBack;
  }
}
