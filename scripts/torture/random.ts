/** A seeded random source (mulberry32): the same seed makes the same choices, not timing. */
export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(0, items.length - 1)]!;
  }

  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    return entries.at(-1)![0];
  }

  /** A seed for a child random source, so that sub-schedules do not shift each other. */
  fork(): Random {
    return new Random(this.int(1, 2 ** 31 - 1));
  }
}

export function workerSeed(campaignSeed: number, id: number): number {
  return (campaignSeed ^ Math.imul(id, 0x9e3779b1)) >>> 0 || 1;
}

export function freshSeed(): number {
  return (Date.now() ^ (process.pid << 16)) >>> 0 || 1;
}
