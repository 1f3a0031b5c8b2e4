/**
 * What each DC drew while each cluster fault was in force, from the nemesis's timeline and the
 * workers' progress (progress.ts): the report shows that the DCs a fault did not hit kept
 * drawing through it, and what the DCs it hit drew meanwhile. Times are seconds from the
 * campaign's start, as the timeline's.
 */
import { CLUSTER_FAULT_KINDS, type TimelineEntry } from './nemesis.js';

/** The nemesis's fault window: from its start to its stop, seconds from the campaign's start. */
export interface FaultWindow {
  readonly from: number;
  readonly to: number;
}

/** A cluster fault that took effect inside the window, and how long it was in force. */
export interface FaultInForce {
  readonly kind: string;
  readonly target: string;
  /** Its `ok` entry in the timeline, or, for a partition, when its rules went in before that. */
  readonly from: number;
  /** Its undo's `ok` entry, or the window's end when it was not undone inside the window. */
  readonly to: number;
  /** Whether its undo's `ok` entry ends it (else the window's end does). */
  readonly undone: boolean;
  /** The DCs it hit: the DC partitioned or killed, or the DC of the node. */
  readonly hit: readonly string[];
}

/** The DC hit by a fault of each kind, from its target. */
const DC_FAULTS: readonly string[] = ['partition-dc', 'kill-dc'];

/**
 * The cluster faults that took effect inside the window, in order: each from its `ok` entry (a
 * partition's from its `effectiveAt`, when its rules went in; its `ok` comes once the cut shows)
 * to its undo's `ok` entry, or to the window's end if it was not undone by then (an undo that
 * failed leaves it in force as far as the timeline tells). A fault recorded as late (after the
 * window) counts as none, as in the verdict. The nemesis does one cluster fault at a time, and
 * its undo is recorded as `undo` of `<what> of <target>` (a partition's once its rules are
 * removed, a kill's once its nodes accept CQL; the wait for the cluster to work again is its
 * `healed` entry, which ends nothing).
 */
export function faultsInForce(
  timeline: readonly TimelineEntry[],
  window: FaultWindow,
  dcOfNode: Readonly<Record<string, string>>,
): FaultInForce[] {
  const faults: FaultInForce[] = [];
  timeline.forEach((entry, index) => {
    if (!CLUSTER_FAULT_KINDS.some((k) => k === entry.action) || !entry.result.startsWith('ok')) {
      return;
    }
    const undo = timeline
      .slice(index + 1)
      .find((e) => e.action === 'undo' && e.target.endsWith(` of ${entry.target}`));
    const undone = undo !== undefined && undo.result === 'ok' && undo.at <= window.to;
    const dc = DC_FAULTS.includes(entry.action) ? entry.target : dcOfNode[entry.target];
    faults.push({
      kind: entry.action,
      target: entry.target,
      from: entry.effectiveAt ?? entry.at,
      to: undone ? undo.at : window.to,
      undone,
      hit: dc === undefined ? [] : [dc],
    });
  });
  return faults;
}

/** One process of the campaign, for {@link drawnWhileInForce}. */
export interface ProcessProgress {
  readonly dc: string;
  /** When it was started, and when it ended (undefined if it had not), in campaign seconds. */
  readonly from: number;
  readonly to: number | undefined;
  /** The IDs it handed out by campaign second, as it wrote them (progress.ts). */
  readonly progress: ReadonlyMap<number, number>;
}

/** What one DC drew while a fault was in force. */
export interface DcWhileInForce {
  /**
   * IDs its processes handed out in the whole seconds inside the fault's interval: at least
   * that many (see {@link drawnWhileInForce}).
   */
  readonly ids: number;
  /**
   * Its processes alive throughout the fault (started before it, ended after it): one still
   * connecting, or stopped by a SIGSTOP, counts.
   */
  readonly processes: number;
}

export interface DrawnWhileInForce extends FaultInForce {
  /** The whole seconds counted: second `first` to second `end - 1`; none when equal. */
  readonly seconds: { readonly first: number; readonly end: number };
  /** Every DC of the cluster. */
  readonly byDc: Readonly<Record<string, DcWhileInForce>>;
}

/**
 * What each DC's processes drew while each fault was in force. Only the seconds wholly inside
 * its interval count (second `s` is [s, s + 1)): a process counts its IDs by second, so those of
 * a second partly outside may have come before or after the fault. The counts are lower bounds:
 * a raw SIGKILL loses its process's second under way. The interval is the timeline's, to 0.1 s:
 * its `ok` entries are written once the fault, or its undo, is done.
 */
export function drawnWhileInForce(
  faults: readonly FaultInForce[],
  dcs: readonly string[],
  processes: readonly ProcessProgress[],
): DrawnWhileInForce[] {
  return faults.map((fault) => {
    const first = Math.ceil(fault.from);
    const end = Math.max(first, Math.floor(fault.to));
    const byDc: Record<string, { ids: number; processes: number }> = Object.fromEntries(
      dcs.map((dc) => [dc, { ids: 0, processes: 0 }]),
    );
    for (const p of processes) {
      const dc = (byDc[p.dc] ??= { ids: 0, processes: 0 });
      if (p.from <= fault.from && (p.to === undefined || p.to >= fault.to)) dc.processes++;
      for (let second = first; second < end; second++) dc.ids += p.progress.get(second) ?? 0;
    }
    return { ...fault, seconds: { first, end }, byDc };
  });
}

/** How long a fault must be in force for {@link idleWhileNotHit} to name a DC idle in it. */
export const IDLE_FAULT_SECONDS = 5;

/**
 * The DCs a fault did not hit that recorded no ID while it was in force for
 * {@link IDLE_FAULT_SECONDS} or more, with processes alive throughout, one line each. Its DCs
 * left whole, such a DC should have drawn (the others hold a majority of the replicas for
 * SERIAL).
 *
 * Reported, not judged: the campaign does not fail on it, because the committed campaigns
 * (torture/campaigns/, written before processes counted by second) cannot show that it would
 * not have failed them spuriously. Their report.json hold a DC's IDs over the whole window
 * only, and that bounds nothing inside one fault: a loop behind its rate bound catches up after
 * a stall (worker.ts), and 401 of their 414 cluster faults were undone 5 s or more after they
 * took effect (their nemesis undid a fault at its next action after the hold, not when the
 * hold was up), so nearly every fault would be judged. What they do show is a cause that
 * fits: a DC's processes share its ranges, and when those run dry they all wait for a grant at
 * SERIAL, which times out while DCs are cut off or their nodes not yet seen down; 27 of the
 * 40 campaigns' processes saw IDGEN_SERIAL_UNAVAILABLE ("the DC has 0 IDs left in its
 * ranges"), and the timelines cannot tell which fault each came under. Once campaigns with
 * progress have been run, their tables can settle it.
 */
export function idleWhileNotHit(drawn: readonly DrawnWhileInForce[]): string[] {
  return drawn.flatMap((fault) => {
    // In tenths, as the timeline has them: 31.7 - 26.7 is not 5 in floating point.
    if (Math.round((fault.to - fault.from) * 10) < IDLE_FAULT_SECONDS * 10) return [];
    const seconds = fault.seconds.end - fault.seconds.first;
    return Object.entries(fault.byDc)
      .filter(([dc, d]) => !fault.hit.includes(dc) && d.processes > 0 && d.ids === 0)
      .map(
        ([dc, d]) =>
          `${dc} (not hit) recorded no ID in the ${seconds} whole seconds of ${fault.kind} ${fault.target} (${fault.from.toFixed(1)} s to ${fault.to.toFixed(1)} s), ${d.processes} of its processes alive throughout`,
      );
  });
}
