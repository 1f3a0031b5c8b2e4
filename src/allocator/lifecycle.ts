/** A handle's lifecycle, changed only by {@link Lifecycle.to}. */

import assert from 'node:assert/strict';

import { ClosedError, type SequenceRecreatedError, type StateRolledBackError } from '../errors.js';

/**
 * A {@link Sequence}'s state: `idle` (settings not loaded), `loading`, `ready` (serving),
 * `closing` (no ID taken any more; refills finish and unused IDs go back), `closed`.
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

  get open(): boolean {
    return !this.closing && this.rolledBack === undefined;
  }

  assertOpen(): void {
    if (this.closing) throw new ClosedError(this.name);
    if (this.rolledBack !== undefined) throw this.rolledBack;
  }
}
