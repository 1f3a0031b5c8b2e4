/** Counts, shares, rates, durations and ranges as text, for the CLI and the status page alike. */

/** A share from 0 to 1 as a percentage with as many decimals as small shares need. */
export function percent(share: number): string {
  if (share <= 0) return '0%';
  if (share >= 1) return '100%';
  if (share < 0.0001) return '<0.01%';
  if (share < 0.01) return `${(share * 100).toFixed(2)}%`;
  if (share < 0.1) return `${(share * 100).toFixed(1)}%`;
  // Floor, so that 99.97% never shows as 100%; rounded first, as 0.58 * 100 = 57.999….
  return `${Math.min(99, Math.floor(Math.round(share * 1e6) / 1e4))}%`;
}

/** A count with thousands separators: `2,147,483,647`. */
export function count(value: bigint | number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

/** IDs per second: `–` when not measured. */
export function rate(perSecond: number | undefined): string {
  if (perSecond === undefined) return '–';
  if (perSecond > 0 && perSecond < 10) return `${perSecond.toFixed(1)}/s`;
  return `${count(Math.round(perSecond))}/s`;
}

/** Seconds as `45s`, `4m 10s`, `2h 05m`, `3d 4h`; `∞` for Infinity, `–` for unknown. */
export function duration(seconds: number | undefined): string {
  if (seconds === undefined || Number.isNaN(seconds)) return '–';
  if (seconds === Infinity) return '∞';
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3_600) return `${Math.floor(s / 60)}m ${pad2(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)}h ${pad2(Math.floor(s / 60) % 60)}m`;
  return `${count(Math.floor(s / 86_400))}d ${Math.floor(s / 3_600) % 24}h`;
}

export function span(min: bigint, max: bigint): string {
  return `[${min}, ${max}]`;
}

function pad2(value: number): string {
  return String(value).padStart(2, '0');
}
