/** Text and JSON output: tables, bars, settings, and JSON with exact 64-bit integers. */
import { count, percent, span } from '../quantities.js';
import { GRANT_BLOCKS } from '../settings/model.js';
import type { SequenceSettings } from '../store/port.js';

export type Align = 'left' | 'right';

/** Rows as aligned columns two spaces apart; `align` per column, `left` if missing. */
export function table(
  rows: readonly (readonly string[])[],
  align: readonly Align[] = [],
): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => {
        const width = widths[i] ?? 0;
        return align[i] === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd(),
  );
}

/** `[#######.....]  58%`: a share from 0 to 1 as a bar of `width` cells and a percentage. */
export function bar(share: number, width = 12): string {
  const bounded = Math.min(1, Math.max(0, share));
  const filled = Math.round(bounded * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent(bounded).padStart(5)}`;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** A sequence's settings as `label  value` lines. */
export function settingsLines(settings: SequenceSettings): string[] {
  return table([
    ['sequence', settings.name],
    ['domain', `${settings.domain} ${span(settings.min, settings.max)}`],
    ['start', String(settings.start)],
    ['DC range', dcRangeText(settings)],
    ['block', blockText(settings)],
    ['threshold', String(settings.threshold)],
    ...(settings.shards > 1 ? [['shards', `${settings.shards} per DC`] as const] : []),
  ]);
}

function blockText(s: SequenceSettings): string {
  if (s.maxBlockSize === s.blockSize) return `${count(s.blockSize)} IDs`;
  return `${count(s.blockSize)} to ${count(s.maxBlockSize)} IDs, sized for a claim every ${seconds(s.claimIntervalMs / 1_000)}`;
}

function dcRangeText(s: SequenceSettings): string {
  if (s.maxDcRangeSize === s.dcRangeSize) return `${count(s.dcRangeSize)} IDs`;
  const bounds = `${count(s.dcRangeSize)} to ${count(s.maxDcRangeSize)} IDs`;
  return s.autonomySeconds > 0
    ? `${bounds}, sized for ${seconds(s.autonomySeconds)} of autonomy`
    : `${bounds}, sized for ${GRANT_BLOCKS} of the blocks asked for`;
}

/** Seconds in their largest whole unit: `2 s`, `30 min`, `24 h`, `1.5 s`. */
function seconds(value: number): string {
  if (value >= 3_600 && value % 3_600 === 0) return `${value / 3_600} h`;
  if (value >= 60 && value % 60 === 0) return `${value / 60} min`;
  return `${value} s`;
}

/** A sequence's settings for JSON; `named`: its name first. */
export function settingsJson(settings: SequenceSettings, named = true): Record<string, unknown> {
  return {
    ...(named ? { name: settings.name } : {}),
    domain: settings.domain,
    min: settings.min,
    max: settings.max,
    start: settings.start,
    dcRangeSize: settings.dcRangeSize,
    blockSize: settings.blockSize,
    threshold: settings.threshold,
    maxBlockSize: settings.maxBlockSize,
    claimIntervalMs: settings.claimIntervalMs,
    maxDcRangeSize: settings.maxDcRangeSize,
    autonomySeconds: settings.autonomySeconds,
    shards: settings.shards,
  };
}

/** `JSON.stringify`, but bigints as exact JSON numbers and non-finite numbers as `null`. */
export function toJson(value: unknown, indent = 2): string {
  return write(value, indent, '');
}

function write(value: unknown, indent: number, margin: string): string {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const inner = margin + ' '.repeat(indent);
  const open = indent > 0 ? `\n${inner}` : '';
  const close = indent > 0 ? `\n${margin}` : '';
  const separator = indent > 0 ? `,\n${inner}` : ',';
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const items = value.map((item: unknown) => write(item, indent, inner));
    return `[${open}${items.join(separator)}${close}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    const colon = indent > 0 ? ': ' : ':';
    const items = entries.map(([k, v]) => `${JSON.stringify(k)}${colon}${write(v, indent, inner)}`);
    return `{${open}${items.join(separator)}${close}}`;
  }
  throw new TypeError(`toJson: cannot write a ${typeof value}`);
}
