/**
 * Every error is an {@link IdGenError} with a stable `code` and its facts as properties; a
 * message says what happened, then what to do in the library's terms (the CLI swaps the advice).
 */
import { dcOfGrantee, NAME_RULES, type NameKind } from './names.js';
import type { StoreLevel } from './store/port.js';

/** Each code, and whether its failure may pass by itself (IdGenError.retryable). */
export const RETRYABLE = Object.freeze({
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

/** Stable error codes; part of the public API. */
export type IdGenErrorCode = keyof typeof RETRYABLE;

/** Each message without its advice, off the error so that logs show `message` only. */
const FACTS = new WeakMap<IdGenError, string>();

/** `error`'s message without the advice after it, for the CLI to give its own. @internal */
export function factsOf(error: IdGenError): string {
  return FACTS.get(error) ?? error.message;
}

/** Base class: `code` is stable, `message` is for people. */
export class IdGenError extends Error {
  readonly code: IdGenErrorCode;
  /**
   * Whether the same call, made again later, may succeed; says nothing of whether the failed
   * call took effect (a write whose outcome is unknown may have been applied).
   */
  readonly retryable: boolean;

  /** `advice`, what to do, follows `message`, what happened. */
  constructor(
    code: IdGenErrorCode,
    message: string,
    { advice, ...options }: { cause?: unknown; advice?: string } = {},
  ) {
    super(advice === undefined ? message : `${message} ${advice}`, options);
    if (advice !== undefined) FACTS.set(this, message);
    this.name = new.target.name;
    this.code = code;
    this.retryable = RETRYABLE[code];
  }
}

/** How much of a refused value is shown: all, its kind (may be a secret), nothing (unknown key). */
export type ShownValue = 'value' | 'kind' | 'unknown-key';

/** An option or setting is out of range. */
export class InvalidOptionError extends IdGenError {
  /** The value given; undefined unless `shown` is `value`. */
  readonly received: unknown;

  constructor(
    readonly option: string,
    received: unknown,
    readonly allowed: string,
    shown: ShownValue = 'value',
    /** What the API's type takes besides `allowed`, e.g. a bigint; said in the message only. */
    types?: string,
  ) {
    const what =
      shown === 'unknown-key'
        ? 'no such option (its value is not shown)'
        : received === undefined
          ? 'received nothing'
          : `received ${shown === 'kind' ? `${kindOf(received)} (not shown)` : describe(received)}`;
    const also = types === undefined ? '' : ` (${types})`;
    super(
      'IDGEN_INVALID_OPTION',
      `Invalid option "${option}": ${what}; allowed: ${allowed}${also}.`,
    );
    this.received = shown === 'value' ? received : undefined;
  }
}

/** A sequence, keyspace or datacenter name breaks its naming rule. */
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

/** `take(n)` with a count that is no integer from 1 to the largest block, or above the DC range. */
export class InvalidCountError extends IdGenError {
  constructor(
    readonly received: unknown,
    readonly maxCount: number,
    readonly limitedBy: 'block' | 'maxBlock' | 'range' = 'block',
  ) {
    const count = describe(received);
    const bound =
      limitedBy === 'block'
        ? "the sequence's block size, blockSize"
        : "the sequence's largest block, maxBlockSize";
    super(
      'IDGEN_INVALID_COUNT',
      limitedBy === 'range'
        ? `Invalid count ${count}: the DC now holds ranges of only ${maxCount} IDs, so take() cannot get ${count} contiguous IDs; ask for at most ${maxCount}, or raise dcRangeSize with alterSequence(). Nothing was skipped.`
        : `Invalid count ${count}: take() needs an integer from 1 to ${maxCount} (${bound}; raise it with alterSequence()).`,
    );
  }
}

/** No sequence of the name in the keyspace. */
export class SequenceNotFoundError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly keyspace: string,
  ) {
    super(
      'IDGEN_SEQUENCE_NOT_FOUND',
      `Sequence "${sequence}" not found in keyspace "${keyspace}".`,
      { advice: `Create it with ids.createSequence(${JSON.stringify(sequence)}).` },
    );
  }
}

/** Why a create cannot tell whether it made the sequence it finds (createdBy `unknown`). */
export const CREATOR_UNKNOWN =
  'its settings were last written by an alter (or by an older release), and a create can be applied and still be reported rejected or timed out';

/** `differences`: with `ifNotExists`, how the existing IDs differ from those asked. */
export class SequenceExistsError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly keyspace: string,
    readonly differences: readonly string[] = [],
    readonly createdBy: 'another' | 'unknown' = 'another',
  ) {
    const where = `Sequence "${sequence}" already exists in keyspace "${keyspace}"`;
    super(
      'IDGEN_SEQUENCE_EXISTS',
      differences.length > 0
        ? `${where} with other IDs than asked: ${differences.join(', ')}; nothing was changed.`
        : createdBy === 'unknown'
          ? `Sequence "${sequence}" exists in keyspace "${keyspace}", but whether this create made it cannot be told: ${CREATOR_UNKNOWN}.`
          : `${where}; nothing was changed.`,
      {
        advice:
          differences.length > 0
            ? "A sequence's min, max and start never change (alterSequence() changes sizes only): to hand out the IDs asked, create a sequence under another name."
            : 'Change its sizes with alterSequence(), or pass ifNotExists to accept it as it is.',
      },
    );
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

/** The DC's ranges are spent and SERIAL, needed for a new grant, is unreachable or timed out. */
export class SerialUnavailableError extends IdGenError {
  /** A timeout: also contention or overload, so no partition is claimed. */
  readonly timedOut: boolean;

  constructor(
    readonly sequence: string,
    /** The grantee: a DC or a shard of one (`dc1/3`). */
    readonly dc: string,
    readonly dcRemaining: bigint,
    options?: { cause?: unknown },
  ) {
    const timedOut = options?.cause instanceof StoreUnavailableError && options.cause.timedOut;
    const owner = dcOfGrantee(dc);
    const shard = owner !== undefined && owner !== dc;
    const from = shard ? `DC "${owner}"` : `DC "${dc}"`;
    const left = `${shard ? `its shard "${dc}"` : 'the DC'} has ${dcRemaining} IDs left in its ranges`;
    super(
      'IDGEN_SERIAL_UNAVAILABLE',
      timedOut
        ? `Sequence "${sequence}": SERIAL operations from ${from} timed out, so no new DC range could be granted, and ${left}. SERIAL times out when many processes ask for DC ranges at once (as when they all start on a fresh sequence), when the cluster is overloaded, or while datacenters are being cut off.`
        : `Sequence "${sequence}": SERIAL consistency is unreachable from ${from}, so no new DC range can be granted, and ${left}.`,
      {
        ...options,
        advice: timedOut
          ? "Check the nodes' load and openAdmin().status(); larger DC ranges (dcRangeSize or autonomySeconds, through alterSequence()) make grants rarer."
          : 'Restore connectivity between datacenters, or size dcRangeSize for longer partitions (alterSequence(); docs/sizing.md).',
      },
    );
    this.timedOut = timedOut;
  }
}

/** Cassandra could not be reached at the consistency an operation needs. */
export class StoreUnavailableError extends IdGenError {
  /** A timeout: as often contention or overload as a node down. */
  readonly timedOut: boolean;

  constructor(
    readonly level: StoreLevel,
    readonly operation: string,
    readonly detail: string,
    { timedOut = false, ...options }: { cause?: unknown; timedOut?: boolean } = {},
  ) {
    const busy = timedOut
      ? ', and how busy they are: a timeout also comes from many processes contending for one partition, or from an overloaded cluster'
      : '';
    const at = level === 'local' ? 'LOCAL_QUORUM' : level.toUpperCase();
    super(
      'IDGEN_STORE_UNAVAILABLE',
      `Cassandra is unavailable at ${at} for ${operation}: ${detail.replace(/\.+$/, '')}. Check that the contact points are reachable and the nodes of the DC are up${busy}.`,
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
    super(
      'IDGEN_AUTH_FAILED',
      `Cassandra at ${contactPoints} refused to authenticate: ${detail}.`,
      {
        ...options,
        advice:
          'Check the username and password options (or the authProvider) and that the role may log in.',
      },
    );
  }
}

/** Stored rows break an invariant; nothing is allocated from them. */
export class InvariantError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly detail: string,
  ) {
    super(
      'IDGEN_INVARIANT_BROKEN',
      `Sequence "${sequence}": stored state breaks an invariant (${detail}); refusing to allocate.`,
      {
        advice: `Run openAdmin().check(${JSON.stringify(sequence)}) and repair the rows before retrying.`,
      },
    );
  }
}

/** The operations a {@link ContentionError} of `alterSequence` and `retireDcRanges` name. */
export const ALTER_OPERATION = 'alter the sequence';
export const RETIRE_OPERATION = 'retire the DC ranges';

/** Too many processes raced for the same row; the bounded retries ran out. */
export class ContentionError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly operation: string,
    readonly attempts: number,
  ) {
    const advice =
      operation === ALTER_OPERATION
        ? 'Other alters kept changing the settings first: retry once they are done.'
        : operation === RETIRE_OPERATION
          ? "The DC's processes kept writing its state first: stop the sequence's processes in this DC, then retire again."
          : 'Raise the block size so processes claim less often.';
    super(
      'IDGEN_CONTENTION',
      `Sequence "${sequence}": ${operation} lost ${attempts} compare-and-set races in a row. ${advice}`,
    );
  }
}

/** Stored rows went backwards (acknowledged writes lost); the process stops allocating. */
export class StateRolledBackError extends IdGenError {
  constructor(
    readonly sequence: string,
    readonly dc: string,
    readonly detail: string,
  ) {
    super(
      'IDGEN_STATE_ROLLED_BACK',
      `Sequence "${sequence}": the rows DC "${dc}" allocates from went back (${detail}); acknowledged writes were lost, as when replicas crash with commitlog_sync: periodic. Refusing to allocate, since IDs could be handed out twice.`,
      {
        advice: `Stop this sequence's processes in the DC, run preflight(), then ids.retireDcRanges(${JSON.stringify(sequence)}) from the DC before allocating again (docs/operations.md, "When rows went back").`,
      },
    );
  }
}

/** Rows of an earlier sequence of the name (deleted by hand, created again) are in the way. */
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

/** A node runs settings under which IDs can be handed out twice (see `preflight()`). */
export class UnsafeClusterError extends IdGenError {
  constructor(
    readonly problems: readonly string[],
    /** What the caller passes to go ahead anyway. */
    readonly override: string,
  ) {
    super(
      'IDGEN_UNSAFE_CLUSTER',
      `The cluster is not safe for allocating IDs: ${problems.join('; ')}.`,
      {
        advice: `Fix the nodes' settings (docs/design.md, "What the cluster must guarantee"), or pass ${override} if you accept that a crash can hand out IDs twice.`,
      },
    );
  }
}

/** A call got no IDs by its deadline; after lost races `cause` is the last ContentionError. */
export class DeadlineError extends IdGenError {
  /** `timeoutSetting`: what sets the timeout, as the message names it. */
  constructor(
    readonly sequence: string,
    readonly timeoutMs: number,
    { timeoutSetting, ...options }: { cause?: unknown; timeoutSetting?: string } = {},
  ) {
    const contention = options.cause instanceof ContentionError ? options.cause : undefined;
    const raced = contention
      ? ` It kept losing compare-and-set races to other processes (${contention.operation}).`
      : '';
    const raise = contention
      ? 'Raise blockSize, or let blocks adapt (maxBlockSize), with alterSequence(), so that processes claim less often. '
      : '';
    const setting =
      timeoutSetting ?? `the call's timeoutMs (or the "callTimeoutMs" option of connect())`;
    super(
      'IDGEN_DEADLINE_EXCEEDED',
      `Sequence "${sequence}": no ID within ${timeoutMs} ms; the refill is still in flight.${raced}`,
      {
        ...options,
        advice: `${raise}Raise ${setting} if Cassandra is slow, or check the cluster with openAdmin().status().`,
      },
    );
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

/** The allocator, or the handle of `sequence`, was used after close(). */
export class ClosedError extends IdGenError {
  constructor(readonly sequence?: string) {
    super(
      'IDGEN_CLOSED',
      sequence === undefined
        ? 'The allocator is closed; create a new one with connect().'
        : `This handle of sequence "${sequence}" is closed; get a new one with ids.sequence(${JSON.stringify(sequence)}), or, if the allocator was closed, a new allocator with connect().`,
    );
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  const opaque = typeof value === 'function' || (typeof value === 'object' && value !== null);
  return opaque && !Array.isArray(value) ? kindOf(value) : String(value);
}

/** What kind of value `value` is, without its contents: "a number", "an object", "null". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
