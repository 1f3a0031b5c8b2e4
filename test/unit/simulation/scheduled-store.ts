/**
 * One process's view of the shared MemoryStore, with fast-check's scheduler on the wire.
 *
 * Every call is two scheduled steps: its request (when the store runs it, atomically, as one
 * Paxos round) and its reply (when the caller sees the outcome). Between them any other process
 * may act, so replies reach callers late and in any order, as over a network. A dead process's
 * requests still reach the store if they were sent, but their replies never arrive.
 *
 * The fault planned for a call (model.ts) is armed on the MemoryStore in the step the call runs,
 * so no other call can take it.
 */
import type fc from 'fast-check';

import { IdGenError } from '../../../src/errors.js';
import type { Fault } from '../../../src/store/memory-faults.js';
import type { MemoryStore } from '../../../src/store/memory.js';
import type {
  CasOutcome,
  DcStamp,
  DcState,
  FirstGrant,
  Grant,
  GrantFound,
  GrantView,
  GrantsOverview,
  IdStore,
  NodeSettings,
  OverviewReading,
  SequenceSettings,
  SizeSettings,
  StoredSettings,
  DcUsageCounts,
  UsageDeltas,
} from '../../../src/store/port.js';
import { TICK_MS, type SimClock, type TimerOwner } from './clock.js';
import type { StateCall, StateShown } from './history.js';
import type { FaultSite, PlannedFault, WriteKind } from './model.js';

/** What the store's view needs of the simulated world around it. */
export interface Network {
  readonly scheduler: fc.Scheduler;
  readonly store: MemoryStore;
  readonly clock: SimClock;
  /** The fault planned for the call of `site` that `owner` is sending now, if any. */
  nextFault(site: FaultSite, owner: TimerOwner): PlannedFault['fault'] | undefined;
  /** Whether the call at SERIAL `dc`'s process is sending now finds SERIAL cut off. */
  serialCutOff(dc: string): boolean;
  /** The step running now. */
  readonly step: number;
  /** A store call ran in this step: the rows may have changed. */
  touched(): void;
  /**
   * A process sends a read at LOCAL_SERIAL or a conditional write of `grantee`'s state: the
   * record to complete when its reply arrives (undefined for a caller that is no process).
   */
  stateCallSent(owner: TimerOwner, grantee: string, kind: StateCall['kind']): StateCall | undefined;
  /** The reply of `call` reached its process, showing `shown`. */
  stateCallReplied(call: StateCall, shown: StateShown | undefined): void;
  /** The store ran a write of `dc`'s state (applied or not): a planned rollback may follow. */
  stateWritten(sequence: string, dc: string): Promise<void>;
  log(line: string): void;
}

/** An error the simulation injects itself: the connection lost after a write was sent. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

type Planned = PlannedFault['fault'] | undefined;

/** The round that finishes each in-flight fault's write (see MemoryStore's `in-flight`). */
const IN_FLIGHT_UNTIL = {
  'in-flight-until-read': 'read',
  'in-flight-until-write': 'write',
  'in-flight-until-second-read': 'second-read',
} as const;

export class ScheduledStore implements IdStore {
  constructor(
    private readonly network: Network,
    private readonly process: TimerOwner & { readonly dc: string },
  ) {}

  createSequence(
    settings: SequenceSettings,
    op: string,
    firstGrants?: readonly FirstGrant[],
  ): Promise<CasOutcome<StoredSettings>> {
    return this.call('createSequence', 'alter', (fault) =>
      this.conditional('createSequence', fault, () =>
        this.store.createSequence(settings, op, firstGrants),
      ),
    );
  }

  readSequence(name: string, reading?: 'local' | 'serial'): Promise<StoredSettings | undefined> {
    return this.call(`readSequence ${reading ?? 'local'}`, 'read', (fault) =>
      this.read('readSequence', fault, () => this.store.readSequence(name, reading)),
    );
  }

  listSequences(): Promise<readonly SequenceSettings[]> {
    return this.call('listSequences', undefined, () => this.store.listSequences());
  }

  alterSequence(
    name: string,
    expectedOp: string,
    sizes: SizeSettings,
    op: string,
  ): Promise<CasOutcome<StoredSettings>> {
    return this.call(`alterSequence ${describeSizes(sizes)}`, 'alter', (fault) =>
      this.conditional('alterSequence', fault, () =>
        this.store.alterSequence(name, expectedOp, sizes, op),
      ),
    );
  }

  readGrants(sequence: string, dc: string): Promise<GrantView> {
    return this.call(`readGrants ${dc}`, 'read', (fault) =>
      this.read('readGrants', this.serialFault(fault), () => this.store.readGrants(sequence, dc)),
    );
  }

  readGrantsLocal(sequence: string, dc: string): Promise<GrantView | undefined> {
    return this.call(`readGrantsLocal ${dc}`, 'read', (fault) =>
      this.read('readGrantsLocal', fault, () => this.store.readGrantsLocal(sequence, dc)),
    );
  }

  grantRange(
    sequence: string,
    dc: string,
    expectedGlobalLast: bigint,
    grant: Grant,
  ): Promise<CasOutcome<GrantFound>> {
    return this.call(
      `grantRange ${dc} #${grant.number} [${grant.min}, ${grant.max}] if GLOBAL=${expectedGlobalLast}`,
      'grant',
      (fault) => {
        const invoke = () => this.store.grantRange(sequence, dc, expectedGlobalLast, grant);
        if (this.serialFault(fault) !== 'unavailable') {
          return this.conditional('grantRange', fault, invoke);
        }
        // Cut off from SERIAL: the batch fails before any round, as Unavailable does.
        this.arm({ op: 'grantRange', effect: 'unavailable' });
        return invoke();
      },
    );
  }

  readGrantsOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<GrantsOverview | undefined> {
    return this.call('readGrantsOverview', undefined, () =>
      this.store.readGrantsOverview(sequence, reading),
    );
  }

  probeSerial(): Promise<void> {
    return this.call('probeSerial', undefined, () => this.store.probeSerial());
  }

  readDcState(sequence: string, dc: string): Promise<DcState | undefined> {
    const sent = this.network.stateCallSent(this.process, dc, 'read');
    return this.call(
      `readDcState ${dc}`,
      'read',
      (fault) => this.read('readDcState', fault, () => this.store.readDcState(sequence, dc)),
      (outcome) => {
        if (sent === undefined) return;
        const shown = 'error' in outcome ? undefined : stampOf(outcome.value);
        this.network.stateCallReplied(sent, shown);
      },
    );
  }
  readDcStateLocal(sequence: string, dc: string): Promise<DcState | undefined> {
    return this.call(`readDcStateLocal ${dc}`, 'read', (fault) =>
      this.read('readDcStateLocal', fault, () => this.store.readDcStateLocal(sequence, dc)),
    );
  }

  writeDcState(
    sequence: string,
    dc: string,
    expected: DcStamp | undefined,
    next: DcState,
  ): Promise<CasOutcome<DcState>> {
    const kind = async () =>
      writeKind((await this.network.store.readDcStatesOverview(sequence)).get(dc), next);
    const sent = this.network.stateCallSent(this.process, dc, 'write');
    return this.call(
      `writeDcState ${dc} v${expected?.version ?? 0}→${next.version} ${describeState(next)}`,
      kind,
      (fault) =>
        this.conditional('writeDcState', fault, async () => {
          try {
            return await this.store.writeDcState(sequence, dc, expected, next);
          } finally {
            await this.network.stateWritten(sequence, dc);
          }
        }),
      (outcome) => {
        if (sent === undefined) return;
        // Shown applied: reported so, or rejected with the write's own op in the row found.
        const value = 'error' in outcome ? undefined : outcome.value;
        const ours =
          value?.kind === 'applied' || (value?.kind === 'rejected' && value.found?.op === next.op);
        this.network.stateCallReplied(sent, ours ? stampOf(next) : undefined);
      },
    );
  }

  readDcStatesOf(
    sequence: string,
    grantees: readonly string[],
  ): Promise<ReadonlyMap<string, DcState>> {
    return this.call('readDcStatesOf', undefined, () =>
      this.store.readDcStatesOf(sequence, grantees),
    );
  }

  readDcStatesOverview(
    sequence: string,
    reading?: OverviewReading,
  ): Promise<ReadonlyMap<string, DcState>> {
    return this.call('readDcStatesOverview', undefined, () =>
      this.store.readDcStatesOverview(sequence, reading),
    );
  }

  // Usage counters are outside the protocol: passed straight through, never scheduled or faulted,
  // so they leave every interleaving the simulation explores as it was.
  addDcUsage(sequence: string, dc: string, deltas: UsageDeltas): Promise<void> {
    return this.store.addDcUsage(sequence, dc, deltas);
  }

  readDcUsage(sequence: string): Promise<ReadonlyMap<string, DcUsageCounts> | undefined> {
    return this.store.readDcUsage(sequence);
  }

  readReplicaDcs(): Promise<readonly string[] | undefined> {
    return this.call('readReplicaDcs', undefined, () => this.store.readReplicaDcs());
  }

  readNodeSettings(): Promise<readonly NodeSettings[]> {
    return this.call('readNodeSettings', undefined, () => this.store.readNodeSettings());
  }

  close(): Promise<void> {
    return this.call('close', undefined, () => this.store.close());
  }

  /** Typed as the port: the MemoryStore ignores the readings it has no use for. */
  private get store(): IdStore {
    return this.network.store;
  }

  /**
   * One call: sent when the scheduler says, run on the store with the fault planned for it,
   * answered when the scheduler says. `site` names the planned faults it counts for; for a
   * DC-state write it is found from the rows the write is about to change. `replied` sees the
   * outcome when it reaches a live process, before the process does.
   */
  private async call<R>(
    what: string,
    site: FaultSite | (() => Promise<FaultSite>) | undefined,
    run: (fault: Planned) => Promise<R>,
    replied?: (outcome: { readonly value: R } | { readonly error: unknown }) => void,
  ): Promise<R> {
    const network = this.network;
    const scheduler = network.scheduler;
    const label = `${this.process.name} ${what}`;
    await scheduler.schedule(Promise.resolve(), `send: ${label}`);
    const at = typeof site === 'function' ? await site() : site;
    const fault = at === undefined ? undefined : network.nextFault(at, this.process);
    const sentAt = network.step;
    const shownSite = at === undefined || at === 'read' ? '' : ` (${at})`;
    const shownFault = fault === undefined ? '' : ` [${fault}]`;
    if (fault !== undefined) network.log(`${label}${shownSite}${shownFault} sent`);
    let outcome: { readonly value: R } | { readonly error: unknown };
    try {
      outcome = { value: await run(fault) };
    } catch (error) {
      outcome = { error };
    }
    network.touched();
    const shown = 'error' in outcome ? describeError(outcome.error) : describeValue(outcome.value);
    const late = network.step === sentAt ? '' : ` (sent at step ${sentAt})`;
    network.log(`${label}${shownSite}${shownFault}${late} → ${shown}`);
    await scheduler.schedule(Promise.resolve(), `reply: ${label} → ${shown}`);
    if (this.process.crashed) return new Promise<R>(() => undefined);
    replied?.(outcome);
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  private read<R>(
    op: 'readSequence' | 'readGrants' | 'readGrantsLocal' | 'readDcState' | 'readDcStateLocal',
    fault: Planned,
    invoke: () => Promise<R>,
  ): Promise<R> {
    if (fault === 'unavailable') this.arm({ op, effect: 'unavailable' });
    return invoke();
  }

  /**
   * Runs a conditional write with its fault. A fault stands for a round that timed out, failed
   * late or was retried, so its outcome reaches the writer only after a timeout of virtual time
   * while the other processes go on; a retried round that reports a rejection reads the row it
   * reports only then, when other writes may have landed on it.
   */
  private async conditional<R>(
    op: 'createSequence' | 'alterSequence' | 'grantRange' | 'writeDcState',
    fault: Planned,
    invoke: () => Promise<R>,
  ): Promise<R> {
    // Unavailable is armed by the caller; an outage is never planned for a write (serialCutOff).
    if (fault === undefined || fault === 'unavailable' || fault === 'outage') return invoke();
    const timeout = () => this.network.clock.sleep(this.process, timeoutMs());
    switch (fault) {
      case 'applied-reported-rejected':
      case 'rejected':
        this.arm({ op, effect: fault, onHit: timeout });
        return invoke();
      case 'applied-then-error':
        await invoke();
        await timeout();
        throw new InjectedFault('injected: the connection was lost after the write was sent');
      case 'in-flight-until-read':
      case 'in-flight-until-write':
      case 'in-flight-until-second-read':
        this.arm({
          op,
          effect: 'in-flight',
          completesOn: IN_FLIGHT_UNTIL[fault],
        });
        break;
      default:
        this.arm({ op, effect: fault });
    }
    try {
      return await invoke();
    } finally {
      await timeout();
    }
  }

  /** `fault`, or unavailable while this process's DC is cut off from SERIAL. */
  private serialFault(fault: Planned): Planned {
    return this.network.serialCutOff(this.process.dc) ? 'unavailable' : fault;
  }

  private arm(fault: Fault): void {
    this.network.store.faults.push(fault);
  }
}

/**
 * How long a round that failed keeps its writer waiting: mostly a tick or two, sometimes up to
 * 40. Short waits let exactly one other write land before the writer looks again, which is
 * when misreading the outcome does harm; long ones let whole claims and grants pass.
 */
function timeoutMs(): number {
  return TICK_MS * (1 + Math.floor(Math.random() ** 3 * 40));
}

/**
 * What a DC-state write does to `current`: a give-back moves last_integer down within the same
 * reserved range; an install adds a grant; anything else claims a block.
 */
function writeKind(current: DcState | undefined, next: DcState): WriteKind {
  if (current === undefined || next.installedGrant > current.installedGrant) return 'install';
  if (next.reservedGrant === current.reservedGrant && next.lastInteger < current.lastInteger) {
    return 'give-back';
  }
  return 'claim';
}

function stampOf(state: DcState | undefined): StateShown {
  return state === undefined ? 'none' : { version: state.version, op: state.op };
}

export function describeSizes(s: SizeSettings): string {
  return `range ${s.dcRangeSize} (max ${s.maxDcRangeSize}, autonomy ${s.autonomySeconds} s) block ${s.blockSize} (max ${s.maxBlockSize}, every ${s.claimIntervalMs} ms) threshold ${s.threshold}`;
}

export function describeError(error: unknown): string {
  if (error instanceof IdGenError) return error.code;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function describeState(s: DcState): string {
  const preloaded =
    s.installedGrant === s.reservedGrant + 1
      ? ` preloaded #${s.installedGrant} [${s.preloadedMin}, ${s.preloadedMax}]`
      : '';
  return `last=${s.lastInteger} reserved #${s.reservedGrant} [${s.reservedMin}, ${s.reservedMax}]${preloaded}`;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'none';
  if (typeof value !== 'object' || value === null) return String(value);
  if ('kind' in value) {
    const outcome = value as CasOutcome<unknown>;
    if (outcome.kind !== 'rejected') return outcome.kind;
    return `rejected, found ${describeValue(outcome.found)}`;
  }
  if ('lastInteger' in value) return describeState(value as DcState);
  if ('version' in value && 'op' in value) return `v${(value as DcStamp).version}`;
  if ('globalLast' in value) {
    const view = value as Partial<GrantFound & GrantView>;
    const grant = view.grant ?? view.latest;
    const shown = grant === undefined ? '' : ` #${grant.number} [${grant.min}, ${grant.max}]`;
    return `GLOBAL=${view.globalLast}${shown}`;
  }
  if ('settings' in value) return describeSizes((value as StoredSettings).settings);
  return 'ok';
}
