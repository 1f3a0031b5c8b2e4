/**
 * The sequences a service hands out, over one {@link IdGen}: the allowlist, which handle type
 * each sequence needs, and one deadline per request however many IDs it draws.
 */

import type { IdGen } from '../allocator/id-gen.js';
import type { IdRange } from '../allocator/block.js';
import type { Sequence } from '../allocator/sequence.js';
import { DeadlineError } from '../errors.js';
import { validateSequenceName } from '../options.js';
import { MAX_SAFE_ID } from '../settings/model.js';
import { ServeRefusal } from './http-errors.js';

/** One request's budget: the moment it gives up (`Date.now()` time) and its cancellation. */
export interface RequestCall {
  /** The request's whole timeout, for messages. */
  readonly timeoutMs: number;
  readonly deadline: number;
  readonly signal: AbortSignal;
  /**
   * Whether the response reached the caller's connection: true once written in full, false if
   * the connection closed first. Settles once the response is done with, either way.
   */
  readonly delivered: Promise<boolean>;
}

/**
 * A sequence served, and whether its domain reaches beyond 2^53-1: then its IDs are bigints, and
 * the service writes them as strings whatever their size.
 */
interface Handle {
  readonly wide: boolean;
  readonly sequence: Sequence<number> | Sequence<bigint>;
}

export class ServedSequences {
  readonly #ids: IdGen;
  readonly #allowlist: ReadonlySet<string> | undefined;
  /**
   * Whether each sequence's domain reaches beyond 2^53-1, read once (a domain never changes). Only
   * existing names get here, so made-up names cannot grow it.
   */
  readonly #wide = new Map<string, Promise<boolean>>();
  /** The names whose settings were read: sequences that exist, which a log line may name. */
  readonly #found = new Set<string>();

  /** @param allowlist the only sequences served; undefined serves every one in the keyspace. */
  constructor(ids: IdGen, allowlist: readonly string[] | undefined) {
    this.#ids = ids;
    this.#allowlist = allowlist === undefined ? undefined : new Set(allowlist);
  }

  /**
   * Whether `name` is allowlisted or was read: only such a name is logged (a made-up one may be a
   * secret put in the path).
   */
  isKnown(name: string): boolean {
    return this.#allowlist?.has(name) ?? this.#found.has(name);
  }

  get allowlist(): readonly string[] | undefined {
    return this.#allowlist === undefined ? undefined : [...this.#allowlist];
  }

  /**
   * `count` IDs of sequence `name`, strictly increasing ({@link Sequence.nextIds}). IDs whose
   * response does not reach the caller are never handed out again: a gap, counted `undelivered`.
   * @throws everything {@link Sequence.next} throws, {@link DeadlineError} with the request's own
   * timeout, and the refusals of {@link ServedSequences.handle}.
   */
  async draw(
    name: string,
    count: number,
    call: RequestCall,
  ): Promise<{ readonly wide: boolean; readonly ids: readonly (number | bigint)[] }> {
    const { wide, sequence } = await this.handle(name);
    // nextIds() looks at the signal before each ID, the first included.
    const options = { signal: call.signal, timeoutMs: remaining(call) };
    const ids = await withRequestTimeout<readonly (number | bigint)[]>(name, call, () =>
      sequence.nextIds(count, options, call.delivered),
    );
    return { wide, ids };
  }

  /**
   * `count` contiguous IDs of sequence `name`; counted as {@link ServedSequences.draw}'s are,
   * undelivered if the response does not reach the caller.
   * @throws everything {@link Sequence.take} throws, and the refusals of
   * {@link ServedSequences.handle}.
   */
  async take(
    name: string,
    count: number,
    call: RequestCall,
  ): Promise<{ readonly wide: boolean; readonly range: IdRange<number> | IdRange<bigint> }> {
    const { wide, sequence } = await this.handle(name);
    // take() looks at the signal after each of its waits, before it takes IDs.
    const options = { signal: call.signal, timeoutMs: remaining(call) };
    const range = await withRequestTimeout<IdRange<number> | IdRange<bigint>>(name, call, () =>
      sequence.takeDelivered(count, options, call.delivered),
    );
    return { wide, range };
  }

  /**
   * Loads sequence `name` and makes sure this process holds IDs of it (claiming a block if it
   * holds none); returns how many it holds.
   * @throws everything {@link Sequence.ready} throws.
   */
  async ready(name: string, timeoutMs: number): Promise<number> {
    const handle = await this.handle(name);
    await handle.sequence.ready({ timeoutMs });
    return handle.sequence.stats().remaining;
  }

  /**
   * The handle of sequence `name`, of the type its domain needs.
   * @throws {ServeRefusal} `IDGEN_SEQUENCE_NOT_SERVED` for a name outside the allowlist.
   * @throws {InvalidNameError} for a bad name; {@link SequenceNotFoundError} if it does not
   * exist; {@link StoreUnavailableError} if its settings cannot be read.
   */
  async handle(name: string): Promise<Handle> {
    validateSequenceName(name);
    if (this.#allowlist !== undefined && !this.#allowlist.has(name)) {
      throw new ServeRefusal(
        'IDGEN_SEQUENCE_NOT_SERVED',
        `Sequence "${name}" is not served here; this service serves only: ${[...this.#allowlist].join(', ')}.`,
      );
    }
    const wide = await this.#isWide(name);
    return { wide, sequence: this.#ids.sequence(name, { bigint: wide }) };
  }

  #isWide(name: string): Promise<boolean> {
    let known = this.#wide.get(name);
    if (known === undefined) {
      known = this.#ids.readSequence(name).then((settings) => {
        this.#found.add(name);
        return settings.max > MAX_SAFE_ID;
      });
      this.#wide.set(name, known);
      known.catch(() => this.#wide.delete(name));
    }
    return known;
  }
}

/** Milliseconds left before the request's deadline. */
function remaining(call: RequestCall): number {
  return Math.max(0, call.deadline - Date.now());
}

/** What sets a request's timeout, for the message of a request that outlasted it. */
const SERVICE_TIMEOUT = `the service's request timeout (the "timeoutMs" option of createServer(); docs/service.md, "Options")`;

/** Runs `work`, rethrowing a {@link DeadlineError} with the request's whole timeout. */
async function withRequestTimeout<R>(
  sequence: string,
  call: RequestCall,
  work: () => Promise<R>,
): Promise<R> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DeadlineError) {
      throw new DeadlineError(sequence, call.timeoutMs, {
        cause: error.cause,
        timeoutSetting: SERVICE_TIMEOUT,
      });
    }
    throw error;
  }
}
