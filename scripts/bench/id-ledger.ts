/** Every ID a phase handed out, checked for repeats; kept as disjoint intervals to fit memory. */
export class IdLedger {
  private pending: number[] = [];
  /** Sorted disjoint intervals: first at 2i, last at 2i+1. */
  private intervals = new Float64Array(0);
  private intervalCount = 0;
  added = 0;
  duplicates = 0;

  add(ids: readonly number[]): void {
    for (const id of ids) this.pending.push(id);
    this.added += ids.length;
  }

  compact(): void {
    if (this.pending.length === 0) return;
    const sorted = Float64Array.from(this.pending).sort();
    this.pending = [];
    const fresh: number[] = [];
    for (let i = 0; i < sorted.length; i++) {
      const id = sorted[i]!;
      if (i > 0 && id === sorted[i - 1]) {
        this.duplicates++;
        continue;
      }
      const last = fresh.length - 1;
      if (last > 0 && fresh[last] === id - 1) fresh[last] = id;
      else fresh.push(id, id);
    }
    this.merge(fresh);
  }

  private merge(other: readonly number[]): void {
    const merged: number[] = [];
    const push = (first: number, last: number): void => {
      const end = merged.length - 1;
      if (end > 0 && merged[end]! >= first - 1) {
        this.duplicates += Math.max(0, Math.min(merged[end]!, last) - first + 1);
        merged[end] = Math.max(merged[end]!, last);
      } else merged.push(first, last);
    };
    let i = 0;
    let j = 0;
    const mine = this.intervals;
    while (i < this.intervalCount || j < other.length / 2) {
      const takeMine =
        j >= other.length / 2 || (i < this.intervalCount && mine[2 * i]! <= other[2 * j]!);
      if (takeMine) {
        push(mine[2 * i]!, mine[2 * i + 1]!);
        i++;
      } else {
        push(other[2 * j]!, other[2 * j + 1]!);
        j++;
      }
    }
    this.intervals = Float64Array.from(merged);
    this.intervalCount = merged.length / 2;
  }
}
