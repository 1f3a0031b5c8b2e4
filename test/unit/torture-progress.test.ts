import { describe, expect, it } from 'vitest';

import { parseProgress, ProgressCounter, secondOf } from '../../scripts/torture/progress.js';

describe("torture progress: a worker's IDs by second of the campaign", () => {
  const startedAt = 1_000_000;

  it('counts seconds from the campaign start, as the timeline does', () => {
    expect(secondOf(startedAt, startedAt)).toBe(0);
    expect(secondOf(startedAt + 999, startedAt)).toBe(0);
    expect(secondOf(startedAt + 1_000, startedAt)).toBe(1);
    expect(secondOf(startedAt + 61_500, startedAt)).toBe(61);
  });

  it('writes a second once it is over, and the second under way only when told it is the last', () => {
    const written: string[] = [];
    const counter = new ProgressCounter(startedAt, (text) => written.push(text));
    counter.add(startedAt + 5_100, 3);
    counter.add(startedAt + 5_900, 4);
    counter.flush(startedAt + 5_950);
    expect(written).toEqual([]);
    counter.add(startedAt + 6_000, 50);
    expect(written).toEqual([]); // not before the history is written
    counter.flush(startedAt + 6_010);
    expect(written).toEqual(['5 7\n']);
    // A call that waits: second 6 is written once it is over, with no call to count.
    counter.flush(startedAt + 7_020);
    expect(written).toEqual(['5 7\n', '6 50\n']);
    counter.flush(startedAt + 9_000);
    expect(written).toHaveLength(2); // seconds with no ID have no line
    counter.add(startedAt + 9_500, 1);
    counter.flush(startedAt + 9_600, true);
    expect(written).toEqual(['5 7\n', '6 50\n', '9 1\n']);
  });

  it('reads whole lines only, and adds up lines of the same second', () => {
    expect(parseProgress('5 7\n6 50\n6 2\n7 1')).toEqual(
      new Map([
        [5, 7],
        [6, 52],
      ]),
    );
    expect(parseProgress('')).toEqual(new Map());
  });
});
