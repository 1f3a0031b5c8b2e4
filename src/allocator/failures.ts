/**
 * Failures of one level of the allocator, counted and logged once per episode: a warning when a
 * kind of operation starts failing, an info line when it works again, nothing in between.
 */
import type { Logger } from '../logger.js';

export class FailureLog<Kind extends string> {
  errors = 0;
  lastError: Error | undefined;
  /** When `lastError` happened (ms since the epoch), to pick the latest of several levels. */
  lastErrorAt = 0;
  private readonly failing = new Set<Kind>();

  /** @param onFailure told of every failure counted (metrics count them by code). */
  constructor(
    private readonly log: Logger | undefined,
    private readonly messages: Readonly<Record<Kind, { failed: string; recovered: string }>>,
    private readonly onFailure?: ((error: unknown) => void) | undefined,
  ) {}

  record(error: unknown): void {
    this.errors++;
    this.onFailure?.(error);
    this.lastError = error instanceof Error ? error : new Error(String(error));
    this.lastErrorAt = Date.now();
  }

  /** Counts a failure of `kind`, and logs it if `kind` was working until now. */
  failed(kind: Kind, error: unknown, fields: Record<string, unknown>): void {
    this.record(error);
    if (this.failing.has(kind)) return;
    this.failing.add(kind);
    this.log?.warn({ err: error, ...fields }, this.messages[kind].failed);
  }

  /** Logs that `kind` works again, if it was failing. */
  recovered(kind: Kind, fields: Record<string, unknown>): void {
    if (!this.failing.delete(kind)) return;
    this.log?.info(fields, this.messages[kind].recovered);
  }
}
