/**
 * The read side for operators: what a sequence looks like in every DC (status) and whether its
 * stored rows keep the protocol's invariants (check). `idgen-cass status` and `check` are thin
 * layers over this module.
 *
 * Everything here reads the overview of the store (plain LOCAL_ONE reads, docs/design.md), so it
 * works from inside a partitioned DC; only {@link Admin.probeSerial} needs SERIAL, and it reports
 * failure instead of throwing. The maths ({@link sequenceStatus}, {@link checkSequence}) are pure
 * functions over a {@link SequenceSnapshot}.
 */

import { setTimeout as delay } from 'node:timers/promises';

import { openClient, type ConnectionOptions } from './connection.js';
import { InvalidOptionError, InvariantError, SequenceNotFoundError } from './errors.js';
import { validateSequenceName, validateStoredSettings } from './options.js';
import { CassandraStore } from './store/cassandra.js';
import type { DcState, Grant, IdStore, SequenceSettings } from './store/port.js';

/** Everything the overview reads show of one sequence at one moment (may lag a little). */
export interface SequenceSnapshot {
  readonly settings: SequenceSettings;
  /** GLOBAL.last_integer: the highest ID granted to any DC. */
  readonly globalLast: bigint;
  /** Every grant of each DC, ascending by number. */
  readonly grants: ReadonlyMap<string, readonly Grant[]>;
  /** Each DC's allocation state; DCs that never installed a grant have none. */
  readonly states: ReadonlyMap<string, DcState>;
  /** When the reads finished, in ms since the epoch. */
  readonly readAt: number;
}

/** A DC's range as its state holds it, with the number of the grant it came from. */
export interface HeldRange {
  readonly grant: number;
  readonly min: bigint;
  readonly max: bigint;
}

/** One DC of a sequence, as {@link sequenceStatus} computes it. */
export interface DcStatus {
  readonly dc: string;
  /** Every grant the DC got, ascending by number. */
  readonly grants: readonly Grant[];
  /** The range blocks are claimed from; undefined before the DC's first grant is installed. */
  readonly reserved: HeldRange | undefined;
  /** The next range, loaded once `threshold` of the reserved one is used; undefined if none. */
  readonly preloaded: HeldRange | undefined;
  /** A grant confirmed at SERIAL that the DC has not installed yet (its requester may have died). */
  readonly pendingGrant: Grant | undefined;
  /** Highest ID handed to a process of the DC; undefined without a state. */
  readonly lastInteger: bigint | undefined;
  /** IDs of the reserved range handed to processes. */
  readonly reservedUsed: bigint;
  /** `reservedUsed` as a share of the reserved range, 0 to 1. */
  readonly reservedUsedShare: number;
  /** IDs the DC holds and has not handed out: rest of the reserved range plus the preloaded one. */
  readonly left: bigint;
  /** IDs handed to the DC's processes since its first grant (gaps included). */
  readonly consumed: bigint;
  /** IDs per second handed to the DC's processes over the sample; undefined if not measured. */
  readonly rate: number | undefined;
  /**
   * Seconds `left` lasts at `rate` without a new grant (what matters while SERIAL is unreachable):
   * `Infinity` when the rate is 0 and IDs are left; undefined when the rate was not measured or
   * the DC holds no range yet.
   */
  readonly runway: number | undefined;
}

/** One sequence, as {@link sequenceStatus} computes it. */
export interface SequenceStatus {
  readonly settings: SequenceSettings;
  readonly globalLast: bigint;
  /** IDs granted to DCs so far: `globalLast - start + 1`. */
  readonly granted: bigint;
  /** IDs in the domain: `max - min + 1`. */
  readonly domainSize: bigint;
  /** IDs of the domain at or below `globalLast` (those below `start` count as used), 0 to 1. */
  readonly domainUsedShare: number;
  /** IDs never granted yet: `max - globalLast`. */
  readonly domainLeft: bigint;
  /** Every DC with a grant, a state or a host, sorted by name. */
  readonly dcs: readonly DcStatus[];
  /** Milliseconds between the two reads the rates come from; undefined if not measured. */
  readonly sampledOverMs: number | undefined;
  /** The reads this status was computed from (a later status can measure rates since them). */
  readonly snapshot: SequenceSnapshot;
}

/** A Cassandra node as this client sees it. */
export interface HostStatus {
  /** `address:port`. */
  readonly address: string;
  readonly dc: string;
  /** Whether the driver considers the host up. */
  readonly up: boolean;
}

/** Result of {@link Admin.probeSerial}. */
export interface SerialProbe {
  /** Whether a SERIAL read of a grants partition succeeded from the local DC. */
  readonly reachable: boolean;
  /** The DC the probe was coordinated from. */
  readonly dc: string;
  /** How long the probe took, in ms. */
  readonly tookMs: number;
  /** Why it failed; undefined when reachable. */
  readonly error: string | undefined;
}

/** What {@link Admin.status} returns. */
export interface StatusReport {
  readonly keyspace: string;
  /** The local DC every read was coordinated from. */
  readonly dc: string;
  readonly at: Date;
  readonly serial: SerialProbe;
  readonly hosts: readonly HostStatus[];
  readonly sequences: readonly SequenceStatus[];
}

/** Options of {@link Admin.status}. */
export interface StatusOptions {
  /** Sequences to report. @default every sequence */
  readonly sequences?: readonly string[] | undefined;
  /**
   * Milliseconds between the two reads of the DC states that rates are measured over; 0 reads
   * once and reports no rates. Ignored when `since` is given.
   * @default 2000
   */
  readonly sampleMs?: number | undefined;
  /** Measure rates since this earlier report instead of sampling (for refreshing views). */
  readonly since?: StatusReport | undefined;
  /** Milliseconds the SERIAL probe may take before it counts as unreachable. @default 3000 */
  readonly serialTimeoutMs?: number | undefined;
  /** Aborts the sampling wait. */
  readonly signal?: AbortSignal | undefined;
}

/** Options of {@link Admin.check}. */
export interface CheckOptions {
  /**
   * Overview reads may lag (LOCAL_ONE): when a read shows violations, read again after this
   * many ms and report what the second read shows; 0 reports the first read.
   * @default 1000
   */
  readonly confirmAfterMs?: number | undefined;
}

/** Defaults of {@link StatusOptions} and {@link CheckOptions}. */
export const ADMIN_DEFAULTS = Object.freeze({
  sampleMs: 2_000,
  serialTimeoutMs: 3_000,
  confirmAfterMs: 1_000,
});

/** What {@link Admin.check} returns. */
export interface CheckResult {
  /** The invariants broken; empty when all hold. */
  readonly violations: readonly Violation[];
  /** The reads the violations were found in. */
  readonly snapshot: SequenceSnapshot;
}

/** The kinds of broken invariant {@link checkSequence} reports. */
export type ViolationKind =
  /** The settings break the rules sequences are created with. */
  | 'settings-invalid'
  /** GLOBAL.last_integer is below `start - 1` or above `max`. */
  | 'global-outside-domain'
  /** A grant with `min > max`. */
  | 'grant-malformed'
  /** A grant reaching below `start` or above `max`. */
  | 'grant-outside-domain'
  /** A grant ending above GLOBAL.last_integer. */
  | 'grant-above-global'
  /** Two grants (of one DC or of two) sharing IDs. */
  | 'grants-overlap'
  /** A DC's grant numbers are not the chain 1, 2, 3, …. */
  | 'grant-chain-broken'
  /** A DC's state refers to a grant the DC does not have. */
  | 'state-without-grant'
  /** The reserved range differs from the grant it names. */
  | 'reserved-mismatch'
  /** The preloaded range differs from its grant, or from the reserved range when none is loaded. */
  | 'preloaded-mismatch'
  /** last_integer is outside `[reserved_min - 1, reserved_max]`. */
  | 'last-integer-outside-reserved'
  /** installed_grant is above the DC's latest grant number. */
  | 'installed-grant-ahead'
  /** More than one grant made but not installed (grant n + 1 needs grant n installed). */
  | 'grants-outstanding';

/** One broken invariant, with the numbers that break it. */
export interface Violation {
  readonly kind: ViolationKind;
  readonly sequence: string;
  /** The DC concerned; undefined for sequence-wide violations. */
  readonly dc: string | undefined;
  readonly message: string;
}

/**
 * The status of one sequence from its overview data: domain usage, and per DC its ranges, IDs
 * left, rate and runway. Rates compare `current` with `previous` (the same sequence read
 * earlier); without `previous` they are undefined. Pure.
 *
 * @example
 * ```ts
 * const before = await admin.snapshot('orders');
 * await new Promise((resolve) => setTimeout(resolve, 2_000));
 * const status = sequenceStatus(await admin.snapshot('orders'), before);
 * for (const dc of status.dcs) console.log(dc.dc, dc.left, dc.rate, dc.runway);
 * ```
 * @param dcs DCs to include even if they have no grant or state yet (e.g. every DC of the cluster).
 */
export function sequenceStatus(
  current: SequenceSnapshot,
  previous?: SequenceSnapshot,
  dcs: readonly string[] = [],
): SequenceStatus {
  const { settings, globalLast } = current;
  const elapsedMs = previous === undefined ? undefined : current.readAt - previous.readAt;
  const measured = elapsedMs !== undefined && elapsedMs > 0 ? elapsedMs : undefined;
  const names = [...new Set([...current.grants.keys(), ...current.states.keys(), ...dcs])].sort();
  const domainSize = settings.max - settings.min + 1n;
  return {
    settings,
    globalLast,
    granted: globalLast - settings.start + 1n,
    domainSize,
    domainUsedShare: share(clamp(globalLast - settings.min + 1n, 0n, domainSize), domainSize),
    domainLeft: settings.max - globalLast,
    dcs: names.map((dc) => dcStatus(dc, current, measured === undefined ? undefined : previous)),
    sampledOverMs: measured,
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

  let rate: number | undefined;
  if (previous !== undefined) {
    const before = consumedBy(previous.states.get(dc), previous.grants.get(dc) ?? []);
    const seconds = (current.readAt - previous.readAt) / 1000;
    // A process returning its unused block on close moves last_integer back: never below 0.
    rate = Math.max(0, Number(consumed - before)) / seconds;
  }

  if (state === undefined) {
    return {
      dc,
      grants,
      reserved: undefined,
      preloaded: undefined,
      pendingGrant,
      lastInteger: undefined,
      reservedUsed: 0n,
      reservedUsedShare: 0,
      left: 0n,
      consumed,
      rate,
      runway: undefined, // nothing held yet: no range to last
    };
  }

  const reservedSize = state.reservedMax - state.reservedMin + 1n;
  const reservedUsed = clamp(state.lastInteger - state.reservedMin + 1n, 0n, reservedSize);
  const hasPreloaded = state.installedGrant === state.reservedGrant + 1;
  const preloadedSize = hasPreloaded ? state.preloadedMax - state.preloadedMin + 1n : 0n;
  const left = reservedSize - reservedUsed + preloadedSize;
  return {
    dc,
    grants,
    reserved: { grant: state.reservedGrant, min: state.reservedMin, max: state.reservedMax },
    preloaded: hasPreloaded
      ? { grant: state.installedGrant, min: state.preloadedMin, max: state.preloadedMax }
      : undefined,
    pendingGrant,
    lastInteger: state.lastInteger,
    reservedUsed,
    reservedUsedShare: share(reservedUsed, reservedSize),
    left,
    consumed,
    rate,
    runway: runwayOf(left, rate),
  };
}

function runwayOf(left: bigint, rate: number | undefined): number | undefined {
  if (rate === undefined) return undefined;
  if (left === 0n) return 0;
  return rate > 0 ? Number(left) / rate : Infinity;
}

/** IDs a DC has handed out since its first grant: its earlier grants plus the used reserved part. */
function consumedBy(state: DcState | undefined, grants: readonly Grant[]): bigint {
  if (state === undefined) return 0n;
  let consumed = clamp(
    state.lastInteger - state.reservedMin + 1n,
    0n,
    state.reservedMax - state.reservedMin + 1n,
  );
  for (const grant of grants) {
    if (grant.number < state.reservedGrant) consumed += grant.max - grant.min + 1n;
  }
  return consumed;
}

/**
 * Every invariant of docs/design.md ("Why no ID is handed out twice") that the stored rows of one
 * sequence break: grants disjoint across all DCs, inside `[start, max]` and at or below GLOBAL's
 * `last_integer`; each DC's grants numbered 1, 2, 3…; each DC state's reserved and preloaded
 * ranges equal to the grants they name, `last_integer` within the reserved range, and
 * `installed_grant` at most the latest grant, which is at most one ahead of it. Pure.
 *
 * @example
 * ```ts
 * for (const v of checkSequence(await admin.snapshot('orders'))) console.error(v.message);
 * ```
 * @returns the violations, sequence-wide ones first; empty when every invariant holds.
 */
export function checkSequence(snapshot: SequenceSnapshot): Violation[] {
  const { settings, globalLast } = snapshot;
  const sequence = settings.name;
  const violations: Violation[] = [];
  const report = (kind: ViolationKind, dc: string | undefined, message: string) => {
    violations.push({ kind, sequence, dc, message: `${sequence}: ${message}` });
  };

  try {
    validateStoredSettings(settings);
  } catch (error) {
    if (!(error instanceof InvariantError)) throw error;
    report('settings-invalid', undefined, error.detail);
  }
  if (globalLast < settings.start - 1n || globalLast > settings.max) {
    report(
      'global-outside-domain',
      undefined,
      `GLOBAL last_integer ${globalLast} is outside [start - 1, max] = [${settings.start - 1n}, ${settings.max}]`,
    );
  }

  const all: { readonly dc: string; readonly grant: Grant }[] = [];
  for (const [dc, grants] of [...snapshot.grants].sort(([a], [b]) => compare(a, b))) {
    grants.forEach((grant, index) => {
      const name = `grant #${grant.number} of ${dc} [${grant.min}, ${grant.max}]`;
      if (grant.number !== index + 1) {
        report(
          'grant-chain-broken',
          dc,
          `${dc}'s grants are numbered ${grants.map((g) => g.number).join(', ')}; expected 1 to ${grants.length}`,
        );
      }
      if (grant.min > grant.max) {
        report('grant-malformed', dc, `${name} has min above max`);
        return;
      }
      if (grant.min < settings.start || grant.max > settings.max) {
        report(
          'grant-outside-domain',
          dc,
          `${name} is outside [start, max] = [${settings.start}, ${settings.max}]`,
        );
      }
      if (grant.max > globalLast) {
        report('grant-above-global', dc, `${name} ends above GLOBAL last_integer ${globalLast}`);
      }
      all.push({ dc, grant });
    });
  }

  // Sorted by first ID, grants are disjoint iff each starts above the highest ID seen before it.
  all.sort((a, b) => compare(a.grant.min, b.grant.min));
  let highest: (typeof all)[number] | undefined;
  for (const entry of all) {
    if (highest !== undefined && entry.grant.min <= highest.grant.max) {
      report(
        'grants-overlap',
        entry.dc,
        `grant #${entry.grant.number} of ${entry.dc} [${entry.grant.min}, ${entry.grant.max}] overlaps grant #${highest.grant.number} of ${highest.dc} [${highest.grant.min}, ${highest.grant.max}]`,
      );
    }
    if (highest === undefined || entry.grant.max > highest.grant.max) highest = entry;
  }

  const dcs = [...new Set([...snapshot.grants.keys(), ...snapshot.states.keys()])].sort();
  for (const dc of dcs) checkDc(dc, snapshot, report);
  return violations;
}

function checkDc(
  dc: string,
  snapshot: SequenceSnapshot,
  report: (kind: ViolationKind, dc: string | undefined, message: string) => void,
): void {
  const grants = snapshot.grants.get(dc) ?? [];
  const state = snapshot.states.get(dc);
  const latest = grants.reduce((highest, grant) => Math.max(highest, grant.number), 0);
  const installed = state?.installedGrant ?? 0;

  if (latest > installed + 1) {
    report(
      'grants-outstanding',
      dc,
      state === undefined
        ? `${dc} has grants up to #${latest} but no DC state (each grant after #1 needs the one before installed)`
        : `${dc} has grants up to #${latest} but installed only #${installed} (at most one grant may wait to be installed)`,
    );
  }
  if (state === undefined) return;

  if (installed > latest) {
    report(
      'installed-grant-ahead',
      dc,
      `${dc}'s state has installed_grant ${installed} but its latest grant is #${latest}`,
    );
  }
  const grant = (number: number) => grants.find((g) => g.number === number);
  const range = (min: bigint, max: bigint) => `[${min}, ${max}]`;

  const reservedGrant = grant(state.reservedGrant);
  const reserved = range(state.reservedMin, state.reservedMax);
  if (reservedGrant === undefined) {
    report(
      'state-without-grant',
      dc,
      `${dc}'s reserved range ${reserved} names grant #${state.reservedGrant}, which ${dc} does not have`,
    );
  } else if (reservedGrant.min !== state.reservedMin || reservedGrant.max !== state.reservedMax) {
    report(
      'reserved-mismatch',
      dc,
      `${dc}'s reserved range ${reserved} differs from its grant #${reservedGrant.number} ${range(reservedGrant.min, reservedGrant.max)}`,
    );
  }
  if (state.lastInteger < state.reservedMin - 1n || state.lastInteger > state.reservedMax) {
    report(
      'last-integer-outside-reserved',
      dc,
      `${dc}'s last_integer ${state.lastInteger} is outside [reserved_min - 1, reserved_max] = [${state.reservedMin - 1n}, ${state.reservedMax}]`,
    );
  }

  const preloaded = range(state.preloadedMin, state.preloadedMax);
  if (installed === state.reservedGrant) {
    if (state.preloadedMin !== state.reservedMin || state.preloadedMax !== state.reservedMax) {
      report(
        'preloaded-mismatch',
        dc,
        `${dc} has nothing preloaded (installed_grant = reserved_grant = ${installed}) but its preloaded range ${preloaded} differs from its reserved range ${reserved}`,
      );
    }
  } else if (installed === state.reservedGrant + 1) {
    const preloadedGrant = grant(installed);
    if (preloadedGrant === undefined) {
      report(
        'state-without-grant',
        dc,
        `${dc}'s preloaded range ${preloaded} names grant #${installed}, which ${dc} does not have`,
      );
    } else if (
      preloadedGrant.min !== state.preloadedMin ||
      preloadedGrant.max !== state.preloadedMax
    ) {
      report(
        'preloaded-mismatch',
        dc,
        `${dc}'s preloaded range ${preloaded} differs from its grant #${installed} ${range(preloadedGrant.min, preloadedGrant.max)}`,
      );
    }
  } else {
    report(
      'preloaded-mismatch',
      dc,
      `${dc}'s installed_grant ${installed} must be its reserved_grant ${state.reservedGrant} or one more`,
    );
  }
}

/** What {@link Admin} is built from; {@link openAdmin} builds it over Cassandra. */
export interface AdminParts {
  readonly store: IdStore;
  /** The local DC: where every read is coordinated. */
  readonly dc: string;
  readonly keyspace: string;
  /** The nodes of the cluster as the client sees them. @default none known */
  readonly hosts?: (() => readonly HostStatus[]) | undefined;
}

/** Options of {@link openAdmin}: where and how to reach Cassandra. */
export type AdminOptions = ConnectionOptions;

/** A sequence name that exists nowhere: a SERIAL read of its empty partition still needs Paxos. */
const PROBE_SEQUENCE = 'idgen_serial_probe';

/**
 * Status and checks of the sequences of one keyspace, read from the local DC. Reads only (no
 * LWT); works from inside a partitioned DC. Get one with {@link openAdmin}.
 *
 * @example
 * ```ts
 * const admin = await openAdmin({ contactPoints: ['127.0.0.1'], localDataCenter: 'dc1', keyspace: 'idgen' });
 * try {
 *   const report = await admin.status({ sequences: ['orders'] });
 *   console.log(report.serial.reachable, report.sequences[0]?.domainUsedShare);
 *   console.log((await admin.check('orders')).violations);
 * } finally {
 *   await admin.close();
 * }
 * ```
 */
export class Admin {
  /** The local DC. */
  readonly dc: string;
  readonly keyspace: string;

  readonly #store: IdStore;
  readonly #hosts: () => readonly HostStatus[];

  constructor(parts: AdminParts) {
    this.#store = parts.store;
    this.dc = parts.dc;
    this.keyspace = parts.keyspace;
    this.#hosts = parts.hosts ?? (() => []);
  }

  /**
   * Every sequence's settings, sorted by name.
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  listSequences(): Promise<readonly SequenceSettings[]> {
    return this.#store.listSequences();
  }

  /**
   * The settings of sequence `name`.
   * @throws {InvalidNameError} for a bad name; {@link SequenceNotFoundError} if it does not exist.
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  async readSequence(name: string): Promise<SequenceSettings> {
    validateSequenceName(name);
    const stored = await this.#store.readSequence(name);
    if (stored === undefined) throw new SequenceNotFoundError(name, this.keyspace);
    return stored.settings;
  }

  /**
   * Reads sequence `name`'s settings, grants and DC states from the local DC (LOCAL_ONE for the
   * overview: may lag).
   * @example
   * ```ts
   * const violations = checkSequence(await admin.snapshot('orders'));
   * ```
   * @throws {InvalidNameError}, {@link SequenceNotFoundError}, {@link StoreUnavailableError}.
   */
  async snapshot(name: string): Promise<SequenceSnapshot> {
    const settings = await this.readSequence(name);
    // States first: a grant a state refers to was made before the state was written, so the
    // grants read after it include it (unless a replica lags).
    const states = await this.#store.readDcStatesOverview(name);
    const overview = await this.#store.readGrantsOverview(name);
    if (overview === undefined) throw new SequenceNotFoundError(name, this.keyspace);
    return {
      settings,
      globalLast: overview.globalLast,
      grants: overview.grants,
      states,
      readAt: Date.now(),
    };
  }

  /**
   * Status of the keyspace's sequences as seen from the local DC: whether SERIAL is reachable,
   * the hosts, and per sequence its domain usage and per DC its ranges, IDs left, rate and runway
   * (see {@link sequenceStatus}). Rates come from two reads `sampleMs` apart, or since `since`.
   * @example
   * ```ts
   * const report = await admin.status({ sampleMs: 1_000 });
   * if (!report.serial.reachable) console.warn('no new DC ranges can be granted from', report.dc);
   * ```
   * @throws {InvalidOptionError} for a bad option; {@link SequenceNotFoundError} for an unknown
   * sequence; {@link StoreUnavailableError} if the local DC cannot be reached. An unreachable
   * SERIAL is reported in `serial`, not thrown.
   */
  async status(options: StatusOptions = {}): Promise<StatusReport> {
    const sampleMs = nonNegative('sampleMs', options.sampleMs, ADMIN_DEFAULTS.sampleMs);
    const serialTimeoutMs = nonNegative(
      'serialTimeoutMs',
      options.serialTimeoutMs,
      ADMIN_DEFAULTS.serialTimeoutMs,
    );
    const names =
      options.sequences ?? (await this.listSequences()).map((settings) => settings.name);
    const readAll = () => Promise.all(names.map((name) => this.snapshot(name)));

    const probing = this.probeSerial({ sequence: names[0], timeoutMs: serialTimeoutMs });
    try {
      let previous: readonly (SequenceSnapshot | undefined)[];
      if (options.since !== undefined) {
        const earlier = new Map(options.since.sequences.map((s) => [s.settings.name, s.snapshot]));
        previous = names.map((name) => earlier.get(name));
      } else if (sampleMs > 0) {
        previous = await readAll();
        await delay(sampleMs, undefined, { signal: options.signal });
      } else {
        previous = [];
      }
      const current = await readAll();
      const hosts = this.hosts();
      const clusterDcs = [...new Set(hosts.map((host) => host.dc))];
      return {
        keyspace: this.keyspace,
        dc: this.dc,
        at: new Date(),
        serial: await probing,
        hosts,
        sequences: current.map((snapshot, i) => sequenceStatus(snapshot, previous[i], clusterDcs)),
      };
    } finally {
      await probing; // never rejects; do not leave it running past close()
    }
  }

  /**
   * The invariants sequence `name`'s stored rows break (see {@link checkSequence}); empty when
   * all hold. A read showing violations is confirmed by a second read (overview reads may lag).
   * @example
   * ```ts
   * const { violations } = await admin.check('orders');
   * if (violations.length > 0) process.exitCode = 4;
   * ```
   * @throws {InvalidOptionError} for a bad option; {@link InvalidNameError},
   * {@link SequenceNotFoundError}, {@link StoreUnavailableError}.
   */
  async check(name: string, options: CheckOptions = {}): Promise<CheckResult> {
    const confirmAfterMs = nonNegative(
      'confirmAfterMs',
      options.confirmAfterMs,
      ADMIN_DEFAULTS.confirmAfterMs,
    );
    const first = await this.snapshot(name);
    const violations = checkSequence(first);
    if (violations.length === 0 || confirmAfterMs === 0) return { violations, snapshot: first };
    await delay(confirmAfterMs);
    const second = await this.snapshot(name);
    return { violations: checkSequence(second), snapshot: second };
  }

  /**
   * Whether SERIAL (Paxos over every DC) can be reached from the local DC right now: a SERIAL
   * read of a grants partition, bounded by `timeoutMs`. Without SERIAL no DC range can be
   * granted; each DC serves only the IDs it holds. Never throws.
   * @example
   * ```ts
   * const { reachable, error } = await admin.probeSerial({ timeoutMs: 2_000 });
   * ```
   */
  async probeSerial(
    options: {
      readonly sequence?: string | undefined;
      readonly timeoutMs?: number | undefined;
    } = {},
  ): Promise<SerialProbe> {
    const timeoutMs = options.timeoutMs ?? ADMIN_DEFAULTS.serialTimeoutMs;
    const started = Date.now();
    const result = (error: string | undefined): SerialProbe => ({
      reachable: error === undefined,
      dc: this.dc,
      tookMs: Date.now() - started,
      error,
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const read = this.#store.readGrants(options.sequence ?? PROBE_SEQUENCE, this.dc).then(
      () => undefined,
      (error: unknown) => error,
    );
    try {
      const outcome = await Promise.race([read, timeout]);
      if (outcome === 'timeout') return result(`no answer within ${timeoutMs} ms`);
      // The read got through Paxos and found no sequence: SERIAL works.
      if (outcome === undefined || outcome instanceof SequenceNotFoundError) {
        return result(undefined);
      }
      return result(outcome instanceof Error ? outcome.message : String(outcome));
    } finally {
      clearTimeout(timer);
    }
  }

  /** The cluster's nodes as this client sees them, sorted by DC and address. */
  hosts(): HostStatus[] {
    return [...this.#hosts()].sort((a, b) => compare(a.dc, b.dc) || compare(a.address, b.address));
  }

  /** Closes the store (and the client, if {@link openAdmin} built it). */
  close(): Promise<void> {
    return this.#store.close();
  }
}

/**
 * Connects to Cassandra in the local DC for status and checks.
 * @example
 * ```ts
 * const admin = await openAdmin({ contactPoints: ['127.0.0.3'], localDataCenter: 'dc3', keyspace: 'idgen' });
 * ```
 * @throws {InvalidOptionError} for missing or bad options, or an unknown `localDataCenter`.
 * @throws {InvalidNameError} for a bad keyspace name.
 * @throws {StoreUnavailableError} when no contact point can be reached.
 */
export async function openAdmin(options: AdminOptions): Promise<Admin> {
  const opened = await openClient(options);
  try {
    const { client } = opened;
    const store = new CassandraStore(client, options.keyspace, { ownsClient: opened.ownsClient });
    return new Admin({
      store,
      dc: opened.localDataCenter,
      keyspace: options.keyspace,
      hosts: () =>
        client.hosts
          .values()
          .map((host) => ({ address: host.address, dc: host.datacenter, up: host.isUp() })),
    });
  } catch (error) {
    if (opened.ownsClient) await opened.client.shutdown().catch(() => undefined);
    throw error;
  }
}

function nonNegative(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidOptionError(option, value, 'a finite number of milliseconds, at least 0');
  }
  return value;
}

/** `part / whole` as a number, exact enough for display at any bigint size. */
function share(part: bigint, whole: bigint): number {
  if (whole <= 0n) return 0;
  return Number((part * 10n ** 18n) / whole) / 1e18;
}

function clamp(value: bigint, low: bigint, high: bigint): bigint {
  return value < low ? low : value > high ? high : value;
}

function compare<T extends string | bigint>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
