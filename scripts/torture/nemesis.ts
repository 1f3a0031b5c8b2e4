/**
 * The nemesis: on a schedule drawn from the seed it hurts the cluster and the processes and alters
 * the sequence, each action and undo in the timeline. One cluster fault is in force at a time; at
 * most one drawn meanwhile waits until it has healed. A fault done after stop() is `late`.
 */
import * as manager from '../cluster/manager.js';
import { nodeSpecs, type NodeSpec } from '../cluster/topology.js';
import type { IdGen } from '../../src/index.js';
import type { Fleet } from './fleet.js';
import { Random } from './random.js';
import type { WorkerMode } from './worker.js';

export const DEFAULT_MIX = Object.freeze({
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

export type FaultKind = keyof typeof DEFAULT_MIX;
export type FaultMix = Readonly<Record<FaultKind, number>>;
export const FAULT_KINDS = Object.keys(DEFAULT_MIX) as readonly FaultKind[];

/** The faults that hurt Cassandra itself (the first five); a campaign must have done one. */
export const CLUSTER_FAULT_KINDS: readonly FaultKind[] = FAULT_KINDS.slice(0, 5);

/** Only cluster faults of the mix (if it has any) until one is done: every campaign hurts one. */
export function nextFaultKind(
  random: Random,
  mix: FaultMix,
  clusterFaultDone: boolean,
  canPartitionNodes: boolean,
): FaultKind {
  if (clusterFaultDone) return random.weighted(mix);
  const kinds = CLUSTER_FAULT_KINDS.filter((k) => canPartitionNodes || k !== 'partition-node');
  const cluster = Object.fromEntries(kinds.map((k) => [k, mix[k]])) as Record<FaultKind, number>;
  const total = Object.values(cluster).reduce((sum, w) => sum + w, 0);
  return random.weighted(total > 0 ? cluster : mix);
}

/** The share of process kills that are raw SIGKILLs: of paced processes only (worker.ts). */
const RAW_KILL_SHARE = 0.25;

/** Values each action draws first, whatever it then does: a skip shifts no later draw. */
const DRAWS_PER_ACTION = 6;

/** A pick by a value drawn before the list was known. */
function pickBy<T>(u: number, items: readonly T[]): T {
  if (items.length === 0) throw new Error('pick from an empty list');
  return items[Math.min(items.length - 1, Math.floor(u * items.length))]!;
}

function intBy(u: number, min: number, max: number): number {
  return min + Math.floor(u * (max - min + 1));
}

const RESTART_CQL_TIMEOUT_MS = 600_000;

export const LATE = 'late, after the fault window: ';

/** Seconds from `startedAt` (ms since the epoch) to `now`, to 0.1 s. */
export function secondsSince(startedAt: number, now = Date.now()): number {
  return Math.round((now - startedAt) / 100) / 10;
}

function failure(error: unknown): string {
  return `failed: ${error instanceof Error ? error.message : String(error)}`;
}

export interface TimelineEntry {
  readonly at: number;
  readonly action: string;
  readonly target: string;
  readonly result: string;
  /** When it took effect, if before `at`: a partition drops packets before its cut shows. */
  readonly effectiveAt?: number;
}

export interface NemesisOptions {
  readonly random: Random;
  readonly fleet: Fleet;
  readonly admin: IdGen;
  readonly sequence: string;
  readonly mix: FaultMix;
  readonly intervalS: readonly [number, number];
  readonly processesPerDc: number;
  readonly startProcess: (dc: string) => void;
  readonly canPartitionNodes: boolean;
  readonly startedAt: number;
  readonly log: (line: string) => void;
}

/** Drawn before an action looks at anything: `u` [0] how long, [1] whom, [2..5] the rest. */
interface Draws {
  readonly u: readonly number[];
  readonly kill: readonly [number, number];
}

/** The cluster fault in force (a placeholder with nothing to undo while one starts). */
interface Active {
  readonly undo: () => Promise<void>;
  readonly settle?: (() => Promise<void>) | undefined;
  readonly describe: string;
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
  private deferred: { kind: FaultKind; draws: Draws; drawnAt: number } | undefined;
  private starting: Promise<void> | undefined;
  private clusterFaultDone = false;
  /** Whether a process kill is raw, and whom: from the seed, without drawing from `random`. */
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
      const { mix, canPartitionNodes } = this.options;
      const kind = nextFaultKind(random, mix, this.clusterFaultDone, canPartitionNodes);
      try {
        await this.act(kind);
      } catch (error) {
        this.record(kind, '-', failure(error));
      }
    }
  }

  private async act(kind: FaultKind): Promise<void> {
    const { random } = this.options;
    const u = Array.from({ length: DRAWS_PER_ACTION }, () => random.next());
    const draws: Draws = { u, kill: [this.killRandom.next(), this.killRandom.next()] };
    if (kind === 'partition-node' && !this.options.canPartitionNodes)
      return this.record(kind, '-', 'skipped: node partitions need 2+ nodes per DC');
    if (!CLUSTER_FAULT_KINDS.includes(kind)) return this.perform(kind, draws);
    if (this.clusterFault === undefined) return this.startClusterFault(kind, draws);
    // One cluster fault at a time: a cluster with two DCs cut off serves nobody.
    const inForce = `${this.clusterFault.describe} still in force`;
    if (this.deferred === undefined) {
      this.deferred = { kind, draws, drawnAt: secondsSince(this.options.startedAt) };
      this.record(kind, '-', `deferred: ${inForce}; done once it has healed`);
    } else {
      this.record(kind, '-', `skipped: ${inForce}, and a ${this.deferred.kind} waits for it`);
    }
  }

  /** Starts a cluster fault in the background: its wait to take effect holds up no process fault. */
  private startClusterFault(kind: FaultKind, draws: Draws, note = ''): void {
    const starting: Active = { undo: () => Promise.resolve(), describe: `start of a ${kind}` };
    this.clusterFault = starting;
    this.starting = this.perform(kind, draws, note)
      .catch((error: unknown) => this.record(kind, '-', failure(error)))
      .finally(() => {
        this.starting = undefined;
        // Not held (it failed before it hurt anything): the deferred one may start.
        if (this.clusterFault === starting) {
          this.clusterFault = undefined;
          this.startDeferred();
        }
      });
  }

  private async perform(kind: FaultKind, draws: Draws, note = ''): Promise<void> {
    const { fleet } = this.options;
    const [u0, u1, u2, u3, u4, u5] = draws.u;
    const killDraws = draws.kill;
    const holdMs = intBy(u0!, 3_000, 20_000);
    switch (kind) {
      case 'partition-dc':
        return this.partition(kind, pickBy(u1!, this.dcs), holdMs, note);
      case 'partition-node':
        return this.partition(kind, pickBy(u1!, this.nodes).name, holdMs, note);
      case 'pause-node': {
        const node = pickBy(u1!, this.nodes);
        const pauseMs = intBy(u2!, 1_000, 8_000);
        await manager.pause(node.name);
        const undo = () => manager.resume(node.name);
        this.hold({ describe: `pause of ${node.name}`, undo }, pauseMs);
        this.record(kind, node.name, `ok, for ${pauseMs} ms${note}`);
        return;
      }
      case 'kill-node': {
        const node = pickBy(u1!, this.nodes);
        return this.crash(kind, node.name, [node.name], '', intBy(u2!, 1_000, 10_000), note);
      }
      case 'kill-dc': {
        // With commitlog_sync periodic, its last LOCAL_SERIAL writes go back (a negative control).
        const dc = pickBy(u1!, this.dcs);
        const names = this.nodes.filter((n) => n.dc === dc).map((n) => n.name);
        const detail = `: ${names.join(', ')} killed at once`;
        return this.crash(kind, dc, names, detail, intBy(u2!, 1_000, 10_000), note);
      }
      case 'kill-process':
      case 'stop-process':
      case 'close-process': {
        // In the fleet's order: the same draw names the same victim among the same processes.
        const running = fleet.running().filter((i) => !i.stopped && i.drawing);
        if (running.length === 0) return this.record(kind, '-', 'skipped: no process drawing');
        let victim = pickBy(u1!, running);
        const raw = kind === 'kill-process' && killDraws[0] < RAW_KILL_SHARE;
        if (raw) {
          const paced = running.filter((i) => i.mode === 'paced');
          if (paced.length > 0) victim = pickBy(killDraws[1], paced);
        }
        const target = `process ${victim.id} (${victim.dc}, ${victim.mode})`;
        // What was sent, not what became of it (the verdict judges how it exited).
        const notSent = 'not done: the process had exited before its signal';
        if (kind === 'stop-process') {
          const sent = fleet.pause(victim);
          const stoppedMs = intBy(u2!, 500, 15_000);
          setTimeout(() => fleet.resume(victim), stoppedMs).unref();
          return this.record(kind, target, sent ? `ok, SIGCONT after ${stoppedMs} ms` : notSent);
        }
        const sent =
          kind === 'close-process'
            ? fleet.closeWhileDrawing(victim)
            : fleet.kill(victim, raw && victim.mode === 'paced' ? 'raw' : 'flush');
        const done =
          kind === 'close-process'
            ? 'ok'
            : victim.killed === 'raw'
              ? 'ok, raw SIGKILL'
              : 'ok, SIGHUP sent (the process is to write its history, then SIGKILL itself)';
        this.record(kind, target, sent ? done : notSent);
        this.options.startProcess(victim.dc);
        return;
      }
      case 'start-process': {
        const dc = pickBy(u1!, this.dcs);
        if (fleet.running(dc).length >= this.options.processesPerDc + 2)
          return this.record(kind, dc, 'skipped: the DC has enough processes');
        this.options.startProcess(dc);
        this.record(kind, dc, 'ok');
        return;
      }
      case 'alter': {
        const current = await this.options.admin.readSequence(this.options.sequence);
        const dcRangeSize = pickBy(u1!, [20_000, 50_000, 100_000, 200_000]);
        const blockSize = pickBy(u2!, [50, 100, 200, 500, 1_000]);
        const threshold = pickBy(u3!, [0.3, 0.5, 0.7]);
        const maxBlockSize = pickBy(u4!, [blockSize, dcRangeSize]);
        const autonomySeconds = pickBy(u5!, [0, 5, 30]);
        // Shards only grow.
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
    // Undone once each node accepts CQL: drawing until `healed` is not drawing while they were down.
    const undo = async () => {
      const restarting = Date.now();
      await manager.startNodes(names, RESTART_CQL_TIMEOUT_MS, { waitForCluster: false });
      this.record(kind, target, `restarted in ${secondsSince(restarting).toFixed(1)} s`);
    };
    const settle = () => manager.waitForClusterUp();
    this.hold({ describe: `restart of ${target}`, undo, settle }, downMs);
  }

  private hold(fault: Omit<Active, 'timer'>, ms: number): void {
    this.clusterFaultDone = true;
    this.clusterFault = { ...fault, timer: setTimeout(() => void this.undoClusterFault(), ms) };
  }

  /** Held `ms` from when its cut shows, in force from its rules; a cut never shown is undone. */
  private async partition(kind: FaultKind, target: string, ms: number, note = ''): Promise<void> {
    const fault = {
      describe: `partition of ${target}`,
      undo: () => manager.heal(undefined, { verify: false }),
      settle: () => manager.waitHealed(new Set([target])),
    };
    let rulesAt: number | undefined;
    try {
      await manager.partition(target, undefined, () => (rulesAt = Date.now()));
    } catch (error) {
      if (rulesAt !== undefined) this.hold(fault, 0);
      throw error;
    }
    this.hold(fault, ms);
    const { startedAt } = this.options;
    const effectiveAt = secondsSince(startedAt, rulesAt);
    const lead = secondsSince(startedAt) - effectiveAt;
    const before = lead > 0 ? ` (its rules in place ${lead.toFixed(1)} s before)` : '';
    this.record(kind, target, `ok, for ${ms} ms${before}${note}`, effectiveAt);
  }

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

  private startDeferred(): void {
    const deferred = this.deferred;
    if (deferred === undefined) return;
    this.deferred = undefined;
    const { kind, draws, drawnAt } = deferred;
    if (this.stopped)
      return this.record(kind, '-', 'skipped: deferred, and the fault window ended first');
    const waited = (secondsSince(this.options.startedAt) - drawnAt).toFixed(1);
    this.startClusterFault(
      kind,
      draws,
      ` (drawn at ${drawnAt.toFixed(1)} s, deferred ${waited} s)`,
    );
  }

  private record(action: string, target: string, result: string, effectiveAt?: number): void {
    const at = secondsSince(this.options.startedAt);
    const late = this.stopped && FAULT_KINDS.some((k) => k === action) && result.startsWith('ok');
    const recorded = late ? `${LATE}${result}` : result;
    const since = effectiveAt !== undefined && effectiveAt < at ? { effectiveAt } : {};
    this.timeline.push({ at, action, target, result: recorded, ...since });
    this.options.log(`[${at.toFixed(1)} s] ${action} ${target}: ${recorded}`);
  }
}

async function sleep(ms: number, stop: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until && !stop())
    await new Promise((resolve) => setTimeout(resolve, Math.min(250, until - Date.now())));
}

export const WORKER_MODES: readonly WorkerMode[] = ['tight', 'paced', 'take', 'callers'];
