/** Failures counted, and logged once per episode: a warning, then an info line on recovery. */

import type { Logger } from '../logger.js';

/** A log's methods alone, so a log of more kinds passes for one of fewer. */
export type FailureSink<Kind extends string> = Pick<
  FailureLog<Kind>,
  'record' | 'failed' | 'recovered'
>;

export class FailureLog<Kind extends string> {
  errors = 0;
  lastError: Error | undefined;
  private readonly failing = new Set<Kind>();

  constructor(
    private readonly log: Logger | undefined,
    private readonly messages: Readonly<Record<Kind, { failed: string; recovered: string }>>,
    private readonly onFailure?: ((error: unknown) => void) | undefined,
  ) {}

  record(error: unknown): void {
    this.errors++;
    this.onFailure?.(error);
    this.lastError = error instanceof Error ? error : new Error(String(error));
  }

  failed(kind: Kind, error: unknown, fields: Record<string, unknown>): void {
    this.record(error);
    if (this.failing.has(kind)) return;
    this.failing.add(kind);
    this.log?.warn({ err: error, ...fields }, this.messages[kind].failed);
  }

  recovered(kind: Kind, fields: Record<string, unknown>): void {
    if (!this.failing.delete(kind)) return;
    this.log?.info(fields, this.messages[kind].recovered);
  }
}
