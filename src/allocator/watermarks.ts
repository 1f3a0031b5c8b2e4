/** Rollback detection (docs/design.md, "What the cluster must guarantee"). */

import type { DcState, GrantView } from '../store/port.js';
import { mutated } from '../mutations.js';

/** The marks of one grantee's rows, shared by the process's handles of the sequence. */
export class RowMarks {
  version = 0;
  op: string | undefined = undefined;
  reservedGrant = 0;
  installedGrant = 0;
  latestGrant = 0;

  constructor(public globalLast: bigint) {}
}

/** The marks as they stood when a read was sent. */
export type Floor = Readonly<RowMarks & { claimGrant: number; claimedUpTo: bigint }>;

/** The rows' marks and this allocator's own claims (only its own give-back goes below them). */
export class Watermarks {
  private readonly rows: RowMarks;
  private claimGrant = 0;
  private claimedUpTo = 0n;

  constructor(globalLast: bigint, rows?: RowMarks) {
    this.rows = rows ?? new RowMarks(globalLast);
  }

  floor(): Floor {
    return { ...this.rows, claimGrant: this.claimGrant, claimedUpTo: this.claimedUpTo };
  }

  /** Never down: replies of concurrent calls arrive in any order. */
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

  raiseClaim(reservedGrant: number, last: bigint): void {
    if (reservedGrant > this.claimGrant) {
      this.claimGrant = reservedGrant;
      this.claimedUpTo = last;
    } else if (reservedGrant === this.claimGrant) {
      this.claimedUpTo = max(this.claimedUpTo, last);
    }
  }

  forgetClaims(): void {
    this.claimGrant = 0;
    this.claimedUpTo = 0n;
  }
}

/** How a DC state read is older than `floor`, if it is. */
export function stateWentBack(floor: Floor, state: DcState | undefined): string | undefined {
  if (state === undefined) {
    return floor.version > 0
      ? `the DC state is gone; version ${floor.version} was seen`
      : undefined;
  }
  if (state.version < floor.version) {
    return `version ${state.version}, after version ${floor.version} was seen`;
  }
  if (mutated('rollback-by-version-only')) return undefined;
  // Only one write can move the version from v - 1: another op at v replaced the one seen.
  if (state.version === floor.version && floor.op !== undefined && state.op !== floor.op) {
    return `version ${state.version} written by op ${state.op}, after op ${floor.op} was seen at that version`;
  }
  if (state.reservedGrant < floor.reservedGrant || state.installedGrant < floor.installedGrant) {
    return `grants reserved #${state.reservedGrant} / installed #${state.installedGrant}, after #${floor.reservedGrant} / #${floor.installedGrant} were seen`;
  }
  if (state.reservedGrant === floor.claimGrant && state.lastInteger < floor.claimedUpTo) {
    return `last_integer ${state.lastInteger}, below ${floor.claimedUpTo} which this process claimed`;
  }
  return undefined;
}

export function globalWentBack(floor: Floor, globalLast: bigint): string | undefined {
  return globalLast < floor.globalLast
    ? `GLOBAL last_integer ${globalLast}, after ${floor.globalLast} was read`
    : undefined;
}

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
