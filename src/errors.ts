/**
 * Every error a user can cause or meet is an {@link IdGenError} with a stable `code`.
 * Messages say what happened, with the numbers, and what to do.
 */

import { dcOfGrantee, NAME_RULES, type NameKind } from './names.js';
import type { StoreLevel } from './store/port.js';

/** Stable error codes; part of the public API. */
export type IdGenErrorCode =
  | 'IDGEN_INVALID_OPTION'
  | 'IDGEN_INVALID_NAME'
  | 'IDGEN_INVALID_COUNT'
  | 'IDGEN_SEQUENCE_NOT_FOUND'
  | 'IDGEN_SEQUENCE_EXISTS'
  | 'IDGEN_SEQUENCE_EXHAUSTED'
  | 'IDGEN_DOMAIN_NEEDS_BIGINT'
  | 'IDGEN_SERIAL_UNAVAILABLE'
  | 'IDGEN_STORE_UNAVAILABLE'
  | 'IDGEN_INVARIANT_BROKEN'
  | 'IDGEN_CONTENTION'
  | 'IDGEN_STATE_ROLLED_BACK'
  | 'IDGEN_SEQUENCE_RECREATED'
  | 'IDGEN_UNSAFE_CLUSTER'
  | 'IDGEN_DEADLINE_EXCEEDED'
  | 'IDGEN_ABORTED'
  | 'IDGEN_AUTH_FAILED'
  | 'IDGEN_CLOSED';

/**
 * Whether each code's failure may pass by itself (see {@link IdGenError.retryable}). A new code
 * must be added here to compile.
 *
 * @internal
 */
export const RETRYABLE: Readonly<Record<IdGenErrorCode, boolean>> = Object.freeze({
  IDGEN_STORE_UNAVAILABLE: true,
  IDGEN_SERIAL_UNAVAILABLE: true,
  IDGEN_DEADLINE_EXCEEDED: true,
  IDGEN_CONTENTION: true,
  IDGEN_INVALID_OPTION: false,
  IDGEN_INVALID_NAME: false,
  IDGEN_INVALID_COUNT: false,
  IDGEN_SEQUENCE_NOT_FOUND: false,
  IDGEN_SEQUENCE_EXISTS: false,
  IDGEN_SEQUENCE_EXHAUSTED: false,
  IDGEN_DOMAIN_NEEDS_BIGINT: false,
  IDGEN_INVARIANT_BROKEN: false,
  IDGEN_STATE_ROLLED_BACK: false,
  IDGEN_SEQUENCE_RECREATED: false,
  IDGEN_UNSAFE_CLUSTER: false,
  IDGEN_ABORTED: false,
  IDGEN_AUTH_FAILED: false,
  IDGEN_CLOSED: false,
});

/** What a message says happened, before its advice; off the error, so that logs show `message`. */
const FACTS = new WeakMap<IdGenError, string>();

/** `error`'s message without the advice after it, for the CLI to give its own. @internal */
export function factsOf(error: IdGenError): string {
  return FACTS.get(error) ?? error.message;
}

/** Base class: `code` is stable, `message` is for people. */
export class IdGenError extends Error {
  readonly code: IdGenErrorCode;
  /**
   * Whether the same call, made again later unchanged, may succeed (Cassandra or SERIAL out of
   * reach or slow, lost races, a deadline); false when something must change first, for a closed
   * allocator or handle, and for an aborted call. Says nothing of whether the failed call took
   * effect: a write whose outcome is unknown ({@link StoreUnavailableError}) may have been
   * applied.
   *
   * @example
   * ```ts
   * import { setTimeout as sleep } from 'node:timers/promises';
   *
   * for (let attempt = 1; ; attempt++) {
   *   try {
   *     return await orders.next();
   *   } catch (error) {
   *     if (!(error instanceof IdGenError && error.retryable) || attempt === 3) throw error;
   *     await sleep(1000 * attempt);
   *   }
   * }
   * ```
   */
  readonly retryable: boolean;
  constructor(code: IdGenErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.retryable = RETRYABLE[code];
  }
}

/**
 * How much of a refused value an {@link InvalidOptionError} shows and keeps: all; only its kind,
 * for values that may hold a secret; or nothing, for an unknown key (`passwrd` may hold one).
 */
export type ShownValue = 'value' | 'kind' | 'unknown-key';

/** An option or setting is out of range. */
export class InvalidOptionError extends IdGenError {
  /** The value given; undefined where {@link ShownValue} keeps it back. */
  readonly received: unknown;

  /**
   * @param shown how much of `received` the message shows and the error keeps: messages and
   *   error objects end up in logs.
   */
  constructor(
    readonly option: string,
    received: unknown,
    readonly allowed: string,
    shown: ShownValue = 'value',
  ) {
    super(
      'IDGEN_INVALID_OPTION',
      shown === 'unknown-key'
        ? `Invalid option "${option}": no such option (its value is not shown); allowed: ${allowed}.`
        : `Invalid option "${option}": received ${receivedText(received, shown)}; allowed: ${allowed}.`,
    );
    this.received = shown === 'value' ? received : undefined;
  }
}

/** A sequence, keyspace or datacenter name breaks its naming rule (names.ts). */
export class InvalidNameError extends IdGenError {
  constructor(
    readonly kind: NameKind,
    readonly received: unknown,
  ) {
    super(
      'IDGEN_INVALID_NAME',
      `Invalid ${kind} name ${describe(received)}: ${NAME_RULES[kind].rule}.`,
    );
  }
}

/**
 * `take(n)` with a count that is not a positive integer within the largest block (`block`: the
 * fixed block size; `maxBlock`: adaptive blocks' `maxBlockSize`), or larger than the DC ranges
 * the sequence now grants (`range`: `dcRangeSize` was lowered below it).
 */
export class InvalidCountError extends IdGenError {
  constructor(
    readonly received: unknown,
    readonly maxCount: number,
    readonly limitedBy: 'block' | 'maxBlock' | 'range' = 'block',
  ) {
    const bound =
      limitedBy === 'block'
        ? "the sequence's block size, blockSize"
        : "the sequence's largest block, maxBlockSize";
    super(
      'IDGEN_INVALID_COUNT',
      limitedBy !== 'range'
        ? `Invalid count ${describe(received)}: take() needs an integer from 1 to ${maxCount} (${bound}; raise it with alterSequence()).`
        : `Invalid count ${describe(received)}: the DC now holds ranges of only ${maxCount} IDs, so take() cannot get ${describe(received)} contiguous IDs; ask for at most ${maxCount}, or raise dcRangeSize with alterSequence(). Nothing was skipped.`,
    );
  }
}

export class SequenceNotFoundError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly keyspace: string,
  ) {
    const facts = `Sequence "${sequence}" not found in keyspace "${keyspace}".`;
    super(
      'IDGEN_SEQUENCE_NOT_FOUND',
      `${facts} Create it with ids.createSequence(${JSON.stringify(sequence)}).`,
    );
    FACTS.set(this, facts);
  }
}

/** Why a create cannot tell whether it made a sequence whose settings it finds (createdBy `unknown`). */
export const CREATOR_UNKNOWN =
  'its settings were last written by an alter (or by an older release), and a create can be applied and still be reported rejected or timed out';

export class SequenceExistsError extends IdGenError {
  /**
   * @param differences with `ifNotExists`: how the existing sequence's IDs differ from those
   * asked (`start 1 (asked 48213578)`); empty when the create was not `ifNotExists`.
   * @param createdBy `another` create (another op, or other IDs: this create was never
   * applied), or `unknown` (last written by an alter: a create can be applied yet reported
   * rejected or timed out, and an alter replaces its op).
   */
  constructor(
    readonly sequence: string,
    readonly keyspace: string,
    readonly differences: readonly string[] = [],
    readonly createdBy: 'another' | 'unknown' = 'another',
  ) {
    const facts =
      differences.length > 0
        ? `Sequence "${sequence}" already exists in keyspace "${keyspace}" with other IDs than asked: ${differences.join(', ')}; nothing was changed.`
        : createdBy === 'unknown'
          ? `Sequence "${sequence}" exists in keyspace "${keyspace}", but whether this create made it cannot be told: ${CREATOR_UNKNOWN}.`
          : `Sequence "${sequence}" already exists in keyspace "${keyspace}"; nothing was changed.`;
    super(
      'IDGEN_SEQUENCE_EXISTS',
      differences.length > 0
        ? `${facts} A sequence's min, max and start never change (alterSequence() changes sizes only): to hand out the IDs asked, create a sequence under another name.`
        : `${facts} Change its sizes with alterSequence(), or pass ifNotExists to accept it as it is.`,
    );
    FACTS.set(this, facts);
  }
}

/** The domain is used up: no ID above `max` exists. */
export class SequenceExhaustedError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly max: bigint,
    readonly globalLast: bigint,
  ) {
    super(
      'IDGEN_SEQUENCE_EXHAUSTED',
      `Sequence "${sequence}" is exhausted: every ID up to its maximum ${max} has been granted (GLOBAL last_integer ${globalLast}). Create a sequence with a larger domain.`,
    );
  }
}

/** A sequence whose IDs may exceed 2^53-1 was opened for JavaScript numbers. */
export class DomainNeedsBigIntError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly max: bigint,
  ) {
    super(
      'IDGEN_DOMAIN_NEEDS_BIGINT',
      `Sequence "${sequence}" has IDs up to ${max}, beyond Number.MAX_SAFE_INTEGER. Open it with ids.sequence("${sequence}", { bigint: true }).`,
    );
  }
}

/**
 * Every local range of the DC is spent and no new DC range can be granted because SERIAL
 * (Paxos over all DCs) cannot be reached, e.g. during a DC partition, or timed out.
 */
export class SerialUnavailableError extends IdGenError {
  /**
   * The SERIAL failure was a timeout, not a refusal: it may also be contention on the grants
   * partition or overload, so the message does not claim a partition.
   */
  readonly timedOut: boolean;

  /**
   * @param dc the grantee: a DC, or a shard of one (`dc1/3`), whose ranges `dcRemaining` counts.
   */
  constructor(
    readonly sequence: string,
    readonly dc: string,
    readonly dcRemaining: bigint,
    options?: { cause?: unknown },
  ) {
    const timedOut = options?.cause instanceof StoreUnavailableError && options.cause.timedOut;
    const owner = dcOfGrantee(dc);
    const shard = owner !== undefined && owner !== dc;
    const from = shard ? `DC "${owner}"` : `DC "${dc}"`;
    const holder = shard ? `its shard "${dc}"` : 'the DC';
    const facts = timedOut
      ? `Sequence "${sequence}": SERIAL operations from ${from} timed out, so no new DC range could be granted, and ${holder} has ${dcRemaining} IDs left in its ranges. SERIAL times out when many processes ask for DC ranges at once (as when they all start on a fresh sequence), when the cluster is overloaded, or while datacenters are being cut off.`
      : `Sequence "${sequence}": SERIAL consistency is unreachable from ${from}, so no new DC range can be granted, and ${holder} has ${dcRemaining} IDs left in its ranges.`;
    super(
      'IDGEN_SERIAL_UNAVAILABLE',
      timedOut
        ? `${facts} Check the nodes' load and openAdmin().status(); larger DC ranges (dcRangeSize or autonomySeconds, through alterSequence()) make grants rarer.`
        : `${facts} Restore connectivity between datacenters, or size dcRangeSize for longer partitions (alterSequence(); docs/sizing.md).`,
      options,
    );
    FACTS.set(this, facts);
    this.timedOut = timedOut;
  }
}

/** Cassandra could not be reached at the consistency an operation needs. */
export class StoreUnavailableError extends IdGenError {
  /** A timeout rather than a refusal: as often contention or overload as a node down. */
  readonly timedOut: boolean;

  constructor(
    readonly level: StoreLevel,
    readonly operation: string,
    /** What failed, in a few words, without the advice the message adds. */
    readonly detail: string,
    options?: { cause?: unknown; timedOut?: boolean },
  ) {
    const timedOut = options?.timedOut === true;
    super(
      'IDGEN_STORE_UNAVAILABLE',
      `Cassandra is unavailable at ${levelName(level)} for ${operation}: ${detail.replace(/\.+$/, '')}. Check that the contact points are reachable and the nodes of the DC are up${timedOut ? ', and how busy they are: a timeout also comes from many processes contending for one partition, or from an overloaded cluster' : ''}.`,
      options,
    );
    this.timedOut = timedOut;
  }
}

/** Cassandra refused the credentials (or the authentication scheme) given. */
export class AuthenticationError extends IdGenError {
  constructor(
    readonly contactPoints: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    const facts = `Cassandra at ${contactPoints} refused to authenticate: ${detail}.`;
    super(
      'IDGEN_AUTH_FAILED',
      `${facts} Check the username and password options (or the authProvider) and that the role may log in.`,
      options,
    );
    FACTS.set(this, facts);
  }
}

/** Stored rows break an invariant; nothing is allocated from them. */
export class InvariantError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly detail: string,
  ) {
    const facts = `Sequence "${sequence}": stored state breaks an invariant (${detail}); refusing to allocate.`;
    super(
      'IDGEN_INVARIANT_BROKEN',
      `${facts} Run openAdmin().check(${JSON.stringify(sequence)}) and repair the rows before retrying.`,
    );
    FACTS.set(this, facts);
  }
}

/** The operation a {@link ContentionError} of `alterSequence` names. */
export const ALTER_OPERATION = 'alter the sequence';
/** The operation a {@link ContentionError} of `retireDcRanges` names. */
export const RETIRE_OPERATION = 'retire the DC ranges';

/** Too many processes raced for the same row; the bounded retries ran out. */
export class ContentionError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly operation: string,
    readonly attempts: number,
  ) {
    super(
      'IDGEN_CONTENTION',
      `Sequence "${sequence}": ${operation} lost ${attempts} compare-and-set races in a row. ${
        operation === ALTER_OPERATION
          ? 'Other alters kept changing the settings first: retry once they are done.'
          : operation === RETIRE_OPERATION
            ? "The DC's processes kept writing its state first: stop the sequence's processes in this DC, then retire again."
            : 'Raise the block size so processes claim less often.'
      }`,
    );
  }
}

/**
 * Stored rows went backwards (a version, grant number or high-water mark lower than one this
 * process saw): acknowledged writes were lost, so claimed IDs may be claimed again. The process
 * stops allocating from the sequence and drops the IDs it holds.
 */
export class StateRolledBackError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly dc: string,
    readonly detail: string,
  ) {
    const facts = `Sequence "${sequence}": the rows DC "${dc}" allocates from went back (${detail}); acknowledged writes were lost, as when replicas crash with commitlog_sync: periodic. Refusing to allocate, since IDs could be handed out twice.`;
    super(
      'IDGEN_STATE_ROLLED_BACK',
      `${facts} Stop this sequence's processes in the DC, run preflight(), then ids.retireDcRanges(${JSON.stringify(sequence)}) from the DC before allocating again (docs/operations.md, "When rows went back").`,
    );
    FACTS.set(this, facts);
  }
}

/**
 * Rows of an earlier sequence of the same name (deleted by hand and seeded again) are in the
 * way: they, or processes still running with it, would hand out its IDs again. `seed` refuses;
 * a process refuses such a DC-state row, and stops (dropping its IDs) when its sequence was
 * created again.
 */
export class SequenceRecreatedError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly detail: string,
  ) {
    super(
      'IDGEN_SEQUENCE_RECREATED',
      `Sequence "${sequence}": ${detail}. Its rows were deleted by hand and the name created again, and IDs could be handed out twice. Stop the processes that use it, and create a sequence under another name (docs/operations.md, "Data layout": a sequence's rows are never deleted).`,
    );
  }
}

/**
 * A node runs a setting under which acknowledged writes can be lost or Paxos is not safe (see
 * `preflight()`); `initSchema()`, and the CLI's `init` and `seed`, refuse unless overridden.
 */
export class UnsafeClusterError extends IdGenError {
  constructor(
    readonly problems: readonly string[],
    readonly override: string,
  ) {
    const facts = `The cluster is not safe for allocating IDs: ${problems.join('; ')}.`;
    super(
      'IDGEN_UNSAFE_CLUSTER',
      `${facts} Fix the nodes' settings (docs/design.md, "What the cluster must guarantee"), or pass ${override} if you accept that a crash can hand out IDs twice.`,
    );
    FACTS.set(this, facts);
  }
}

/**
 * A call waited for IDs until its deadline (a failing refill's own error is thrown instead); the
 * refill carries on. After lost races `cause` is the last {@link ContentionError}: contention is
 * never a call's error by itself.
 */
export class DeadlineError extends IdGenError {
  /** @param options.timeoutSetting what sets the timeout, for the message (the service names its own). */
  constructor(
    readonly sequence: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown; timeoutSetting?: string },
  ) {
    const contention = options?.cause instanceof ContentionError ? options.cause : undefined;
    const facts = `Sequence "${sequence}": no ID within ${timeoutMs} ms; the refill is still in flight.${contention ? ` It kept losing compare-and-set races to other processes (${contention.operation}).` : ''}`;
    const setting =
      options?.timeoutSetting ??
      `the call's timeoutMs (or the "callTimeoutMs" option of connect())`;
    super(
      'IDGEN_DEADLINE_EXCEEDED',
      `${facts}${contention ? ' Raise blockSize, or let blocks adapt (maxBlockSize), with alterSequence(), so that processes claim less often.' : ''} Raise ${setting} if Cassandra is slow, or check the cluster with openAdmin().status().`,
      options === undefined ? undefined : { cause: options.cause },
    );
    FACTS.set(this, facts);
  }
}

/** A call's AbortSignal fired before it got its IDs; `cause` is the signal's reason. */
export class AbortedError extends IdGenError {
  constructor(
    readonly sequence: string,
    options?: { cause?: unknown },
  ) {
    super(
      'IDGEN_ABORTED',
      `Sequence "${sequence}": the call was aborted before it got its IDs; nothing was taken.`,
      options,
    );
  }
}

export class ClosedError extends IdGenError {
  /**
   * @param sequence the handle's sequence, when a handle was used after it closed: on its own
   *   `close()` a new handle serves again, after the allocator's only a new allocator does.
   */
  constructor(readonly sequence?: string) {
    super(
      'IDGEN_CLOSED',
      sequence === undefined
        ? 'The allocator is closed; create a new one with connect().'
        : `This handle of sequence "${sequence}" is closed; get a new one with ids.sequence(${JSON.stringify(sequence)}), or, if the allocator was closed, a new allocator with connect().`,
    );
  }
}

function levelName(level: StoreLevel): string {
  return level === 'serial' ? 'SERIAL' : level === 'local_serial' ? 'LOCAL_SERIAL' : 'LOCAL_QUORUM';
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  // "[object Object]" says nothing; an object's fields may say too much.
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return kindOf(value);
  if (typeof value === 'function') return kindOf(value);
  return String(value);
}

function receivedText(received: unknown, shown: ShownValue): string {
  // A missing option reads "received nothing": `undefined` means nothing to a CLI user.
  if (received === undefined) return 'nothing';
  return shown === 'kind' ? `${kindOf(received)} (not shown)` : describe(received);
}

/** What kind of value `value` is, without its contents: "a number", "an object", "null". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
