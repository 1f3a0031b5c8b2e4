/**
 * Rollback detection (docs/design.md, "What the cluster must guarantee"): the newest rows this
 * process has seen or written. Rows only move forward, so a read below a mark already set when
 * the read was sent shows lost writes (a mark set while it was in flight proves nothing). Take a
 * {@link Watermarks.floor} before each read and judge what came back against it.
 */

import type { DcState, GrantView } from '../store/port.js';
import { mutated } from '../mutations.js';

/** The marks as they stood when a read was sent: what the read must not be below. */
export interface Floor {
  readonly version: number;
  readonly op: string | undefined;
  readonly reservedGrant: number;
  readonly installedGrant: number;
  /** The reserved grant of this process's last claimed block, and that block's last ID. */
  readonly claimGrant: number;
  readonly claimedUpTo: bigint;
  readonly globalLast: bigint;
  readonly latestGrant: number;
}

/**
 * The marks of one grantee's rows (DC state and grant level), shared by the process's handles of
 * the sequence: rows only move forward, whoever read them.
 */
export class RowMarks {
  version = 0;
  op: string | undefined = undefined;
  reservedGrant = 0;
  installedGrant = 0;
  latestGrant = 0;

  /** @param globalLast GLOBAL's `last_integer` before any grant: the sequence's `start - 1`. */
  constructor(public globalLast: bigint) {}
}

/**
 * One DC allocator's marks: the rows' (shared or its own) and its own claims, which stay its own
 * because only its own give-back moves `last_integer` below them.
 */
export class Watermarks {
  private readonly rows: RowMarks;
  private claimGrant = 0;
  private claimedUpTo = 0n;

  /** @param rows the rows' marks to share. @default marks of its own */
  constructor(globalLast: bigint, rows?: RowMarks) {
    this.rows = rows ?? new RowMarks(globalLast);
  }

  /** A copy of the marks now; take it before sending the read it will judge. */
  floor(): Floor {
    const { version, op, reservedGrant, installedGrant, globalLast, latestGrant } = this.rows;
    return {
      ...{ version, op, reservedGrant, installedGrant, globalLast, latestGrant },
      claimGrant: this.claimGrant,
      claimedUpTo: this.claimedUpTo,
    };
  }

  /** Moves the marks up to `state` (never down: replies of concurrent calls arrive in any order). */
  raiseState(state: DcState): void {
    const rows = this.rows;
    if (state.version > rows.version) {
      rows.version = state.version;
      rows.op = state.op;
    }
    rows.reservedGrant = Math.max(rows.reservedGrant, state.reservedGrant);
    rows.installedGrant = Math.max(rows.installedGrant, state.installedGrant);
  }

  raiseGrants(view: GrantView): void {
    this.rows.globalLast = max(this.rows.globalLast, view.globalLast);
    this.rows.latestGrant = Math.max(this.rows.latestGrant, view.latest?.number ?? 0);
  }

  /** Marks block `[…, last]`, claimed from the reserved range of grant `reservedGrant`. */
  raiseClaim(reservedGrant: number, last: bigint): void {
    if (reservedGrant > this.claimGrant) {
      this.claimGrant = reservedGrant;
      this.claimedUpTo = last;
    } else if (reservedGrant === this.claimGrant) {
      this.claimedUpTo = max(this.claimedUpTo, last);
    }
  }

  /**
   * Forgets the claimed blocks: from a give-back on, this allocator's own write may move
   * `last_integer` below them.
   */
  forgetClaims(): void {
    this.claimGrant = 0;
    this.claimedUpTo = 0n;
  }
}

/** How a DC state read (undefined: no row) is older than `floor`, or undefined if it is not. */
export function stateWentBack(floor: Floor, state: DcState | undefined): string | undefined {
  if (state === undefined) {
    return floor.version > 0
      ? `the DC state is gone; version ${floor.version} was seen`
      : undefined;
  }
  if (state.version < floor.version) {
    return `version ${state.version}, after version ${floor.version} was seen`;
  }
  // A negative control (mutations.ts) stops here.
  if (mutated('rollback-by-version-only')) return undefined;
  // Every write moves the version up by one, and only one write can move it from v - 1: version
  // v committed with another op means the one seen was lost and replaced.
  if (state.version === floor.version && floor.op !== undefined && state.op !== floor.op) {
    return `version ${state.version} written by op ${state.op}, after op ${floor.op} was seen at that version`;
  }
  if (state.reservedGrant < floor.reservedGrant || state.installedGrant < floor.installedGrant) {
    return `grants reserved #${state.reservedGrant} / installed #${state.installedGrant}, after #${floor.reservedGrant} / #${floor.installedGrant} were seen`;
  }
  // Only the allocator's own give-back moves last_integer below its blocks, and it does not
  // read again afterwards.
  if (state.reservedGrant === floor.claimGrant && state.lastInteger < floor.claimedUpTo) {
    return `last_integer ${state.lastInteger}, below ${floor.claimedUpTo} which this process claimed`;
  }
  return undefined;
}

/** How GLOBAL's `last_integer` as read is older than `floor`, or undefined if it is not. */
export function globalWentBack(floor: Floor, globalLast: bigint): string | undefined {
  return globalLast < floor.globalLast
    ? `GLOBAL last_integer ${globalLast}, after ${floor.globalLast} was read`
    : undefined;
}

/** How a read of the grant level is older than `floor`, or undefined if it is not. */
export function grantsWentBack(floor: Floor, view: GrantView): string | undefined {
  const global = globalWentBack(floor, view.globalLast);
  if (global !== undefined) return global;
  const latest = view.latest?.number ?? 0;
  if (latest < floor.latestGrant) {
    return `latest grant #${latest}, after grant #${floor.latestGrant} was read`;
  }
  return undefined;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
