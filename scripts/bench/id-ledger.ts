/** Every ID a phase handed out, checked for repeats; kept as disjoint intervals to fit memory. */
export class IdLedger {
  private pending: number[] = [];
  /** Sorted disjoint intervals: first at 2i, last at 2i+1. */
  private intervals = new Float64Array(0);
  added = 0;
  duplicates = 0;

  add(ids: readonly number[]): void {
    for (const id of ids) this.pending.push(id);
    this.added += ids.length;
  }

  /** Merges the pending IDs into the intervals; every ID already held counts as a duplicate. */
  compact(): void {
    if (this.pending.length === 0) return;
    const sorted = Float64Array.from(this.pending).sort();
    this.pending = [];
    const old = this.intervals;
    const merged: number[] = [];
    const push = (first: number, last: number): void => {
      const end = merged.length - 1;
      if (end > 0 && merged[end]! >= first - 1) {
        this.duplicates += Math.max(0, Math.min(merged[end]!, last) - first + 1);
        merged[end] = Math.max(merged[end]!, last);
      } else merged.push(first, last);
    };
    let i = 0;
    for (const id of sorted) {
      for (; i < old.length && old[i]! <= id; i += 2) push(old[i]!, old[i + 1]!);
      push(id, id);
    }
    for (; i < old.length; i += 2) push(old[i]!, old[i + 1]!);
    this.intervals = Float64Array.from(merged);
  }
}
