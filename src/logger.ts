import { InvalidOptionError } from './errors.js';

/** Fields first, then the message (pino's and bunyan's order). */
export type LogMethod = (fields: Record<string, unknown>, message: string) => void;

/** What idgen-cass logs to: pino and bunyan loggers fit as they are. Silent without one. */
export interface Logger {
  child(bindings: Record<string, unknown>): Logger;
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

const LOG_METHODS = ['child', 'debug', 'info', 'warn', 'error'] as const;

/** @throws {InvalidOptionError} naming `option` for a value given that is no {@link Logger}. */
export function checkLogger(option: string, value: unknown): void {
  if (value === undefined) return;
  const methods =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  if (!LOG_METHODS.every((method) => typeof methods[method] === 'function')) {
    throw new InvalidOptionError(
      option,
      value,
      'a logger with child, debug, info, warn and error methods (pino or bunyan)',
    );
  }
}
