/**
 * A worker's progress: how many IDs it handed out in each second of the campaign, so that the
 * campaign can tell what each DC drew while each fault was in force. Seconds count from the
 * campaign's start, as the nemesis's timeline does (every process reads the same machine's
 * clock): second `s` is [s, s + 1) seconds after it.
 *
 * The file holds a line `<second> <count>` per second in which the worker handed out IDs
 * (lines for the same second add up). A second's line is written once the second is over, when
 * the history is next written (within about 20 ms, also while a call waits), and the line of the
 * second under way when the history is written for good: on the SIGHUP before the nemesis's
 * kill, and at the worker's exit. A line follows the history write of the IDs it counts, so the
 * progress never counts an ID its history lacks. A raw SIGKILL loses the second under way, as it
 * loses the newest IDs of the history: the counts are lower bounds. This module is imported by
 * the worker: it imports nothing.
 */

/** The campaign second that `now` (ms since the epoch) falls in. */
export function secondOf(now: number, startedAt: number): number {
  return Math.floor((now - startedAt) / 1000);
}

/**
 * Counts the IDs a worker hands out by second, and gives the lines to write. It holds the
 * second under way and the lines of seconds over not written yet: a few numbers, whatever the
 * rate.
 */
export class ProgressCounter {
  private second = Number.NaN;
  private count = 0;
  private pending = '';

  /**
   * @param startedAt The campaign's start, ms since the epoch.
   * @param write Appends text to the progress file.
   */
  constructor(
    private readonly startedAt: number,
    private readonly write: (text: string) => void,
  ) {}

  /** Counts `count` IDs handed out at `now` (ms since the epoch). */
  add(now: number, count: number): void {
    const second = secondOf(now, this.startedAt);
    if (second !== this.second) {
      this.close();
      this.second = second;
    }
    this.count += count;
  }

  /**
   * Writes the lines of the seconds over by `now`; with `all`, that of the second under way too
   * (the worker's last write).
   */
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

/**
 * IDs handed out by second, from a progress file's text: whole lines only (a SIGKILL may cut the
 * last one short), lines for the same second added up.
 */
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
