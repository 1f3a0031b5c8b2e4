/** Status maths, pure: a sequence's domain usage and, per DC, ranges, IDs left, rate, runway. */

import { hasPreloaded } from '../allocator/dc-state.js';
import { isRetireOp } from '../allocator/retire.js';
import { dcOfGrantee } from '../names.js';
import { ascending } from '../order.js';
import { maxBigInt } from '../settings/rules.js';
import {
  USAGE_CAUSES,
  type DcState,
  type DcUsageCounts,
  type Grant,
  type SequenceSettings,
  type UsageCause,
} from '../store/port.js';

/** What the overview reads show of one sequence at one moment (may lag a little). */
export interface SequenceSnapshot {
  readonly settings: SequenceSettings;
  /** A DC state of another incarnation belongs to an earlier sequence of the name. */
  readonly incarnation?: string | undefined;
  readonly globalLast: bigint;
  /** Ascending by number. */
  readonly grants: ReadonlyMap<string, readonly Grant[]>;
  readonly states: ReadonlyMap<string, DcState>;
  /** Ms since the epoch. */
  readonly readAt: number;
  /** Undefined when the counters could not be read. */
  readonly usage?: ReadonlyMap<string, DcUsageCounts> | undefined;
  /** EACH_QUORUM failed: states read at LOCAL_QUORUM in `localDc`, `readInOwnDc`'s in their DC. */
  readonly statesNotCurrent?:
    | {
        readonly localDc: string;
        readonly reason: string;
        readonly readInOwnDc?: readonly string[] | undefined;
        readonly notReached?: Readonly<Record<string, string>> | undefined;
      }
    | undefined;
}

export type WasteCause = Exclude<UsageCause, 'issued'>;

/** What a DC's processes reported they did with the IDs they claimed. */
export interface DcUsageStatus {
  readonly issued: bigint;
  readonly wasted: Readonly<Record<WasteCause, bigint>>;
  readonly wastedTotal: bigint;
  /** `consumed - issued - wastedTotal`, at least 0: held by live processes, or lost. */
  readonly unreported: bigint;
}

export interface HeldRange {
  readonly grant: number;
  readonly min: bigint;
  readonly max: bigint;
}

export interface DcStatus {
  readonly dc: string;
  readonly grants: readonly Grant[];
  /** The range blocks are claimed from; undefined before the first grant is installed. */
  readonly reserved: HeldRange | undefined;
  /** The next range, loaded once `threshold` of the reserved one is used. */
  readonly preloaded: HeldRange | undefined;
  /** A grant made at SERIAL but not installed yet (its requester may have died). */
  readonly pendingGrant: Grant | undefined;
  /** Highest ID handed to a process of the DC; undefined without a state. */
  readonly lastInteger: bigint | undefined;
  readonly reservedUsed: bigint;
  readonly reservedUsedShare: number;
  /** IDs held and not handed out (rest of reserved plus preloaded; without a state, grant 1). */
  readonly left: bigint;
  /** IDs handed to the DC's processes since its first grant (gaps included). */
  readonly consumed: bigint;
  /** IDs/s handed to processes; undefined if not measured or `rowsNotCurrent`. */
  readonly rate: number | undefined;
  /** Seconds `left` lasts at `rate` (`Infinity` at 0); undefined if unknown or nothing held. */
  readonly runway: number | undefined;
  /** Why the rows may lag (now or in `previous`): `left` as last seen, no rate. Never local. */
  readonly rowsNotCurrent: string | undefined;
  readonly usage: DcUsageStatus | undefined;
}

export interface SequenceStatus {
  readonly settings: SequenceSettings;
  readonly globalLast: bigint;
  readonly granted: bigint;
  readonly domainSize: bigint;
  /** Share of the domain at or below `globalLast` (IDs below `start` count as used), 0 to 1. */
  readonly domainUsedShare: number;
  readonly domainLeft: bigint;
  /** Every DC with a grant, a state or a host, sorted by name. */
  readonly dcs: readonly DcStatus[];
  /** Between the two reads the rates come from; undefined if not measured. */
  readonly sampledOverMs: number | undefined;
  /** Seconds until the domain is spent at current rates (`Infinity` at 0); undefined if unknown. */
  readonly exhaustsIn: number | undefined;
  /** A later status can measure rates since these reads. */
  readonly snapshot: SequenceSnapshot;
}

/** Rates compare `current` with `previous`; `dcs` are shown even without a grant or state. */
export function sequenceStatus(
  current: SequenceSnapshot,
  previous?: SequenceSnapshot,
  dcs: readonly string[] = [],
): SequenceStatus {
  const { settings, globalLast } = current;
  const elapsedMs = current.readAt - (previous?.readAt ?? Infinity);
  const measured = elapsedMs > 0 ? elapsedMs : undefined;
  const names = [...new Set([...current.grants.keys(), ...current.states.keys(), ...dcs])];
  const statuses = names
    .sort(byDcThenShard)
    .map((dc) => dcStatus(dc, current, measured === undefined ? undefined : previous));
  const domainSize = sizeOf(settings);
  const domainLeft = settings.max - globalLast;
  const rate = statuses.reduce((sum, dc) => sum + (dc.rate ?? 0), 0);
  const held = statuses.reduce((sum, dc) => sum + dc.left, domainLeft);
  // A DC whose rate is unknown leaves the sum unknown too.
  const known = measured !== undefined && statuses.every((dc) => dc.rowsNotCurrent === undefined);
  return {
    settings,
    globalLast,
    granted: globalLast - settings.start + 1n,
    domainSize,
    domainUsedShare: share(clamp(globalLast - settings.min + 1n, 0n, domainSize), domainSize),
    domainLeft,
    dcs: statuses,
    sampledOverMs: measured,
    exhaustsIn: known ? runwayOf(held, rate) : undefined,
    snapshot: current,
  };
}

function dcStatus(
  dc: string,
  current: SequenceSnapshot,
  previous: SequenceSnapshot | undefined,
): DcStatus {
  const grants = current.grants.get(dc) ?? [];
  const state = current.states.get(dc);
  const latest = grants.at(-1);
  const pendingGrant =
    latest !== undefined && latest.number > (state?.installedGrant ?? 0) ? latest : undefined;
  const consumed = consumedBy(state, grants);
  const rowsNotCurrent =
    notCurrentIn(current, dc) ?? (previous === undefined ? undefined : notCurrentIn(previous, dc));

  let rate: number | undefined;
  if (previous !== undefined && rowsNotCurrent === undefined) {
    const before = consumedBy(previous.states.get(dc), previous.grants.get(dc) ?? []);
    // A retire's gap is no rate; unmeasured when the counters cannot say how big it was.
    const retired =
      (current.usage?.get(dc)?.retired ?? 0n) - (previous.usage?.get(dc)?.retired ?? 0n);
    const retireBetween =
      (current.usage === undefined || previous.usage === undefined) &&
      isRetireOp(state?.op) &&
      previous.states.get(dc)?.op !== state?.op;
    // A block given back on close moves last_integer back: never below 0.
    const seconds = (current.readAt - previous.readAt) / 1000;
    if (!retireBetween) rate = Math.max(0, Number(consumed - before - retired)) / seconds;
  }

  const reserved = state && {
    grant: state.reservedGrant,
    min: state.reservedMin,
    max: state.reservedMax,
  };
  const preloaded =
    state !== undefined && hasPreloaded(state)
      ? { grant: state.installedGrant, min: state.preloadedMin, max: state.preloadedMax }
      : undefined;
  const reservedUsed = state === undefined ? 0n : reservedUsedOf(state);
  const reservedSize = reserved === undefined ? 0n : sizeOf(reserved);
  // Without a state, grant 1 is installed without SERIAL, so it counts as held; later ones do not.
  const firstGrant = state === undefined && pendingGrant?.number === 1 ? sizeOf(pendingGrant) : 0n;
  const left =
    reservedSize - reservedUsed + (preloaded === undefined ? 0n : sizeOf(preloaded)) + firstGrant;
  return {
    dc,
    grants,
    reserved,
    preloaded,
    pendingGrant,
    lastInteger: state?.lastInteger,
    reservedUsed,
    reservedUsedShare: share(reservedUsed, reservedSize),
    left,
    consumed,
    rate,
    // Without a state and nothing held there is no range to last.
    runway: state === undefined && left === 0n ? undefined : runwayOf(left, rate),
    rowsNotCurrent,
    usage: usageOf(current.usage, dc, consumed),
  };
}

function notCurrentIn(snapshot: SequenceSnapshot, dc: string): string | undefined {
  const notCurrent = snapshot.statesNotCurrent;
  const ownDc = dcOfGrantee(dc) ?? dc;
  if (notCurrent === undefined || ownDc === notCurrent.localDc) return undefined;
  if (notCurrent.readInOwnDc?.includes(ownDc) === true) return undefined;
  const there = notCurrent.notReached?.[ownDc];
  const also = there === undefined ? '' : `; its own nodes not reached either: ${there}`;
  return `not read current from ${notCurrent.localDc} (${notCurrent.reason}${also})`;
}

function usageOf(
  usage: ReadonlyMap<string, DcUsageCounts> | undefined,
  dc: string,
  consumed: bigint,
): DcUsageStatus | undefined {
  if (usage === undefined) return undefined;
  const counts = usage.get(dc);
  const causes = USAGE_CAUSES.filter((cause): cause is WasteCause => cause !== 'issued');
  const wasted = Object.fromEntries(causes.map((cause) => [cause, counts?.[cause] ?? 0n]));
  const wastedTotal = causes.reduce((sum, cause) => sum + wasted[cause]!, 0n);
  const issued = counts?.issued ?? 0n;
  const unreported = maxBigInt(consumed - issued - wastedTotal, 0n);
  return { issued, wasted: wasted as Record<WasteCause, bigint>, wastedTotal, unreported };
}

/** Grantees in DC order, each DC's shards by number (`us`, `us/1`, `us/2`, `us/10`, `us-east`). */
function byDcThenShard(a: string, b: string): number {
  const [dcA, dcB] = [dcOfGrantee(a) ?? a, dcOfGrantee(b) ?? b];
  const shard = (grantee: string, dc: string) => Number(grantee.slice(dc.length + 1));
  return ascending(dcA, dcB) || shard(a, dcA) - shard(b, dcB);
}

/** Undefined without an autonomy target or a measured runway. */
export function runwayBelowTarget(
  runway: number | undefined,
  autonomySeconds: number,
): boolean | undefined {
  if (autonomySeconds === 0 || runway === undefined) return undefined;
  return runway < autonomySeconds;
}

function runwayOf(left: bigint, rate: number | undefined): number | undefined {
  if (rate === undefined) return undefined;
  if (left === 0n) return 0;
  return rate > 0 ? Number(left) / rate : Infinity;
}

/** Earlier grants plus the used reserved part. */
function consumedBy(state: DcState | undefined, grants: readonly Grant[]): bigint {
  if (state === undefined) return 0n;
  const earlier = grants.filter((grant) => grant.number < state.reservedGrant);
  return earlier.reduce((sum, grant) => sum + sizeOf(grant), reservedUsedOf(state));
}

function reservedUsedOf(state: DcState): bigint {
  const size = sizeOf({ min: state.reservedMin, max: state.reservedMax });
  return clamp(state.lastInteger - state.reservedMin + 1n, 0n, size);
}

function sizeOf(range: { readonly min: bigint; readonly max: bigint }): bigint {
  return range.max - range.min + 1n;
}

/** Exact enough for display at any bigint size. */
function share(part: bigint, whole: bigint): number {
  if (whole <= 0n) return 0;
  return Number((part * 10n ** 18n) / whole) / 1e18;
}

function clamp(value: bigint, low: bigint, high: bigint): bigint {
  return value < low ? low : value > high ? high : value;
}

export interface HostStatus {
  /** `address:port` */
  readonly address: string;
  readonly dc: string;
  readonly up: boolean;
}

/** Whether a SERIAL read succeeded from `dc`. */
export interface SerialProbe {
  readonly reachable: boolean;
  readonly dc: string;
  readonly tookMs: number;
  readonly error: string | undefined;
}

/** Unsafe settings on the local DC's nodes only (status must work inside a partition). */
export interface LocalNodeSafety {
  readonly dc: string;
  readonly problems: readonly string[];
  /** Why some settings could not be read. */
  readonly error: string | undefined;
}

/** What {@link Admin.status} returns; `dc` is the local DC every read was coordinated from. */
export interface StatusReport {
  readonly keyspace: string;
  readonly dc: string;
  readonly at: Date;
  readonly serial: SerialProbe;
  readonly hosts: readonly HostStatus[];
  readonly nodeSafety: LocalNodeSafety;
  readonly sequences: readonly SequenceStatus[];
}
