/** Text and JSON output: tables, bars, settings, and JSON with exact 64-bit integers. */
import { randomUUID } from 'node:crypto';
import { count, percent, span } from '../quantities.js';
import { GRANT_BLOCKS } from '../settings/model.js';
import type { SequenceSettings } from '../store/port.js';

export type Align = 'left' | 'right';

/** Rows as aligned columns two spaces apart; `align` per column, `left` if missing. */
export function table(
  rows: readonly (readonly string[])[],
  align: readonly Align[] = [],
): string[] {
  const width = (i: number) => Math.max(...rows.map((row) => row[i]?.length ?? 0));
  const padded = (cell: string, i: number) =>
    align[i] === 'right' ? cell.padStart(width(i)) : cell.padEnd(width(i));
  return rows.map((row) => row.map(padded).join('  ').trimEnd());
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

export function blockText(s: SequenceSettings): string {
  if (s.maxBlockSize === s.blockSize) return `${count(s.blockSize)} IDs`;
  return `${count(s.blockSize)} to ${count(s.maxBlockSize)} IDs, sized for a claim every ${seconds(s.claimIntervalMs / 1_000)}`;
}

export function dcRangeText(s: SequenceSettings): string {
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

const SETTINGS_KEYS = [
  'name',
  'domain',
  'min',
  'max',
  'start',
  'dcRangeSize',
  'blockSize',
  'threshold',
  'maxBlockSize',
  'claimIntervalMs',
  'maxDcRangeSize',
  'autonomySeconds',
  'shards',
] as const satisfies readonly (keyof SequenceSettings)[];

/** A sequence's settings for JSON, those keys only; `named`: its name first. */
export function settingsJson(settings: SequenceSettings, named = true): Record<string, unknown> {
  const keys = SETTINGS_KEYS.filter((key) => named || key !== 'name');
  return Object.fromEntries(keys.map((key) => [key, settings[key]]));
}

/**
 * `JSON.stringify`, but bigints as exact JSON numbers (through a mark no string can hold by
 * chance) and non-finite numbers as `null`.
 */
export function toJson(value: unknown, indent = 2): string {
  const mark = `bigint-${randomUUID()}:`;
  const bigints = (_key: string, v: unknown) => (typeof v === 'bigint' ? `${mark}${v}` : v);
  const json = JSON.stringify(value, bigints, indent) ?? 'null';
  return json.replaceAll(new RegExp(`"${mark}(-?\\d+)"`, 'g'), '$1');
}
