/** The sequences a service hands out over one {@link IdGen}: the allowlist, each handle's type. */

import type { IdGen } from '../allocator/id-gen.js';
import type { CallOptions } from '../allocator/call-deadline.js';
import type { Sequence } from '../allocator/sequence.js';
import { DeadlineError } from '../errors.js';
import { validateName } from '../options.js';
import { MAX_SAFE_ID } from '../settings/model.js';
import { ServeRefusal } from './http-errors.js';

/** One request's budget; `delivered`: true once its response is written in full. */
export interface RequestCall {
  readonly timeoutMs: number;
  readonly deadline: number;
  readonly signal: AbortSignal;
  readonly delivered: Promise<boolean>;
}

type AnySequence = Sequence<number> | Sequence<bigint>;

const SERVICE_TIMEOUT =
  'the service\'s request timeout (the "timeoutMs" option of createServer(); docs/service.md, "Options")';

export class ServedSequences {
  readonly #ids: IdGen;
  /** The only sequences served; undefined serves every one in the keyspace. */
  readonly allowlist: readonly string[] | undefined;
  /** Whether a domain passes 2^53-1, read once per existing sequence (a domain never changes). */
  readonly #wide = new Map<string, Promise<boolean>>();
  readonly #found = new Set<string>();
  readonly #maxPending: number;
  #pending = 0;

  constructor(ids: IdGen, allowlist: readonly string[] | undefined, maxPending: number) {
    this.#ids = ids;
    this.allowlist = allowlist;
    this.#maxPending = maxPending;
  }

  /** Whether `name` is allowlisted or known to exist: the only names a log line shows. */
  isKnown(name: string): boolean {
    return this.allowlist?.includes(name) ?? this.#found.has(name);
  }

  /**
   * Runs `work` on sequence `name` within the request's budget; beyond `maxPending` requests under
   * way, one is refused before it draws or reads anything. IDs whose response does not reach the
   * caller are never handed out again (`call.delivered`): a gap, counted `undelivered`.
   * @throws {ServeRefusal} `IDGEN_OVERLOADED`; {@link DeadlineError} with the whole timeout.
   */
  async serve<R>(
    name: string,
    call: RequestCall,
    work: (sequence: AnySequence, options: CallOptions, wide: boolean) => Promise<R>,
  ): Promise<R> {
    if (this.#pending >= this.#maxPending) {
      throw new ServeRefusal(
        'IDGEN_OVERLOADED',
        `This service has ${this.#pending} ID requests under way, its most (the "maxPendingRequests" option of createServer()); retry shortly, or spread the load over more instances.`,
      );
    }
    this.#pending++;
    try {
      const { wide, sequence } = await this.handle(name);
      const timeoutMs = Math.max(0, call.deadline - Date.now());
      return await work(sequence, { signal: call.signal, timeoutMs }, wide);
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      const cause = error.cause;
      throw new DeadlineError(name, call.timeoutMs, { cause, timeoutSetting: SERVICE_TIMEOUT });
    } finally {
      this.#pending--;
    }
  }

  /** The handle of `name`, bigint where its domain needs it (`wide`: IDs written as strings). */
  async handle(name: string): Promise<{ wide: boolean; sequence: AnySequence }> {
    validateName('sequence', name);
    if (this.allowlist !== undefined && !this.allowlist.includes(name)) {
      throw new ServeRefusal(
        'IDGEN_SEQUENCE_NOT_SERVED',
        `Sequence "${name}" is not served here; this service serves only: ${this.allowlist.join(', ')}.`,
      );
    }
    let wide = this.#wide.get(name);
    if (wide === undefined) {
      wide = this.#ids.readSequence(name).then((settings) => {
        this.#found.add(name);
        return settings.max > MAX_SAFE_ID;
      });
      this.#wide.set(name, wide);
      wide.catch(() => this.#wide.delete(name));
    }
    const bigint = await wide;
    return { wide: bigint, sequence: this.#ids.sequence(name, { bigint }) };
  }
}
