import { InvalidOptionError } from './errors.js';

/**
 * The logger idgen-cass writes to, as a structural type: pino and bunyan loggers fit as they
 * are, and so does any object with these methods. The library is silent without one.
 */

/** One log method: structured fields first, then the message (pino's and bunyan's order). */
export type LogMethod = (fields: Record<string, unknown>, message: string) => void;

export interface Logger {
  child(bindings: Record<string, unknown>): Logger;
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

const LOG_METHODS = ['child', 'debug', 'info', 'warn', 'error'] as const;

/** Whether `value` has every method of {@link Logger} (else it would fail later, at first use). */
export function isLogger(value: unknown): value is Logger {
  return (
    typeof value === 'object' &&
    value !== null &&
    LOG_METHODS.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')
  );
}

/**
 * Refuses a `logger` option that is given and not a {@link Logger}.
 * @throws {InvalidOptionError} naming `option`.
 */
export function checkLogger(option: string, value: unknown): void {
  if (value !== undefined && !isLogger(value)) {
    throw new InvalidOptionError(
      option,
      value,
      'a logger with child, debug, info, warn and error methods (pino or bunyan)',
    );
  }
}
