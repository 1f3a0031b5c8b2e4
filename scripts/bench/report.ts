/** From the raw results to results.json, REPORT.md and the stdout table. */
import fs from 'node:fs/promises';
import path from 'node:path';

import * as prettier from 'prettier';

import { renderMarkdown } from './report/markdown.js';
import { summarize, type Summary } from './report/summary.js';
import { renderTable } from './report/table.js';
import type { RawResults } from './results.js';
import { RESULTS_SCHEMA } from './results.js';

export interface ResultsFile {
  readonly schema: typeof RESULTS_SCHEMA;
  readonly summary: Summary;
  readonly raw: RawResults;
}

export interface Report {
  readonly json: ResultsFile;
  readonly markdown: string;
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

/** As the repository's prettier settings print it. */
export async function formatMarkdown(markdown: string, file: string): Promise<string> {
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(markdown, { ...config, parser: 'markdown', filepath: file });
}

export async function writeReport(
  report: Report,
  dir: string,
): Promise<{ json: string; markdown: string }> {
  await fs.mkdir(dir, { recursive: true });
  const json = path.join(dir, 'results.json');
  const markdown = path.join(dir, 'REPORT.md');
  await fs.writeFile(json, JSON.stringify(report.json, null, 2) + '\n');
  await fs.writeFile(markdown, await formatMarkdown(report.markdown, path.resolve(markdown)));
  return { json, markdown };
}
