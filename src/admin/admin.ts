/**
 * The read side for operators: {@link Admin} reads for status, check and preflight; the maths
 * are pure functions beside it (status.ts, check.ts, preflight.ts). Status works from inside a
 * partitioned DC; check reads what cannot be stale and says which facts it had to read locally.
 */

import type { ConnectionOptions } from '../store/cassandra/driver-client.js';
import { InvalidOptionError } from '../errors.js';
import { checkAbortSignal, checkKeys, everyKeyOf, validateSequenceName } from '../options.js';
import { ascending } from '../order.js';
import type { DcState, IdStore, NodeSettings, SequenceSettings } from '../store/port.js';
import { sleep } from '../timers.js';
import {
  checkSequence,
  checkVerdict,
  type CheckSnapshot,
  type CheckVerdict,
  type UnverifiedFact,
  type Violation,
} from './check.js';
import { readForCheck, reasonOf } from './check-reads.js';
import { probeSerial, readSnapshot, readStored, type StatesInOtherDcs } from './overview-reads.js';
import { checkNode, preflightReport, problemLines, type PreflightReport } from './preflight.js';
import {
  sequenceStatus,
  type HostStatus,
  type LocalNodeSafety,
  type SequenceSnapshot,
  type SerialProbe,
  type StatusReport,
} from './status.js';

/** Options of {@link Admin.status}. */
export interface StatusOptions {
  /** Sequences to report. @default every sequence */
  readonly sequences?: readonly string[] | undefined;
  /**
   * Milliseconds between the two reads rates are measured over; 0 reports no rates. Ignored
   * with `since`.
   * @default 2000
   */
  readonly sampleMs?: number | undefined;
  /** Measure rates since this earlier report instead of sampling (for refreshing views). */
  readonly since?: StatusReport | undefined;
  /**
   * Milliseconds (above 0) the SERIAL probe may take before it counts as unreachable.
   * @default 3000
   */
  readonly serialTimeoutMs?: number | undefined;
  /** Aborts the sampling wait. */
  readonly signal?: AbortSignal | undefined;
}

/** Options of {@link Admin.check}. */
export interface CheckOptions {
  /**
   * When violations rest on facts read locally, read again after this many ms (a lagging replica
   * may have caught up) and report that; 0 reports the first reading.
   * @default 1000
   */
  readonly confirmAfterMs?: number | undefined;
}

const STATUS_KEYS = everyKeyOf<StatusOptions>()([
  'sequences',
  'sampleMs',
  'since',
  'serialTimeoutMs',
  'signal',
]);
const CHECK_KEYS = everyKeyOf<CheckOptions>()(['confirmAfterMs']);
const PROBE_KEYS = everyKeyOf<ProbeOptions>()(['timeoutMs']);

/** Options of {@link Admin.probeSerial}. */
export interface ProbeOptions {
  /**
   * Milliseconds (above 0) the probe may take before SERIAL counts as unreachable.
   * @default 3000
   */
  readonly timeoutMs?: number | undefined;
}

/** Defaults of {@link StatusOptions} and {@link CheckOptions}. */
export const ADMIN_DEFAULTS = Object.freeze({
  sampleMs: 2_000,
  serialTimeoutMs: 3_000,
  confirmAfterMs: 1_000,
});

/** What {@link Admin.check} returns. */
export interface CheckResult {
  /** `violated` only on confirmed violations; `incomplete` when facts could not be verified. */
  readonly verdict: CheckVerdict;
  /** The invariants broken, each confirmed or not; empty when all hold. */
  readonly violations: readonly Violation[];
  /** The facts that could not be read consistently (read locally instead), and why. */
  readonly unverified: readonly UnverifiedFact[];
  readonly snapshot: CheckSnapshot;
}

/** What {@link Admin} is built from; {@link openAdmin} builds it over Cassandra. */
export interface AdminParts {
  readonly store: IdStore;
  /** The local DC: where every read is coordinated. */
  readonly dc: string;
  readonly keyspace: string;
  /** The nodes of the cluster as the client sees them. @default none known */
  readonly hosts?: (() => readonly HostStatus[]) | undefined;
  /**
   * Reads the settings of every node of `dc`; throws when the DC cannot be reached.
   * @default the store's `readNodeSettings()`, those of its nodes in `dc`
   */
  readonly nodeSettings?: ((dc: string) => Promise<readonly NodeSettings[]>) | undefined;
  /**
   * Every DC state of sequence `name` as another DC `dc` holds them (LOCAL_QUORUM there), for
   * status when the EACH_QUORUM read fails; throws when `dc` cannot be reached.
   * @default none: only the local DC's rows are then current
   */
  readonly statesInDc?:
    ((dc: string, name: string) => Promise<ReadonlyMap<string, DcState>>) | undefined;
  /** Releases what the parts hold besides the store (`close()` calls it first). */
  readonly release?: (() => Promise<void>) | undefined;
}

/** Options of `openAdmin`: where and how to reach Cassandra. */
export type AdminOptions = ConnectionOptions;

/**
 * Status, checks and preflight of the sequences of one keyspace, read from the local DC. Reads
 * only: it writes nothing (SERIAL reads may finish a Paxos round already under way, as any
 * serial read does). Get one with {@link openAdmin}.
 *
 * @example
 * ```ts
 * const admin = await openAdmin({ contactPoints: ['127.0.0.1'], localDataCenter: 'dc1', keyspace: 'idgen' });
 * try {
 *   const report = await admin.status({ sequences: ['orders'] });
 *   console.log(report.serial.reachable, report.sequences[0]?.domainUsedShare);
 *   console.log((await admin.check('orders')).verdict);
 *   console.log((await admin.preflight()).verdict);
 * } finally {
 *   await admin.close();
 * }
 * ```
 */
export class Admin {
  readonly dc: string;
  readonly keyspace: string;

  readonly #store: IdStore;
  readonly #hosts: () => readonly HostStatus[];
  readonly #nodeSettings: (dc: string) => Promise<readonly NodeSettings[]>;
  readonly #statesInDc: AdminParts['statesInDc'];
  readonly #release: () => Promise<void>;

  constructor(parts: AdminParts) {
    this.#store = parts.store;
    this.dc = parts.dc;
    this.keyspace = parts.keyspace;
    this.#hosts = parts.hosts ?? (() => []);
    this.#nodeSettings =
      parts.nodeSettings ??
      (async (dc) => (await this.#store.readNodeSettings()).filter((node) => node.dc === dc));
    this.#statesInDc = parts.statesInDc;
    this.#release = parts.release ?? (() => Promise.resolve());
  }

  /**
   * Every sequence's settings, sorted by name.
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  listSequences(): Promise<readonly SequenceSettings[]> {
    return this.#store.listSequences();
  }

  /**
   * The settings of sequence `name`, read in the local DC, or at SERIAL if none are found there.
   * @throws {InvalidNameError} for a bad name; {@link SequenceNotFoundError} if it does not exist.
   * @throws {StoreUnavailableError} if the local DC cannot be reached.
   */
  async readSequence(name: string): Promise<SequenceSettings> {
    validateSequenceName(name);
    return (await readStored(this.#store, this.keyspace, name)).settings;
  }

  /**
   * Reads sequence `name`'s settings and grants at LOCAL_QUORUM and its DC states at
   * EACH_QUORUM, or, if that fails, locally and in their own DCs, marked `statesNotCurrent`.
   * @example
   * ```ts
   * const status = sequenceStatus(await admin.snapshot('orders'));
   * ```
   * @throws {InvalidNameError}, {@link SequenceNotFoundError}, {@link StoreUnavailableError}.
   */
  async snapshot(name: string): Promise<SequenceSnapshot> {
    validateSequenceName(name);
    return this.#snapshot(name, new Map());
  }

  /** {@link Admin.snapshot}; `unreachable` keeps the DCs not reached in one status run. */
  #snapshot(name: string, unreachable: Map<string, string>): Promise<SequenceSnapshot> {
    const read = this.#statesInDc;
    const elsewhere: StatesInOtherDcs | undefined =
      read === undefined
        ? undefined
        : { dcs: [...new Set(this.#hosts().map((host) => host.dc))], read, unreachable };
    return readSnapshot(this.#store, this.keyspace, name, this.dc, elsewhere);
  }

  /**
   * Status of the keyspace's sequences from the local DC: SERIAL reachability, hosts, unsafe
   * local node settings, and each sequence's `sequenceStatus`, rates over `sampleMs` or since
   * `since`.
   * @example
   * ```ts
   * const report = await admin.status({ sampleMs: 1_000 });
   * if (!report.serial.reachable) console.warn('no new DC ranges can be granted from', report.dc);
   * if (report.nodeSafety.problems.length > 0) console.warn(report.nodeSafety.problems.join('\n'));
   * ```
   * @throws {InvalidOptionError} for a bad option; {@link SequenceNotFoundError} for an unknown
   * sequence; {@link StoreUnavailableError} if the local DC cannot be reached. An unreachable
   * SERIAL, or nodes whose settings cannot be read, are reported, not thrown.
   */
  async status(options: StatusOptions = {}): Promise<StatusReport> {
    checkKeys(options, STATUS_KEYS);
    checkAbortSignal('signal', options.signal);
    if (options.sequences !== undefined) {
      if (!Array.isArray(options.sequences)) {
        throw new InvalidOptionError(
          'sequences',
          options.sequences,
          'a list of sequence names, or none for every sequence',
        );
      }
      for (const name of options.sequences) validateSequenceName(name);
    }
    const since = options.since as Partial<StatusReport> | undefined;
    if (since !== undefined && (typeof since !== 'object' || !Array.isArray(since?.sequences))) {
      throw new InvalidOptionError('since', since, 'a report an earlier status() returned');
    }
    const sampleMs = nonNegative('sampleMs', options.sampleMs, ADMIN_DEFAULTS.sampleMs);
    const serialTimeoutMs = probeTimeout('serialTimeoutMs', options.serialTimeoutMs);
    const names =
      options.sequences ?? (await this.listSequences()).map((settings) => settings.name);
    // A DC not reached is not tried again in this run (each try may take seconds).
    const unreachable = new Map<string, string>();
    const readAll = () => Promise.all(names.map((name) => this.#snapshot(name, unreachable)));

    // Both never reject; awaited in `finally` so that nothing runs on past close().
    const probing = this.probeSerial({ timeoutMs: serialTimeoutMs });
    const safety = this.#localNodeSafety();
    try {
      let previous: readonly (SequenceSnapshot | undefined)[];
      if (options.since !== undefined) {
        const earlier = new Map(options.since.sequences.map((s) => [s.settings.name, s.snapshot]));
        previous = names.map((name) => earlier.get(name));
      } else if (sampleMs > 0) {
        previous = await readAll();
        await sleep(sampleMs, options.signal);
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
        nodeSafety: await safety,
        sequences: current.map((snapshot, i) => sequenceStatus(snapshot, previous[i], clusterDcs)),
      };
    } finally {
      await Promise.all([probing, safety]);
    }
  }

  /**
   * Checks sequence `name`'s stored rows against every invariant (`checkSequence`) on reads that
   * cannot be stale (check-reads.ts). A consistent read that fails is replaced by a local one and
   * the violations resting on it are unconfirmed; only confirmed ones make the verdict
   * `violated`.
   * @example
   * ```ts
   * const { verdict, violations, unverified } = await admin.check('orders');
   * if (verdict === 'violated') process.exitCode = 4;
   * ```
   * @throws {InvalidOptionError} for a bad option; {@link InvalidNameError},
   * {@link SequenceNotFoundError}; {@link StoreUnavailableError} when even the local reads fail.
   */
  async check(name: string, options: CheckOptions = {}): Promise<CheckResult> {
    checkKeys(options, CHECK_KEYS);
    const confirmAfterMs = nonNegative(
      'confirmAfterMs',
      options.confirmAfterMs,
      ADMIN_DEFAULTS.confirmAfterMs,
    );
    validateSequenceName(name);
    const first = await this.#checkOnce(name);
    if (first.violations.every((v) => v.confirmed) || confirmAfterMs === 0) return first;
    await sleep(confirmAfterMs);
    return this.#checkOnce(name);
  }

  async #checkOnce(name: string): Promise<CheckResult> {
    const stored = await readStored(this.#store, this.keyspace, name);
    const snapshot = await readForCheck(
      {
        store: this.#store,
        dc: this.dc,
        clusterDcs: this.hosts().map((host) => host.dc),
        keyspace: this.keyspace,
      },
      stored,
    );
    const violations = checkSequence(snapshot);
    const unverified = snapshot.unverified ?? [];
    return { verdict: checkVerdict(violations, unverified), violations, unverified, snapshot };
  }

  /**
   * Whether SERIAL can be reached from the local DC now (a read no grant contends with), within
   * `timeoutMs`. Without SERIAL no DC range can be granted. An unreachable SERIAL is reported,
   * not thrown.
   * @throws {InvalidOptionError} for an unknown key or a `timeoutMs` that is not above 0.
   * @example
   * ```ts
   * const { reachable, error } = await admin.probeSerial({ timeoutMs: 2_000 });
   * ```
   */
  async probeSerial(options: ProbeOptions = {}): Promise<SerialProbe> {
    checkKeys(options, PROBE_KEYS);
    return probeSerial(this.#store, this.dc, probeTimeout('timeoutMs', options.timeoutMs));
  }

  /**
   * Checks every node of every DC for settings under which IDs could be handed out twice
   * (preflight.ts). A DC that cannot be reached is reported as not checked, never as safe.
   * @example
   * ```ts
   * const report = await admin.preflight();
   * if (report.verdict === 'unsafe') throw new UnsafeClusterError(report.problems, '{ allowUnsafeCluster: true }');
   * ```
   * @returns the report; its `verdict` is `safe`, `unsafe` or `incomplete`. Never throws for an
   * unreachable DC or node.
   */
  async preflight(): Promise<PreflightReport> {
    const hosts = this.hosts();
    const dcs = [...new Set([this.dc, ...hosts.map((host) => host.dc)])].sort();
    const reads = await Promise.all(
      dcs.map(async (dc) => {
        try {
          return { dc, nodes: await this.#nodeSettings(dc) };
        } catch (error) {
          return { dc, error: reasonOf(error) };
        }
      }),
    );
    return preflightReport({ keyspace: this.keyspace, dc: this.dc, at: new Date(), hosts, reads });
  }

  /** Unsafe settings on the local DC's nodes; never throws. */
  async #localNodeSafety(): Promise<LocalNodeSafety> {
    try {
      const nodes = await this.#nodeSettings(this.dc);
      const read = nodes.filter((node) => node.error === undefined);
      const failed = nodes.filter((node) => node.error !== undefined);
      return {
        dc: this.dc,
        problems: problemLines(read.map((node) => ({ ...node, checks: checkNode(node) }))),
        error:
          failed.length === 0
            ? undefined
            : failed.map((node) => `${node.host}: ${node.error ?? ''}`).join('; '),
      };
    } catch (error) {
      return { dc: this.dc, problems: [], error: reasonOf(error) };
    }
  }

  /** The cluster's nodes as this client sees them, sorted by DC and address. */
  hosts(): HostStatus[] {
    return [...this.#hosts()].sort(
      (a, b) => ascending(a.dc, b.dc) || ascending(a.address, b.address),
    );
  }

  /** Closes the store (and the clients, if {@link openAdmin} built them). */
  async close(): Promise<void> {
    await this.#release();
    await this.#store.close();
  }
}

function nonNegative(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidOptionError(option, value, 'a finite number of milliseconds, at least 0');
  }
  return value;
}

/**
 * The SERIAL probe's bound, or its default; 0 is refused (SERIAL would always be unreachable).
 * @throws {InvalidOptionError} naming `option` unless it is a finite number above 0.
 */
function probeTimeout(option: string, value: number | undefined): number {
  const timeoutMs = nonNegative(option, value, ADMIN_DEFAULTS.serialTimeoutMs);
  if (timeoutMs === 0) {
    throw new InvalidOptionError(option, timeoutMs, 'a finite number of milliseconds above 0');
  }
  return timeoutMs;
}
