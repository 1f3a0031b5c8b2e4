/** How the report writes figures and tables; a value that is not finite prints as `–`. */
import type { Figure, LatencyFigures } from '../stats.js';

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

const finite =
  (format: (value: number) => string) =>
  (value: number): string =>
    Number.isFinite(value) ? format(value) : '–';

export const significant = (value: number, digits = 3): string =>
  finite((v) =>
    Math.abs(v) >= 10 ** digits ? integer.format(v) : Number(v.toPrecision(digits)).toString(),
  )(value);

export const formatNs = finite((ns) => {
  if (ns < 1e3) return `${significant(ns)} ns`;
  if (ns < 1e6) return `${significant(ns / 1e3)} µs`;
  if (ns < 1e9) return `${significant(ns / 1e6)} ms`;
  return `${significant(ns / 1e9)} s`;
});

export const formatRate = finite((perSecond) => {
  if (perSecond >= 1e6) return `${significant(perSecond / 1e6)} M/s`;
  if (perSecond >= 1e3) return `${significant(perSecond / 1e3)} k/s`;
  return `${significant(perSecond)}/s`;
});

export const formatCount = finite((v) =>
  Number.isInteger(v) ? integer.format(v) : significant(v),
);
export const formatTimes = finite((v) => `${significant(v)}×`);
export const formatPercent = finite((share) => `${significant(share * 100, 2)} %`);
export const formatMs = (ms: number): string => formatNs(ms * 1e6);
export const formatMiB = finite((mib) => `${significant(mib)} MiB`);

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

export const quoted = (messages: readonly string[]): string =>
  messages.map((m) => `"${m}"`).join(', ');

/** `12.3 ms` → `12.3`, ` ms`. */
function splitUnit(text: string): [string, string] {
  const match = /^([\d.,]+)(.*)$/.exec(text);
  return match === null ? [text, ''] : [match[1]!, match[2]!];
}

/** `median (min–max)`, the unit written once when all three share it. */
export function withSpread(f: Figure, format: (value: number) => string): string {
  if (f.n === 0) return '–';
  const [median, low, high] = [format(f.median), format(f.min), format(f.max)];
  if (f.n === 1 || f.min === f.max || (low === median && high === median)) return median;
  const [lowValue, lowUnit] = splitUnit(low);
  const [highValue, highUnit] = splitUnit(high);
  const unit = splitUnit(median)[1];
  if (lowUnit === unit && highUnit === unit) return `${median} (${lowValue}–${highValue})`;
  return `${median} (${low}–${high})`;
}

/** `false` leaves the column out. */
export type Column<T> = readonly [header: string, cell: (row: T) => string] | false;

export function markdownTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function byColumns<T>(
  columns: readonly Column<T>[],
  rows: readonly T[],
): [string[], string[][]] {
  const used = columns.filter((c) => c !== false);
  return [used.map(([header]) => header), rows.map((row) => used.map(([, cell]) => cell(row)))];
}

/** A markdown table, then a blank line. */
export const grid = (header: readonly string[], rows: readonly (readonly string[])[]): string[] => [
  markdownTable(header, rows),
  '',
];

export const table = <T>(columns: readonly Column<T>[], rows: readonly T[]): string[] =>
  grid(...byColumns(columns, rows));

/** A one-row table of `[header, cell]` pairs. */
export const row = (cells: readonly (readonly [string, string])[]): string[] =>
  grid(
    cells.map(([header]) => header),
    [cells.map(([, cell]) => cell)],
  );

const PERCENTILES = { p50: 'p50', p99: 'p99', p999: 'p99.9', max: 'max' } as const;

export function latencyColumns<T>(
  latency: (row: T) => LatencyFigures,
  keys: readonly (keyof LatencyFigures)[] = ['p50', 'p99', 'p999', 'max'],
): Column<T>[] {
  return keys.map((k) => [PERCENTILES[k], (row: T) => withSpread(latency(row)[k], formatNs)]);
}
