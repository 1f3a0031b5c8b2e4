/** A worker's IDs by second, `<second> <count>` lines written after the IDs (lower bounds). */

/** The campaign second that `now` (ms since the epoch) falls in. */
export function secondOf(now: number, startedAt: number): number {
  return Math.floor((now - startedAt) / 1000);
}

export class ProgressCounter {
  private second = Number.NaN;
  private count = 0;
  private pending = '';

  /** `write` appends to the progress file. */
  constructor(
    private readonly startedAt: number,
    private readonly write: (text: string) => void,
  ) {}

  add(now: number, count: number): void {
    const second = secondOf(now, this.startedAt);
    if (second !== this.second) {
      this.close();
      this.second = second;
    }
    this.count += count;
  }

  /** Writes the lines of the seconds over by `now`; with `all`, the current second's too. */
  flush(now: number, all = false): void {
    if (all || secondOf(now, this.startedAt) !== this.second) this.close();
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.write(text);
  }

  private close(): void {
    if (this.count > 0) this.pending += `${this.second} ${this.count}\n`;
    this.count = 0;
  }
}

export function parseProgress(text: string): Map<number, number> {
  const bySecond = new Map<number, number>();
  const lines = text.split('\n').slice(0, -1); // the last is not whole, or empty
  for (const line of lines) {
    const match = /^(-?\d+) (\d+)$/.exec(line);
    if (match === null) continue;
    const second = Number(match[1]);
    bySecond.set(second, (bySecond.get(second) ?? 0) + Number(match[2]));
  }
  return bySecond;
}
