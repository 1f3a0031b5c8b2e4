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
