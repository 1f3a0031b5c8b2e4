/** The read side for operators; the maths are pure, in status.ts, check.ts and preflight.ts. */

import type { ConnectionOptions } from '../store/cassandra/driver-client.js';
import { InvalidOptionError } from '../errors.js';
import { checkAbortSignal, checkKeys, everyKeyOf, milliseconds, validateName } from '../options.js';
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
import {
  probeSerial,
  readForCheck,
  readSnapshot,
  readStored,
  reasonOf,
  type StatesInOtherDcs,
} from './overview-reads.js';
import { preflightReport, problemLines, unsafeNodes, type PreflightReport } from './preflight.js';
import {
  sequenceStatus,
  type HostStatus,
  type LocalNodeSafety,
  type SequenceSnapshot,
  type SerialProbe,
  type StatusReport,
} from './status.js';

export interface StatusOptions {
  /** Sequences to report. @default every sequence */
  readonly sequences?: readonly string[] | undefined;
  /** Milliseconds between the two reads rates come from; 0: no rates. @default 2000 */
  readonly sampleMs?: number | undefined;
  /** Measure rates since this earlier report instead of sampling. */
  readonly since?: StatusReport | undefined;
  /** Milliseconds (above 0) before the SERIAL probe counts as unreachable. @default 3000 */
  readonly serialTimeoutMs?: number | undefined;
  /** Aborts the sampling wait. */
  readonly signal?: AbortSignal | undefined;
}

export interface CheckOptions {
  /** Re-read after this many ms if violations rest on local reads; 0: never. @default 1000 */
  readonly confirmAfterMs?: number | undefined;
}

export interface ProbeOptions {
  /** Milliseconds (above 0) before SERIAL counts as unreachable. @default 3000 */
  readonly timeoutMs?: number | undefined;
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

/** Defaults of {@link StatusOptions} and {@link CheckOptions}. */
export const ADMIN_DEFAULTS = Object.freeze({
  sampleMs: 2_000,
  serialTimeoutMs: 3_000,
  confirmAfterMs: 1_000,
});

function ms(key: keyof typeof ADMIN_DEFAULTS, value: number | undefined, positive = false) {
  return milliseconds(key, value, ADMIN_DEFAULTS[key], positive);
}

export interface CheckResult {
  readonly verdict: CheckVerdict;
  readonly violations: readonly Violation[];
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
  /** Reads every node of `dc`; throws if it cannot be reached. @default the store's, filtered */
  readonly nodeSettings?: ((dc: string) => Promise<readonly NodeSettings[]>) | undefined;
  /** `name`'s DC states as `dc` holds them, for status when EACH_QUORUM fails. @default none */
  readonly statesInDc?:
    ((dc: string, name: string) => Promise<ReadonlyMap<string, DcState>>) | undefined;
  /** Called by `close()` before the store closes. */
  readonly release?: (() => Promise<void>) | undefined;
}

export type AdminOptions = ConnectionOptions;

/**
 * Status, checks and preflight of one keyspace's sequences, read from the local DC. It writes
 * nothing (a SERIAL read may finish a Paxos round under way). Get one with {@link openAdmin}.
 */
export class Admin {
  readonly dc: string;
  readonly keyspace: string;
  readonly #store: IdStore;
  readonly #parts: AdminParts;

  constructor(parts: AdminParts) {
    ({ store: this.#store, dc: this.dc, keyspace: this.keyspace } = parts);
    this.#parts = parts;
  }

  /** Every sequence's settings, sorted by name. @throws {StoreUnavailableError} */
  listSequences(): Promise<readonly SequenceSettings[]> {
    return this.#store.listSequences();
  }

  /**
   * Read locally, or at SERIAL if not found there.
   * @throws {InvalidNameError}, {@link SequenceNotFoundError}, {@link StoreUnavailableError}.
   */
  async readSequence(name: string): Promise<SequenceSettings> {
    validateName('sequence', name);
    return (await readStored(this.#store, this.keyspace, name)).settings;
  }

  /**
   * Sequence `name`'s settings and grants (LOCAL_QUORUM) and DC states (EACH_QUORUM, or, if that
   * fails, locally and in their own DCs, marked `statesNotCurrent`).
   * @throws {InvalidNameError}, {@link SequenceNotFoundError}, {@link StoreUnavailableError}.
   */
  async snapshot(name: string): Promise<SequenceSnapshot> {
    validateName('sequence', name);
    return this.#snapshot(name, new Map());
  }

  #snapshot(name: string, unreachable: Map<string, string>): Promise<SequenceSnapshot> {
    const read = this.#parts.statesInDc;
    const elsewhere: StatesInOtherDcs | undefined =
      read === undefined
        ? undefined
        : { dcs: [...new Set((this.#parts.hosts?.() ?? []).map((h) => h.dc))], read, unreachable };
    return readSnapshot(this.#store, this.keyspace, name, this.dc, elsewhere);
  }

  /**
   * SERIAL reachability, hosts, unsafe local node settings and each sequence's `sequenceStatus`,
   * rates over `sampleMs` or since `since`. An unreachable SERIAL or node is reported, not thrown.
   * @throws {InvalidOptionError}, {@link SequenceNotFoundError}, {@link StoreUnavailableError}.
   */
  async status(options: StatusOptions = {}): Promise<StatusReport> {
    checkKeys(options, STATUS_KEYS);
    checkAbortSignal('signal', options.signal);
    if (options.sequences !== undefined && !Array.isArray(options.sequences)) {
      const allowed = 'a list of sequence names, or none for every sequence';
      throw new InvalidOptionError('sequences', options.sequences, allowed);
    }
    for (const name of options.sequences ?? []) validateName('sequence', name);
    const since = options.since as Partial<StatusReport> | undefined;
    if (since !== undefined && (typeof since !== 'object' || !Array.isArray(since?.sequences))) {
      throw new InvalidOptionError('since', since, 'a report an earlier status() returned');
    }
    const sampleMs = ms('sampleMs', options.sampleMs);
    const serialTimeoutMs = ms('serialTimeoutMs', options.serialTimeoutMs, true);
    const names =
      options.sequences ?? (await this.listSequences()).map((settings) => settings.name);
    // A DC not reached is not tried again in this run (each try may take seconds).
    const unreachable = new Map<string, string>();
    const readAll = () => Promise.all(names.map((name) => this.#snapshot(name, unreachable)));
    // Both never reject; awaited in `finally` so that nothing runs on past close().
    const probing = this.probeSerial({ timeoutMs: serialTimeoutMs });
    const safety = this.#localNodeSafety();
    try {
      let previous: readonly (SequenceSnapshot | undefined)[] = [];
      if (options.since !== undefined) {
        const earlier = new Map(options.since.sequences.map((s) => [s.settings.name, s.snapshot]));
        previous = names.map((name) => earlier.get(name));
      } else if (sampleMs > 0) {
        previous = await readAll();
        await sleep(sampleMs, options.signal);
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
   * Checks sequence `name`'s rows against every invariant (`checkSequence`) on reads that cannot
   * be stale; violations resting on a local read instead are unconfirmed.
   * @throws {InvalidOptionError}, {@link InvalidNameError}, {@link SequenceNotFoundError};
   * {@link StoreUnavailableError} when even the local reads fail.
   */
  async check(name: string, options: CheckOptions = {}): Promise<CheckResult> {
    checkKeys(options, CHECK_KEYS);
    const confirmAfterMs = ms('confirmAfterMs', options.confirmAfterMs);
    validateName('sequence', name);
    const first = await this.#checkOnce(name);
    if (first.violations.every((v) => v.confirmed) || confirmAfterMs === 0) return first;
    await sleep(confirmAfterMs);
    return this.#checkOnce(name);
  }

  async #checkOnce(name: string): Promise<CheckResult> {
    const clusterDcs = this.hosts().map((host) => host.dc);
    const snapshot = await readForCheck(this.#store, this.keyspace, name, this.dc, clusterDcs);
    const violations = checkSequence(snapshot);
    const unverified = snapshot.unverified ?? [];
    return { verdict: checkVerdict(violations, unverified), violations, unverified, snapshot };
  }

  /**
   * Whether SERIAL (needed to grant DC ranges) answers from the local DC; not thrown if not.
   * @throws {InvalidOptionError} for an unknown key or a `timeoutMs` not above 0.
   */
  async probeSerial(options: ProbeOptions = {}): Promise<SerialProbe> {
    checkKeys(options, PROBE_KEYS);
    const { serialTimeoutMs } = ADMIN_DEFAULTS;
    const timeoutMs = milliseconds('timeoutMs', options.timeoutMs, serialTimeoutMs, true);
    return probeSerial(this.#store, this.dc, timeoutMs);
  }

  /** Checks every node of every DC for unsafe settings; one not reached is reported, not thrown. */
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

  #nodeSettings(dc: string): Promise<readonly NodeSettings[]> {
    const { nodeSettings } = this.#parts;
    if (nodeSettings !== undefined) return nodeSettings(dc);
    return this.#store.readNodeSettings().then((nodes) => nodes.filter((node) => node.dc === dc));
  }

  /** Never throws. */
  async #localNodeSafety(): Promise<LocalNodeSafety> {
    try {
      const nodes = await this.#nodeSettings(this.dc);
      const failed = nodes.flatMap((node) => (node.error === undefined ? [] : [node]));
      const error = failed.map((node) => `${node.host}: ${node.error ?? ''}`).join('; ');
      const problems = problemLines(unsafeNodes(nodes));
      return { dc: this.dc, problems, error: error === '' ? undefined : error };
    } catch (error) {
      return { dc: this.dc, problems: [], error: reasonOf(error) };
    }
  }

  /** As this client sees them, sorted by DC and address. */
  hosts(): HostStatus[] {
    return [...(this.#parts.hosts?.() ?? [])].sort(
      (a, b) => ascending(a.dc, b.dc) || ascending(a.address, b.address),
    );
  }

  /** Closes the store (and the clients {@link openAdmin} built). */
  async close(): Promise<void> {
    await this.#parts.release?.();
    await this.#store.close();
  }
}
