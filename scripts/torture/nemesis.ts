/**
 * The nemesis: on a schedule drawn from the campaign's seed, it hurts the cluster (partitions of
 * a DC or a node, paused and killed Cassandra nodes, every node of a DC killed at once) and the
 * allocator processes (kills, SIGSTOP, close while drawing, new processes) and alters the
 * sequence's sizes. Every action is recorded in the timeline, with what was done and what was
 * undone.
 */
import * as manager from '../cluster/manager.js';
import { nodeSpecs, type NodeSpec } from '../cluster/topology.js';
import type { IdGen } from '../../src/index.js';
import type { Fleet } from './fleet.js';
import { Random } from './random.js';
import type { WorkerMode } from './worker.js';

/** What the nemesis can do, with its weight in the fault mix. */
export type FaultKind =
  | 'partition-dc'
  | 'partition-node'
  | 'pause-node'
  | 'kill-node'
  | 'kill-dc'
  | 'kill-process'
  | 'stop-process'
  | 'close-process'
  | 'start-process'
  | 'alter';

export const FAULT_KINDS: readonly FaultKind[] = [
  'partition-dc',
  'partition-node',
  'pause-node',
  'kill-node',
  'kill-dc',
  'kill-process',
  'stop-process',
  'close-process',
  'start-process',
  'alter',
];

export type FaultMix = Readonly<Record<FaultKind, number>>;

/** The faults that hurt Cassandra itself; a campaign must have done at least one. */
export const CLUSTER_FAULT_KINDS: readonly FaultKind[] = [
  'partition-dc',
  'partition-node',
  'pause-node',
  'kill-node',
  'kill-dc',
];

/**
 * The next action's kind. Until a cluster fault has been done, only cluster faults of the mix are
 * drawn (node partitions only where they exist): the first action, which no fault in force can
 * skip, is one, so every campaign that lasts past the first interval has hurt the cluster. A mix
 * with no cluster fault at all is drawn as given (its campaign then fails for want of one).
 */
export function nextFaultKind(
  random: Random,
  mix: FaultMix,
  clusterFaultDone: boolean,
  canPartitionNodes: boolean,
): FaultKind {
  if (clusterFaultDone) return random.weighted(mix);
  const cluster = Object.fromEntries(
    CLUSTER_FAULT_KINDS.filter((k) => canPartitionNodes || k !== 'partition-node').map((k) => [
      k,
      mix[k],
    ]),
  ) as Partial<Record<FaultKind, number>>;
  const total = Object.values(cluster).reduce((sum, w) => sum + w, 0);
  return total > 0 ? random.weighted(cluster as Record<FaultKind, number>) : random.weighted(mix);
}

export const DEFAULT_MIX: FaultMix = Object.freeze({
  'partition-dc': 2,
  'partition-node': 2,
  'pause-node': 3,
  'kill-node': 2,
  'kill-dc': 1,
  'kill-process': 3,
  'stop-process': 2,
  'close-process': 3,
  'start-process': 3,
  alter: 1,
});

/**
 * The share of process kills that are raw SIGKILLs, with no warning to write the history: a
 * crash as it comes. They go to paced processes, which write every ID before their next call
 * (worker.ts), so that nothing they handed out goes unrecorded; with none drawing, the kill is
 * of the other kind. Those let the worker write every ID it handed out first (fleet.ts,
 * `KillHow`): either way the checker sees them all.
 */
export const RAW_KILL_SHARE = 0.25;

/**
 * Values each action draws from the nemesis's generator before it looks at the cluster or the
 * fleet, whatever it then does or skips: a skipped action (a cluster fault still in force, no
 * process drawing, a DC with enough processes) would otherwise draw fewer, and shift every later
 * action's kind and target, so that the seed would not name the schedule.
 */
export const DRAWS_PER_ACTION = 6;

/** `items[⌊u · length⌋]`: a pick by a value drawn before the list was known. */
function pickBy<T>(u: number, items: readonly T[]): T {
  if (items.length === 0) throw new Error('pick from an empty list');
  return items[Math.min(items.length - 1, Math.floor(u * items.length))]!;
}

/** An integer in [min, max] by a value drawn in [0, 1). */
function intBy(u: number, min: number, max: number): number {
  return min + Math.floor(u * (max - min + 1));
}

/** How long each node the nemesis restarts may take to accept CQL (see `crash`). */
const RESTART_CQL_TIMEOUT_MS = 600_000;

/** How the timeline's result of a fault done after the fault window begins (see `record`). */
export const LATE = 'late, after the fault window: ';

/** Seconds from the campaign's start (`startedAt`, ms since the epoch) to `now`, to 0.1 s. */
export function secondsSince(startedAt: number, now = Date.now()): number {
  return Math.round((now - startedAt) / 100) / 10;
}

/** The timeline's result of an action or undo that threw `error`. */
function failure(error: unknown): string {
  return `failed: ${error instanceof Error ? error.message : String(error)}`;
}

export interface TimelineEntry {
  /** Seconds since the campaign started ({@link secondsSince}). */
  readonly at: number;
  readonly action: string;
  readonly target: string;
  /**
   * What happened when it was tried: `ok`, or why it could not be done, or `late, ...` for a
   * fault that took effect after the fault window.
   */
  readonly result: string;
  /**
   * When a fault recorded once it showed took effect, if earlier than `at`: a partition's rules
   * drop packets from the moment they are in place, and its `ok` comes once the cut shows.
   */
  readonly effectiveAt?: number;
}

export interface NemesisOptions {
  readonly random: Random;
  readonly fleet: Fleet;
  readonly admin: IdGen;
  readonly sequence: string;
  readonly mix: FaultMix;
  /** Seconds between actions: drawn in [min, max]. */
  readonly intervalS: readonly [number, number];
  /** Processes per DC the fleet is kept near. */
  readonly processesPerDc: number;
  readonly startProcess: (dc: string) => void;
  /** Whether node partitions exist in this cluster manager and topology. */
  readonly canPartitionNodes: boolean;
  readonly startedAt: number;
  readonly log: (line: string) => void;
}

/** What one action drew before it looked at anything (see {@link DRAWS_PER_ACTION}). */
interface Draws {
  /** [0] how long, [1] whom, [2] how long a second thing, [1..5] an alter's sizes. */
  readonly u: readonly number[];
  /** A process kill's two, from a generator of their own. */
  readonly kill: readonly [number, number];
}

/**
 * A cluster fault drawn while another was in force (or being undone, or healing): done with its
 * own draws as soon as that one has healed. Skipped instead, the drawn mix was not what was done:
 * a restart's healing takes tens of seconds, and campaigns 1000353, 1000354 and 1000355 did no
 * kill, no pause or no partition respectively, every one drawn having come while another fault
 * was in force or healing. One left deferred when the window ends is skipped.
 */
interface Deferred {
  readonly kind: FaultKind;
  readonly draws: Draws;
  /** When it was drawn, in the timeline's seconds. */
  readonly drawnAt: number;
}

/**
 * Undo actions of cluster faults still in force, so the campaign can heal everything; while one
 * starts, a placeholder with nothing to undo (see `startClusterFault`).
 */
interface Active {
  readonly undo: () => Promise<void>;
  /** What to wait for once the fault is undone, before the next cluster fault (see `hold`). */
  readonly settle?: (() => Promise<void>) | undefined;
  readonly describe: string;
  /** Undoes it once its time is up; none once its undo has begun. */
  readonly timer?: NodeJS.Timeout;
}

export class Nemesis {
  readonly timeline: TimelineEntry[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;
  private clusterFault: Active | undefined;
  private readonly nodes: NodeSpec[];
  private readonly dcs: string[];
  private undoing: Promise<void> | undefined;
  /** At most one cluster fault waits for the one in force (see {@link Deferred}). */
  private deferred: Deferred | undefined;
  /** A cluster fault being started, which {@link stop} waits for before it undoes it. */
  private starting: Promise<void> | undefined;
  /** Whether a cluster fault has been done (see {@link nextFaultKind}). */
  private clusterFaultDone = false;
  /**
   * Whether each process kill is raw, and which paced process it kills: a generator of its own,
   * derived from the nemesis's seed without drawing from it; two values each action.
   */
  private readonly killRandom: Random;

  constructor(private readonly options: NemesisOptions) {
    this.nodes = nodeSpecs(manager.currentTopology());
    this.dcs = [...new Set(this.nodes.map((n) => n.dc))];
    this.killRandom = new Random(options.random.seed ^ 0x6b111ed);
  }

  start(): void {
    this.loop = this.run();
  }

  /** Stops acting, and undoes the fault in force (waiting for a node being restarted). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.starting;
    await this.undoClusterFault();
  }

  private async run(): Promise<void> {
    const { random, intervalS } = this.options;
    while (!this.stopped) {
      await sleep(random.int(intervalS[0] * 1000, intervalS[1] * 1000), () => this.stopped);
      if (this.stopped) break;
      const kind = nextFaultKind(
        random,
        this.options.mix,
        this.clusterFaultDone,
        this.options.canPartitionNodes,
      );
      try {
        await this.act(kind);
      } catch (error) {
        this.record(kind, '-', failure(error));
      }
    }
  }

  private async act(kind: FaultKind): Promise<void> {
    const { random } = this.options;
    // Drawn before anything can skip (see DRAWS_PER_ACTION).
    const u = Array.from({ length: DRAWS_PER_ACTION }, () => random.next());
    const draws: Draws = { u, kill: [this.killRandom.next(), this.killRandom.next()] };
    if (kind === 'partition-node' && !this.options.canPartitionNodes) {
      this.record(kind, '-', 'skipped: node partitions need 2+ nodes per DC');
      return;
    }
    if (!CLUSTER_FAULT_KINDS.includes(kind)) {
      await this.perform(kind, draws);
      return;
    }
    if (this.clusterFault === undefined) {
      this.startClusterFault(kind, draws);
      return;
    }
    // One cluster fault at a time: a cluster with two DCs cut off serves nobody.
    const inForce = `${this.clusterFault.describe} still in force`;
    if (this.deferred === undefined) {
      this.deferred = { kind, draws, drawnAt: secondsSince(this.options.startedAt) };
      this.record(kind, '-', `deferred: ${inForce}; done once it has healed`);
    } else {
      this.record(kind, '-', `skipped: ${inForce}, and a ${this.deferred.kind} waits for it`);
    }
  }

  /**
   * Starts a cluster fault in the background: the wait until it takes effect (a partition's cut
   * took 76 s to show in campaign 1000359, while no process fault came) holds up no process
   * fault. Cluster faults drawn meanwhile wait for it as for one in force.
   */
  private startClusterFault(kind: FaultKind, draws: Draws, note = ''): void {
    const starting: Active = { undo: () => Promise.resolve(), describe: `start of a ${kind}` };
    this.clusterFault = starting;
    this.starting = this.perform(kind, draws, note)
      .catch((error: unknown) => this.record(kind, '-', failure(error)))
      .finally(() => {
        this.starting = undefined;
        // Not held (it failed before it hurt anything): the deferred one, if any, may start.
        if (this.clusterFault === starting) {
          this.clusterFault = undefined;
          this.startDeferred();
        }
      });
  }

  /**
   * Does the action drawn. `note` ends a deferred cluster fault's `ok` (when it was drawn).
   */
  private async perform(kind: FaultKind, draws: Draws, note = ''): Promise<void> {
    const { fleet } = this.options;
    const [u0, u1, u2, u3, u4, u5] = draws.u;
    const killDraws = draws.kill;
    const holdMs = intBy(u0!, 3_000, 20_000);
    switch (kind) {
      case 'partition-dc': {
        await this.partition(kind, pickBy(u1!, this.dcs), holdMs, note);
        return;
      }
      case 'partition-node': {
        await this.partition(kind, pickBy(u1!, this.nodes).name, holdMs, note);
        return;
      }
      case 'pause-node': {
        const node = pickBy(u1!, this.nodes);
        const pauseMs = intBy(u2!, 1_000, 8_000);
        await manager.pause(node.name);
        this.hold(`pause of ${node.name}`, pauseMs, () => manager.resume(node.name));
        this.record(kind, node.name, `ok, for ${pauseMs} ms${note}`);
        return;
      }
      case 'kill-node': {
        const node = pickBy(u1!, this.nodes);
        await this.crash(kind, node.name, [node.name], '', intBy(u2!, 1_000, 10_000), note);
        return;
      }
      case 'kill-dc': {
        // Every Cassandra process of a DC crashes at once (SIGKILL), so what one of them had not
        // written out no other replica of the DC holds either. Not a power loss: the OS page
        // cache survives, so what a JVM wrote to a file stays. Durable with commitlog_sync: batch;
        // with periodic and compressed segments (held in the JVM until synced), the DC's last
        // seconds of LOCAL_SERIAL state go back (a negative control).
        const dc = pickBy(u1!, this.dcs);
        const names = this.nodes.filter((n) => n.dc === dc).map((n) => n.name);
        await this.crash(
          kind,
          dc,
          names,
          `: ${names.join(', ')} killed at once`,
          intBy(u2!, 1_000, 10_000),
          note,
        );
        return;
      }
      case 'kill-process':
      case 'stop-process':
      case 'close-process': {
        // Only processes that have handed out IDs (fleet.ts, `drawing`): a kill or close of one
        // still connecting tests nothing, and one not yet handling SIGUSR2 dies of it.
        // In the fleet's order (by number): the drawn fraction names the same victim whenever
        // the same processes are drawing.
        const running = fleet.running().filter((i) => !i.stopped && i.drawing);
        if (running.length === 0) {
          this.record(kind, '-', 'skipped: no process drawing');
          return;
        }
        let victim = pickBy(u1!, running);
        const raw = kind === 'kill-process' && killDraws[0] < RAW_KILL_SHARE;
        if (raw) {
          const paced = running.filter((i) => i.mode === 'paced');
          if (paced.length > 0) victim = pickBy(killDraws[1], paced);
        }
        const target = `process ${victim.id} (${victim.dc}, ${victim.mode})`;
        // What was sent, not what became of it: the process writes its history on the SIGHUP
        // (or fails to, which the verdict judges from how it exited). A signal that was not sent
        // (the process had exited) is no fault done.
        const notSent = 'not done: the process had exited before its signal';
        let result = 'ok';
        if (kind === 'kill-process') {
          const sent = fleet.kill(victim, raw && victim.mode === 'paced' ? 'raw' : 'flush');
          result = !sent
            ? notSent
            : victim.killed === 'raw'
              ? 'ok, raw SIGKILL'
              : 'ok, SIGHUP sent (the process is to write its history, then SIGKILL itself)';
        } else if (kind === 'close-process') {
          if (!fleet.closeWhileDrawing(victim)) result = notSent;
        } else {
          const sent = fleet.pause(victim);
          const stoppedMs = intBy(u2!, 500, 15_000);
          setTimeout(() => fleet.resume(victim), stoppedMs).unref();
          this.record(kind, target, sent ? `ok, SIGCONT after ${stoppedMs} ms` : notSent);
          return;
        }
        this.record(kind, target, result);
        // Keep the fleet near its size: a new process replaces the one gone.
        this.options.startProcess(victim.dc);
        return;
      }
      case 'start-process': {
        const dc = pickBy(u1!, this.dcs);
        if (fleet.running(dc).length >= this.options.processesPerDc + 2) {
          this.record(kind, dc, 'skipped: the DC has enough processes');
          return;
        }
        this.options.startProcess(dc);
        this.record(kind, dc, 'ok');
        return;
      }
      case 'alter': {
        const current = await this.options.admin.readSequence(this.options.sequence);
        const dcRangeSize = pickBy(u1!, [20_000, 50_000, 100_000, 200_000]);
        const blockSize = pickBy(u2!, [50, 100, 200, 500, 1_000]);
        const threshold = pickBy(u3!, [0.3, 0.5, 0.7]);
        // Fixed or adaptive blocks, fixed or autonomy-sized DC ranges: running processes pick
        // the change up at their next settings re-read.
        const maxBlockSize = pickBy(u4!, [blockSize, dcRangeSize]);
        const autonomySeconds = pickBy(u5!, [0, 5, 30]);
        // Shards only grow: running processes keep theirs, new ones spread over all of them.
        const shards = current.shards + (current.shards < 4 ? pickBy(u0!, [0, 0, 1]) : 0);
        await this.options.admin.alterSequence(this.options.sequence, {
          shards,
          dcRangeSize,
          blockSize,
          maxBlockSize,
          threshold,
          autonomySeconds,
          maxDcRangeSize: Math.max(dcRangeSize, 2_000_000),
        });
        this.record(
          kind,
          this.options.sequence,
          `ok: dcRange ${current.dcRangeSize} -> ${dcRangeSize}, block ${current.blockSize} -> ${blockSize}..${maxBlockSize}, threshold ${threshold}, autonomy ${autonomySeconds} s, shards ${current.shards} -> ${shards}`,
        );
        return;
      }
    }
  }

  /** SIGKILLs `names` at once and holds the fault until they are restarted `downMs` later. */
  private async crash(
    kind: FaultKind,
    target: string,
    names: readonly string[],
    detail: string,
    downMs: number,
    note: string,
  ): Promise<void> {
    await manager.killNodes(names);
    this.record(kind, target, `ok${detail}, restart after ${downMs} ms${note}`);
    // The restart waits for the nodes to be up (tens of seconds): no other cluster fault meanwhile.
    // Each node may take 10 min to accept CQL, not the 5 min of `cluster up`: started one after
    // another while every other DC's processes draw flat out on two cores, dc3's three nodes took
    // 631 s in all in CI's campaign of 2026-12-02 (seed 2085984793), and an undo that gives up
    // fails the campaign for the machine's slowness.
    // The undo ends once each node accepts CQL again; the wait until every node can write at ALL
    // is its `healed` entry after, as a partition's: recorded as the undo, it would count the
    // drawing of that wait as drawing while the nodes were down.
    this.hold(
      `restart of ${target}`,
      downMs,
      async () => {
        const restarting = Date.now();
        await manager.startNodes(names, RESTART_CQL_TIMEOUT_MS, { waitForCluster: false });
        this.record(kind, target, `restarted in ${secondsSince(restarting).toFixed(1)} s`);
      },
      () => manager.waitForClusterUp(),
    );
  }

  /**
   * Holds a cluster fault for `ms`, then undoes it on a timer of its own: undone at the nemesis's
   * next action instead, a pause recorded "for 3072 ms" lasted 8.7 s, and the timeline (and the
   * report's drawing while each fault was in force) said less than was done. `settle`, if
   * given, runs after the undo, before the next cluster fault (see {@link partition}).
   */
  private hold(
    describe: string,
    ms: number,
    undo: () => Promise<void>,
    settle?: () => Promise<void>,
  ): void {
    this.clusterFaultDone = true;
    const timer = setTimeout(() => void this.undoClusterFault(), ms);
    this.clusterFault = { undo, settle, describe, timer };
  }

  /**
   * Cuts `target` off, then holds the partition for `ms` from when its cut shows. It is recorded
   * with the time its rules went in: packets were dropped from then on, so the report's interval
   * "in force" starts there, not at the `ok` written once the cut shows. Its undo is the removal
   * of its rules: from then on no packet is dropped, and the interval ends there. Waiting for the
   * cluster to work again (SERIAL from the target, every node seeing every other up) is its
   * `healed` entry after: that took 90 s after a partition held 3.4 s (campaign 1000353), and
   * recorded as the undo, it made the report count the DCs' drawing in those 90 s as drawing
   * under the partition.
   *
   * A cut that never shows (`manager.partition` gives up, or fails after its rules went in) is
   * undone at once: its rules would otherwise cut the target off until the campaign's final heal,
   * with no undo in the timeline. The failure still fails the campaign (its conduct).
   */
  private async partition(kind: FaultKind, target: string, ms: number, note = ''): Promise<void> {
    const describe = `partition of ${target}`;
    const undo = () => manager.heal(undefined, { verify: false });
    const settle = () => manager.waitHealed(new Set([target]));
    let rulesAt: number | undefined;
    try {
      await manager.partition(target, undefined, () => (rulesAt = Date.now()));
    } catch (error) {
      if (rulesAt !== undefined) this.hold(describe, 0, undo, settle);
      throw error;
    }
    this.hold(describe, ms, undo, settle);
    // Both times rounded as the timeline's, so the text and `effectiveAt` agree.
    const { startedAt } = this.options;
    const effectiveAt = secondsSince(startedAt, rulesAt);
    const lead = secondsSince(startedAt) - effectiveAt;
    const before = lead > 0 ? ` (its rules in place ${lead.toFixed(1)} s before)` : '';
    this.record(kind, target, `ok, for ${ms} ms${before}${note}`, effectiveAt);
  }

  /**
   * Undoes the cluster fault in force. A restarted node takes tens of seconds to come up, so the
   * undo runs in the background: process faults go on meanwhile, and the next cluster fault
   * waits for it.
   */
  private undoClusterFault(): Promise<void> {
    const active = this.clusterFault;
    if (this.undoing !== undefined) return this.undoing;
    if (active === undefined) return Promise.resolve();
    clearTimeout(active.timer);
    this.clusterFault = { undo: active.undo, describe: `undo of ${active.describe}` };
    this.undoing = active
      .undo()
      .then(
        async () => {
          this.record('undo', active.describe, 'ok');
          if (active.settle === undefined) return;
          // Cluster faults deferred or skipped meanwhile say what they wait for.
          this.clusterFault = { undo: active.undo, describe: `healing of ${active.describe}` };
          const undone = Date.now();
          try {
            await active.settle();
            const after = secondsSince(undone).toFixed(1);
            this.record('healed', active.describe, `ok, ${after} s after its undo`);
          } catch (error) {
            this.record('healed', active.describe, failure(error));
          }
        },
        (error: unknown) => this.record('undo', active.describe, failure(error)),
      )
      .finally(() => {
        this.undoing = undefined;
        this.clusterFault = undefined;
        this.startDeferred();
      });
    return this.undoing;
  }

  /** Starts the deferred cluster fault, if any, now that none is in force; none past the window. */
  private startDeferred(): void {
    const deferred = this.deferred;
    if (deferred === undefined) return;
    this.deferred = undefined;
    const { kind, draws, drawnAt } = deferred;
    if (this.stopped) {
      this.record(kind, '-', 'skipped: deferred, and the fault window ended first');
      return;
    }
    const waited = (secondsSince(this.options.startedAt) - drawnAt).toFixed(1);
    this.startClusterFault(
      kind,
      draws,
      ` (drawn at ${drawnAt.toFixed(1)} s, deferred ${waited} s)`,
    );
  }

  /**
   * A fault that took effect once {@link stop} was called, the window over, is recorded as
   * `late`, not `ok`, and counts as no fault done: the processes' drawing is judged over the
   * window, and healing follows at once (campaign 1000302 counted a DC partition begun inside
   * its window and confirmed after it, at 522.8 s).
   */
  private record(action: string, target: string, result: string, effectiveAt?: number): void {
    const at = secondsSince(this.options.startedAt);
    const late = this.stopped && FAULT_KINDS.some((k) => k === action) && result.startsWith('ok');
    const recorded = late ? `${LATE}${result}` : result;
    const since = effectiveAt !== undefined && effectiveAt < at ? { effectiveAt } : {};
    this.timeline.push({ at, action, target, result: recorded, ...since });
    this.options.log(`[${at.toFixed(1)} s] ${action} ${target}: ${recorded}`);
  }
}

/** Sleeps `ms`, waking early once `stop()` says so. */
async function sleep(ms: number, stop: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !stop()) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(250, until - Date.now())));
  }
}

/** The worker modes, for the campaign to pick from. */
export const WORKER_MODES: readonly WorkerMode[] = ['tight', 'paced', 'take', 'callers'];
