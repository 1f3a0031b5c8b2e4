/**
 * The report of a benchmark run: from the raw results (results.ts) to the summary
 * (report/summary.ts), the markdown report (report/markdown.ts, one renderer per section), the
 * table printed on stdout (report/table.ts), and results.json. Pure functions except
 * {@link writeReport}.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

import * as prettier from 'prettier';

import { renderMarkdown } from './report/markdown.js';
import { summarize, type Summary } from './report/summary.js';
import { renderTable } from './report/table.js';
import type { RawResults } from './results.js';
import { RESULTS_SCHEMA } from './results.js';

/** results.json: the raw runs and their summary. */
export interface ResultsFile {
  readonly schema: typeof RESULTS_SCHEMA;
  readonly summary: Summary;
  readonly raw: RawResults;
}

export interface Report {
  readonly json: ResultsFile;
  /** Markdown, not yet formatted (see {@link formatMarkdown}). */
  readonly markdown: string;
  /** The plain-text table printed on stdout. */
  readonly table: string;
}

export function buildReport(raw: RawResults): Report {
  const summary = summarize(raw);
  return {
    json: { schema: RESULTS_SCHEMA, summary, raw },
    markdown: renderMarkdown(raw, summary),
    table: renderTable(raw, summary),
  };
}

/** The markdown as the repository's prettier settings print it, so `prettier --check` passes. */
export async function formatMarkdown(markdown: string, file: string): Promise<string> {
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(markdown, { ...config, parser: 'markdown', filepath: file });
}

/** Writes `results.json` and `REPORT.md` into `dir`; returns their paths. */
export async function writeReport(
  report: Report,
  dir: string,
): Promise<{ json: string; markdown: string }> {
  await fs.mkdir(dir, { recursive: true });
  const json = path.join(dir, 'results.json');
  const markdown = path.join(dir, 'REPORT.md');
  // NaN (nothing measured) becomes null, as JSON.stringify does anyway.
  await fs.writeFile(json, JSON.stringify(report.json, null, 2) + '\n');
  await fs.writeFile(markdown, await formatMarkdown(report.markdown, path.resolve(markdown)));
  return { json, markdown };
}
