/** What each DC drew while each cluster fault was in force; times in seconds from the start. */
import { CLUSTER_FAULT_KINDS, type TimelineEntry } from './nemesis.js';

export interface FaultWindow {
  readonly from: number;
  readonly to: number;
}

/**
 * A cluster fault that took effect inside the window: `from` its `ok` entry (or `effectiveAt`),
 * `to` its undo's `ok` or the window's end; `hit`, the DC partitioned or killed, or the node's.
 */
export interface FaultInForce {
  readonly kind: string;
  readonly target: string;
  readonly from: number;
  readonly to: number;
  readonly undone: boolean;
  readonly hit: readonly string[];
}

const DC_FAULTS: readonly string[] = ['partition-dc', 'kill-dc'];

export function faultsInForce(
  timeline: readonly TimelineEntry[],
  window: FaultWindow,
  dcOfNode: Readonly<Record<string, string>>,
): FaultInForce[] {
  const faults: FaultInForce[] = [];
  timeline.forEach((entry, index) => {
    if (!CLUSTER_FAULT_KINDS.some((k) => k === entry.action) || !entry.result.startsWith('ok'))
      return;
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

/** A process's life (`to` undefined if not ended) and the IDs it handed out by second. */
export interface ProcessProgress {
  readonly dc: string;
  readonly from: number;
  readonly to: number | undefined;
  readonly progress: ReadonlyMap<number, number>;
}

/**
 * Per DC: the IDs its processes handed out in the whole seconds `first` to `end - 1`, and its
 * processes alive throughout the fault (connecting or SIGSTOPped ones count).
 */
export interface DrawnWhileInForce extends FaultInForce {
  readonly seconds: { readonly first: number; readonly end: number };
  readonly byDc: Readonly<Record<string, { readonly ids: number; readonly processes: number }>>;
}

/** What each DC drew while each fault was in force, counting whole seconds only (lower bounds). */
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

export const IDLE_FAULT_SECONDS = 5;

/**
 * The DCs not hit that recorded no ID through a fault of {@link IDLE_FAULT_SECONDS} or more, with
 * processes alive throughout. Reported, not judged: a DC whose ranges run dry waits for a SERIAL
 * grant, which may time out while another DC is cut off; this cannot tell that from a stall.
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
