/**
 * Runs one {@link Scenario}: processes in several DCs, each an IdGen over its own scheduled view
 * of one MemoryStore (scheduled-store.ts) and the virtual clock (clock.ts), driven by clients
 * that issue the scenario's commands. fast-check's scheduler releases every step: each client's
 * next command, each store request and reply, each clock tick.
 *
 * After each step the microtask queue is drained, so a step runs the released code up to its
 * next scheduled point and nothing else: the steps are the whole interleaving, and a run replays
 * exactly from its seed (the allocator's jitter is seeded too).
 *
 * Once the commands are done, every open handle closes while a new process in each DC draws, so
 * each run ends with give-backs racing claims; in half the runs the live handles first hand out
 * every ID they hold, so that IDs held twice become IDs handed out twice.
 *
 * In half the runs whose DC state went back, the operator repairs the DC as docs/design.md
 * prescribes (model.ts, PlannedRepair): its processes stop, retireDcRanges runs from it over the
 * same faulty store, and fresh processes carry on in their places.
 *
 * Nothing here judges the run: it records what callers were given, the rows after each step and
 * what live handles held unused after each step (history.ts) for checker.ts.
 */
import type fc from 'fast-check';

import type { CheckSnapshot } from '../../../src/admin/check.js';
import type { BlockBuffer } from '../../../src/allocator/block-buffer.js';
import type { CallOptions } from '../../../src/allocator/call-deadline.js';
import { IdGen } from '../../../src/allocator/id-gen.js';
import type { RetiredState } from '../../../src/allocator/retire.js';
import type { Sequence } from '../../../src/allocator/sequence.js';
import { SHARD_MOVE_MESSAGE, type ShardMoveReason } from '../../../src/allocator/shards.js';
import type { Logger } from '../../../src/logger.js';
import {
  ContentionError,
  StateRolledBackError,
  StoreUnavailableError,
} from '../../../src/errors.js';
import { dcOfGrantee } from '../../../src/names.js';
import { MAX_SAFE_ID } from '../../../src/settings/model.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { SimClock } from './clock.js';
import type {
  CallRecord,
  Fired,
  HandleHistory,
  HeldAt,
  HeldRun,
  History,
  RepairAt,
  RollbackAt,
  RollbackReport,
  RowsAt,
  StateCall,
  StateShown,
} from './history.js';
import {
  DCS,
  SEQUENCE,
  SERIAL_OUTAGE_MS,
  domainBounds,
  type Command,
  type BurstFault,
  type FaultSite,
  type PlannedFault,
  type PlannedRepair,
  type Scenario,
  type WithCallOptions,
} from './model.js';
import { ScheduledStore, describeError, describeSizes, type Network } from './scheduled-store.js';
import type { TimerOwner } from './clock.js';

const KEYSPACE = 'sim';

/**
 * Runs of retireDcRanges an operator makes before giving up (the DC then stays stopped, which
 * the checker reports in a run that settled): a run's planned faults and SERIAL outages are
 * few, so far fewer suffice.
 */
const MAX_RETIRE_RUNS = 30;
/** Virtual time an operator waits before running the retire again, ms. */
const RETIRE_RERUN_MS = 1_000;

export interface SimulationOptions {
  /** Steps after which the run stops, settled or not. */
  readonly maxSteps: number;
}

export async function simulate(
  scheduler: fc.Scheduler,
  scenario: Scenario,
  options: SimulationOptions,
): Promise<History> {
  const store = await storeWithSequence(scenario);
  // Read once, before any fault is armed: the rows are checked against it (check's
  // state-of-another-incarnation), and no run creates the sequence again.
  const incarnation = (await store.readSequence(SEQUENCE, 'serial'))?.incarnation;
  const restoreRandom = seedJitter(scenario.jitterSeed);
  try {
    const world = new World(scheduler, store, scenario, options, incarnation);
    world.issue(scenario.commands);
    await world.drive();
    world.closeAllWhileDrawing();
    await world.drive();
    return await world.history();
  } finally {
    restoreRandom();
  }
}

async function storeWithSequence(scenario: Scenario): Promise<MemoryStore> {
  const store = new MemoryStore({
    keyspace: KEYSPACE,
    plainReadLag: scenario.settings.plainReadLag,
  });
  const {
    dcRangeSize,
    blockSize,
    threshold,
    maxBlockSize,
    claimIntervalMs,
    autonomySeconds,
    maxDcRangeSize,
    shards,
    firstRanges,
  } = scenario.settings;
  await new IdGen({ store, dc: DCS[0], keyspace: KEYSPACE }).createSequence(SEQUENCE, {
    dcRangeSize,
    blockSize,
    threshold,
    maxBlockSize,
    claimIntervalMs,
    autonomySeconds,
    maxDcRangeSize,
    shards,
    firstRanges,
    ...domainBounds(scenario.settings),
  });
  return store;
}

/**
 * The allocator's jitter (backoffs, retry pauses) comes from Math.random: seeded per run, so the
 * virtual timers, and with them the whole run, replay exactly.
 */
function seedJitter(seed: number): () => void {
  const original = Math.random;
  let state = seed >>> 0;
  Math.random = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return () => {
    Math.random = original;
  };
}

interface Handle {
  readonly sequence: Sequence<number> | Sequence<bigint>;
  readonly history: HandleHistory;
}

/**
 * White-box: the handle's block buffer, private to Sequence (TypeScript lets a test name a
 * private member in brackets). Only the held-twice oracle reads it; nothing is changed.
 */
function bufferOf(handle: Handle): BlockBuffer<number> | BlockBuffer<bigint> {
  return handle.sequence['buffer'];
}

/**
 * White-box, for coverage only: how many claim writes of unknown fate the handle's DC allocator
 * holds (dc-state-row.ts, unresolvedOps), which the rows cannot show. Nothing is changed.
 */
function unresolvedOf(handle: Handle): number {
  return handle.sequence['loaded']?.allocator['row'].unresolvedOps.size ?? 0;
}

/** One incarnation of a process: an IdGen, until it is shut down or dies. */
class Process {
  crashed = false;
  readonly ids: IdGen;
  /** Resolves when the process dies: a client waiting on one of its calls goes on. */
  readonly died: Promise<void>;
  private readonly die: () => void;
  private readonly handles: HandleHistory[] = [];

  constructor(
    private readonly world: World,
    readonly name: string,
    readonly dc: string,
    readonly bigint: boolean,
  ) {
    this.ids = new IdGen({
      store: new ScheduledStore(world, this),
      dc,
      keyspace: KEYSPACE,
      clock: world.clock.for(this),
      logger: world.loggerOf(this),
    });
    let die: () => void = () => undefined;
    this.died = new Promise<void>((resolve) => {
      die = resolve;
    });
    this.die = die;
    world.started(this);
  }

  open(): Handle {
    const sequence = this.ids.sequence(SEQUENCE, { bigint: this.bigint });
    const history: HandleHistory = {
      name: `${this.name}/h${this.handles.length + 1}`,
      bigint: this.bigint,
      opened: this.world.event(),
      // The shard the handle picked when it loaded (its DC before): its IDs are that grantee's.
      get dc() {
        return sequence.grantee;
      },
      calls: [],
      crashed: false,
    };
    this.handles.push(history);
    const handle = { sequence, history };
    this.world.opened(handle);
    return handle;
  }

  crash(): void {
    this.crashed = true;
    for (const history of this.handles) history.crashed = true;
    this.die();
  }
}

/** A client's place: the process it talks to, and that process's handles it calls. */
interface Slot {
  readonly index: number;
  /** The client itself, whose pauses outlive a restart of the process it calls. */
  readonly client: { readonly name: string; readonly crashed: false };
  process: Process;
  restarts: number;
  current: Handle | undefined;
  /** The handle closed last, still callable: calls made while it closes must get nothing. */
  previous: Handle | undefined;
  /** While the operator repairs the slot's DC: the client waits for it before each command. */
  held: Promise<void> | undefined;
}

class World implements Network {
  readonly handles: HandleHistory[] = [];
  /** Every handle opened, for the held-twice oracle (crashed and closed ones are skipped). */
  private readonly opens: Handle[] = [];
  private readonly heldLog: HeldAt[] = [];
  private lastHeldKey = '';
  /** DC-state writes the store ran so far: where the planned rollback lands. */
  private stateWrites = 0;
  private rollback: RollbackAt | undefined;
  /** Every process started, so that the operator can stop those of a DC. */
  private readonly processes: Process[] = [];
  private repair: RepairAt | undefined;
  /** The draws at the end, once begun: a repair then starts a new drawer in its DC. */
  private finalDraw: { readonly count: number; readonly bigint: boolean } | undefined;
  private readonly fired: Fired = {
    pauses: 0,
    aborts: 0,
    drained: 0,
    undelivered: 0,
    rollbacksLogged: 0,
    faultsLanded: {},
    unresolvedTwice: 0,
  };
  readonly clock: SimClock;
  private readonly otherErrors: { call: string; error: unknown }[] = [];
  private readonly slots: Slot[];
  private readonly trace: string[] = [];
  /** Planned faults by `<site>/<at>`; the first planned for a call wins. */
  private readonly faults = new Map<string, PlannedFault['fault']>();
  /** Calls sent so far, per fault site. */
  private readonly sent = new Map<FaultSite, number>();
  /** Moves to another shard before a first block, by reason, as the handles logged them. */
  private readonly shardMoves: Record<ShardMoveReason, number> = {
    'lost races': 0,
    'no IDs and no SERIAL': 0,
    'shard spent': 0,
  };
  /**
   * What every process logs to: only shard moves and rows found gone back are kept (counted,
   * and in the trace); the second, to tell a rollback only logged from one a caller was told of.
   */
  readonly logger: Logger = {
    child: () => this.logger,
    debug: (fields, message) => {
      if (message !== SHARD_MOVE_MESSAGE) return;
      const reason = fields.reason as ShardMoveReason;
      this.shardMoves[reason]++;
      this.log(`${String(fields.from)} moves to ${String(fields.to)}: ${reason}`);
    },
    info: () => undefined,
    warn: (fields, message) => this.logged(fields, message),
    error: (fields, message) => this.logged(fields, message),
  };
  /** The processes' calls on DC states, and the rollbacks they logged (history.ts). */
  private readonly stateCalls: StateCall[] = [];
  private readonly rollbackReports: RollbackReport[] = [];
  /** The count {@link stateCalls} and {@link rollbackReports} are ordered by. */
  private wire = 0;
  /** DC allocators seen holding two or more claim writes of unknown fate at once. */
  private readonly unresolvedTwice = new Set<object>();
  /** The planned burst of claim faults, once begun: whose claim writes get what is left. */
  private burst: { readonly owner: string; readonly left: BurstFault[] } | undefined;
  /** Per DC cut off from SERIAL, when its outage ends (virtual ms). */
  private readonly serialOutageEnds = new Map<string, number>();
  private steps = 0;
  private events = 0;
  private settled = true;
  /** Set when a store call ran in the current step: the rows may have changed. */
  private rowsTouched = false;
  private readonly rowLog: RowsAt[] = [];
  private lastRowsKey = '';

  constructor(
    readonly scheduler: fc.Scheduler,
    readonly store: MemoryStore,
    private readonly scenario: Scenario,
    private readonly options: SimulationOptions,
    private readonly incarnation: string | undefined,
  ) {
    this.clock = new SimClock(scheduler, (line) => this.log(line));
    for (const { on, at, fault } of scenario.faults) {
      const key = `${on}/${at}`;
      if (!this.faults.has(key)) this.faults.set(key, fault);
    }
    this.slots = scenario.processes.map((p, index) => ({
      index,
      client: { name: `client ${index}`, crashed: false },
      process: new Process(this, `p${index}.0`, p.dc, p.bigint),
      restarts: 0,
      current: undefined,
      previous: undefined,
      held: undefined,
    }));
  }

  get step(): number {
    return this.steps;
  }

  log(line: string): void {
    this.trace.push(`${String(this.steps).padStart(4)} ${line}`);
  }

  touched(): void {
    this.rowsTouched = true;
  }

  /** A process's own logger: the world's, which also notes each rollback the process reports. */
  loggerOf(process: Process): Logger {
    const reported = (fields: Record<string, unknown>) => {
      const err = fields.err;
      if (!(err instanceof StateRolledBackError)) return;
      this.rollbackReports.push({ process: process.name, grantee: err.dc, at: ++this.wire });
    };
    const logger: Logger = {
      child: () => logger,
      debug: (fields, message) => this.logger.debug(fields, message),
      info: (fields, message) => this.logger.info(fields, message),
      warn: (fields, message) => {
        reported(fields);
        this.logger.warn(fields, message);
      },
      error: (fields, message) => {
        reported(fields);
        this.logger.error(fields, message);
      },
    };
    return logger;
  }

  stateCallSent(
    owner: TimerOwner,
    grantee: string,
    kind: StateCall['kind'],
  ): StateCall | undefined {
    if (!(owner instanceof Process)) return undefined;
    const call: StateCall = {
      process: owner.name,
      grantee,
      kind,
      sent: ++this.wire,
      replied: undefined,
      shown: undefined,
    };
    this.stateCalls.push(call);
    return call;
  }

  stateCallReplied(call: StateCall, shown: StateShown | undefined): void {
    call.replied = ++this.wire;
    call.shown = shown;
  }

  private logged(fields: Record<string, unknown>, message: string): void {
    if (!(fields.err instanceof StateRolledBackError)) return;
    this.fired.rollbacksLogged++;
    this.log(`logged: ${message}: ${fields.err.code}`);
  }

  started(process: Process): void {
    this.processes.push(process);
  }

  opened(handle: Handle): void {
    this.handles.push(handle.history);
    this.opens.push(handle);
  }

  async stateWritten(sequence: string, dc: string): Promise<void> {
    const planned = this.scenario.rollback;
    if (planned === undefined || this.stateWrites++ !== planned.at) return;
    // Before the DC's first state there is nothing to lose.
    if (!(await this.store.readDcStatesOverview(sequence)).has(dc)) return;
    this.store.rollBackDcState(sequence, dc, planned.writes);
    this.rollback = { step: this.steps, event: this.event(), dc, writes: planned.writes };
    this.log(`${dc}'s state loses its last ${planned.writes} write(s): a rollback`);
    const repair = planned.repair;
    // Of the whole DC: its other shards' states are retired too, as the command does.
    const ofDc = dcOfGrantee(dc);
    if (repair === undefined || ofDc === undefined) return;
    const label = `operator: repairs ${ofDc} (${repair.stop}, ${repair.afterMs} ms on)`;
    void this.scheduler.schedule(Promise.resolve(), label).then(() => this.repairDc(ofDc, repair));
  }

  /**
   * The operator's repair (model.ts, PlannedRepair): stops every process of `dc`, runs
   * retireDcRanges from `dc` until a run succeeds, then starts fresh processes in the places of
   * the stopped ones. The DC's clients wait meanwhile, so nothing of `dc` runs during the retire
   * but what its stopped processes had sent already (a dead process's requests still land).
   */
  private async repairDc(dc: string, planned: PlannedRepair): Promise<void> {
    const operator = { name: `operator in ${dc}`, crashed: false, dc } as const;
    if (planned.afterMs > 0) await this.clock.sleep(operator, planned.afterMs);
    let reopen: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      reopen = resolve;
    });
    const slots = this.slots.filter((slot) => slot.process.dc === dc);
    for (const slot of slots) {
      slot.held = held;
      // Neither is called again, nor closed at the end: the process they belong to is stopped.
      slot.current = undefined;
      slot.previous = undefined;
    }
    const repair: RepairAt = {
      dc,
      stop: planned.stop,
      stopped: this.event(),
      runs: [],
      completed: undefined,
    };
    this.repair = repair;
    const live = this.processes.filter((p) => p.dc === dc && !p.crashed);
    this.log(
      `operator: stops ${live.map((p) => p.name).join(', ') || 'no process'} (${planned.stop})`,
    );
    if (planned.stop === 'crash') {
      for (const process of live) process.crash();
    } else {
      await Promise.all(
        live.map((p) =>
          p.ids.close().catch((error: unknown) => {
            this.otherErrors.push({ call: `${p.name} shutdown`, error });
          }),
        ),
      );
    }
    for (let run = 1; ; run++) {
      // A run of the command is a new client of its own; like the CLI's, it holds no handle.
      const ids = new IdGen({
        store: new ScheduledStore(this, operator),
        dc,
        keyspace: KEYSPACE,
        clock: this.clock.for(operator),
        logger: this.logger,
      });
      try {
        const retired = await ids.retireDcRanges(SEQUENCE);
        repair.runs.push({ retired });
        this.log(`operator: retire-ranges run ${run} → ${describeRetired(retired)}`);
        break;
      } catch (error) {
        repair.runs.push({ error });
        this.log(`operator: retire-ranges run ${run} → ${describeError(error)}`);
        // What the command says may be run again: SERIAL or LOCAL_SERIAL unreachable, an
        // outcome unknown, writes that kept coming first. Anything else the checker judges.
        const again = error instanceof StoreUnavailableError || error instanceof ContentionError;
        if (!again || run === MAX_RETIRE_RUNS) return;
        await this.clock.sleep(operator, RETIRE_RERUN_MS);
      }
    }
    repair.completed = this.event();
    for (const slot of slots) {
      this.replace(slot);
      slot.held = undefined;
    }
    reopen();
    if (this.finalDraw !== undefined) this.drawToTheEnd(dc, `final-${dc}-after-retire`);
  }

  nextFault(site: FaultSite, owner?: TimerOwner): PlannedFault['fault'] | undefined {
    const index = this.sent.get(site) ?? 0;
    this.sent.set(site, index + 1);
    const planned = this.faults.get(`${site}/${index}`);
    if (site !== 'claim' || owner === undefined) return planned;
    const burst = this.scenario.burst;
    if (burst !== undefined && index === burst.at) {
      this.burst = { owner: owner.name, left: [...burst.faults] };
    }
    if (this.burst?.owner !== owner.name) return planned;
    const next = this.burst.left.shift();
    return planned ?? (next === 'none' ? undefined : next);
  }

  serialCutOff(dc: string): boolean {
    const now = this.clock.elapsed;
    if (this.nextFault('serial') === 'outage') {
      this.serialOutageEnds.set(dc, now + SERIAL_OUTAGE_MS);
      this.log(`${dc} is cut off from SERIAL for ${SERIAL_OUTAGE_MS} ms`);
    }
    return now < (this.serialOutageEnds.get(dc) ?? 0);
  }

  /**
   * Each slot is a client issuing its commands in order, each when the scheduler releases it,
   * and when the one before is done (unless that one said `wait: false`).
   */
  issue(commands: readonly Command[]): void {
    for (const slot of this.slots) {
      const own = commands.filter((c) => c.slot % this.slots.length === slot.index);
      const client = async () => {
        for (const command of own) {
          const shown = describeCommand(slot, command);
          await this.scheduler.schedule(Promise.resolve(), `command: ${shown}`);
          if (slot.held === undefined) {
            this.log(`command: ${shown}`);
          } else {
            await slot.held;
            this.log(`command (after the repair): ${describeCommand(slot, command)}`);
          }
          const process = slot.process;
          const running = this.run(slot, command);
          // A call of a process the operator kills never returns; its client goes on all the same.
          const dies = this.scenario.rollback?.repair !== undefined && command.kind !== 'pause';
          await (dies && running !== undefined ? Promise.race([running, process.died]) : running);
        }
      };
      void client();
    }
  }

  /** Releases scheduled steps until none is left (or the step limit is reached). */
  async drive(): Promise<void> {
    while (this.scheduler.count() > 0) {
      if (this.steps >= this.options.maxSteps) {
        this.settled = false;
        return;
      }
      this.steps++;
      this.rowsTouched = false;
      await this.scheduler.waitNext(1);
      await drainMicrotasks();
      if (this.rowsTouched) await this.recordRows();
      this.recordHeld();
    }
  }

  /**
   * What every live, serving handle holds unused now: its current block past the IDs taken,
   * and its preloaded block. Recorded when it changed since the step before.
   */
  private recordHeld(): void {
    const held: HeldRun[] = [];
    for (const handle of this.opens) {
      if (handle.history.crashed) continue;
      if (unresolvedOf(handle) >= 2) this.unresolvedTwice.add(handle.sequence['loaded']!.allocator);
      const buffer = bufferOf(handle);
      if (!buffer.serving) continue;
      for (const block of [buffer.current, buffer.preloaded]) {
        if (block === undefined || block.remaining === 0) continue;
        held.push({ by: handle.history.name, first: block.nextUnused, last: block.last });
      }
    }
    const key = held.map((run) => `${run.by}:${run.first}-${run.last}`).join(' ');
    if (key === this.lastHeldKey) return;
    this.lastHeldKey = key;
    this.heldLog.push({ step: this.steps, event: this.event(), held });
  }

  /**
   * After the commands: every open handle closes (giving back what it can) while a new process
   * in each DC draws at its own pace, so that give-backs race claims one at a time.
   */
  closeAllWhileDrawing(): void {
    if (this.scenario.drainAtEnd) this.drainLiveHandles();
    this.log('every handle closes while a new process in each DC draws');
    for (const slot of this.slots) {
      for (const handle of [slot.current, slot.previous]) {
        if (handle !== undefined) void handle.sequence.close();
      }
    }
    const count = 2 * this.scenario.settings.blockSize + 1;
    // Number handles would only be refused a domain past 2^53-1.
    const bigint = (domainBounds(this.scenario.settings).max ?? 0n) > MAX_SAFE_ID;
    this.finalDraw = { count, bigint };
    for (const dc of DCS) {
      // Not in a DC whose retire never succeeded (a finding): its processes stay stopped.
      if (this.slots.some((slot) => slot.process.dc === dc && slot.held !== undefined)) continue;
      this.drawToTheEnd(dc, `final-${dc}`);
    }
  }

  /** A new process in `dc` draws the final count at its own pace. */
  private drawToTheEnd(dc: string, name: string): void {
    const { count, bigint } = this.finalDraw!;
    const handle = new Process(this, name, dc, bigint).open();
    // Closed once done, so that nothing of it runs on: a DC allocator retrying rows it found
    // broken (as a rollback leaves them) would keep a run from ever settling.
    void this.draw(handle, count, true).then(() => handle.sequence.close());
  }

  /**
   * Every live open handle hands out what it holds, at once (tryNext until it has none): an
   * ID two handles hold shows up as a duplicate, not only to the held-twice oracle.
   */
  private drainLiveHandles(): void {
    this.log('every live handle hands out the IDs it holds');
    for (const slot of this.slots) {
      const handle = slot.current;
      if (handle === undefined) continue;
      // A block holds at most a few dozen IDs here; the bound only guards against a loop.
      for (let i = 0; i < 1_000; i++) {
        const record = this.tryNext(handle);
        if (record.ids.length === 0) break;
        this.fired.drained++;
      }
    }
  }

  async history(): Promise<History> {
    // The rows once more, after the last call returned, whether or not they changed.
    await this.recordRows(true);
    for (const handle of this.opens) {
      this.fired.undelivered += handle.sequence.stats().waste.undelivered;
    }
    return {
      handles: this.handles,
      otherErrors: this.otherErrors,
      rowLog: this.rowLog,
      settled: this.settled,
      steps: this.steps,
      trace: this.trace,
      shardMoves: { ...this.shardMoves },
      heldLog: this.heldLog,
      stateCalls: this.stateCalls,
      rollbackReports: this.rollbackReports,
      rollback: this.rollback,
      repair: this.repair,
      fired: {
        ...this.fired,
        faultsLanded: Object.fromEntries(this.store.faultsLanded),
        unresolvedTwice: this.unresolvedTwice.size,
      },
    };
  }

  private async recordRows(always = false): Promise<void> {
    const rows = await readRows(this.store, this.incarnation);
    const key = rowsKey(rows);
    if (key === this.lastRowsKey && !always) return;
    this.lastRowsKey = key;
    this.rowLog.push({ step: this.steps, event: this.event(), rows });
  }

  /** Runs `command`; resolves when its client would go on (at once if it does not wait). */
  private run(slot: Slot, command: Command): Promise<unknown> | undefined {
    switch (command.kind) {
      case 'next': {
        const handle = this.target(slot, command.target);
        if (handle === undefined) return undefined;
        const call = this.callWithOptions(handle, 'next', command, (options) =>
          handle.sequence.next(options),
        );
        return command.wait ? call : undefined;
      }
      case 'tryNext': {
        const handle = this.target(slot, command.target);
        if (handle !== undefined) this.tryNext(handle);
        return undefined;
      }
      case 'draw': {
        const call = this.draw(this.open(slot), command.count, command.paced);
        return command.wait ? call : undefined;
      }
      case 'take': {
        const handle = this.target(slot, command.target);
        if (handle === undefined) return undefined;
        const count = command.count === 'block' ? this.scenario.settings.blockSize : command.count;
        const call = this.call(
          handle,
          `take(${count})`,
          async () => {
            const range = await handle.sequence.take(count);
            const ids: bigint[] = [];
            for (let id = BigInt(range.first); id <= BigInt(range.last); id++) ids.push(id);
            return ids;
          },
          count,
        );
        return command.wait ? call : undefined;
      }
      case 'nextIds': {
        const handle = this.target(slot, command.target);
        if (handle === undefined) return undefined;
        const { count } = command;
        const call = this.callWithOptions(
          handle,
          `nextIds(${count})`,
          command,
          async (options) => {
            const ids: readonly (number | bigint)[] = await handle.sequence.nextIds(count, options);
            return ids.map((id) => BigInt(id));
          },
          count,
        );
        return command.wait ? call : undefined;
      }
      case 'close': {
        const handle = slot.current;
        if (handle === undefined) return undefined;
        void handle.sequence.close();
        slot.previous = handle;
        slot.current = undefined;
        this.callWhileClosing(handle, command.callsDuring);
        return undefined;
      }
      case 'restart':
        slot.process.crash();
        slot.current = undefined;
        slot.previous = undefined;
        this.replace(slot);
        return undefined;
      case 'shutdown': {
        const name = `${slot.process.name} shutdown`;
        slot.process.ids.close().catch((error: unknown) => {
          this.otherErrors.push({ call: name, error });
        });
        slot.previous = slot.current;
        slot.current = undefined;
        this.replace(slot);
        return undefined;
      }
      case 'pause':
        return this.clock.sleep(slot.client, command.ms).then(() => {
          this.fired.pauses++;
        });
      case 'alter': {
        const name = `${slot.process.name} alter`;
        slot.process.ids.alterSequence(SEQUENCE, command.changes).then(
          (settings) => this.log(`${name}: now ${describeSizes(settings)}`),
          (error: unknown) => {
            this.log(`${name}: ${describeError(error)}`);
            this.otherErrors.push({ call: name, error });
          },
        );
        return undefined;
      }
    }
  }

  /**
   * A call (next() or nextIds()) with its own deadline and a signal, if the command carries
   * them; the signal fires at a step the scheduler picks (counted if the call was still pending
   * then). `count`: see {@link World.call}.
   */
  private callWithOptions(
    handle: Handle,
    call: string,
    { timeoutMs, abort = false }: WithCallOptions,
    run: (options: CallOptions) => Promise<number | bigint | bigint[]>,
    count?: number,
  ): Promise<boolean> {
    const controller = abort ? new AbortController() : undefined;
    const name = [
      call,
      ...(timeoutMs === undefined ? [] : [`${timeoutMs} ms`]),
      ...(abort ? ['signal'] : []),
    ].join(' ');
    const options = {
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(controller === undefined ? {} : { signal: controller.signal }),
    };
    let pending = true;
    const recorded = this.call(handle, name, () => run(options), count).finally(() => {
      pending = false;
    });
    if (controller !== undefined) {
      const label = `${handle.history.name} ${name}: the signal fires`;
      void this.scheduler.schedule(Promise.resolve(), label).then(() => {
        if (handle.history.crashed) return;
        if (pending) this.fired.aborts++;
        this.log(label);
        controller.abort();
      });
    }
    return recorded;
  }

  /** Callers that go on calling a closing handle, each at a step the scheduler picks. */
  private callWhileClosing(handle: Handle, calls: readonly ('next' | 'tryNext')[]): void {
    for (const call of calls) {
      const label = `${handle.history.name} ${call} while closing`;
      void this.scheduler.schedule(Promise.resolve(), label).then(() => {
        if (handle.history.crashed) return;
        if (call === 'next') void this.call(handle, 'next', () => handle.sequence.next());
        else this.tryNext(handle);
      });
    }
  }

  private replace(slot: Slot): void {
    const { dc, bigint } = slot.process;
    slot.process = new Process(this, `p${slot.index}.${++slot.restarts}`, dc, bigint);
  }

  private open(slot: Slot): Handle {
    slot.current ??= slot.process.open();
    return slot.current;
  }

  private target(slot: Slot, target: 'current' | 'previous'): Handle | undefined {
    return target === 'current' ? this.open(slot) : slot.previous;
  }

  private tryNext(handle: Handle): CallRecord {
    const at = this.event();
    const record: CallRecord = { call: 'tryNext', issued: at, returned: at, ids: [] };
    try {
      const id = handle.sequence.tryNext();
      if (id !== undefined) record.ids = [BigInt(id)];
    } catch (error) {
      record.error = error;
    }
    handle.history.calls.push(record);
    this.log(`${handle.history.name} tryNext → ${describeCall(record)}`);
    return record;
  }

  /**
   * Runs a call of `handle`, recording the IDs it returns or the error it rejects with (and
   * nothing else: a call that fails hands its caller no ID). `count`: the IDs it promises.
   */
  private async call(
    handle: Handle,
    name: string,
    call: () => Promise<number | bigint | bigint[]>,
    count?: number,
  ): Promise<boolean> {
    const history = handle.history;
    const record: CallRecord = {
      call: name,
      ...(count === undefined ? {} : { count }),
      issued: this.event(),
      returned: undefined,
      ids: [],
    };
    history.calls.push(record);
    try {
      const result = await call();
      record.ids = Array.isArray(result) ? result : [BigInt(result)];
    } catch (error) {
      record.error = error;
    }
    record.returned = this.event();
    this.log(`${history.name} ${name} → ${describeCall(record)}`);
    return record.error === undefined;
  }

  /** `count` calls of next(), one after the other; `paced`: each at a step the scheduler picks. */
  private async draw(handle: Handle, count: number, paced: boolean): Promise<void> {
    for (let i = 0; i < count; i++) {
      if (paced) await this.scheduler.schedule(Promise.resolve(), `${handle.history.name} next`);
      // A dead process makes no more calls.
      if (handle.history.crashed) return;
      if (!(await this.call(handle, 'next', () => handle.sequence.next()))) return;
    }
  }

  event(): number {
    return ++this.events;
  }
}

async function readRows(
  store: MemoryStore,
  incarnation: string | undefined,
): Promise<CheckSnapshot> {
  // listSequences and the overviews finish no write in flight: reading changes nothing.
  const settings = (await store.listSequences()).find((s) => s.name === SEQUENCE);
  const overview = await store.readGrantsOverview(SEQUENCE);
  if (settings === undefined || overview === undefined) throw new Error('the sequence is gone');
  return {
    settings,
    incarnation,
    globalLast: overview.globalLast,
    grants: overview.grants,
    states: await store.readDcStatesOverview(SEQUENCE),
    readAt: 0,
  };
}

/** What tells versions of the rows apart: every write moves a version, GLOBAL or the settings. */
function rowsKey(rows: CheckSnapshot): string {
  const states = [...rows.states].map(([dc, s]) => `${dc}:${s.version}:${s.op}`);
  const grants = [...rows.grants].map(([dc, g]) => `${dc}:${g.length}`);
  return [rows.globalLast, describeSizes(rows.settings), ...states, ...grants].join(' ');
}

function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function describeRetired(retired: readonly RetiredState[]): string {
  return retired
    .map((s) => {
      const grant =
        s.grant === undefined ? 'no grant' : `#${s.grant.number} [${s.grant.min}, ${s.grant.max}]`;
      return `${s.grantee} ${s.retired ? 'retired' : 'left alone'} at ${grant}, gap ${s.gap}`;
    })
    .join('; ');
}

function describeCall(record: CallRecord): string {
  if (record.error !== undefined) return describeError(record.error);
  return record.ids.length === 0 ? 'none' : record.ids.join(', ');
}

function describeCommand(slot: Slot, command: Command): string {
  const args = Object.entries(command)
    .filter(([key]) => key !== 'kind' && key !== 'slot')
    .map(([key, value]) => ` ${key}=${JSON.stringify(value)}`);
  return `${slot.process.name} ${command.kind}${args.join('')}`;
}
