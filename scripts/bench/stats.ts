/** A latency histogram cheap enough for every `next()` call, and the median-with-spread figure. */

/** 2^6 sub-buckets per power of two: a value is off by at most 1/64 (1.6 %). */
const SUB_BUCKET_BITS = 6;
const SUB_BUCKETS = 1 << SUB_BUCKET_BITS;
/** Values above 2^44 ns (about 4.9 hours) share the last bucket. */
const MAX_EXPONENT = 44;
const BUCKETS = SUB_BUCKETS + (MAX_EXPONENT - SUB_BUCKET_BITS + 1) * SUB_BUCKETS;

/** A histogram as it crosses a process boundary. */
export interface SerializedHistogram {
  /** `[bucket index, count]` of the non-empty buckets. */
  readonly buckets: readonly (readonly [number, number])[];
  readonly count: number;
  readonly min: number;
  readonly max: number;
  readonly sum: number;
}

/** Log-linear, as HdrHistogram: exact below 64, then 64 buckets per power of two. */
export class Histogram {
  private readonly counts = new Float64Array(BUCKETS);
  count = 0;
  min = Infinity;
  max = 0;
  sum = 0;

  record(value: number): void {
    const v = value > 0 ? Math.floor(value) : 0;
    this.counts[bucketOf(v)]!++;
    this.count++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }

  merge(other: Histogram | SerializedHistogram): void {
    const source = other instanceof Histogram ? other.toJSON() : other;
    for (const [index, count] of source.buckets) this.counts[index]! += count;
    this.count += source.count;
    this.sum += source.sum;
    if (source.count > 0) {
      this.min = Math.min(this.min, source.min);
      this.max = Math.max(this.max, source.max);
    }
  }

  /** The highest value of the bucket holding the percentile, within min and max; NaN if empty. */
  percentile(percent: number): number {
    if (this.count === 0) return NaN;
    if (percent >= 100) return this.max;
    const rank = Math.max(1, Math.ceil((percent / 100) * this.count));
    let seen = 0;
    for (let index = 0; index < BUCKETS; index++) {
      seen += this.counts[index]!;
      if (seen >= rank) return Math.min(Math.max(highestInBucket(index), this.min), this.max);
    }
    return this.max;
  }

  toJSON(): SerializedHistogram {
    const buckets: [number, number][] = [];
    for (let index = 0; index < BUCKETS; index++) {
      const count = this.counts[index]!;
      if (count > 0) buckets.push([index, count]);
    }
    return { buckets, count: this.count, min: this.min, max: this.max, sum: this.sum };
  }

  static merged(parts: readonly (Histogram | SerializedHistogram)[]): Histogram {
    const histogram = new Histogram();
    for (const part of parts) histogram.merge(part);
    return histogram;
  }
}

function bucketOf(v: number): number {
  if (v < SUB_BUCKETS) return v;
  const exponent = v < 2 ** 32 ? 31 - Math.clz32(v) : Math.floor(Math.log2(v));
  if (exponent > MAX_EXPONENT) return BUCKETS - 1;
  const shift = 2 ** (exponent - SUB_BUCKET_BITS);
  const sub = Math.floor(v / shift) - SUB_BUCKETS;
  return SUB_BUCKETS + (exponent - SUB_BUCKET_BITS) * SUB_BUCKETS + sub;
}

function highestInBucket(index: number): number {
  if (index < SUB_BUCKETS) return index;
  const exponent = Math.floor((index - SUB_BUCKETS) / SUB_BUCKETS) + SUB_BUCKET_BITS;
  const sub = (index - SUB_BUCKETS) % SUB_BUCKETS;
  const shift = 2 ** (exponent - SUB_BUCKET_BITS);
  return (SUB_BUCKETS + sub + 1) * shift - 1;
}

export type LatencySummary = Readonly<
  Record<'count' | 'p50' | 'p99' | 'p999' | 'max' | 'mean', number>
>;

export function latencySummary(histogram: Histogram): LatencySummary {
  return {
    count: histogram.count,
    p50: histogram.percentile(50),
    p99: histogram.percentile(99),
    p999: histogram.percentile(99.9),
    max: histogram.count === 0 ? NaN : histogram.max,
    mean: histogram.count === 0 ? NaN : histogram.sum / histogram.count,
  };
}

/** The median of the runs, with the smallest and largest as spread. */
export type Figure = Readonly<{ median: number; min: number; max: number; n: number }>;

/** NaN samples (nothing measured) are left out. */
export function figure(samples: readonly number[]): Figure {
  const sorted = samples.filter((s) => !Number.isNaN(s)).sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const middle = Math.floor(n / 2);
  const median = n % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return { median, min: sorted[0]!, max: sorted[n - 1]!, n };
}

export type LatencyFigures = Readonly<Record<'p50' | 'p99' | 'p999' | 'max', Figure>>;

export function latencyFigures(runs: readonly { latency: LatencySummary }[]): LatencyFigures {
  const of = (key: keyof LatencyFigures) => figure(runs.map((r) => r.latency[key]));
  return { p50: of('p50'), p99: of('p99'), p999: of('p999'), max: of('max') };
}

export const hrNow = (): number => Number(process.hrtime.bigint());

/** Each of `keys` summed over `items`. */
export function sums<K extends string>(
  items: readonly Readonly<Record<K, number>>[],
  keys: readonly K[],
): Record<K, number> {
  const totals = keys.map((k) => [k, sum(items.map((item) => item[k]))]);
  return Object.fromEntries(totals) as Record<K, number>;
}

export const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
